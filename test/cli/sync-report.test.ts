/**
 * What `cairn sync` and `cairn serve` print of a relay's words: a withheld event's reason and a
 * refusal come from the other side, with record ids a token holder picks, so they are printed on
 * one line with control characters escaped (no forged log lines, no terminal escapes).
 */
import { describe, expect, it } from 'vitest'
import { describeError } from '../../src/cli/run.js'
import { printable } from '../../src/cli/printable.js'
import { describeWithheld, restateRefusal, withheldReason, withheldReasonText } from '../../src/cli/sync-report.js'
import { AuthError, ProtocolError } from '../../src/errors.js'

const EVENT = 'ab'.repeat(32)

describe('printing what a relay says', () => {
  it('escapes control characters, and nothing else', () => {
    expect(printable('record ep_x\n06:00:00 peers: 0 (-1 FORGED)\u001b[2J\u2028é ✓')).toBe('record ep_x\\u000a06:00:00 peers: 0 (-1 FORGED)\\u001b[2J\\u2028é ✓')
    expect(printable('plain text (event 12)\ttab')).toBe('plain text (event 12)\\u0009tab')
    expect(printable('id \u202egnp.exe')).toBe('id \\u202egnp.exe')
  })

  it('gives a withheld event\'s reason without the event id appended to it, escaped', () => {
    const event = { event: EVENT, code: 'PERMISSION_DENIED', message: `record ep_a\rb is outside the token's scope or does not exist here (event ${EVENT})` }
    expect(withheldReason(event)).toBe('record ep_a\\u000db is outside the token\'s scope or does not exist here')
    // For JSON, the relay's text as it is: JSON escapes what it must.
    expect(withheldReasonText(event)).toBe('record ep_a\rb is outside the token\'s scope or does not exist here')
    expect(describeWithheld(1, event)).toBe(`1 event kept on this device only: the token does not allow it (event ${EVENT.slice(0, 12)}…: record ep_a\\u000db is outside the token's scope or does not exist here)`)
    expect(describeWithheld(3, event)).toMatch(/^3 events kept on this device only: the token does not allow them \(event /)
  })

  it('restates a relay\'s refusal on one line, pointing at --token when the token was refused', () => {
    // As the client words it: CODE: peer reported: <the relay's message> (frame error).
    const refused = restateRefusal(new ProtocolError('BAD_FRAME', 'peer reported: no\n06:00:00 forged', { frame: 'error' }), 'ws://relay')
    expect(refused.message).toBe('BAD_FRAME: the relay refused this replica: no\\u000a06:00:00 forged (at ws://relay)')
    const token = restateRefusal(new AuthError('TOKEN_EXPIRED', 'relay refused: the token expired', { frame: 'error' }), 'ws://relay')
    expect(token.where).toEqual({ flag: '--token' })
  })

  it('prints every CLI error on one line, control characters escaped', () => {
    expect(describeError(new ProtocolError('AWAITING_AUTHOR', 'peer reported: event x\n06:00:00 forged\u001b[2J', { frame: 'error' }))).toBe('AWAITING_AUTHOR: peer reported: event x 06:00:00 forged\\u001b[2J (frame error)')
  })
})

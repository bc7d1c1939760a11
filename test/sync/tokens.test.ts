/**
 * Capability tokens: create, decode and verify as units (expiry at the skew boundary, audience,
 * space, revocation, forgery by flipped bytes or re-encoded claims, a signer without the admin
 * right, malformed strings), then the same refusals through a real relay on loopback: each ends
 * the client with status `error` and the right code, and nothing moves either way.
 */
import fc from 'fast-check'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createToken, CLOCK_SKEW_MS, decodeToken, scopeAllows, verifyToken, type TokenContext, type TokenRequest } from '../../src/auth/index.js'
import { AuthError, CairnError, LimitError } from '../../src/errors.js'
import { ManualClock } from '../../src/log/clock.js'
import { defaultCrypto, Identity, tokenSignable } from '../../src/log/index.js'
import type { Memory } from '../../src/memory/index.js'
import type { Relay } from '../../src/sync/relay.js'
import { badValues } from '../helpers/bad-inputs.js'
import { RawPeer } from '../helpers/raw-peer.js'
import {
  download, failureOf, openOwner, openReplica, refusalOf, sleep, startRelay, startSync, Teardown, tokenFor, waitFor,
} from '../helpers/sync-fixtures.js'
import { refusal } from '../helpers/error-code.js'

const crypto = defaultCrypto()
const T0 = Date.UTC(2026, 2, 1, 9)
const HOUR_MS = 3_600_000

const teardown = new Teardown()
afterEach(() => teardown.run())

/** Rebuilds a token from its parts with one byte of the payload or the signature changed. */
function flipByte(token: string, part: 1 | 2, index: number, mask: number): string {
  const parts = token.split('.')
  const bytes = Buffer.from(parts[part] as string, 'base64url')
  const at = index % bytes.length
  bytes[at] = (bytes[at] as number) ^ (mask === 0 ? 1 : mask)
  parts[part] = bytes.toString('base64url')
  return parts.join('.')
}

/** The token's payload with `change` applied, re-encoded canonically, the old signature kept. */
function withClaims(token: string, change: (payload: Record<string, unknown>) => void): string {
  const [prefix, payload, signature] = token.split('.') as [string, string, string]
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>
  change(claims)
  const sorted = Object.fromEntries(Object.entries(claims).sort(([a], [b]) => (a < b ? -1 : 1)))
  return `${prefix}.${Buffer.from(JSON.stringify(sorted)).toString('base64url')}.${signature}`
}

describe('capability tokens (units)', () => {
  const owner = Identity.generate()
  const holder = Identity.generate()
  const space = 'cd'.repeat(32)
  const context = (overrides: Partial<TokenContext> = {}): TokenContext => ({
    space, audience: holder.author, nowMs: T0, crypto,
    isRevoked: () => false, canIssue: (issuer) => issuer === owner.author, ...overrides,
  })
  // Bad requests on purpose: the request is typed loosely and checked at run time.
  const issue = (request: Partial<{ audience: string; scope: unknown; permissions: string[]; expiresIn: number }> = {}, signer = owner) =>
    createToken(signer, space, { audience: holder.author, scope: { kinds: ['preference'] }, permissions: ['write', 'read', 'read'], expiresIn: HOUR_MS, ...request } as TokenRequest, T0, crypto)

  it('decodes to what was signed, with permissions sorted and deduplicated', () => {
    const token = issue()
    expect(token).toMatch(/^ct1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)
    expect(decodeToken(token, crypto)).toMatchObject({
      v: 1, space, issuer: owner.author, audience: holder.author, scope: { kinds: ['preference'] },
      permissions: ['read', 'write'], issuedAt: T0, expiresAt: T0 + HOUR_MS,
    })
    expect(verifyToken(token, context()).id).toMatch(/^[0-9a-f]{64}$/)
    expect(issue().split('.')[1]).not.toBe(token.split('.')[1])
  })

  it('accepts a token up to its expiry plus the clock skew, and refuses it one millisecond later', () => {
    const token = issue({ expiresIn: 1000 })
    expect(verifyToken(token, context({ nowMs: T0 + 1000 + CLOCK_SKEW_MS })).audience).toBe(holder.author)
    const late = refusal(() => verifyToken(token, context({ nowMs: T0 + 1000 + CLOCK_SKEW_MS + 1 })))
    expect(late).toBeInstanceOf(AuthError)
    expect(late.code).toBe('TOKEN_EXPIRED')
  })

  it('refuses a token presented by a key other than its audience', () => {
    const other = Identity.generate()
    expect(refusal(() => verifyToken(issue(), context({ audience: other.author }))).code).toBe('WRONG_AUDIENCE')
  })

  it('refuses a token for another space', () => {
    expect(refusal(() => verifyToken(issue(), context({ space: 'ef'.repeat(32) }))).code).toBe('WRONG_SPACE')
  })

  it('refuses a token its context reports revoked, by id', () => {
    const token = issue()
    const id = decodeToken(token, crypto).id
    expect(refusal(() => verifyToken(token, context({ isRevoked: (tokenId) => tokenId === id }))).code).toBe('TOKEN_REVOKED')
    expect(verifyToken(issue(), context({ isRevoked: (tokenId) => tokenId === id })).id).not.toBe(id)
  })

  it('refuses a token signed by a key without the admin right, even with a valid signature', () => {
    const stranger = Identity.generate()
    const token = issue({}, stranger)
    expect(decodeToken(token, crypto).issuer).toBe(stranger.author)
    expect(refusal(() => verifyToken(token, context())).code).toBe('ISSUER_NOT_AUTHORIZED')
  })

  it('refuses claims re-encoded under the old signature: wider permissions, scope, audience, expiry, issuer', () => {
    const token = issue()
    const forgeries = [
      withClaims(token, (claims) => { claims.permissions = ['read', 'redact', 'write'] }),
      withClaims(token, (claims) => { claims.scope = { all: true } }),
      withClaims(token, (claims) => { claims.audience = Identity.generate().author }),
      withClaims(token, (claims) => { claims.expiresAt = T0 + 100 * HOUR_MS }),
      withClaims(token, (claims) => { claims.issuer = Identity.generate().author }),
    ]
    for (const forged of forgeries) {
      const error = refusal(() => verifyToken(forged, context()))
      expect(error.code).toBe('TOKEN_FORGED')
    }
    // The unchanged re-encoding still verifies: the refusals above are the claims, not the encoding.
    expect(verifyToken(withClaims(token, () => undefined), context()).id).toBe(decodeToken(token, crypto).id)
  })

  it('refuses permissions createToken would not write (unsorted, repeated, none), even signed by the issuer', () => {
    const signed = (permissions: string[]): string => {
      const [prefix, payload] = withClaims(issue(), (claims) => { claims.permissions = permissions }).split('.') as [string, string]
      const signature = owner.sign(tokenSignable(Buffer.from(payload, 'base64url')))
      return `${prefix}.${payload}.${Buffer.from(signature).toString('base64url')}`
    }
    expect(decodeToken(signed(['read', 'write']), crypto).permissions).toEqual(['read', 'write'])
    for (const permissions of [['write', 'read'], ['read', 'read'], []]) {
      const error = refusal(() => decodeToken(signed(permissions), crypto))
      expect(error.code, JSON.stringify(permissions)).toBe('BAD_TOKEN')
      expect(error.message).toMatch(/permissions/)
    }
  })

  it('refuses a token with any one byte of its payload or signature flipped', () => {
    const token = issue()
    fc.assert(fc.property(fc.constantFrom(1 as const, 2 as const), fc.nat(), fc.integer({ min: 1, max: 255 }), (part, index, mask) => {
      const forged = flipByte(token, part, index, mask)
      const error = refusal(() => verifyToken(forged, context()))
      expect(error).toBeInstanceOf(AuthError)
      expect(['BAD_TOKEN', 'TOKEN_FORGED']).toContain(error.code)
      if (part === 2) expect(error.code).toBe('TOKEN_FORGED')
    }), { numRuns: 300 })
  })

  it('refuses malformed strings with BAD_TOKEN and garbage of any shape with a Cairn error', () => {
    const payload = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
    const signature = issue().split('.')[2] as string
    const strings = [
      '', 'ct1', 'ct1.', 'ct1..', 'ct1...', 'ct2.e30.e30', 'CT1.e30.e30', `ct1.${payload({})}.${signature}`,
      `ct1.${payload([])}.${signature}`, `ct1.${payload('x')}.${signature}`, 'ct1.!!!.???', `ct1.${'A'.repeat(100)}.${signature}`,
      `ct1.${payload({ v: 2 })}.${signature}`, `${issue()}.extra`, ` ${issue()}`,
    ]
    for (const text of strings) expect(refusal(() => decodeToken(text, crypto)).code, text).toBe('BAD_TOKEN')
    // A payload that is no JSON is said so, without quoting its bytes back; the location is given once.
    const garbled = refusal(() => decodeToken('ct1.abc.def', crypto))
    expect(garbled.message).toBe('BAD_TOKEN: token does not decode: BAD_JSON: the payload is not base64url-encoded JSON of an object (field token)')
    const real = JSON.parse(Buffer.from(issue().split('.')[1] as string, 'base64url').toString('utf8')) as Record<string, unknown>
    expect(refusal(() => decodeToken(`ct1.${payload({ ...real, permissions: 'read' })}.${signature}`, crypto)).message)
      .toBe('BAD_TOKEN: token does not decode: WRONG_TYPE: expected an array, got string (token.permissions) (field token)')
    expect(refusal(() => decodeToken('a'.repeat(64 * 1024 + 1), crypto))).toBeInstanceOf(LimitError)
    for (const { name, value } of badValues()) {
      expect(() => verifyToken(value, context()), name).toThrow(CairnError)
    }
    fc.assert(fc.property(fc.string({ maxLength: 300 }), (text) => {
      expect(() => decodeToken(`ct1.${text}`, crypto)).toThrow(CairnError)
    }), { numRuns: 300 })
  })

  it('refuses a token spelt other than unpadded base64url, or cut short, as BAD_TOKEN saying so', () => {
    const token = issue()
    const [prefix, payload, signature] = token.split('.') as [string, string, string]
    const spellings = [
      `${prefix}.${payload}.${signature}!!`, // stray characters Node's decoder would skip
      `${prefix}.${payload}.${signature.slice(0, 20)} ${signature.slice(20)}`, // a space from a wrapped line
      `${prefix}.${payload}.${signature}==`, // padding
      `${prefix}.${payload}.${Buffer.from(signature, 'base64url').toString('base64')}`, // standard base64
    ]
    for (const text of spellings) {
      const error = refusal(() => decodeToken(text, crypto))
      expect(error.code, text).toBe('BAD_TOKEN')
      expect(error.message, text).toMatch(/the signature is not base64url/)
    }
    expect(refusal(() => decodeToken(`${prefix}.${payload}=.${signature}`, crypto)).message).toMatch(/^BAD_TOKEN: token does not decode: BAD_BASE64: the payload is not base64url/)
    // Cut short: the signature has too few bytes, which is not a forgery.
    const cut = refusal(() => decodeToken(token.slice(0, -10), crypto))
    expect(cut.code).toBe('BAD_TOKEN')
    expect(cut.message).toMatch(/the signature is 57 bytes, not 64/)
    expect(decodeToken(token, crypto).id).toBe(decodeToken(` ${token}`.trim(), crypto).id)
  })

  it('refuses times no date can show, even signed by the issuer, naming the field', () => {
    const signed = (change: (claims: Record<string, unknown>) => void): string => {
      const [prefix, payload] = withClaims(issue(), change).split('.') as [string, string]
      return `${prefix}.${payload}.${Buffer.from(owner.sign(tokenSignable(Buffer.from(payload, 'base64url')))).toString('base64url')}`
    }
    const last = Date.UTC(9999, 11, 31, 23, 59, 59, 999)
    expect(decodeToken(signed((claims) => { claims.expiresAt = last }), crypto).expiresAt).toBe(last)
    for (const [field, value] of [['expiresAt', last + 1], ['expiresAt', Number.MAX_SAFE_INTEGER], ['issuedAt', 8.64e15 + 1]] as const) {
      const error = refusal(() => decodeToken(signed((claims) => { claims[field] = value }), crypto))
      expect(error.code).toBe('BAD_TOKEN')
      expect(error.message).toContain(`OUT_OF_RANGE: ${value} is outside [0, ${last}] (token.${field})`)
    }
  })

  it('refuses a token that expires no later than it was issued, even signed by the issuer', () => {
    const signed = (change: (claims: Record<string, unknown>) => void): string => {
      const [prefix, payload] = withClaims(issue(), change).split('.') as [string, string]
      return `${prefix}.${payload}.${Buffer.from(owner.sign(tokenSignable(Buffer.from(payload, 'base64url')))).toString('base64url')}`
    }
    for (const lifetime of [0, -1, -HOUR_MS]) {
      const error = refusal(() => decodeToken(signed((claims) => { claims.expiresAt = (claims.issuedAt as number) + lifetime }), crypto))
      expect(error.code, String(lifetime)).toBe('BAD_TOKEN')
      expect(error.message).toMatch(/BAD_LIFETIME: it expires \(.+\) no later than it was issued \(.+\) \(token\.expiresAt\)/)
    }
    expect(decodeToken(signed((claims) => { claims.expiresAt = (claims.issuedAt as number) + 1 }), crypto).expiresAt).toBeGreaterThan(0)
  })

  it('refuses bad requests naming the field', () => {
    expect(refusal(() => issue({ permissions: [] })).code).toBe('EMPTY')
    expect(refusal(() => issue({ permissions: ['read', 'fly'] })).where.field).toBe('token.permissions[1]')
    expect(refusal(() => issue({ audience: 'AB'.repeat(32) })).where.field).toBe('token.audience')
    // No key anyone holds: the identity point (small order: forged proofs verify under it) and
    // 32 bytes that decode to no point of the curve.
    for (const audience of [`01${'00'.repeat(31)}`, 'ff'.repeat(32)]) {
      expect(refusal(() => issue({ audience })), audience).toMatchObject({ code: 'BAD_KEY', where: { field: 'token.audience' } })
    }
    expect(refusal(() => issue({ scope: {} })).code).toBe('EMPTY_SCOPE')
    // A tag predicate that names no tag would hold for every record: it is no scope at all.
    for (const tags of [{}, { any: [] }, { all: [], none: [] }, { any: [], all: [], none: [] }]) {
      expect(refusal(() => issue({ scope: { tags } })).code, JSON.stringify(tags)).toBe('EMPTY_SCOPE')
    }
    expect(decodeToken(issue({ scope: { kinds: ['fact'], tags: { any: [], none: ['secret'] } } }), crypto).scope).toEqual({ kinds: ['fact'], tags: { none: ['secret'] } })
    expect(refusal(() => issue({ scope: { kinds: ['feelings'] } })).code).toBe('UNKNOWN_KIND')
    expect(refusal(() => issue({ expiresIn: 0 })).where.field).toBe('token.expiresIn')
  })
})

describe('scopeAllows', () => {
  const fact = { id: 'fact_1', kind: 'fact', tags: ['work'] }
  it('lets an empty tag predicate reach nothing beyond the listed ids, however the scope was built', () => {
    expect(scopeAllows({ tags: {} }, fact)).toBe(false)
    expect(scopeAllows({ tags: { any: [], all: [], none: [] } }, fact)).toBe(false)
    expect(scopeAllows({ ids: ['fact_1'], tags: {} }, fact)).toBe(true)
    expect(scopeAllows({ tags: { none: ['secret'] } }, fact)).toBe(true)
    expect(scopeAllows({ tags: { none: ['work'] } }, fact)).toBe(false)
    expect(scopeAllows({ kinds: ['fact'], tags: {} }, fact)).toBe(true)
  })
})

describe('memory.createToken and revokeToken', () => {
  it('only an admin issues tokens, and a revocation is an event every replica learns', async () => {
    const owner = await openOwner(teardown)
    const writer = await openReplica(teardown, owner, { grant: true })
    await writer.ingest(await owner.events())
    const token = tokenFor(owner, writer, { all: true })
    expect(refusal(() => tokenFor(writer, owner, { all: true })).code).toBe('NOT_AUTHORIZED')
    const id = decodeToken(token, crypto).id
    const before = owner.versionVector()
    await owner.revokeToken(token)
    expect(owner.log.isTokenRevoked(id)).toBe(true)
    expect(owner.versionVector()[owner.author]).toBe((before[owner.author] ?? 0) + 1)
    expect(writer.log.isTokenRevoked(id)).toBe(false)
    await writer.ingest(await owner.events(writer.versionVector()))
    expect(writer.log.isTokenRevoked(id)).toBe(true)
    // By id, too.
    const second = tokenFor(owner, writer, { all: true })
    await owner.revokeToken(decodeToken(second, crypto).id)
    expect(owner.log.isTokenRevoked(decodeToken(second, crypto).id)).toBe(true)
  })
})

interface Stage {
  readonly clock: ManualClock
  readonly relay: Relay
  readonly owner: Memory
  readonly peer: Memory
  /** The peer's event that never reached the relay, and the owner's that never reached the peer. */
  readonly peerVector: Record<string, number>
}

async function syncOnce(memory: Memory, url: string, token?: string): Promise<void> {
  const client = await startSync(teardown, memory, url, { live: false, ...(token ? { token } : {}) })
  await client.synced()
}

/**
 * A relay holding the owner's space; a granted peer that synced once with a good token, then
 * wrote offline, while the owner wrote something the peer has not seen.
 */
async function stage(): Promise<Stage> {
  const clock = new ManualClock(T0)
  const relay = await startRelay(teardown, { clock })
  const owner = await openOwner(teardown, { clock })
  await owner.remember({ kind: 'episode', summary: 'before the peer came' })
  const peer = await openReplica(teardown, owner, { clock, grant: true })
  await syncOnce(owner, relay.url)
  await syncOnce(peer, relay.url, tokenFor(owner, peer, { all: true }, ['read', 'write']))
  expect(peer.versionVector()).toEqual(owner.versionVector())
  await peer.remember({ kind: 'episode', summary: 'written offline by the peer' })
  await owner.remember({ kind: 'episode', summary: 'written by the owner later' })
  await syncOnce(owner, relay.url)
  return { clock, relay, owner, peer, peerVector: peer.versionVector() }
}

/** The peer presents `token`: refused with `code`, status error, nothing moved either way. */
async function expectRefused(s: Stage, token: string | undefined, code: string): Promise<void> {
  const client = await startSync(teardown, s.peer, s.relay.url, token === undefined ? {} : { token })
  const error = await refusalOf(client)
  expect(error.code).toBe(code)
  expect(client.status).toBe('error')
  expect(s.peer.versionVector()).toEqual(s.peerVector)
  const relayCopy = await download(teardown, s.relay.url, s.owner)
  expect(relayCopy.versionVector()).toEqual(s.owner.versionVector())
  expect(relayCopy.versionVector()[s.peer.author]).toBeUndefined()
}

describe('tokens through the relay', () => {
  const cases: { name: string; code: string; token: (s: Stage) => Promise<string | undefined> | string | undefined }[] = [
    { name: 'no token from a key without full access', code: 'TOKEN_REQUIRED', token: () => undefined },
    {
      name: 'an expired token (the relay\'s clock is past expiry plus skew)', code: 'TOKEN_EXPIRED',
      token: (s) => {
        const token = s.owner.createToken({ audience: s.peer.author, scope: { all: true }, permissions: ['read', 'write'], expiresIn: 60_000 })
        s.clock.advance(60_000 + CLOCK_SKEW_MS + 1)
        return token
      },
    },
    {
      name: 'a token issued to another key', code: 'WRONG_AUDIENCE',
      token: (s) => s.owner.createToken({ audience: Identity.generate().author, scope: { all: true }, permissions: ['read'], expiresIn: HOUR_MS }),
    },
    {
      name: 'a revoked token', code: 'TOKEN_REVOKED',
      token: async (s) => {
        const token = tokenFor(s.owner, s.peer, { all: true }, ['read', 'write'])
        await s.owner.revokeToken(token)
        await syncOnce(s.owner, s.relay.url)
        return token
      },
    },
    {
      name: 'a token with a flipped signature byte', code: 'TOKEN_FORGED',
      token: (s) => flipByte(tokenFor(s.owner, s.peer, { all: true }, ['read', 'write']), 2, 7, 0x40),
    },
    {
      name: 'another key\'s token re-addressed to this key', code: 'TOKEN_FORGED',
      token: (s) => withClaims(tokenFor(s.owner, s.owner, { all: true }, ['read', 'write']), (claims) => { claims.audience = s.peer.author }),
    },
    {
      name: 'a token signed by a granted writer without the admin right', code: 'ISSUER_NOT_AUTHORIZED',
      token: (s) => createToken(s.peer.identity, s.owner.space, { audience: s.peer.author, scope: { all: true }, permissions: ['read', 'write'], expiresIn: HOUR_MS }, T0, crypto),
    },
    {
      name: 'a token for another space', code: 'WRONG_SPACE',
      token: async (s) => {
        const elsewhere = await openOwner(teardown, { clock: s.clock })
        return elsewhere.createToken({ audience: s.peer.author, scope: { all: true }, permissions: ['read', 'write'], expiresIn: HOUR_MS })
      },
    },
    { name: 'a malformed token', code: 'BAD_TOKEN', token: () => 'ct1.bm90IGEgdG9rZW4.AAAA' },
  ]

  it('refuses a peer that names a key it cannot prove (the owner\'s, or a token\'s audience) with BAD_PROOF, and sends it nothing', async () => {
    const s = await stage()
    const impostor = Identity.generate()
    const attempts = [
      { claim: s.owner.author },
      { claim: s.peer.author, token: tokenFor(s.owner, s.peer, { all: true }, ['read', 'write']) },
    ]
    for (const { claim, token } of attempts) {
      const raw = await RawPeer.connect(s.relay.url)
      const answer = await raw.handshake(impostor, s.owner.space, { claim, ...(token ? { token } : {}) })
      expect(answer).toMatchObject({ type: 'error', code: 'BAD_PROOF' })
      await raw.closed
      expect(raw.received.filter((message) => message.type === 'events' || message.type === 'ready')).toEqual([])
    }
  })

  it('refuses a hello offering only protocol versions it does not speak with UNSUPPORTED_VERSION', async () => {
    const s = await stage()
    const raw = await RawPeer.connect(s.relay.url)
    const answer = await raw.handshake(s.owner.identity, s.owner.space, { versions: [3, 99] })
    expect(answer).toMatchObject({ type: 'error', code: 'UNSUPPORTED_VERSION' })
    await raw.closed
    // The highest version both speak.
    for (const [versions, chosen] of [[[99, 1], 1], [[1, 2, 99], 2], [[2], 2]] as const) {
      const agreed = await RawPeer.connect(s.relay.url)
      teardown.add(0, () => agreed.close())
      expect(await agreed.handshake(s.owner.identity, s.owner.space, { versions: [...versions] })).toMatchObject({ type: 'ready' })
      expect(await agreed.next('welcome')).toMatchObject({ version: chosen })
    }
  })

  for (const { name, code, token } of cases) {
    it(`refuses ${name} with ${code}, and nothing syncs either way`, async () => {
      const s = await stage()
      await expectRefused(s, await token(s), code)
    })
  }

  it('closes a live session with TOKEN_REVOKED when the revocation arrives, and refuses the token afterwards', async () => {
    const s = await stage()
    const ownerClient = await startSync(teardown, s.owner, s.relay.url)
    await ownerClient.synced()
    const token = tokenFor(s.owner, s.peer, { all: true }, ['read', 'write'])
    const client = await startSync(teardown, s.peer, s.relay.url, { token })
    await client.synced()
    await waitFor(() => s.peer.versionVector()[s.owner.author] === s.owner.versionVector()[s.owner.author], 'the peer to catch up')
    const errors: string[] = []
    client.on('error', (error) => errors.push(error.code))
    await s.owner.revokeToken(token)
    await waitFor(() => client.status === 'error', 'the session to end')
    expect(errors).toContain('TOKEN_REVOKED')
    const seen = s.peer.versionVector()
    // The owner keeps writing; the revoked peer receives none of it.
    await s.owner.remember({ kind: 'episode', summary: 'after the revocation' })
    await waitFor(async () => (await download(teardown, s.relay.url, s.owner)).versionVector()[s.owner.author] === s.owner.versionVector()[s.owner.author], 'the relay to hold the new event')
    expect(s.peer.versionVector()).toEqual(seen)
    const again = await startSync(teardown, s.peer, s.relay.url, { token })
    expect((await refusalOf(again)).code).toBe('TOKEN_REVOKED')
  })

  it('closes a live session with TOKEN_EXPIRED when its token expires (past the clock skew)', async () => {
    const relay = await startRelay(teardown)
    // The owner's clock runs CLOCK_SKEW_MS behind: its token's expiry plus the skew the relay
    // tolerates lands 400 ms from now on the relay's clock.
    const owner = await openOwner(teardown, { clock: new ManualClock(Date.now() - CLOCK_SKEW_MS) })
    await syncOnce(owner, relay.url)
    const peer = await openReplica(teardown, owner)
    const client = await startSync(teardown, peer, relay.url, {
      token: owner.createToken({ audience: peer.author, scope: { all: true }, permissions: ['read'], expiresIn: 400 }),
    })
    await client.synced()
    expect(client.status).toBe('live')
    const error = await failureOf(client)
    expect(error.code).toBe('TOKEN_EXPIRED')
    expect(client.status).toBe('error')
  })

  it('serves a token valid for longer than a timer can wait (24.8 days) until it expires, not until the timer fires', async () => {
    const DAY_MS = 24 * HOUR_MS
    const clock = new ManualClock(Date.now())
    const relay = await startRelay(teardown, { clock })
    const owner = await openOwner(teardown)
    await syncOnce(owner, relay.url)
    const peer = await openReplica(teardown, owner)
    // The relay's long timers, caught so that the test can run them when their time would come.
    const longTimers: (() => void)[] = []
    const realSetTimeout = globalThis.setTimeout
    const spy = vi.spyOn(globalThis, 'setTimeout').mockImplementation(((run: () => void, ms?: number) => {
      if ((ms ?? 0) >= 2 ** 31 - 1) longTimers.push(run)
      return realSetTimeout(run, (ms ?? 0) >= 2 ** 31 - 1 ? 2 ** 31 - 1 : ms)
    }) as typeof setTimeout)
    teardown.add(0, () => spy.mockRestore())
    const client = await startSync(teardown, peer, relay.url, {
      token: owner.createToken({ audience: peer.author, scope: { all: true }, permissions: ['read'], expiresIn: 60 * DAY_MS }),
    })
    await client.synced()
    expect(longTimers).toHaveLength(1)
    // 24.8 days on: the token holds for 35 more, so the relay waits again instead of ending the session.
    clock.advance(2 ** 31 - 1)
    ;(longTimers.shift() as () => void)()
    expect(longTimers).toHaveLength(1)
    await sleep(50)
    expect(client.status).toBe('live')
    // Past the expiry (and the skew), the next wait is short and ends the session.
    clock.advance(40 * DAY_MS)
    ;(longTimers.shift() as () => void)()
    const error = await failureOf(client)
    expect(error.code).toBe('TOKEN_EXPIRED')
  })

  // The handshake accepts a token up to CLOCK_SKEW_MS after its expiry; the session's expiry
  // timer must allow the same skew, or such a token is cut right after `ready`.
  it('serves a token that expired less than the clock skew ago, as docs/protocol.md promises', async () => {
    const clock = new ManualClock(T0)
    const relay = await startRelay(teardown, { clock })
    const owner = await openOwner(teardown, { clock })
    await owner.remember({ kind: 'episode', summary: 'hello' })
    await syncOnce(owner, relay.url)
    const peer = await openReplica(teardown, owner, { clock })
    const token = owner.createToken({ audience: peer.author, scope: { all: true }, permissions: ['read'], expiresIn: 1000 })
    clock.advance(10_000)
    const client = await startSync(teardown, peer, relay.url, { token })
    await client.synced()
    // The session must not be cut right after `ready` (the expiry timer fires at once today).
    await sleep(300)
    expect(client.status).toBe('live')
    expect(peer.versionVector()).toEqual(owner.versionVector())
  })
})

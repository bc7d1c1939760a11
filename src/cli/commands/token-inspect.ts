/**
 * `cairn token inspect <token>`: decodes a capability token and shows what it allows, after
 * checking its signature against the issuer key it names. With --dir it also asks that home
 * whether the token is revoked and whether its issuer is an admin there, as a relay would.
 *
 * Invariant: a token whose signature does not verify is never described as if it were valid:
 * it exits 1 with TOKEN_FORGED (or BAD_TOKEN when it does not decode at all); an operand that
 * is no token (not ct1.…) is a usage error, exit 2, as in `token revoke`.
 */
import { canonicalJson, defaultCrypto, type CapabilityToken, type JsonValue, type Memory } from '../../index.js'
import { EXIT_OK } from '../command.js'
import { DIR_FLAG, resolveHomeDir, withMemory } from '../home.js'
import { JSON_FLAG } from '../memory-flags.js'
import { defineOperandCommand } from '../operand-command.js'
import { decodeTokenArgument } from '../sync-flags.js'
import { alignedLines, tokenLines } from '../token-format.js'

interface HomeView {
  readonly revoked: boolean
  readonly issuerIsAdmin: boolean
}

/** What the home knows of the token, or undefined when it holds another space. */
function homeView(memory: Memory, token: CapabilityToken): HomeView | undefined {
  if (memory.space !== token.space) return undefined
  const log = memory.log
  return { revoked: log.isTokenRevoked(token.id), issuerIsAdmin: log.owner === token.issuer || log.rightsOf(token.issuer).includes('admin') }
}

export const tokenInspectCommand = defineOperandCommand({
  name: 'token inspect',
  summary: 'show what a capability token allows, checking its signature',
  synopsis: 'token inspect <token> [--dir D] [--json]',
  description: `
Prints the token's id, space, issuer, audience, scope, permissions, issue and expiry times
and whether it has expired, once its signature verifies against the issuer's key. With
--dir, also whether that home knows of its revocation and whether the issuer is an admin of
the space there (a relay refuses the token otherwise). With --json one object: the token's
fields (times in ms since the epoch) plus "expired", and "revoked" and "issuerIsAdmin" with
--dir. Exits 1 with TOKEN_FORGED when the signature does not verify, BAD_TOKEN when it does
not decode; exits 2 with BAD_TOKEN when <token> is no token at all (not ct1.…).`,
  operands: [{ name: 'token', description: 'the token, ct1.…', required: true }],
  flags: {
    dir: { ...DIR_FLAG, description: 'also check revocation and the issuer\'s right in this home' },
    json: JSON_FLAG,
  },
  async run(flags, operands, context) {
    const now = Date.now()
    const token = decodeTokenArgument(operands.token as string, defaultCrypto(), { field: '<token>' })
    const view = flags.dir === undefined
      ? undefined
      : await withMemory(resolveHomeDir(context.cwd, flags.dir), { create: false }, (memory) => Promise.resolve(homeView(memory, token) ?? null))
    if (flags.json) {
      const extra = view ? { revoked: view.revoked, issuerIsAdmin: view.issuerIsAdmin } : {}
      await context.stdout.write(`${canonicalJson({ ...(token as unknown as Record<string, JsonValue>), expired: token.expiresAt < now, ...extra })}\n`)
      return EXIT_OK
    }
    const rows = tokenLines(token, now)
    if (view === null) rows.push(['revoked', 'unknown (that home holds another space)'])
    if (view) rows.push(['revoked', view.revoked ? 'yes' : 'no'], ['issuer', view.issuerIsAdmin ? 'an admin of the space' : 'NOT an admin of the space (relays refuse the token)'])
    await context.stdout.write(alignedLines(rows))
    return EXIT_OK
  },
})

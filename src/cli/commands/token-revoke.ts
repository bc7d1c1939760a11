/**
 * `cairn token revoke <token-or-id>`: appends a signed revocation of a capability token to this
 * home's log. It takes effect wherever it arrives: the next `cairn sync` carries it to the
 * relay, which then refuses the token and ends any session that relied on it.
 *
 * Invariant: only a token of this home's space is revoked (a token string for another space is
 * refused before anything is written); revoking twice writes nothing the second time; a home
 * without the admin right is refused before anything is written, as `token create` refuses.
 */
import { AuthError, canonicalJson, defaultCrypto, TOKEN_PREFIX } from '../../index.js'
import { EXIT_OK } from '../command.js'
import { DIR_FLAG, resolveHomeDir, withMemory } from '../home.js'
import { JSON_FLAG } from '../memory-flags.js'
import { defineOperandCommand } from '../operand-command.js'
import { decodeTokenArgument, hexKey } from '../sync-flags.js'

export const tokenRevokeCommand = defineOperandCommand({
  name: 'token revoke',
  summary: 'revoke a capability token for every replica and relay',
  synopsis: 'token revoke <token-or-id> [--dir D] [--json]',
  description: `
Appends a signed revocation of the token (given whole, ct1.…, or by its id) to this home's
log; this home's key must be the space's owner or an admin. Relays and replicas refuse the
token once the revocation reaches them: run \`cairn sync\` to carry it to the relay. Prints the
revoked token id; with --json {"id": hex, "revoked": true, "wasRevoked": boolean}. A token
already revoked here is reported and nothing is written.`,
  operands: [{ name: 'token-or-id', description: 'the token, or its 64-hex id (`cairn token inspect` shows it)', required: true }],
  flags: { dir: DIR_FLAG, json: JSON_FLAG },
  async run(flags, operands, context) {
    const given = (operands['token-or-id'] as string).trim()
    const where = { field: '<token-or-id>' }
    const dir = resolveHomeDir(context.cwd, flags.dir)
    // Checked before the home opens: a mistyped id is a usage error wherever it is run.
    const token = given.startsWith(`${TOKEN_PREFIX}.`) ? decodeTokenArgument(given, defaultCrypto(), where) : undefined
    const id = token?.id ?? hexKey(given, where, 'a token (ct1.…) or a token id')
    const { wasRevoked } = await withMemory(dir, { create: false }, async (memory) => {
      if (token && token.space !== memory.space) throw new AuthError('WRONG_SPACE', `the token is for space ${token.space}, this home holds ${memory.space}`, where)
      const wasRevoked = memory.log.isTokenRevoked(id)
      if (wasRevoked) return { wasRevoked }
      if (!memory.log.rightsOf(memory.author).includes('admin')) {
        throw new AuthError('NOT_AUTHORIZED', 'only the owner or an admin of the space revokes tokens', { author: memory.author })
      }
      await memory.revokeToken(id)
      return { wasRevoked }
    })
    if (flags.json) {
      await context.stdout.write(`${canonicalJson({ id, revoked: true, wasRevoked })}\n`)
      return EXIT_OK
    }
    await context.stdout.write(wasRevoked
      ? `token ${id} was already revoked here; nothing written\n`
      : `revoked token ${id}\nrun \`cairn sync\` to carry the revocation to the relay\n`)
    return EXIT_OK
  },
})

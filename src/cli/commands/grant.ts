/**
 * `cairn grant <author-key>`: lets another replica's key write to this space (or, with
 * --admin, also grant others and issue tokens), with a signed grant event in this home's log.
 * Replicas and relays judge each event by the grants in its causal past, so the grant counts
 * for the grantee's writes once it has synced the grant.
 *
 * Invariant: a home without the admin right is refused before anything is written, in the
 * terms of `token create` rather than the log's (an event's causal past).
 */
import { AuthError, canonicalJson } from '../../index.js'
import { assertPublicKey } from '../../log/ids.js'
import { EXIT_OK } from '../command.js'
import { DIR_FLAG, resolveHomeDir, withMemory } from '../home.js'
import { JSON_FLAG } from '../memory-flags.js'
import { defineOperandCommand } from '../operand-command.js'
import { markUsage } from '../operand-args.js'
import { hexKey } from '../sync-flags.js'

export const grantCommand = defineOperandCommand({
  name: 'grant',
  summary: 'let another replica\'s key write to this space',
  synopsis: 'grant <author-key> [--admin] [--dir D] [--json]',
  description: `
Appends a signed grant of the write right (with --admin, the admin right too: grant others,
issue and revoke tokens) to <author-key>, the key another replica's \`cairn init\` printed.
This home's key must be the space's owner or an admin. The grantee can write once it has
synced the grant (\`cairn sync\` here, then there). To sync through a relay, a key that is not
an admin also needs a token: \`cairn token create --audience KEY --permission read,write\`.
Prints the grant; with --json {"author": hex, "rights": [...]}.`,
  operands: [{ name: 'author-key', description: 'the author key to grant (64 hex characters)', required: true }],
  flags: {
    dir: DIR_FLAG,
    admin: { type: 'boolean', description: 'grant the admin right as well as write' },
    json: JSON_FLAG,
  },
  async run(flags, operands, context) {
    const author = hexKey(operands['author-key'] as string, { field: '<author-key>' }, 'an author key')
    try {
      assertPublicKey(author, { field: '<author-key>' })
    } catch (error) {
      throw markUsage(error as Error)
    }
    const rights = flags.admin ? ['write', 'admin'] as const : ['write'] as const
    const dir = resolveHomeDir(context.cwd, flags.dir)
    await withMemory(dir, { create: false }, async (memory) => {
      if (!memory.log.rightsOf(memory.author).includes('admin')) {
        throw new AuthError('NOT_AUTHORIZED', 'only the owner or an admin of the space grants access', { author: memory.author })
      }
      await memory.grant(author, rights)
    })
    await context.stdout.write(flags.json
      ? `${canonicalJson({ author, rights: [...rights] })}\n`
      : `granted ${rights.join(' and ')} to ${author}\nrun \`cairn sync\` so the grantee (and the relay) receive the grant\n`)
    return EXIT_OK
  },
})

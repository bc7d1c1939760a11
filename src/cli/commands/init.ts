/**
 * `cairn init`: creates a Cairn home through the library's `initHome`: a new identity and a new
 * space it owns, or (with --space) a new identity joining an existing space as a replica that
 * learns the space from its first sync. Refuses a directory that already holds a home, so an
 * existing key and log are never overwritten.
 */
import { canonicalJson, initHome } from '../../index.js'
import { defineCommand, EXIT_OK } from '../command.js'
import { DIR_FLAG, resolveHomeDir } from '../home.js'
import { usageError } from '../operand-args.js'
import { hexKey } from '../sync-flags.js'

export const initCommand = defineCommand({
  name: 'init',
  summary: 'create a Cairn home: a new identity and a new space it owns (or joins)',
  synopsis: 'init [--dir D] [--name N | --space S] [--json]',
  description: `
Writes <D>/identity.json (mode 0600), <D>/config.json and the log store <D>/store/, then
prints the new space id and this replica's author key. With --json it prints one object:
{"author": hex, "dir": path, "space": hex}. Fails with ALREADY_INITIALIZED when <D> is
already a Cairn home.

With --space S (a space id, as \`cairn init\` printed it on the owner's home), the new identity
joins that space instead: the home starts empty and receives the space from its first
\`cairn sync\`. Print its author key for the owner, who grants it (\`cairn grant\`) and issues
it a token (\`cairn token create --audience KEY\`).`,
  flags: {
    dir: DIR_FLAG,
    name: { type: 'string', valueName: 'N', description: 'a name for the space, kept in its genesis event' },
    space: { type: 'string', short: 's', valueName: 'S', description: 'join this existing space (its id) as a new replica' },
    json: { type: 'boolean', description: 'print the result as JSON' },
  },
  async run(flags, context) {
    const dir = resolveHomeDir(context.cwd, flags.dir)
    if (flags.space !== undefined && flags.name !== undefined) throw usageError('CONFLICTING_FLAGS', 'a joined space keeps the name its owner gave it; drop --name', { flag: '--name' })
    const space = flags.space === undefined ? undefined : hexKey(flags.space, { flag: '--space' }, 'a space id')
    const home = await initHome(dir, space !== undefined ? { space } : flags.name === undefined ? {} : { name: flags.name })
    try {
      const { author } = home.config
      if (flags.json) {
        await context.stdout.write(`${canonicalJson({ dir, space: home.config.space, author })}\n`)
      } else {
        await context.stdout.write([
          `initialized Cairn home ${dir}`,
          `space   ${home.config.space}`,
          `author  ${author}`,
          ...(home.config.role === 'replica' ? ['a new replica of that space: it is empty until `cairn sync` brings the space from a relay'] : []),
          '',
        ].join('\n'))
      }
      return EXIT_OK
    } finally {
      await home.store.close()
    }
  },
})

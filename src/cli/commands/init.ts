/**
 * `cairn init`: creates a Cairn home (a new identity and a new space it owns) through the
 * library's `initHome`. Refuses a directory that already holds a home, so an existing key and
 * log are never overwritten.
 */
import { canonicalJson, initHome } from '../../index.js'
import { defineCommand, EXIT_OK } from '../command.js'
import { DIR_FLAG, resolveHomeDir } from '../home.js'

export const initCommand = defineCommand({
  name: 'init',
  summary: 'create a Cairn home: a new identity and a new space it owns',
  synopsis: 'init [--dir D] [--name N] [--json]',
  description: `
Writes <D>/identity.json (mode 0600), <D>/config.json and the log store <D>/store/, then
prints the new space id and this replica's author key. With --json it prints one object:
{"author": hex, "dir": path, "space": hex}. Fails with ALREADY_INITIALIZED when <D> is
already a Cairn home.`,
  flags: {
    dir: DIR_FLAG,
    name: { type: 'string', valueName: 'N', description: 'a name for the space, kept in its genesis event' },
    json: { type: 'boolean', description: 'print the result as JSON' },
  },
  async run(flags, context) {
    const dir = resolveHomeDir(context.cwd, flags.dir)
    const home = await initHome(dir, flags.name === undefined ? {} : { name: flags.name })
    try {
      const { space, author } = home.config
      if (flags.json) {
        await context.stdout.write(`${canonicalJson({ dir, space, author })}\n`)
      } else {
        await context.stdout.write([
          `initialized Cairn home ${dir}`,
          `space   ${space}`,
          `author  ${author}`,
          '',
        ].join('\n'))
      }
      return EXIT_OK
    } finally {
      await home.store.close()
    }
  },
})

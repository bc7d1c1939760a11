/**
 * `cairn log`: lists the events of the home's space in the order this store applied them (a
 * causal order). Human output is a fixed-width table; `--json` is JSON Lines, one complete
 * event per line, so a long log streams and each line parses on its own.
 */
import { shortId } from '../../index.js'
import { defineCommand, EXIT_OK } from '../command.js'
import { eventJsonLine, eventTable } from '../format.js'
import { DIR_FLAG, resolveHomeDir, withHome } from '../home.js'

export const logCommand = defineCommand({
  name: 'log',
  summary: 'list the events of the space, in apply order',
  synopsis: 'log [--dir D] [--json]',
  description: `
Prints one row per event: its position in this store (#), short id, short author key, seq in
the author's chain, whether a signature is stored with it (sig), its clock time, op, and the
start of its data. With --json it prints JSON Lines: one object per event, in the same
order, each {"id", "local", "recordedAt", "header": {every header field}, "bodyState":
"present"|"erased"|"absent", "body": {"op","data","salt"}|null, "signature": hex|null}.`,
  flags: {
    dir: DIR_FLAG,
    json: { type: 'boolean', description: 'print JSON Lines: one complete event object per line' },
  },
  async run(flags, context) {
    const dir = resolveHomeDir(context.cwd, flags.dir)
    return withHome(dir, async ({ log }) => {
      if (flags.json) {
        for await (const event of log.readApplied()) await context.stdout.write(eventJsonLine(event))
        return EXIT_OK
      }
      const vector = log.versionVector()
      const authors = Object.keys(vector).length
      const events = Object.values(vector).reduce((sum, seq) => sum + seq, 0)
      await context.stdout.write(`space ${shortId(log.space)}  ${events} event${events === 1 ? '' : 's'}, ${authors} author${authors === 1 ? '' : 's'}\n`)
      if (events === 0) {
        await context.stdout.write('(the store holds no events of this space: a replica that has not synced yet, or a lost store)\n')
        return EXIT_OK
      }
      const table = eventTable(vector)
      await context.stdout.write(`${table.heading}\n`)
      for await (const event of log.readApplied()) await context.stdout.write(`${table.row(event)}\n`)
      return EXIT_OK
    })
  },
})

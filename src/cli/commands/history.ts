/**
 * `cairn history <id>`: the events that shaped a record, oldest first, as this store holds
 * them. After a forget only the tombstone is listed: the content events' bodies are erased and
 * the record's history is reduced to what a replica that never saw the content would hold.
 */
import { canonicalJson, type JsonValue } from '../../index.js'
import { EXIT_OK } from '../command.js'
import { DIR_FLAG, resolveHomeDir, withMemory } from '../home.js'
import { JSON_FLAG, recordError } from '../memory-flags.js'
import { defineOperandCommand } from '../operand-command.js'
import { formatTable, HISTORY_HEADING, historyRow } from '../record-format.js'

export const historyCommand = defineOperandCommand({
  name: 'history',
  summary: 'list the events that shaped a record, oldest first',
  synopsis: 'history <id> [--dir D] [--json]',
  description: `
Prints one row per event: its position in this store (#), op, author (short key; "(me)" for
this replica), recorded time (when this store applied it, to the millisecond: what --as-of
takes), body state (present, erased or absent) and short event id. After \`cairn forget\`
only the delete remains. With --json: {"id": id, "events": [{"event", "local", "type", "op"?,
"author", "clock": {"wall", "logical"}, "recordedAt", "bodyState"}, …]}. Exits 1 with
UNKNOWN_RECORD when no event of this store touched the id.`,
  operands: [{ name: 'id', description: 'the record id', required: true }],
  flags: {
    dir: DIR_FLAG,
    json: JSON_FLAG,
  },
  async run(flags, operands, context) {
    const id = operands.id as string
    const dir = resolveHomeDir(context.cwd, flags.dir)
    const { items, self } = await withMemory(dir, { create: false }, async (memory) => ({ items: await memory.history(id), self: memory.author }))
    if (items.length === 0) throw recordError(id, items)
    if (flags.json) {
      await context.stdout.write(`${canonicalJson({ id, events: items as unknown as JsonValue })}\n`)
      return EXIT_OK
    }
    await context.stdout.write(formatTable(HISTORY_HEADING, items.map((item) => historyRow(item, self))))
    return EXIT_OK
  },
})

/**
 * `cairn withheld`: this replica's writes that a relay keeps as headers only, its token not
 * allowing them (sync protocol version 2). `cairn sync` says so once, when the relay does; this
 * lists them whenever asked, from what the store kept (memory.withheld()).
 */
import { canonicalJson, shortId, type JsonValue } from '../../index.js'
import { defineCommand, EXIT_OK } from '../command.js'
import { DIR_FLAG, resolveHomeDir, withMemory } from '../home.js'
import { JSON_FLAG } from '../memory-flags.js'
import { printable } from '../printable.js'
import { formatTable, formatTimeMs } from '../record-format.js'
import { withheldReason } from '../sync-report.js'

const HEADING = ['#', 'event', 'op', 'record', 'relay', 'since', 'why'] as const

export const withheldCommand = defineCommand({
  name: 'withheld',
  summary: 'list writes a relay keeps as headers only (they stay on this device)',
  synopsis: 'withheld [--dir D] [--json]',
  description: `
Lists this replica's events that a relay stores as headers only because the token it syncs
through does not allow them (a write outside the token's scope, say). Their content stays on
this device for good: no later sync sends it, through any token. One row per event and relay,
in the order they were written: position in this store (#), short event id, op, the record
(kind and id), the relay's URL, when the relay said so, and its reason. With --json:
{"withheld": [{"event", "local", "op", "record"?: {"kind", "id"}, "code", "message", "relay",
"at"}, …]} ("at" in ms since the epoch).`,
  flags: {
    dir: DIR_FLAG,
    json: JSON_FLAG,
  },
  async run(flags, context) {
    const dir = resolveHomeDir(context.cwd, flags.dir)
    const notes = await withMemory(dir, { create: false }, (memory) => memory.withheld())
    if (flags.json) {
      await context.stdout.write(`${canonicalJson({ withheld: notes as unknown as JsonValue })}\n`)
      return EXIT_OK
    }
    if (notes.length === 0) {
      await context.stdout.write('no write of this replica is withheld: every relay it synced with took all it sent\n')
      return EXIT_OK
    }
    const rows = notes.map((note) => [
      String(note.local), shortId(note.event), note.op, note.record ? printable(`${note.record.kind} ${note.record.id}`) : '-',
      printable(note.relay), formatTimeMs(note.at), withheldReason(note),
    ])
    await context.stdout.write(formatTable(HEADING, rows))
    return EXIT_OK
  },
})

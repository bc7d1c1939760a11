/**
 * `cairn query`: records matching filters, a page at a time, in index order (never a scan of
 * the log). The cursor it prints continues exactly where the page ended.
 */
import { canonicalJson } from '../../index.js'
import { EXIT_OK } from '../command.js'
import { DIR_FLAG, resolveHomeDir, withMemory } from '../home.js'
import { KINDS_LINE, AS_OF_FLAG, asOfFlag, countFlag, FILTER_FLAGS, filterOf, JSON_FLAG, withFlagErrors } from '../memory-flags.js'
import { defineOperandCommand } from '../operand-command.js'
import { formatTable, recordSummary } from '../record-format.js'

export const queryCommand = defineOperandCommand({
  name: 'query',
  summary: 'list records matching filters, a page at a time',
  synopsis: 'query [--kind K …] [--context C] [--tag T …] [--any-tag T …] [--no-tag T …] [--entity E] [--min-confidence X] [--valid-at T] [--as-of T] [--limit N] [--cursor C] [--dir D] [--json]',
  description: `
Prints one row per record (id, kind, a short summary), then, when more records match, the
cursor for the next page: run the same query with --cursor C to continue. Filters combine
(all must hold); --kind may be repeated (any of the kinds). At most --limit records per page
(default 50, at most 1000). With --json: {"records": [record, …], "cursor": C or null}.
${KINDS_LINE}`,
  operands: [],
  flags: {
    dir: DIR_FLAG,
    ...FILTER_FLAGS,
    'as-of': AS_OF_FLAG,
    cursor: { type: 'string', valueName: 'C', description: 'continue after the page that printed this cursor' },
    json: JSON_FLAG,
  },
  async run(flags, _operands, context) {
    const input = {
      ...filterOf(flags),
      ...(flags.limit !== undefined ? { limit: countFlag(flags.limit, '--limit') } : {}),
      ...(flags.cursor !== undefined ? { cursor: flags.cursor } : {}),
      ...(flags['as-of'] !== undefined ? { asOf: asOfFlag(flags['as-of']) } : {}),
    }
    const dir = resolveHomeDir(context.cwd, flags.dir)
    const page = await withMemory(dir, { create: false }, (memory) => withFlagErrors(() => memory.query(input)))
    if (flags.json) {
      await context.stdout.write(`${canonicalJson({ records: page.records, cursor: page.cursor ?? null })}\n`)
      return EXIT_OK
    }
    if (page.records.length === 0) {
      await context.stdout.write('(no records match)\n')
      return EXIT_OK
    }
    await context.stdout.write(formatTable(['id', 'kind', 'summary'], page.records.map((record) => [record.id, record.kind, recordSummary(record)])))
    if (page.cursor !== undefined) await context.stdout.write(`more: --cursor ${page.cursor}\n`)
    return EXIT_OK
  },
})

/**
 * `cairn search <text>`: full-text search (BM25 over each kind's text fields), best first,
 * optionally narrowed by the same filters as `cairn query`.
 */
import { canonicalJson } from '../../index.js'
import { EXIT_OK } from '../command.js'
import { DIR_FLAG, resolveHomeDir, withMemory } from '../home.js'
import { KINDS_LINE, countFlag, FILTER_FLAGS, filterOf, JSON_FLAG, withFlagErrors } from '../memory-flags.js'
import { defineOperandCommand } from '../operand-command.js'
import { formatTable, recordSummary } from '../record-format.js'

export const searchCommand = defineOperandCommand({
  name: 'search',
  summary: 'full-text search, best matches first, with scores',
  synopsis: 'search <text>… [--kind K …] [--context C] [--tag T …] [--any-tag T …] [--no-tag T …] [--entity E] [--min-confidence X] [--valid-at T] [--limit N] [--dir D] [--json]',
  description: `
Ranks the records whose text matches <text> (several words are joined by spaces) by BM25
score and prints rank, score, id, kind and a short summary, best first; at most --limit
results (default 10). Filters work as in \`cairn query\`. Deleted and redacted records are
never found. With --json: {"results": [{"record": record, "score": number}, …]}.
${KINDS_LINE}`,
  operands: [{ name: 'text', description: 'what to look for', required: true, variadic: true }],
  flags: {
    dir: DIR_FLAG,
    ...FILTER_FLAGS,
    json: JSON_FLAG,
  },
  async run(flags, operands, context) {
    const text = operands.text as string
    const options = { ...filterOf(flags), ...(flags.limit !== undefined ? { limit: countFlag(flags.limit, '--limit') } : {}) }
    const dir = resolveHomeDir(context.cwd, flags.dir)
    const results = await withMemory(dir, { create: false }, (memory) => withFlagErrors(() => memory.search(text, options)))
    if (flags.json) {
      await context.stdout.write(`${canonicalJson({ results: results.map(({ record, score }) => ({ record, score })) })}\n`)
      return EXIT_OK
    }
    if (results.length === 0) {
      await context.stdout.write('(no matches)\n')
      return EXIT_OK
    }
    const rows = results.map(({ record, score }, rank) => [String(rank + 1), score.toFixed(3), record.id, record.kind, recordSummary(record)])
    await context.stdout.write(formatTable(['#', 'score', 'id', 'kind', 'summary'], rows))
    return EXIT_OK
  },
})

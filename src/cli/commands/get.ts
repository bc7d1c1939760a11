/**
 * `cairn get <id>`: one record as this replica shows it, now or at a recorded time (`--as-of`).
 *
 * Invariant: a record the replica does not show is an error (exit 1), never empty output:
 * FORGOTTEN when it was deleted, UNKNOWN_RECORD otherwise, the codes the engine uses.
 */
import { canonicalJson, InputError } from '../../index.js'
import { EXIT_OK } from '../command.js'
import { DIR_FLAG, resolveHomeDir, withMemory } from '../home.js'
import { AS_OF_FLAG, asOfFlag, JSON_FLAG, recordError, withFlagErrors } from '../memory-flags.js'
import { defineOperandCommand } from '../operand-command.js'
import { recordLines } from '../record-format.js'

export const getCommand = defineOperandCommand({
  name: 'get',
  summary: 'print one record by id',
  synopsis: 'get <id> [--as-of T] [--dir D] [--json]',
  description: `
Prints the record's fields as aligned "name  value" lines (strings as they are, other values
as JSON); with --json, the record as one JSON object. With --as-of T, the record as this
replica showed it at recorded time T (RFC 3339, or ms since the epoch as \`cairn history
--json\` prints recordedAt). Exits 1 with FORGOTTEN for a deleted record and UNKNOWN_RECORD
for an id this replica does not hold (or did not hold at T).`,
  operands: [{ name: 'id', description: 'the record id', required: true }],
  flags: {
    dir: DIR_FLAG,
    'as-of': AS_OF_FLAG,
    json: JSON_FLAG,
  },
  async run(flags, operands, context) {
    const id = operands.id as string
    const asOf = flags['as-of'] === undefined ? undefined : asOfFlag(flags['as-of'])
    const dir = resolveHomeDir(context.cwd, flags.dir)
    const view = await withMemory(dir, { create: false }, async (memory) => {
      const found = await withFlagErrors(() => memory.get(id, asOf === undefined ? {} : { asOf }))
      if (found) return found
      if (asOf !== undefined && (await memory.get(id)) !== undefined) {
        throw new InputError('UNKNOWN_RECORD', `record ${id} did not exist yet at ${flags['as-of'] ?? ''}`)
      }
      throw recordError(id, await memory.history(id))
    })
    await context.stdout.write(flags.json ? `${canonicalJson(view)}\n` : recordLines(view))
    return EXIT_OK
  },
})

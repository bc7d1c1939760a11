/**
 * `cairn forget <id>`: deletes a record for good, with what was derived only from it, and
 * prints the signed tombstone. The id never comes back, and the event bodies that carried its
 * content are erased from this store (and from every replica the delete reaches).
 */
import { canonicalJson, shortId, type JsonValue, type Tombstone } from '../../index.js'
import { EXIT_OK } from '../command.js'
import { DIR_FLAG, resolveHomeDir, withMemory } from '../home.js'
import { JSON_FLAG, withRecordErrors } from '../memory-flags.js'
import { defineOperandCommand } from '../operand-command.js'

const DERIVED_NAMES: readonly (readonly [keyof Tombstone['derived'], string])[] = [
  ['factIDs', 'fact'], ['edgeIDs', 'edge'], ['entityIDs', 'entity'], ['chunkIDs', 'chunk'],
  ['recordIDs', 'other record'], ['sentenceIDs', 'sentence'], ['embeddingCacheKeys', 'embedding'], ['episodeLinkCount', 'episode link'],
]

/** "2 facts, 1 edge", or "nothing" when no record was derived only from the target. */
export function derivedSummary(derived: Tombstone['derived']): string {
  const parts = DERIVED_NAMES.flatMap(([key, name]) => {
    const value = derived[key]
    const count = typeof value === 'number' ? value : value?.length ?? 0
    if (count === 0) return []
    return [`${count} ${name === 'entity' && count !== 1 ? 'entities' : `${name}${count === 1 ? '' : 's'}`}`]
  })
  return parts.length === 0 ? 'nothing' : parts.join(', ')
}

export const forgetCommand = defineOperandCommand({
  name: 'forget',
  summary: 'delete a record for good (and what was derived only from it)',
  synopsis: 'forget <id> [--reason R] [--dir D] [--json]',
  description: `
Deletes the record and the records derived only from it (an episode's extracted facts and
the edges it alone evidences, episodes derived only from it and records only it lists in
metadata.cairn_derived, a resource's chunks, an entity's edges), erases the bodies of
the events that carried their content, and writes a signed tombstone that syncs to every
replica. The id can never be remembered again. Prints the tombstone's id, signer and what it
took with it; with --json, the signed tombstone (Portable Memory §5): {"id", "op",
"targetKind", "targetID", "deletedAt", "actor", "derived": {…}, "reason"?, "signature"}.
Exits 1 with UNKNOWN_RECORD or FORGOTTEN when there is nothing to forget.`,
  operands: [{ name: 'id', description: 'the record id', required: true }],
  flags: {
    dir: DIR_FLAG,
    reason: { type: 'string', short: 'r', valueName: 'R', description: 'why, kept in the tombstone' },
    json: JSON_FLAG,
  },
  async run(flags, operands, context) {
    const id = operands.id as string
    const dir = resolveHomeDir(context.cwd, flags.dir)
    const options = flags.reason === undefined ? {} : { reason: flags.reason }
    const tombstone = await withMemory(dir, { create: false }, (memory) => withRecordErrors(id, () => memory.forget(id, options)))
    if (flags.json) {
      await context.stdout.write(`${canonicalJson(tombstone as unknown as JsonValue)}\n`)
      return EXIT_OK
    }
    await context.stdout.write([
      `forgot ${tombstone.targetID} (${tombstone.targetKind})`,
      `tombstone  ${tombstone.id}, signed by ${shortId(tombstone.actor)} at ${tombstone.deletedAt}`,
      `derived    ${derivedSummary(tombstone.derived)} removed with it`,
      ...(tombstone.reason !== undefined ? [`reason     ${tombstone.reason}`] : []),
      '',
    ].join('\n'))
    return EXIT_OK
  },
})

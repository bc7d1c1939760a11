/**
 * Naming the deletions a replica inferred. A record deleted only because a parent of it is (a
 * fact created concurrently with its episode's forget) keeps the bodies that show why, hidden,
 * until an event names it (projection-batch.ts, keepsInferredBodies). A replica holding the
 * `admin` right names them once it has applied events from elsewhere: it appends a delete of
 * each, and the bodies are erased on every replica the delete reaches.
 *
 * Only admins do it: a relay serves an admin key with full access, so its deletes are never
 * refused, where a token-scoped writer's delete of a record outside its scope would end its
 * sync. Several admin devices may name one record concurrently; the tombstone id,
 * `tomb_` + H("unnamed", id), is the same on each, and the record keeps one tombstone.
 */
import { AuthError } from '../errors.js'
import type { AppendEntry, JsonValue } from '../log/index.js'
import { hashParts, MEMORY_OPS, TOMBSTONE_ID_PREFIX, type RecordKind } from '../projection/index.js'
import { emptyDerivedBlock } from './forget-plan.js'
import type { MemoryCore } from './memory-core.js'
import { signTombstone } from './record-entries.js'

/** Deletes named per signed batch. */
const NAMING_BATCH = 1000

/** The reason such a delete carries. */
export const UNNAMED_DELETION_REASON = 'deleted with its parent'

/**
 * Appends a delete of every record this replica holds deleted through a parent and named by
 * no event (q:u), if it holds `admin`, and projects them. Returns how many it named. Must not
 * run inside tracked background work that `core.append` would wait for: it appends directly.
 */
export async function nameInferredDeletions(core: MemoryCore): Promise<number> {
  const { projection } = core
  if (projection.features.onDemand || !projection.mayHoldUnnamed || !core.engine.log.rightsOf(core.author).includes('admin')) return 0
  // Each delete names its record, so each read finds the rest; one still listed after its delete
  // (which should not happen) is not named twice, so this ends whatever the store holds.
  const named = new Set<string>()
  for (;;) {
    // Cleared before the read: a batch storing an entry meanwhile sets it again.
    projection.mayHoldUnnamed = false
    const unnamed = (await core.reader.unnamedDeletions(NAMING_BATCH + named.size)).filter(({ id }) => !named.has(id)).slice(0, NAMING_BATCH)
    if (unnamed.length === 0) return named.size
    const entries: AppendEntry[] = unnamed.map(({ id, kind }) => {
      const tombstone = signTombstone(core, {
        op: 'delete', targetKind: kind, targetID: id, reason: UNNAMED_DELETION_REASON,
        derived: emptyDerivedBlock(),
      }, `${TOMBSTONE_ID_PREFIX}${hashParts('unnamed', id)}`)
      return { op: MEMORY_OPS.delete, data: { kind, id, tombstone: tombstone as unknown as JsonValue, derived: [] } }
    })
    try {
      const events = await core.engine.log.appendBatch(core.engine.identity, entries)
      await projection.catchUp(events)
    } catch (error) {
      projection.mayHoldUnnamed = true
      // The right was revoked since it was read (a concurrent ingest): naming is left to
      // whoever still holds it, and nothing fails for the caller.
      if (error instanceof AuthError) return named.size
      throw error
    }
    for (const { id } of unnamed) named.add(id)
  }
}

/**
 * Appends, if this replica holds `admin`, a delete of each record that an import met under a
 * deleted parent and does not hold (mergeRecords blocks it; a record held here is left alone): what a sync would have done had the
 * record arrived (a create under a deleted parent is deleted where the two meet, and an admin
 * names that deletion), without its content ever being written. Records here that name it (a
 * link to it) are then deleted through it, as where it had arrived before the parent's deletion.
 * The tombstone is the one naming writes (`tomb_` + H("unnamed", id)). Without `admin` nothing
 * is written, as for naming (a token-scoped writer's delete may be refused by its relay).
 * @returns how many it deleted
 */
export async function nameBlockedOrphans(core: MemoryCore, records: readonly { readonly kind: RecordKind; readonly id: string }[]): Promise<number> {
  if (records.length === 0 || core.projection.features.onDemand || !core.engine.log.rightsOf(core.author).includes('admin')) return 0
  // Only records this replica holds nothing of: a delete of a held one is forget's work (its plan
  // takes what was derived from it), never this call's.
  const states = await core.states(records.map(({ id }) => id))
  const absent = records.filter((_, i) => states[i] === undefined)
  const entries = absent.map(({ kind, id }) => {
    const tombstone = signTombstone(core, { op: 'delete', targetKind: kind, targetID: id, reason: UNNAMED_DELETION_REASON, derived: emptyDerivedBlock() }, `${TOMBSTONE_ID_PREFIX}${hashParts('unnamed', id)}`)
    return { op: MEMORY_OPS.delete, data: { kind, id, tombstone: tombstone as unknown as JsonValue, derived: [] } }
  })
  if (entries.length > 0) await core.append(entries)
  return entries.length
}


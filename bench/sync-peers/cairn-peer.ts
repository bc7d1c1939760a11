/**
 * The peer side of Cairn for the sync benchmark: building the source's history (one signed event
 * per mutation), reading a replica's records back in the workload's shape, and watching a replica
 * for records as its projection applies them.
 *
 * Mapping of the workload: a creation is `remember({ kind: 'episode', id, ...8 fields })` (one
 * `memory.create` event), a field write is `update(id, { set: { field: value } })` (one
 * `memory.patch` event). The history is written through the bulk paths (`rememberMany`,
 * `updateMany`) in batches of `SOURCE_BATCH`: the same events an interactive writer makes, but
 * signed once per batch (a signed segment) instead of once per event. On the wire Cairn keeps
 * only the newest signature per author per frame either way (src/sync/frames.ts), so what a
 * receiver verifies does not depend on how the source was written.
 *
 * Invariant: `snapshotRecords` reads only the workload's field names, so the digest compares
 * with the other systems' (Cairn adds defaults such as `eventTime` that the others lack).
 */
import { Identity, Memory, type RecordInput, type RecordView } from '../../src/index.js'
import { FIELD_NAMES } from '../peers/merge-workload.js'
import type { FieldValue, RecordsSnapshot, SourceMutations } from './sync-workload.js'

/** Mutations per signed batch when building the source (as `bench/memory.bench.ts`). */
export const SOURCE_BATCH = 1000

export function episodeOf(recordId: string, fields: Record<string, FieldValue>): RecordInput<'episode'> {
  // The workload's fields include summary; remember checks them at run time.
  return { kind: 'episode' as const, id: recordId, ...fields } as RecordInput<'episode'>
}

/**
 * Writes the whole history into a new home at `dir`, owned by a fresh identity, after granting
 * `admins` the admin right (full access at the relay, as automerge-repo and y-websocket peers
 * have). Closes the home; returns its space and the events it holds.
 */
export async function buildSource(dir: string, mutations: SourceMutations, admins: readonly Identity[]): Promise<{ space: string; events: number }> {
  const source = await Memory.open({ path: dir, name: 'sync-bench' })
  try {
    for (const admin of admins) await source.grant(admin.author, ['admin'])
    const { creations, writes } = mutations
    for (let i = 0; i < creations.length; i += SOURCE_BATCH) {
      await source.rememberMany(creations.slice(i, i + SOURCE_BATCH).map(({ recordId, fields }) => episodeOf(recordId, fields)))
    }
    for (let i = 0; i < writes.length; i += SOURCE_BATCH) {
      await source.updateMany(writes.slice(i, i + SOURCE_BATCH).map((write) => ({ id: write.recordId, changes: { set: { [write.field]: write.value } } })))
    }
    const events = Object.values(source.versionVector()).reduce((sum, seq) => sum + seq, 0)
    return { space: source.space, events }
  } finally {
    await source.close()
  }
}

/** A view's workload fields, as the other systems store them. */
function fieldsOf(view: RecordView): Record<string, FieldValue> {
  const fields: Record<string, FieldValue> = {}
  const source = view as unknown as Record<string, unknown>
  for (const name of FIELD_NAMES) {
    const value = source[name]
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') fields[name] = value
  }
  return fields
}

/** Every record the replica shows whose id starts with `prefix` (all when omitted). */
export async function snapshotRecords(memory: Memory, prefix = ''): Promise<RecordsSnapshot> {
  const records: RecordsSnapshot = {}
  for await (const view of memory.records()) {
    if (view.id.startsWith(prefix)) records[view.id] = fieldsOf(view)
  }
  return records
}

/**
 * Tracks the ids a replica's projection has created, from its change events (so `has` is a
 * synchronous check a wait loop can poll): a record counts once a read would return it.
 */
export class ArrivalWatch {
  readonly ids = new Set<string>()
  private readonly listeners = new Set<() => void>()
  readonly stop: () => void

  constructor(memory: Memory) {
    this.stop = memory.subscribe(({ changes }) => {
      for (const change of changes) if (change.action !== 'deleted') this.ids.add(change.id)
      for (const listener of this.listeners) listener()
    })
  }

  subscribe(notify: () => void): () => void {
    this.listeners.add(notify)
    return () => this.listeners.delete(notify)
  }
}

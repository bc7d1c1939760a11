/**
 * What a deletion takes with it (Portable Memory §7, proof of reach): the records derived only
 * from the target. The deleting replica computes this from what it holds and ships it in the
 * delete, so every replica removes the same records; records it could not know about (created
 * concurrently elsewhere) are caught on arrival by the parent rule (no resurrection).
 *
 *   episode   facts extracted from it (fact.episodeID), edges evidenced only by it, entities
 *             those edges leave with no edge at all, and a count of its episode links
 *   resource  its chunks
 *   entity    its edges
 */
import type { LogStorage } from '../log/storage.js'
import { decodeView, idFromKey, type ProjectionKeys, type RecordKind, type RecordView } from '../projection/index.js'

export interface DerivedBlock {
  readonly sentenceIDs: string[]
  readonly factIDs: string[]
  readonly edgeIDs: string[]
  readonly entityIDs: string[]
  readonly chunkIDs: string[]
  episodeLinkCount: number
  readonly embeddingCacheKeys: string[]
}

export interface ForgetPlan {
  readonly derived: DerivedBlock
  readonly records: { readonly kind: RecordKind; readonly id: string }[]
}

async function keysUnder(storage: LogStorage, prefix: string, end: string): Promise<string[]> {
  const out: string[] = []
  for await (const key of storage.keys({ gte: prefix, lt: end })) out.push(key)
  return out
}

async function views(storage: LogStorage, keys: ProjectionKeys, ids: readonly string[]): Promise<RecordView[]> {
  const values = await storage.getMany(ids.map((id) => keys.view(id)))
  return values.flatMap((bytes) => (bytes ? [decodeView(bytes)] : []))
}

export async function planForget(storage: LogStorage, keys: ProjectionKeys, target: RecordView): Promise<ForgetPlan> {
  const referrers = (await keysUnder(storage, keys.referencePrefix(target.id), keys.end(keys.referencePrefix(target.id)))).map(idFromKey)
  const referring = await views(storage, keys, referrers)
  const derived: DerivedBlock = { sentenceIDs: [], factIDs: [], edgeIDs: [], entityIDs: [], chunkIDs: [], episodeLinkCount: 0, embeddingCacheKeys: [] }
  if (target.kind === 'episode') {
    for (const view of referring) {
      if (view.kind === 'fact' && view.episodeID === target.id) derived.factIDs.push(view.id)
      if (view.kind === 'episodeLink') derived.episodeLinkCount++
      if (view.kind === 'edge' && Array.isArray(view.evidenceEpisodeIDs) && view.evidenceEpisodeIDs.every((id) => id === target.id)) {
        derived.edgeIDs.push(view.id)
      }
    }
    const doomed = new Set(derived.edgeIDs)
    const endpoints = new Set(referring.filter((view) => doomed.has(view.id)).flatMap((view) => [view.srcEntityID, view.dstEntityID]))
    for (const entity of endpoints) {
      if (typeof entity !== 'string') continue
      const edges = (await keysUnder(storage, keys.entityPrefix(entity), keys.end(keys.entityPrefix(entity)))).map(idFromKey)
      const linked = await views(storage, keys, edges)
      if (linked.every((view) => view.kind === 'edge' && doomed.has(view.id))) derived.entityIDs.push(entity)
    }
  } else if (target.kind === 'resource') {
    for (const view of referring) if (view.kind === 'chunk' && view.resourceID === target.id) derived.chunkIDs.push(view.id)
  } else if (target.kind === 'entity') {
    for (const view of referring) if (view.kind === 'edge') derived.edgeIDs.push(view.id)
  }
  for (const list of [derived.factIDs, derived.edgeIDs, derived.entityIDs, derived.chunkIDs]) list.sort()
  const records = [
    ...derived.factIDs.map((id) => ({ kind: 'fact' as const, id })),
    ...derived.edgeIDs.map((id) => ({ kind: 'edge' as const, id })),
    ...derived.entityIDs.map((id) => ({ kind: 'entity' as const, id })),
    ...derived.chunkIDs.map((id) => ({ kind: 'chunk' as const, id })),
  ]
  return { derived, records }
}

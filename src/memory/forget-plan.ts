/**
 * What a deletion takes with it (Portable Memory §7, proof of reach): the records derived only
 * from the target. The deleting replica computes this from what it holds and ships it in the
 * delete, so every replica removes the same records; records it could not know about (created
 * concurrently elsewhere) are caught on arrival by the parent rule (no resurrection).
 *
 *   episode   facts extracted from it (fact.episodeID), edges evidenced only by the episodes
 *             that go, entities those edges leave with no edge at all, and a count of the
 *             episode links that touch them; episodes whose `derived_from` links all point at
 *             episodes that go; records its `metadata.cairn_derived` lists that no episode
 *             staying lists (memory-model §1.4). Both repeat through what they reach.
 *   resource  its chunks
 *   entity    its edges
 */
import type { LogStorage } from '../log/storage.js'
import { decodeView, derivedListIds, DERIVED_LIST_KEY, idFromKey, type ProjectionKeys, type RecordKind, type RecordView } from '../projection/index.js'

export interface DerivedBlock {
  readonly sentenceIDs: string[]
  readonly factIDs: string[]
  readonly edgeIDs: string[]
  readonly entityIDs: string[]
  readonly chunkIDs: string[]
  episodeLinkCount: number
  readonly embeddingCacheKeys: string[]
  /** Cairn's addition, present only when not empty: cascaded records of other kinds (episodes, preferences…). */
  readonly recordIDs?: string[]
}

export interface ForgetPlan {
  readonly derived: DerivedBlock
  readonly records: { readonly kind: RecordKind; readonly id: string }[]
}

const DERIVED_FROM = 'derived_from'

async function keysUnder(storage: LogStorage, prefix: string, end: string): Promise<string[]> {
  const out: string[] = []
  for await (const key of storage.keys({ gte: prefix, lt: end })) out.push(key)
  return out
}

async function views(storage: LogStorage, keys: ProjectionKeys, ids: readonly string[]): Promise<RecordView[]> {
  const values = await storage.getMany(ids.map((id) => keys.view(id)))
  return values.flatMap((bytes) => (bytes ? [decodeView(bytes)] : []))
}

function listedIds(episode: RecordView): string[] {
  const metadata = episode.metadata
  return metadata !== null && typeof metadata === 'object' && !Array.isArray(metadata) && Object.hasOwn(metadata, DERIVED_LIST_KEY)
    ? derivedListIds(metadata[DERIVED_LIST_KEY])
    : []
}

/** Reads views and their referrers (the reference index), each once per plan. */
class PlanReader {
  private readonly referrerViews = new Map<string, RecordView[]>()

  constructor(private readonly storage: LogStorage, private readonly keys: ProjectionKeys) {}

  async view(id: string): Promise<RecordView | undefined> {
    return (await views(this.storage, this.keys, [id]))[0]
  }

  /** The records shown here that name `id` (parent, reference, successor or derived list). */
  async referring(id: string): Promise<RecordView[]> {
    const cached = this.referrerViews.get(id)
    if (cached) return cached
    const prefix = this.keys.referencePrefix(id)
    const found = await views(this.storage, this.keys, (await keysUnder(this.storage, prefix, this.keys.end(prefix))).map(idFromKey))
    this.referrerViews.set(id, found)
    return found
  }
}

/**
 * The episodes and listed records that go with `target`: derived_from descendants whose every
 * source goes, and records listed in a going episode's `cairn_derived` that no staying episode
 * lists. The map holds every record that goes, the target included.
 */
async function cascadeThroughEpisodes(reader: PlanReader, target: RecordView): Promise<Map<string, RecordView>> {
  const going = new Map<string, RecordView>([[target.id, target]])
  let frontier = target.kind === 'episode' ? [target] : []
  while (frontier.length > 0) {
    const next: RecordView[] = []
    const add = (view: RecordView): void => {
      going.set(view.id, view)
      if (view.kind === 'episode') next.push(view)
    }
    for (const episode of frontier) {
      for (const link of await reader.referring(episode.id)) {
        if (link.kind !== 'episodeLink' || link.linkType !== DERIVED_FROM || link.dstEpisodeID !== episode.id) continue
        const child = link.srcEpisodeID
        if (typeof child !== 'string' || going.has(child)) continue
        const view = await reader.view(child)
        if (view?.kind !== 'episode') continue
        const sources = (await reader.referring(child))
          .filter((other) => other.kind === 'episodeLink' && other.linkType === DERIVED_FROM && other.srcEpisodeID === child)
          .map((other) => other.dstEpisodeID)
        if (sources.every((source) => typeof source === 'string' && going.has(source))) add(view)
      }
      for (const id of listedIds(episode)) {
        if (going.has(id)) continue
        const view = await reader.view(id)
        if (!view) continue
        const listers = (await reader.referring(id)).filter((other) => other.kind === 'episode' && listedIds(other).includes(id))
        if (listers.every((lister) => going.has(lister.id))) add(view)
      }
    }
    frontier = next
  }
  return going
}

/** A derived block naming nothing (a fresh one each call: planForget fills its lists). */
export function emptyDerivedBlock(): DerivedBlock {
  return { sentenceIDs: [], factIDs: [], edgeIDs: [], entityIDs: [], chunkIDs: [], episodeLinkCount: 0, embeddingCacheKeys: [] }
}

export async function planForget(storage: LogStorage, keys: ProjectionKeys, target: RecordView): Promise<ForgetPlan> {
  const reader = new PlanReader(storage, keys)
  const derived = emptyDerivedBlock()
  const going = await cascadeThroughEpisodes(reader, target)
  const typed: Partial<Record<RecordKind, string[]>> = { fact: derived.factIDs, edge: derived.edgeIDs, entity: derived.entityIDs, chunk: derived.chunkIDs }
  const records = new Map<string, RecordKind>()
  const take = (view: RecordView): void => {
    if (view.id !== target.id && !records.has(view.id)) records.set(view.id, view.kind)
  }
  for (const view of going.values()) take(view)

  const episodes = [...going.values()].filter((view) => view.kind === 'episode')
  const goingEpisodes = new Set(episodes.map((view) => view.id))
  const doomedEdges: RecordView[] = []
  const links = new Set<string>()
  for (const episode of episodes) {
    for (const view of await reader.referring(episode.id)) {
      // A fact names an episode only as its parent: the one it shows, or one an earlier write of
      // the same id named (RecordState.otherParents), which deletes it just the same.
      if (view.kind === 'fact') take(view)
      if (view.kind === 'episodeLink') links.add(view.id)
      if (view.kind === 'edge' && Array.isArray(view.evidenceEpisodeIDs) && view.evidenceEpisodeIDs.length > 0 &&
        view.evidenceEpisodeIDs.every((id) => typeof id === 'string' && goingEpisodes.has(id))) {
        take(view)
        doomedEdges.push(view)
      }
    }
  }
  derived.episodeLinkCount = links.size
  // Entities those edges leave without any edge.
  const doomed = new Set(records.keys())
  for (const entity of new Set(doomedEdges.flatMap((view) => [view.srcEntityID, view.dstEntityID]))) {
    if (typeof entity !== 'string' || doomed.has(entity) || entity === target.id) continue
    const edges = (await keysUnder(storage, keys.entityPrefix(entity), keys.end(keys.entityPrefix(entity)))).map(idFromKey)
    const linked = await views(storage, keys, edges)
    if (linked.every((view) => view.kind === 'edge' && doomed.has(view.id))) {
      const view = await reader.view(entity)
      if (view) take(view)
    }
  }
  // A resource takes its chunks, an entity its edges: the target, or one a derived list named.
  for (const owner of [...going.values()]) {
    if (owner.kind !== 'resource' && owner.kind !== 'entity') continue
    for (const view of await reader.referring(owner.id)) {
      if (owner.kind === 'resource' && view.kind === 'chunk') take(view)
      if (owner.kind === 'entity' && view.kind === 'edge') take(view)
    }
  }
  const recordIDs: string[] = []
  for (const [id, kind] of records) (typed[kind] ?? recordIDs).push(id)
  for (const list of [derived.factIDs, derived.edgeIDs, derived.entityIDs, derived.chunkIDs, recordIDs]) list.sort()
  const block: DerivedBlock = recordIDs.length > 0 ? { ...derived, recordIDs } : derived
  return {
    derived: block,
    records: [
      ...derived.factIDs.map((id) => ({ kind: 'fact' as const, id })),
      ...derived.edgeIDs.map((id) => ({ kind: 'edge' as const, id })),
      ...derived.entityIDs.map((id) => ({ kind: 'entity' as const, id })),
      ...derived.chunkIDs.map((id) => ({ kind: 'chunk' as const, id })),
      ...recordIDs.map((id) => ({ kind: records.get(id) as RecordKind, id })),
    ],
  }
}

/**
 * Knowledge-graph sources (the MCP memory server, mem0's graph `relations`) → entity and edge
 * records, each relation with a carrier episode (docs/memory-model.md §1.4: one foreign unit,
 * one carrier; an edge points back to it through `evidenceEpisodeIDs`).
 *
 * Invariant: ids are deterministic in the source's namespace, memory-model H:
 * entity `ent_` + H(ns, "entity", name), edge `edge_` + H(ns, "edge", from, type, to), relation
 * carrier `ep_` + H(ns, "relation", from, type, to). Importing the same graph twice is a no-op,
 * and a name means one entity within a source (never across sources).
 */
import type { ErrorLocation } from '../../errors.js'
import { canonicalJson } from '../../log/index.js'
import { hashId, type ImportContext } from './import-context.js'
import type { MetadataBuilder } from './metadata.js'
import { firstCodePoints } from './text-values.js'

export function entityId(namespace: string, name: string): string {
  return hashId('ent_', namespace, 'entity', name)
}

/** Adds the entity `name` unless it exists; returns its id and whether this call created it. */
export function ensureEntity(context: ImportContext, namespace: string, name: string, type: string, where: ErrorLocation): { id: string; isNew: boolean } {
  const id = entityId(namespace, name)
  if (context.get(id) !== undefined) return { id, isNew: false }
  context.add('entity', { id, type: type === '' ? 'unknown' : type, canonicalName: name, updatedAt: context.now }, where)
  return { id, isNew: true }
}

export interface RelationDraft {
  readonly namespace: string
  readonly from: string
  readonly type: string
  readonly to: string
  /** The carrier's metadata, with the source's own keys already written. */
  readonly metadata: MetadataBuilder
  readonly where: ErrorLocation
  /** Warn when an endpoint is not an entity of the source (MCP: entities come first). */
  readonly isDanglingUnusual: boolean
  readonly sourceID?: string
}

/** A relation: its endpoints (created as `unknown` entities when missing), a carrier episode and the edge. */
export function addRelation(context: ImportContext, draft: RelationDraft): void {
  const { namespace, from, type, to, metadata, where } = draft
  const created: string[] = []
  for (const name of [from, to]) {
    const { id, isNew } = ensureEntity(context, namespace, name, 'unknown', where)
    if (!isNew) continue
    created.push(id)
    if (draft.isDanglingUnusual) context.warn('DANGLING_RELATION', `${JSON.stringify(name)} is not an entity of the file; created with type "unknown"`, where)
  }
  const carrierId = hashId('ep_', namespace, 'relation', from, type, to)
  if (created.length > 0) metadata.set('cairn_derived', canonicalJson([...new Set(created)]))
  const text = `${from} ${type} ${to}`
  context.add('episode', {
    id: carrierId, eventTime: context.now, mentionTime: context.now, ingestionTime: context.now, sourceType: 'note',
    summary: firstCodePoints(text), details: text, metadata: metadata.toObject(),
    ...(draft.sourceID === undefined ? {} : { sourceID: draft.sourceID }),
  }, where)
  context.add('edge', {
    id: hashId('edge_', namespace, 'edge', from, type, to), srcEntityID: entityId(namespace, from), dstEntityID: entityId(namespace, to),
    edgeType: type, tValidFrom: context.now, ingestionTime: context.now, evidenceEpisodeIDs: [carrierId],
  }, where)
}

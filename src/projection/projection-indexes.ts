/**
 * Which index entries a record view contributes. Indexes are a pure function of the view, so
 * an update is the difference between the entries of the old view and of the new one, and a
 * rebuild produces exactly the same keys.
 */
import { Packr } from 'msgpackr'
import type { JsonValue } from '../log/index.js'
import { kindSpec, type RecordKind } from './kinds.js'
import type { RecordView } from './materialize.js'
import type { ProjectionKeys } from './projection-keys.js'

/** Fields whose values name entities, per kind: the entity index maps each to the record. */
const ENTITY_FIELDS: Partial<Record<RecordKind, readonly string[]>> = {
  edge: ['srcEntityID', 'dstEntityID'],
  fact: ['subject', 'object'],
  community: ['memberEntityIDs'],
}

function strings(value: JsonValue | undefined): string[] {
  if (typeof value === 'string') return value.length > 0 ? [value] : []
  if (Array.isArray(value)) return value.filter((item): item is string => typeof item === 'string' && item.length > 0)
  return []
}

/** Tags of a record: the Cairn `tags` extension plus an episode's Portable Memory categories. */
export function tagsOf(view: RecordView): string[] {
  return [...new Set([...strings(view.tags), ...(view.kind === 'episode' ? strings(view.categories) : [])])]
}

/** Entities a record is about, for `query({ entity })`. */
export function entitiesOf(view: RecordView): string[] {
  const fields = ENTITY_FIELDS[view.kind] ?? []
  return [...new Set(fields.flatMap((field) => strings(view[field])))]
}

/** The text the full-text index holds for a record (its kind's text fields, in order). */
export function searchableText(view: RecordView | undefined, redacted: boolean): string | undefined {
  if (!view || redacted) return undefined
  const parts = kindSpec(view.kind).textFields.flatMap((field) => strings(view[field]))
  return parts.length > 0 ? parts.join('\n') : undefined
}

/** Every index key for a view; a redacted skeleton is listed by kind only. */
export function indexKeysOf(view: RecordView | undefined, redacted: boolean, keys: ProjectionKeys): string[] {
  if (!view) return []
  const { id } = view
  const out = [keys.kind(view.kind, id)]
  if (redacted) return out
  for (const context of strings(view.contextID)) out.push(keys.context(context, id))
  for (const tag of tagsOf(view)) out.push(keys.tag(tag, id))
  for (const entity of entitiesOf(view)) out.push(keys.entity(entity, id))
  const validTime = kindSpec(view.kind).validTime
  if (validTime && typeof view[validTime.from] === 'string') out.push(keys.validFrom(view[validTime.from] as string, id))
  return out
}

/**
 * What queries filter on, kept as the value of every index entry of a record, so a query can
 * filter while walking an index and read full views only for the page it returns.
 */
export interface RecordFacets {
  readonly kind: RecordKind
  readonly contextID?: string
  readonly tags: readonly string[]
  /** Empty in facets read from an index entry (encodeFacets): the entity index is the filter. */
  readonly entities: readonly string[]
  readonly confidence?: number
  readonly validFrom?: string
  readonly validTo?: string
  /**
   * Set on facets read from an index entry of a record with more than MAX_FACET_TAGS tags: the
   * entry leaves its tags out (`tags` is empty), so a tag filter must look at the view.
   */
  readonly tagsLeftOut?: true
}

/**
 * The most tags an index entry carries. Every entry of a record (one per tag among them) holds
 * its facets, so carrying every tag made a record with T tags write T² of them: 4,000 tags took
 * 66 MB. Past this many, entries leave the tags out and a tag filter reads the record's view.
 */
export const MAX_FACET_TAGS = 32

export function facetsOf(view: RecordView, redacted: boolean): RecordFacets {
  if (redacted) return { kind: view.kind, tags: [], entities: [] }
  const validTime = kindSpec(view.kind).validTime
  return {
    kind: view.kind,
    ...(typeof view.contextID === 'string' ? { contextID: view.contextID } : {}),
    tags: tagsOf(view),
    entities: entitiesOf(view),
    ...(typeof view.confidence === 'number' ? { confidence: view.confidence } : {}),
    ...(validTime && typeof view[validTime.from] === 'string' ? { validFrom: view[validTime.from] as string } : {}),
    ...(validTime && typeof view[validTime.to] === 'string' ? { validTo: view[validTime.to] as string } : {}),
  }
}

const facetsPackr = new Packr({ useRecords: false, variableMapSize: true })

// A fixed array layout: the same facets always encode to the same bytes (rebuild equality). An
// eighth element, `true`, marks tags left out (MAX_FACET_TAGS); entries without it read as before.
// Entities are not written (an empty list keeps the layout): a query with an entity filter
// always walks that entity's index (ProjectionReader.drivingPrefix), which lists exactly the
// records naming it, so no entry needs them; carrying them made a community of M members write
// M² names (800 members took 9.6 MB). Entries written before keep theirs; nothing reads them.
export function encodeFacets(facets: RecordFacets): Uint8Array {
  const leftOut = facets.tags.length > MAX_FACET_TAGS
  const fields = [facets.kind, facets.contextID ?? null, leftOut ? [] : facets.tags, [], facets.confidence ?? null, facets.validFrom ?? null, facets.validTo ?? null]
  return facetsPackr.pack(leftOut ? [...fields, true] : fields)
}

export function decodeFacets(bytes: Uint8Array): RecordFacets {
  const [kind, contextID, tags, entities, confidence, validFrom, validTo, leftOut] = facetsPackr.unpack(bytes) as [RecordKind, string | null, string[], string[], number | null, string | null, string | null, true | undefined]
  return {
    kind, tags, entities,
    ...(leftOut === true ? { tagsLeftOut: true as const } : {}),
    ...(contextID !== null ? { contextID } : {}),
    ...(confidence !== null ? { confidence } : {}),
    ...(validFrom !== null ? { validFrom } : {}),
    ...(validTo !== null ? { validTo } : {}),
  }
}

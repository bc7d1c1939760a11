/**
 * Turns a record's merge state into the record a reader sees (Portable Memory field names, plus
 * `kind` and the Cairn extensions), and decides whether it is visible at all:
 *
 *   absent     never created here (only later operations arrived)
 *   deleted    tombstoned, or a parent it needs is (no resurrection, spec §7)
 *   redacted   the frozen skeleton the redaction carried
 *   visible    the merged fields
 *
 * The view depends only on the record's state and which referenced ids are tombstoned, so it is
 * the same on every replica holding the same events. References to deleted records are dropped
 * from reference sets (evidenceEpisodeIDs, memberEntityIDs) so a deleted id appears nowhere.
 */
import { resolveSupersessions, setValues, textOf, type RecordState, type SupersessionOutcome } from '../crdt/index.js'
import type { JsonValue } from '../log/index.js'
import { kindSpec, type RecordKind } from './kinds.js'

export type RecordView = { readonly kind: RecordKind; readonly id: string } & { readonly [field: string]: JsonValue }

export type ViewStatus = 'absent' | 'deleted' | 'redacted' | 'visible'

export interface Materialized {
  readonly status: ViewStatus
  readonly view?: RecordView
  /** Set when concurrent supersedes compete (more than one candidate). */
  readonly conflict?: SupersessionOutcome
}

/** Set fields whose members are ids of other records, and the kind they point at. */
export const REFERENCE_SETS: Readonly<Record<string, RecordKind>> = {
  evidenceEpisodeIDs: 'episode',
  memberEntityIDs: 'entity',
}

/**
 * Every parent a record has named: what its parent fields hold now, and ids they held before
 * another write won them (`otherParents`). Deleting any of them deletes the record. A redacted
 * record's parents are in its skeleton (redaction keeps structural ids), so it is deleted with
 * its parent like any other: which of the two a replica saw first must not matter.
 */
export function parentIds(state: RecordState): string[] {
  // A link deleted with its bodies kept names its ends still (Tombstone.keptEnds).
  if (state.tombstone?.keptEnds !== undefined) return [...state.tombstone.keptEnds]
  const out: string[] = []
  const skeleton = state.tombstone?.op === 'redact' ? state.tombstone.skeleton ?? {} : undefined
  for (const field of kindSpec(state.kind as RecordKind).parentFields) {
    const value = skeleton ? (Object.hasOwn(skeleton, field) ? skeleton[field] : undefined) : state.registers[field]?.value
    if (typeof value === 'string') out.push(value)
  }
  if (state.otherParents) out.push(...state.otherParents)
  return out
}

/**
 * The ids a record's view depends on (whether each is deleted): its parents, the members of its
 * reference sets, and its successors. What a projection batch reads before materializing.
 */
export function dependencyIds(state: RecordState): string[] {
  const out = parentIds(state)
  for (const supersession of state.supersessions) out.push(supersession.by)
  for (const field of Object.keys(REFERENCE_SETS)) {
    const set = state.sets[field]
    if (set) out.push(...Object.keys(set))
  }
  return out
}

/** Episode metadata key listing the records an import derived from the episode (memory-model §1.4). */
export const DERIVED_LIST_KEY = 'cairn_derived'

/** The ids a `cairn_derived` value lists: a canonical JSON array of ids; anything else lists none. */
export function derivedListIds(value: unknown): string[] {
  if (typeof value !== 'string' || !value.startsWith('[')) return []
  try {
    const ids: unknown = JSON.parse(value)
    return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string' && id !== '') : []
  } catch {
    return []
  }
}

/**
 * The ids a record names: what its view depends on (dependencyIds), and the records an episode
 * lists as derived from it (`metadata.cairn_derived`). The reference index (q:r) holds them, so
 * a deletion, or a forget's plan, finds what names an id.
 */
export function referencedIds(state: RecordState): string[] {
  const out = dependencyIds(state)
  const metadata = state.maps.metadata
  if (metadata && Object.hasOwn(metadata, DERIVED_LIST_KEY)) out.push(...derivedListIds(metadata[DERIVED_LIST_KEY]?.value))
  return out
}

export function materialize(state: RecordState, isDeleted: (id: string) => boolean): Materialized {
  const kind = state.kind as RecordKind
  if (state.tombstone?.op === 'delete') return { status: 'deleted' }
  if (state.tombstone?.op === 'redact') {
    return { status: 'redacted', view: { ...(state.tombstone.skeleton ?? {}), kind, id: state.id } }
  }
  if (!state.created) return { status: 'absent' }
  const spec = kindSpec(kind)
  if (parentIds(state).some(isDeleted)) return { status: 'deleted' }
  const view: Record<string, JsonValue> = {}
  if (spec.hasExt) {
    for (const [key, register] of Object.entries(state.ext)) if (register.value !== undefined) view[key] = register.value
  }
  // A null in a signed create's fields means absent, as `remember` and a patch's `set` read it
  // (record-create.ts); shown as null it has no `.mem` form (the codec drops it) and the view
  // came back without it (helper-85, hostile-bodies property).
  for (const [field, register] of Object.entries(state.registers)) if (register.value !== undefined && register.value !== null) view[field] = register.value
  for (const [field, set] of Object.entries(state.sets)) {
    const values = setValues(set)
    view[field] = REFERENCE_SETS[field] ? values.filter((id) => !isDeleted(id)) : values
  }
  for (const [field, total] of Object.entries(state.counters)) view[field] = Math.max(0, total)
  for (const [field, map] of Object.entries(state.maps)) {
    const out: Record<string, JsonValue> = {}
    for (const [key, register] of Object.entries(map)) if (register.value !== undefined) out[key] = register.value
    view[field] = out
  }
  for (const [field, document] of Object.entries(state.texts)) view[field] = textOf(document)
  let conflict: SupersessionOutcome | undefined
  if (spec.validTime && state.supersessions.length > 0) {
    // Only successors that are not deleted: a forgotten successor is as if it never came, so a
    // conflict ends when the losers are forgotten, and a version whose successors are all gone
    // is current again (a deleted id appears nowhere, supersededBy included).
    const outcome = resolveSupersessions(state.supersessions.filter((supersession) => !isDeleted(supersession.by)))
    if (outcome) {
      view[spec.validTime.to] = outcome.winner.at
      view.supersededBy = outcome.winner.by
      if (outcome.candidates.length > 1) conflict = outcome
    }
  }
  return { status: 'visible', view: { ...view, kind, id: state.id } as RecordView, ...(conflict ? { conflict } : {}) }
}

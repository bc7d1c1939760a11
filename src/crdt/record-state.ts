/**
 * The merge state of one memory record and how each operation changes it. Fields combine by
 * their merge class (given by the caller, which knows the record kinds):
 *
 *   identity, lww   last-writer-wins register by stamp
 *   set             add-wins set (add-wins-set.ts)
 *   counter         sum of increments from every event, never last-writer-wins
 *   map             last-writer-wins per key
 *   text            Automerge document (collaborative-text.ts)
 *
 * Delete wins forever: once a record holds a delete tombstone, no operation but another tombstone
 * touches it again, and between tombstones a fixed order decides (`tombstoneBeats`; a redact
 * tombstone keeps the skeleton, a delete overrides it). Operations on such a record
 * are reported as `ignored`, so the caller can erase the bodies that carried them.
 *
 * Every function is pure and the result depends only on the set of operations, not their order,
 * given causal delivery (which the log guarantees).
 */
import type { JsonValue } from '../log/index.js'
import { addToSet, removeFromSet, type AddWinsSet } from './add-wins-set.js'
import { applyAuthoredTextChanges, baseTextDocument } from './collaborative-text.js'
import { ownEntry, RESERVED_KEY } from './own-keys.js'
import { writeRegister, type Register } from './register.js'
import { compareStamps, type Stamp } from './stamp.js'
import type { Supersession } from './supersession.js'

export type MergeClass = 'identity' | 'lww' | 'set' | 'counter' | 'map' | 'text'

export interface Tombstone {
  readonly op: 'delete' | 'redact'
  /** The Portable Memory tombstone record (id, op, targetKind, targetID, deletedAt, actor, derived, reason?). */
  readonly record: { readonly [key: string]: JsonValue }
  readonly stamp: Stamp
  /** For a redaction: the frozen, content-free view, written by the redacting replica. */
  readonly skeleton?: { readonly [key: string]: JsonValue }
  /** Set when a deletion's derived list named this record: the id that deletion targeted. */
  readonly derivedFrom?: string
  /**
   * Set when no event names this record: the replica found one of its parents deleted. Such a
   * deletion keeps the bodies that show why, so every replica can find it (projection-batch.ts).
   * It holds nothing of the parent or its tombstone (an empty record and INFERRED_STAMP).
   */
  readonly inferred?: true
  /**
   * On an inferred deletion of a link whose every deleted end was itself deleted only through a
   * parent: the link keeps its bodies too (projection-batch.ts, keepsInferredBodies), and these
   * are its ends (its parent ids; ids only, which its key fixes), so that the reference index
   * still leads from them to it.
   */
  readonly keptEnds?: readonly string[]
  /**
   * On an inferred deletion: a redaction reached the record too (and lost to it). Content arriving
   * later is erased, as it is where the redaction came first and the record was still redacted
   * when the content arrived (projection-batch.ts, applyEvent); keeping it made a replica's
   * bodies depend on whether it found the deletion before that content came.
   */
  readonly afterRedaction?: true
}

export interface RecordState {
  readonly id: string
  readonly kind: string
  /** The earliest create seen; a record is visible only once created. */
  readonly created?: Stamp
  readonly registers: Readonly<Record<string, Register>>
  readonly sets: Readonly<Record<string, AddWinsSet>>
  readonly counters: Readonly<Record<string, number>>
  readonly maps: Readonly<Record<string, Readonly<Record<string, Register>>>>
  readonly texts: Readonly<Record<string, Uint8Array>>
  /** Unknown episode keys (Portable Memory ext), last-writer-wins per key. */
  readonly ext: Readonly<Record<string, Register>>
  readonly supersessions: readonly Supersession[]
  readonly tombstone?: Tombstone
  /**
   * Ids once written to a parent field (`OperationContext.parentFields`) that no longer win it:
   * a record is deleted with any parent it ever named, so the outcome does not depend on which
   * write arrived first. Absent when the winners are all there is (the usual case).
   */
  readonly otherParents?: readonly string[]
}

export type RecordOperation =
  | {
      readonly type: 'create'
      readonly fields: Readonly<Record<string, JsonValue>>
      readonly texts?: Readonly<Record<string, readonly Uint8Array[]>>
      readonly ext?: Readonly<Record<string, JsonValue>>
    }
  | {
      readonly type: 'patch'
      readonly set: Readonly<Record<string, JsonValue>>
      readonly unset: readonly string[]
      readonly add: Readonly<Record<string, readonly string[]>>
      readonly remove: Readonly<Record<string, readonly string[]>>
      readonly increment: Readonly<Record<string, number>>
      readonly ext: Readonly<Record<string, JsonValue>>
      readonly unsetExt: readonly string[]
    }
  | { readonly type: 'text'; readonly field: string; readonly changes: readonly Uint8Array[] }
  | { readonly type: 'supersede'; readonly supersession: Omit<Supersession, 'stamp' | 'vector'> }
  | {
      readonly type: 'tombstone'
      readonly op: 'delete' | 'redact'
      readonly record: { readonly [key: string]: JsonValue }
      readonly skeleton?: { readonly [key: string]: JsonValue }
      readonly derivedFrom?: string
      readonly inferred?: boolean
      readonly keptEnds?: readonly string[]
    }

export interface OperationContext {
  readonly stamp: Stamp
  /** Causal vector of the event carrying the operation. */
  readonly vector: Readonly<Record<string, number>>
  readonly mergeClassOf: (field: string) => MergeClass | undefined
  /** Fields that name the record's parents (last-writer-wins ids); see `RecordState.otherParents`. */
  readonly parentFields?: readonly string[]
}

export function emptyRecordState(id: string, kind: string): RecordState {
  return { id, kind, registers: {}, sets: {}, counters: {}, maps: {}, texts: {}, ext: {}, supersessions: [] }
}

export interface OperationResult {
  readonly state: RecordState
  /** The operation changed nothing because the record was deleted (its body holds content to erase). */
  readonly ignored: boolean
}

/** A record state being changed by one operation: each table is copied once, then mutated. */
interface Draft {
  registers: Record<string, Register>
  sets: Record<string, AddWinsSet>
  counters: Record<string, number>
  maps: Record<string, Readonly<Record<string, Register>>>
  texts: Record<string, Uint8Array>
  ext: Record<string, Register>
}

function draftOf(state: RecordState): Draft {
  return {
    registers: { ...state.registers }, sets: { ...state.sets }, counters: { ...state.counters },
    maps: { ...state.maps }, texts: { ...state.texts }, ext: { ...state.ext },
  }
}

/** Writes unknown fields (ext); `undefined` unsets. */
function writeExt(draft: Draft, entries: readonly (readonly [string, JsonValue | undefined])[], stamp: Stamp): void {
  for (const [key, value] of entries) if (key !== RESERVED_KEY) draft.ext[key] = writeRegister(ownEntry(draft.ext, key), value, stamp)
}

function setField(draft: Draft, field: string, value: JsonValue | undefined, context: OperationContext): void {
  const mergeClass = context.mergeClassOf(field)
  const { stamp } = context
  if (mergeClass === 'set') {
    const elements = Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : []
    draft.sets[field] = addToSet(ownEntry(draft.sets, field) ?? {}, elements, stamp)
  } else if (mergeClass === 'counter') {
    draft.counters[field] = (ownEntry(draft.counters, field) ?? 0) + (typeof value === 'number' ? value : 0)
  } else if (mergeClass === 'map') {
    const map = { ...(ownEntry(draft.maps, field) ?? {}) }
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const [key, item] of Object.entries(value)) {
        if (key !== RESERVED_KEY) map[key] = writeRegister(ownEntry(map, key), item === null ? undefined : item, stamp)
      }
    }
    draft.maps[field] = map
  } else if (mergeClass === 'text') {
    // Text content arrives as Automerge changes (the `texts` part of a create, or text ops).
  } else if (field !== RESERVED_KEY) {
    draft.registers[field] = writeRegister(ownEntry(draft.registers, field), value, stamp)
  }
}

interface TombstoneRank {
  readonly op: string
  /** 0: a direct delete or redaction; 1: named in a deletion's derived list; 2: inferred from a deleted parent. */
  readonly reach: number
  /** The Portable Memory tombstone line the event carries (its `deletedAt` and `id` rank it). */
  readonly record: { readonly [key: string]: JsonValue }
  readonly stamp: Stamp
}

/**
 * The stamp of every deletion inferred from a parent, whose record is empty: such deletions are
 * all alike. Naming the parent, or copying its tombstone, would make one depend on which parents
 * were deleted, and which of a parent's concurrent tombstones had won, when the child was looked
 * at, and nothing looks at a deleted child again: a rebuild, looking at another moment, would
 * store another state.
 */
export const INFERRED_STAMP: Stamp = { wall: 0, logical: 0, author: '', seq: 0 }

function reachOf(tombstone: { readonly derivedFrom?: string; readonly inferred?: boolean }): number {
  return tombstone.inferred ? 2 : tombstone.derivedFrom === undefined ? 0 : 1
}

/** RFC 3339 date-time: `2026-01-01T00:00:05Z`, `…05.250Z`, `…05+02:00`. */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/

/**
 * A tombstone line's `deletedAt` in ms; one that is no RFC 3339 time ranks after every other.
 * Read by hand, not `Date.parse`, which reads other text as the engine chooses: two replicas on
 * other Node versions must rank alike.
 */
function deletedAtOf(record: { readonly [key: string]: JsonValue }): number {
  const match = typeof record.deletedAt === 'string' ? RFC3339.exec(record.deletedAt) : null
  if (!match) return Number.POSITIVE_INFINITY
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [number, number, number, number, number, number]
  const [offsetHours, offsetMinutes] = [Number(match[9] ?? 0), Number(match[10] ?? 0)]
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60 || offsetHours > 23 || offsetMinutes > 59) return Number.POSITIVE_INFINITY
  const ms = Number(((match[7] ?? '') + '000').slice(0, 3))
  const offset = (match[8] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000
  // setUTCFullYear: Date.UTC reads years 0–99 as 1900–1999.
  const at = new Date(Date.UTC(2000, month - 1, day, hour, minute, second, ms))
  at.setUTCFullYear(year, month - 1, day)
  return at.getTime() - offset
}

/**
 * Which of two tombstones a record keeps: a delete beats a redaction; a direct delete beats one
 * named in another deletion, which beats one inferred from a deleted parent (a replica that saw
 * the stronger one first never derives another); then the tombstone line's earlier `deletedAt`,
 * then its smaller id, then the earlier stamp. A total order, so every replica keeps the same one
 * whatever the arrival order (inferred ones are all alike). The line ranks before the stamp
 * because an imported tombstone is written again with the importer's stamp: ranked by stamps,
 * two bundles carrying different tombstones of one record left it with whichever was imported
 * first; the line is the same wherever it travels.
 */
function tombstoneBeats(a: TombstoneRank, b: TombstoneRank): boolean {
  if (a.op !== b.op) return a.op === 'delete'
  if (a.reach !== b.reach) return a.reach < b.reach
  if (a.reach < 2) {
    const [at, bt] = [deletedAtOf(a.record), deletedAtOf(b.record)]
    if (at !== bt) return at < bt
    const [aid, bid] = [String(a.record.id ?? ''), String(b.record.id ?? '')]
    if (aid !== bid) return aid < bid
  }
  return compareStamps(a.stamp, b.stamp) < 0
}

/**
 * Whether a direct tombstone written now (an import's, carrying `record`) would take the record
 * from the one it holds. Its stamp would be later than any held, so the line decides.
 */
export function newTombstoneWins(op: 'delete' | 'redact', record: { readonly [key: string]: JsonValue }, held: Tombstone): boolean {
  const now: Stamp = { wall: Number.MAX_SAFE_INTEGER, logical: 0, author: '', seq: 0 }
  return tombstoneBeats({ op, reach: 0, record, stamp: now }, { op: held.op, reach: reachOf(held), record: held.record, stamp: held.stamp })
}

/** The parent ids that lost their field after a create or patch (winners before it, or written by it). */
function otherParentsAfter(before: RecordState, after: Draft, written: Readonly<Record<string, JsonValue>>, fields: readonly string[]): string[] | undefined {
  const seen = new Set(before.otherParents ?? [])
  for (const field of fields) {
    for (const value of [ownEntry(before.registers, field)?.value, ownEntry(written, field)]) if (typeof value === 'string') seen.add(value)
  }
  for (const field of fields) {
    const winner = ownEntry(after.registers, field)?.value
    if (typeof winner === 'string') seen.delete(winner)
  }
  return seen.size > 0 ? [...seen].sort() : undefined
}

/** Keeps `otherParents` up to date when an operation wrote (or unset) a parent field. */
function trackParents(state: { -readonly [K in keyof RecordState]: RecordState[K] }, before: RecordState, draft: Draft, written: Readonly<Record<string, JsonValue>>, unset: readonly string[], context: OperationContext): void {
  const fields = context.parentFields
  if (!fields || !fields.some((field) => ownEntry(written, field) !== undefined || unset.includes(field))) return
  const others = otherParentsAfter(before, draft, written, fields)
  if (others) state.otherParents = others
  else delete state.otherParents
}

/** Applies one operation carried by an event. */
export function applyRecordOperation(current: RecordState, operation: RecordOperation, context: OperationContext): OperationResult {
  // A tombstone blocks every other operation; further tombstones still compete (below), so that
  // which one a record keeps does not depend on the order they arrived in.
  if (current.tombstone && operation.type !== 'tombstone') return { state: current, ignored: true }
  const state: { -readonly [K in keyof RecordState]: RecordState[K] } = { ...current }
  const { stamp } = context
  switch (operation.type) {
    case 'create': {
      if (!state.created || compareStamps(stamp, state.created) < 0) state.created = stamp
      const draft = draftOf(state)
      for (const [field, value] of Object.entries(operation.fields)) setField(draft, field, value, context)
      for (const [field, changes] of Object.entries(operation.texts ?? {})) {
        if (field === RESERVED_KEY) continue
        const held = ownEntry(draft.texts, field) ?? baseTextDocument()
        draft.texts[field] = applyAuthoredTextChanges(held, changes, stamp.author) ?? held
      }
      writeExt(draft, Object.entries(operation.ext ?? {}), stamp)
      trackParents(state, current, draft, operation.fields, [], context)
      Object.assign(state, draft)
      break
    }
    case 'patch': {
      const draft = draftOf(state)
      for (const [field, value] of Object.entries(operation.set)) setField(draft, field, value, context)
      for (const field of operation.unset) {
        const dot = field.indexOf('.')
        if (dot > 0 && context.mergeClassOf(field.slice(0, dot)) === 'map') {
          const name = field.slice(0, dot)
          const key = field.slice(dot + 1)
          const map = { ...(ownEntry(draft.maps, name) ?? {}) }
          if (key !== RESERVED_KEY) map[key] = writeRegister(ownEntry(map, key), undefined, stamp)
          draft.maps[name] = map
        } else setField(draft, field, undefined, context)
      }
      for (const [field, elements] of Object.entries(operation.add)) {
        if (field !== RESERVED_KEY) draft.sets[field] = addToSet(ownEntry(draft.sets, field) ?? {}, elements, stamp)
      }
      for (const [field, elements] of Object.entries(operation.remove)) {
        if (field !== RESERVED_KEY) draft.sets[field] = removeFromSet(ownEntry(draft.sets, field) ?? {}, elements, context.vector)
      }
      for (const [field, delta] of Object.entries(operation.increment)) {
        if (field !== RESERVED_KEY) draft.counters[field] = (ownEntry(draft.counters, field) ?? 0) + delta
      }
      writeExt(draft, Object.entries(operation.ext), stamp)
      writeExt(draft, operation.unsetExt.map((key) => [key, undefined]), stamp)
      trackParents(state, current, draft, operation.set, operation.unset, context)
      Object.assign(state, draft)
      break
    }
    case 'text': {
      if (operation.field === RESERVED_KEY) break
      // Refused changes leave the field as held, or as the base document, as a create's do: the
      // record holds the field either way, so a record no create has reached yet is not blank
      // and keeps the kind this operation gave it once stored (a blank state is not stored).
      const held = ownEntry(state.texts, operation.field) ?? baseTextDocument()
      state.texts = { ...state.texts, [operation.field]: applyAuthoredTextChanges(held, operation.changes, stamp.author) ?? held }
      break
    }
    case 'supersede':
      state.supersessions = [...state.supersessions, { ...operation.supersession, stamp, vector: context.vector }]
      break
    case 'tombstone': {
      const existing = state.tombstone
      const incoming = { op: operation.op, reach: reachOf(operation), record: operation.record, stamp }
      const stronger = !existing || tombstoneBeats(incoming, { op: existing.op, reach: reachOf(existing), record: existing.record, stamp: existing.stamp })
      if (stronger) {
        state.tombstone = {
          op: operation.op, record: operation.record, stamp,
          ...(operation.skeleton ? { skeleton: operation.skeleton } : {}),
          ...(operation.derivedFrom !== undefined ? { derivedFrom: operation.derivedFrom } : {}),
          ...(operation.inferred ? { inferred: true as const } : {}),
          ...(operation.inferred && operation.keptEnds ? { keptEnds: operation.keptEnds } : {}),
        }
      }
      // Whichever came first, an inferred deletion that a redaction met notes it (afterRedaction).
      const redactionMet = operation.op === 'redact' || existing?.op === 'redact' || existing?.afterRedaction === true
      const kept = state.tombstone as Tombstone
      if (kept.inferred && redactionMet && !kept.afterRedaction) state.tombstone = { ...kept, afterRedaction: true }
      // The content is gone: only what blocks resurrection (and the redaction skeleton) is kept,
      // so a replica that never saw the content (its bodies erased) holds the same state.
      delete state.created
      state.registers = {}
      state.sets = {}
      state.counters = {}
      state.maps = {}
      state.texts = {}
      state.ext = {}
      state.supersessions = []
      delete state.otherParents
      break
    }
  }
  return { state, ignored: false }
}

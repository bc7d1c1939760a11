/**
 * Memory operations as event bodies: the `op` names and `data` shapes that the Memory API writes
 * to the log and the projection reads back. Each event carries one operation on one record.
 *
 *   memory.create     { kind, id, fields, texts?: { field: [base64 Automerge change] }, ext?, madeAt?, keptAt? }
 *   memory.patch      { kind, id, set, unset, add, remove, increment, ext, unsetExt, madeAt?, keptAt? }
 *                     (madeAt: when an import's source was made, ms; keptAt: a held record's
 *                     values an import wrote again as held, by field (map: by key), with their
 *                     own times; both read only by WriteTimes)
 *   memory.text       { kind, id, field, changes: [base64 Automerge change] }
 *   memory.supersede  { kind, id, by, at, validFrom, confidence, source }
 *   memory.delete     { kind, id, tombstone, derived: [{ kind, id }] }
 *   memory.redact     { kind, id, tombstone, skeleton, derived: [] }
 *   memory.foreign    { kind, lines: [line], copies?: [n] } (lines of an unknown kind; copies:
 *                     which copy of its text each line is, 0 when absent; the kind and lines
 *                     are what a `.mem` vendor file can hold)
 *
 * Bodies from other replicas are untrusted (any granted writer can put anything in a signed
 * event), so decoding validates every field and returns undefined for anything malformed: the
 * projection skips such an event rather than failing.
 */
// The codec's layout module alone (no engine): what a `.mem` vendor file can hold.
import { isPassthroughKindName, isPassthroughLine } from '../bundle/mem/layout.js'
// …and its tombstone row check: what a `.mem` tombstone line can be.
import { decodeRecord, decodeTombstone } from '../bundle/mem/record-codec.js'
import { CLAIM_CLASSES, type ClaimClass, type RecordOperation } from '../crdt/index.js'
import { RESERVED_KEY } from '../crdt/own-keys.js'
import { CairnError } from '../errors.js'
import type { EventBody, JsonValue } from '../log/index.js'
import { fieldOf, isEmptyPatch, isRecordKind, kindSpec, mapFieldOfKey, readPatch, type RecordKind, type RecordPatch } from './kinds.js'

export const MEMORY_OPS = {
  create: 'memory.create',
  patch: 'memory.patch',
  text: 'memory.text',
  supersede: 'memory.supersede',
  delete: 'memory.delete',
  redact: 'memory.redact',
  foreign: 'memory.foreign',
} as const

/** Lines of a record kind Cairn does not know (Portable Memory passthrough), kept verbatim. */
export interface ForeignLines {
  readonly kind: string
  readonly lines: readonly string[]
  /** Per line: which copy of that text it is, in the bundle it came from (a file may repeat a line). */
  readonly copies: readonly number[]
}

/** A deletion or redaction: applying it erases content wherever it arrives. */
export function isTombstoneBody(body: EventBody | undefined): boolean {
  return body?.op === MEMORY_OPS.delete || body?.op === MEMORY_OPS.redact
}

/**
 * Reads a `memory.foreign` body: `{ kind, lines, copies? }` whose kind and every line a `.mem`
 * vendor file can hold (the encoder's own rules, bundle/mem/layout.ts). Kept, a kind that is no
 * file-name stem or a line with a newline or a lone surrogate made every export throw, on every
 * replica holding the event, so such a body is skipped like any malformed one (layout 6).
 */
export function decodeForeignLines(body: EventBody): ForeignLines | undefined {
  const foreign = decodeForeignShape(body)
  return foreign !== undefined && isPassthroughKindName(foreign.kind) && foreign.lines.every(isPassthroughLine) ? foreign : undefined
}

/** A `memory.foreign` body layouts before 6 kept and this one skips (decodeForeignLines). */
export function foreignLinesSkippedSinceLayout6(body: EventBody): boolean {
  return decodeForeignShape(body) !== undefined && decodeForeignLines(body) === undefined
}

/** A `memory.foreign` body's shape, as layouts before 6 read it: an unknown kind, string lines. */
function decodeForeignShape(body: EventBody): ForeignLines | undefined {
  if (body.op !== MEMORY_OPS.foreign) return undefined
  const data = body.data
  if (!isObject(data) || typeof data.kind !== 'string' || data.kind.length === 0 || isRecordKind(data.kind)) return undefined
  if (!isStringArray(data.lines)) return undefined
  const copies = data.copies === undefined ? data.lines.map(() => 0) : data.copies
  if (!Array.isArray(copies) || copies.length !== data.lines.length || !copies.every((n) => Number.isSafeInteger(n) && (n as number) >= 0)) return undefined
  return { kind: data.kind, lines: data.lines, copies: copies as number[] }
}

export interface DerivedRecord {
  readonly kind: RecordKind
  readonly id: string
}

/** One decoded operation: which record, and what to do to its merge state. */
export interface MemoryOperation {
  readonly kind: RecordKind
  readonly id: string
  readonly operation: RecordOperation
  /** Records a delete takes with it (proof of reach). */
  readonly derived?: readonly DerivedRecord[]
}

type Json = { readonly [key: string]: JsonValue }

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string')
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

function decodeChanges(value: unknown, allowEmpty = false): Uint8Array[] | undefined {
  if (!isStringArray(value) || (value.length === 0 && !allowEmpty) || !value.every((item) => BASE64.test(item))) return undefined
  return value.map((item) => new Uint8Array(Buffer.from(item, 'base64')))
}

export function encodeChanges(changes: readonly Uint8Array[]): string[] {
  return changes.map((change) => Buffer.from(change).toString('base64'))
}

function decodeTexts(kind: RecordKind, value: unknown): Record<string, Uint8Array[]> | undefined {
  if (value === undefined) return {}
  if (!isObject(value)) return undefined
  const out: Record<string, Uint8Array[]> = {}
  for (const [field, changes] of Object.entries(value)) {
    if (fieldOf(kindSpec(kind), field)?.merge !== 'text') return undefined
    const decoded = decodeChanges(changes, true)
    if (!decoded) return undefined
    out[field] = decoded
  }
  return out
}

function decodeDerived(value: unknown): DerivedRecord[] | undefined {
  if (!Array.isArray(value)) return undefined
  const out: DerivedRecord[] = []
  for (const item of value) {
    if (!isObject(item) || !isRecordKind(item.kind) || typeof item.id !== 'string') return undefined
    out.push({ kind: item.kind, id: item.id })
  }
  return out
}

/**
 * A stored patch: `known` as its plain parts read (set, unset, add, remove, increment; unknown
 * episode keys in `set` go to its ext), `whole` with the unknown keys the writer put apart (ext,
 * unsetExt) added. @throws InputError for a part that is not a valid patch
 */
function decodePatch(kind: RecordKind, data: { readonly [key: string]: unknown }): { known: RecordPatch; whole: RecordPatch } {
  const known = readPatch(kind, {
    ...(data.set !== undefined ? { set: data.set } : {}),
    ...(data.unset !== undefined ? { unset: data.unset } : {}),
    ...(data.add !== undefined ? { add: data.add } : {}),
    ...(data.remove !== undefined ? { remove: data.remove } : {}),
    ...(data.increment !== undefined ? { increment: data.increment } : {}),
  })
  const ext = isObject(data.ext) ? extensionKeysOnly(kind, data.ext) : {}
  const unsetExt = isStringArray(data.unsetExt) ? data.unsetExt.filter((key) => isExtensionKey(kind, key)) : []
  return { known, whole: { ...known, ext: { ...known.ext, ...ext }, unsetExt: [...known.unsetExt, ...unsetExt] } }
}

/** Whether a name is one of the kind's own fields (or the view's `kind` and `id`). */
function isNativeName(kind: RecordKind, name: string): boolean {
  return name === 'kind' || name === 'id' || fieldOf(kindSpec(kind), name) !== undefined
}

/**
 * Whether a key of a stored body's `ext` or `unsetExt` is one: not one of the kind's own fields,
 * nor `__proto__`, which no state holds (crdt/own-keys.ts). A patch of that key alone would
 * change nothing yet still count as applied: a record no create had reached was then left blank,
 * unstored, and lost the kind the patch gave it, so a later create of another kind was weighed
 * by whether it came in the same batch.
 */
function isExtensionKey(kind: RecordKind, key: string): boolean {
  return key !== RESERVED_KEY && !isNativeName(kind, key)
}

/**
 * The unknown keys of a stored body's `ext` (isExtensionKey). Cairn's writers never put another
 * there; another signer could, and the view would then show that key as the field (a `tags` no
 * set holds, say) where the field itself is empty.
 */
function extensionKeysOnly(kind: RecordKind, ext: Json): Json {
  const keys = Object.keys(ext)
  if (keys.every((key) => isExtensionKey(kind, key))) return ext
  return Object.fromEntries(keys.filter((key) => isExtensionKey(kind, key)).map((key) => [key, ext[key] as JsonValue]))
}

/**
 * Whether a stored body's `ext` or `unsetExt` holds a key that is no extension key: one of its
 * kind's own fields (read as dropped since projection layout 5) or `__proto__` (since layout 6).
 */
export function extNamesNativeField(body: EventBody): boolean {
  if (body.op !== MEMORY_OPS.create && body.op !== MEMORY_OPS.patch) return false
  const data = body.data
  if (!isObject(data) || !isRecordKind(data.kind)) return false
  const kind = data.kind
  return (isObject(data.ext) && Object.keys(data.ext).some((key) => !isExtensionKey(kind, key))) ||
    (isStringArray(data.unsetExt) && data.unsetExt.some((key) => !isExtensionKey(kind, key)))
}

/**
 * Whether a stored patch reads differently from projection layout 4 on, so a store of an
 * earlier layout whose log holds one is rebuilt (Projection.open):
 * - one that changes only the unknown keys its writer put apart (ext, unsetExt) was read as
 *   empty and dropped;
 * - one whose `set` names a key of a map field (`metadata.key`) was read as an unknown key of
 *   that name (episodes) or dropped (other kinds); Cairn's writers never stored one, any other
 *   signer could.
 */
export function patchReadsDifferentlySinceLayout4(body: EventBody): boolean {
  if (body.op !== MEMORY_OPS.patch) return false
  const data = body.data
  if (!isObject(data) || !isRecordKind(data.kind) || typeof data.id !== 'string' || data.id.length === 0) return false
  const spec = kindSpec(data.kind)
  if (isObject(data.set) && Object.keys(data.set).some((name) => mapFieldOfKey(spec, name) !== undefined)) return true
  try {
    const { known, whole } = decodePatch(data.kind, data)
    return isEmptyPatch(known) && !isEmptyPatch(whole)
  } catch (error) {
    if (error instanceof CairnError) return false
    throw error
  }
}

/**
 * Whether a deletion's or redaction's tombstone line is a `.mem` tombstone line (the codec's own
 * check) for this operation and record. A line of another shape was kept and, once competing
 * tombstones ranked by their line's `deletedAt` (layout 6), a signer's line dated early won on
 * every replica and made every export throw (review finding).
 */
function isTombstoneLineOf(line: Json, op: 'delete' | 'redact', id: string): boolean {
  try {
    decodeTombstone(line)
  } catch (error) {
    if (error instanceof CairnError) return false
    throw error
  }
  return line.op === op && line.targetID === id
}

/**
 * Whether a redaction's skeleton is what export writes as the record's `.mem` line (the codec's
 * `decodeRecord`, less the view's kind, a composite kind's id and Cairn's extension fields), or
 * the id alone (a redaction of a record the redacting side never held, which export leaves out).
 * A skeleton holding `__proto__` or a field of the wrong type became the record's view and made
 * every export throw (helper-73).
 */
function isSkeletonLine(kind: RecordKind, id: string, skeleton: Json): boolean {
  if (Object.keys(skeleton).every((name) => name === 'id' || name === 'kind')) return true
  const spec = kindSpec(kind)
  const line: { [key: string]: JsonValue } = { ...skeleton, id }
  delete line.kind
  if (spec.keyFields !== undefined) delete line.id
  for (const field of Object.values(spec.fields)) if (field.extension === true) delete line[field.name]
  try {
    decodeRecord(kind, line)
    return true
  } catch (error) {
    if (error instanceof CairnError) return false
    throw error
  }
}

/** A deletion or redaction body earlier layouts read and layout 6 skips (isTombstoneLineOf, isSkeletonLine). */
export function tombstoneSkippedSinceLayout6(body: EventBody): boolean {
  if (!isTombstoneBody(body) || decodeMemoryOperation(body) !== undefined) return false
  const data = body.data
  return isObject(data) && isRecordKind(data.kind) && typeof data.id === 'string' && data.id.length > 0 && isObject(data.tombstone) &&
    (body.op === MEMORY_OPS.delete ? decodeDerived(data.derived ?? []) !== undefined : isObject(data.skeleton))
}

/** Reads a memory operation from an event body; undefined when the body is not a valid one. */
export function decodeMemoryOperation(body: EventBody): MemoryOperation | undefined {
  const data = body.data
  if (!isObject(data) || !isRecordKind(data.kind) || typeof data.id !== 'string' || data.id.length === 0) return undefined
  const kind = data.kind
  const id = data.id
  try {
    switch (body.op) {
      case MEMORY_OPS.create: {
        if (!isObject(data.fields) || (data.ext !== undefined && !isObject(data.ext))) return undefined
        const texts = decodeTexts(kind, data.texts)
        if (!texts) return undefined
        return { kind, id, operation: { type: 'create', fields: data.fields, texts, ...(data.ext ? { ext: extensionKeysOnly(kind, data.ext) } : {}) } }
      }
      case MEMORY_OPS.patch: {
        const { whole } = decodePatch(kind, data)
        if (isEmptyPatch(whole)) return undefined
        return { kind, id, operation: { type: 'patch', ...whole } }
      }
      case MEMORY_OPS.text: {
        const changes = decodeChanges(data.changes)
        if (typeof data.field !== 'string' || fieldOf(kindSpec(kind), data.field)?.merge !== 'text' || !changes) return undefined
        return { kind, id, operation: { type: 'text', field: data.field, changes } }
      }
      case MEMORY_OPS.supersede: {
        const { by, at, validFrom, confidence, source } = data
        if (typeof by !== 'string' || typeof at !== 'string' || typeof validFrom !== 'string') return undefined
        if (typeof confidence !== 'number' || !CLAIM_CLASSES.includes(source as ClaimClass)) return undefined
        if (!kindSpec(kind).validTime) return undefined
        return { kind, id, operation: { type: 'supersede', supersession: { by, at, validFrom, confidence, source: source as ClaimClass } } }
      }
      case MEMORY_OPS.delete:
      case MEMORY_OPS.redact: {
        const op = body.op === MEMORY_OPS.delete ? 'delete' : 'redact'
        // A redaction takes nothing with it: a derived list on one is ignored, never applied.
        const derived = op === 'delete' ? decodeDerived(data.derived ?? []) : []
        if (!isObject(data.tombstone) || !derived || !isTombstoneLineOf(data.tombstone, op, id)) return undefined
        if (op === 'redact' && (!isObject(data.skeleton) || !isSkeletonLine(kind, id, data.skeleton))) return undefined
        return {
          kind, id, derived,
          operation: { type: 'tombstone', op, record: data.tombstone, ...(op === 'redact' ? { skeleton: data.skeleton as Json } : {}) },
        }
      }
      default:
        return undefined
    }
  } catch (error) {
    if (error instanceof CairnError) return undefined
    throw error
  }
}

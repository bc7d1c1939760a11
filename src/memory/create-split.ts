/**
 * A create too large for one event body, written as several events of its record (the bulk path
 * imports and restores take: rememberMany). The create carries its plain fields and what else
 * fits; `memory.patch` events add the rest of its set elements, map keys and episode extensions,
 * and set the large strings the create could not hold (the create holds "" there), and
 * `memory.text` events carry the rest of its collaborative texts as further Automerge changes by
 * the same author (a text change must name its event's author as actor). An honest replica can
 * hold such a record (a core block grown by many appends, a set by many updates, two long
 * strings written by two updates), and its `.mem` export must import again.
 *
 * Applied in order, by one author in one atomic batch, the events leave the view one create
 * would: an add-wins set orders its elements by their earliest add, then by position, so the
 * elements of later events follow the earlier ones in the given order; map keys, extensions and
 * plain fields are last-writer-wins (a later event of the batch wins); a text ends as the given
 * text. The elements of `tags` and an episode's `categories` are placed first: a relay judges a
 * token writer's create by them (its scope), and a create without them would be withheld.
 *
 * A record with one field, set element, map value or extension too large for any event, or
 * whose fields that cannot move out (numbers, ids, lists such as procedure.steps) overflow a
 * body alone, is refused naming the field.
 *
 * An import's creates and patches carry when their source was made (`madeAt`, WriteTimes): every
 * body is measured against BODY_LIMIT, which leaves room for it.
 *
 * Invariant: every event returned is measured and fits MAX_BODY_BYTES.
 */
import { canonicalJson, MAX_BODY_BYTES, type JsonValue } from '../log/index.js'
import { baseTextDocument, spliceText, textOf } from '../crdt/index.js'
import { LimitError } from '../errors.js'
import { encodeChanges, fieldOf, kindSpec, MEMORY_OPS } from '../projection/index.js'
import type { Entry } from './memory-core.js'
import { entryBodySize, nameOversizedRecord, onHeldTexts, type CreateEntry } from './record-entries.js'

type Documents = Readonly<Record<string, Uint8Array>>
type JsonObject = { [key: string]: JsonValue }

export interface CreateWrites {
  /** The events to append, the create first. */
  readonly entries: readonly Entry[]
  /** The record's text documents after them (what a later create of the id in the batch builds on). */
  readonly texts: Documents
}

/**
 * The events that write a create onto the text documents held for its id (onHeldTexts): the
 * create alone when it fits one body, as it always was; else the create and the events this
 * file's header describes.
 * @throws LimitError BODY_TOO_LARGE naming `<kind>.<field>` when a plain field, or one element of a set, map or the extensions, does not fit any event
 */
export function createWrites(entry: CreateEntry, held: Documents | undefined, author: string, nowMs: number): CreateWrites {
  // A create whose texts as built (from the base document) overflow is split at once: writing
  // them onto the held documents first would apply a whole large text for nothing.
  if (fitsOneBody(entry)) {
    const whole = onHeldTexts(entry, held, author, nowMs)
    if (fitsOneBody(whole.entry)) return { entries: [whole.entry], texts: whole.texts }
  }
  return splitCreate(entry, held, author, nowMs)
}

/**
 * Refuses, as createWrites would, a create that cannot be written even split; builds no text
 * (a text always splits), so an import checks its records without building them twice.
 * @throws LimitError BODY_TOO_LARGE as createWrites
 */
export function assertCreateWritable(entry: CreateEntry): void {
  if (fitsOneBody(entry)) return
  const plan = planSplit(entry)
  packPieces(entry.kind, entry.id, plan.pieces, BODY_LIMIT - plan.createSize, plan.create)
}

/** Room kept in every body for `,"madeAt":<ms>` (an import's source time, added after the split). */
const MADE_AT_BYTES = 32
/** The size every create and patch is measured against. */
const BODY_LIMIT = MAX_BODY_BYTES - MADE_AT_BYTES

/** What a body holds beyond its data: `{"data":…,"op":"memory.create","salt":"<32 hex>"}`. */
const BODY_ENVELOPE_BYTES = 128

/** Bodies are measured exactly only when a cheap bound cannot tell (bulk writes are many and small). */
function fitsOneBody(entry: Entry, extra = 0): boolean {
  return sizeBound(entry.data, BODY_LIMIT) + BODY_ENVELOPE_BYTES + extra <= BODY_LIMIT || entryBodySize(entry) + extra <= BODY_LIMIT
}

/**
 * Whether every body of a split record (createWrites' entries) still fits with `extra` bytes more
 * besides its madeAt (a held record's keptAt, bulk-writes.ts). Text events carry neither.
 */
export function fitWithMore(entries: readonly Entry[], extra: number): boolean {
  return entries.every((entry) => entry.op === MEMORY_OPS.text || fitsOneBody(entry, extra))
}

/**
 * An upper bound of a value's canonical JSON size in bytes, without serializing it: a UTF-16
 * unit takes at most 6 bytes (`\u001f`), a number at most 32, an integer kept exact (a bigint)
 * its digits. Stops once past `limit`.
 */
function sizeBound(value: JsonValue, limit: number): number {
  if (typeof value === 'string') return value.length * 6 + 2
  if (typeof value === 'bigint') return String(value).length
  if (typeof value !== 'object' || value === null) return 32
  let total = 2
  if (Array.isArray(value)) {
    for (const item of value) {
      total += sizeBound(item, limit) + 1
      if (total > limit) return total
    }
    return total
  }
  for (const key of Object.keys(value)) {
    total += key.length * 6 + 4 + sizeBound(value[key] as JsonValue, limit)
    if (total > limit) return total
  }
  return total
}

const bytesOf = (value: JsonValue): number => Buffer.byteLength(canonicalJson(value))

/** One element moved out of a create: a set element, a map key's value, an extension, a plain string field. */
interface Piece {
  readonly part: 'add' | 'map' | 'ext' | 'set'
  /** The set, map or plain field; for an extension, its key. */
  readonly field: string
  readonly key: string
  readonly value: JsonValue
}

/** Assigns an own property, whatever the key (no prototype setter). */
function setOwnKey(target: JsonObject, key: string, value: JsonValue): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** A split create: the create's body with its plain fields, the pieces to place, its size. */
interface SplitPlan {
  readonly create: JsonObject
  /** The create's `texts`, each empty until its first step is placed. */
  readonly createTexts: Record<string, string[]>
  readonly pieces: readonly Piece[]
  readonly createSize: number
}

/** Sets a relay judges a token writer's create by (relay-endpoint.ts): their elements go into the create first. */
const SCOPE_SETS: ReadonlySet<string> = new Set(['tags', 'categories'])

/** Whether a plain field can be left "" in the create and set by a patch after it: a string written last-writer-wins, not an id, a key or a parent. */
function isMovable(spec: ReturnType<typeof kindSpec>, name: string): boolean {
  const field = fieldOf(spec, name)
  return field !== undefined && field.type === 'string' && field.merge === 'lww' && field.system !== true &&
    !(spec.keyFields ?? []).includes(name) && !spec.parentFields.includes(name)
}

/** @throws LimitError BODY_TOO_LARGE naming the largest plain field when the fields that cannot move out overflow a body */
function planSplit(entry: CreateEntry): SplitPlan {
  const { kind, id } = entry
  const spec = kindSpec(kind)
  const data = entry.data as unknown as { readonly fields: JsonObject; readonly texts?: Readonly<Record<string, readonly string[]>>; readonly ext?: JsonObject }
  // The create's plain fields, with its sets and maps empty: their elements become pieces.
  const plain: JsonObject = {}
  const scoped: Piece[] = []
  const pieces: Piece[] = []
  for (const [name, value] of Object.entries(data.fields)) {
    const merge = fieldOf(spec, name)?.merge
    if (merge === 'set' && Array.isArray(value)) {
      plain[name] = []
      for (const element of value) (SCOPE_SETS.has(name) ? scoped : pieces).push({ part: 'add', field: name, key: '', value: element })
    } else if (merge === 'map' && isObject(value)) {
      plain[name] = {}
      for (const [key, item] of Object.entries(value)) pieces.push({ part: 'map', field: name, key, value: item })
    } else plain[name] = value
  }
  for (const [key, value] of Object.entries(data.ext ?? {})) pieces.push({ part: 'ext', field: key, key, value })
  const createTexts: Record<string, string[]> = Object.fromEntries(Object.keys(data.texts ?? {}).map((field) => [field, []]))
  const create: JsonObject = {
    kind, id, fields: plain,
    ...(data.texts !== undefined ? { texts: createTexts } : {}),
    ...(data.ext !== undefined ? { ext: {} } : {}),
  }
  let createSize = entryBodySize({ op: MEMORY_OPS.create, data: create })
  // Plain strings too large together: the largest move out, "" in the create. One too large for
  // a patch stays, and the create is refused below naming it (as one too large for any event).
  const moved: Piece[] = []
  const patchRoom = BODY_LIMIT - entryBodySize({ op: MEMORY_OPS.patch, data: emptyPatch(kind, id) })
  const movable = Object.entries(plain)
    .filter(([name, value]) => typeof value === 'string' && isMovable(spec, name) && bytesOf(name) + bytesOf(value) + 2 <= patchRoom)
    .sort(([, a], [, b]) => (b as string).length - (a as string).length)
  // Room is kept for the scope sets' elements too, which go into the create first.
  const scopedBytes = scoped.reduce((sum, piece) => sum + bytesOf(piece.value) + 1, 0)
  for (const [name, value] of movable) {
    if (createSize + scopedBytes <= BODY_LIMIT) break
    plain[name] = ''
    moved.push({ part: 'set', field: name, key: name, value })
    createSize = entryBodySize({ op: MEMORY_OPS.create, data: create })
  }
  pieces.unshift(...scoped)
  pieces.push(...moved)
  if (createSize > BODY_LIMIT) {
    // Named as a create too large is named, among the fields that cannot move out of it.
    const refusal = new LimitError('BODY_TOO_LARGE', `the fields that cannot be split across events make a body of ${createSize} bytes, over ${MAX_BODY_BYTES}`, { field: 'data' })
    throw nameOversizedRecord(refusal, [{ ...entry, data: create, fields: plain }])
  }
  return { create, createTexts, pieces, createSize }
}

/** A piece's key in the patch part its field opens (a set's `add`, a map's `set`), if it opens one. */
function opensPart(piece: Piece): boolean {
  return piece.part === 'add' || piece.part === 'map'
}

function splitCreate(entry: CreateEntry, held: Documents | undefined, author: string, nowMs: number): CreateWrites {
  const { kind, id } = entry
  const { create, createTexts, pieces, createSize } = planSplit(entry)
  const textFields = Object.keys(createTexts)
  const patches = packPieces(kind, id, pieces, BODY_LIMIT - createSize, create)
  const texts: Record<string, Uint8Array> = { ...held }
  const textEntries: Entry[] = []
  let createRoom = BODY_LIMIT - entryBodySize({ op: MEMORY_OPS.create, data: create })
  const textEventSize = (field: string): number => entryBodySize({ op: MEMORY_OPS.text, data: { kind, id, field, changes: [] } })
  for (const field of textFields) {
    const target = entry.fields[field]
    // An empty text changes no held text, as onHeldTexts has it.
    if (typeof target !== 'string' || target === '') continue
    const document = held !== undefined && Object.hasOwn(held, field) ? held[field] as Uint8Array : baseTextDocument()
    const { steps, document: after } = textSteps(document, author, target, nowMs, createRoom, BODY_LIMIT - textEventSize(field))
    const [first = [], ...rest] = steps
    createTexts[field] = first
    createRoom -= changesBytes(first)
    for (const changes of rest) textEntries.push({ op: MEMORY_OPS.text, data: { kind, id, field, changes } })
    texts[field] = after
  }
  const entries: Entry[] = [
    { op: MEMORY_OPS.create, data: create },
    ...patches.map((patch) => ({ op: MEMORY_OPS.patch, data: patch })),
    ...textEntries,
  ]
  for (const written of entries) {
    const size = entryBodySize(written)
    // The packing above counts bytes as they serialize: reaching this is a bug, refused before writing.
    if (size > BODY_LIMIT) throw new LimitError('BODY_TOO_LARGE', `a part of the split record is ${size} bytes, over ${BODY_LIMIT}`, { field: kind })
  }
  return { entries, texts }
}

/** An empty `memory.patch` body of the record (the shape `update` writes). */
function emptyPatch(kind: string, id: string): { kind: string; id: string; set: Record<string, JsonObject>; unset: string[]; add: Record<string, string[]>; remove: Record<string, string[]>; increment: Record<string, number>; ext: JsonObject; unsetExt: string[] } {
  return { kind, id, set: {}, unset: [], add: {}, remove: {}, increment: {}, ext: {}, unsetExt: [] }
}

/**
 * Places the pieces in order: into the create while `room` lasts, then into patches, each as
 * full as a body allows. A piece's cost is its bytes in the body with its comma, and in a patch
 * the field's key and brackets the first time the patch names the field.
 * @throws LimitError BODY_TOO_LARGE naming the field of a piece no event can hold
 */
function packPieces(kind: string, id: string, pieces: readonly Piece[], room: number, create: JsonObject): JsonObject[] {
  const patchRoom = BODY_LIMIT - entryBodySize({ op: MEMORY_OPS.patch, data: emptyPatch(kind, id) })
  const patches: JsonObject[] = []
  let patch: ReturnType<typeof emptyPatch> | undefined
  let left = room
  for (const piece of pieces) {
    const bytes = piece.part === 'add' ? bytesOf(piece.value) + 1 : bytesOf(piece.key) + 1 + bytesOf(piece.value) + 1
    // The field's key, quotes, colon, brackets and comma, when a patch first names it.
    const named = opensPart(piece) && patch !== undefined && !Object.hasOwn(piece.part === 'add' ? patch.add : patch.set, piece.field)
    const opening = bytesOf(piece.field) + 4
    if (patch === undefined && bytes <= left) {
      placeInCreate(create, piece)
      left -= bytes
      continue
    }
    if (patch === undefined || bytes + (named ? opening : 0) > left) {
      if (bytes + (opensPart(piece) ? opening : 0) > patchRoom) {
        const name = piece.part === 'ext' ? piece.key : piece.field
        const what = piece.part === 'set' ? `${name} is` : `one ${piece.part === 'add' ? 'element' : 'value'} of ${name} is`
        throw new LimitError('BODY_TOO_LARGE', `${what} ${bytes} bytes, more than any event body (${MAX_BODY_BYTES}) holds`, { field: `${kind}.${name}` })
      }
      patch = emptyPatch(kind, id)
      patches.push(patch as unknown as JsonObject)
      left = patchRoom
    }
    left -= bytes + (opensPart(piece) && !Object.hasOwn(piece.part === 'add' ? patch.add : patch.set, piece.field) ? opening : 0)
    placeInPatch(patch, piece)
  }
  return patches
}

function placeInCreate(create: JsonObject, piece: Piece): void {
  const fields = create.fields as JsonObject
  if (piece.part === 'add') (fields[piece.field] as JsonValue[]).push(piece.value)
  else if (piece.part === 'map') setOwnKey(fields[piece.field] as JsonObject, piece.key, piece.value)
  else if (piece.part === 'set') setOwnKey(fields, piece.field, piece.value)
  else setOwnKey(create.ext as JsonObject, piece.key, piece.value)
}

function placeInPatch(patch: ReturnType<typeof emptyPatch>, piece: Piece): void {
  if (piece.part === 'add') {
    if (!Object.hasOwn(patch.add, piece.field)) setOwnKey(patch.add as JsonObject, piece.field, [])
    ;(patch.add[piece.field] as string[]).push(piece.value as string)
  } else if (piece.part === 'map') {
    if (!Object.hasOwn(patch.set, piece.field)) setOwnKey(patch.set as JsonObject, piece.field, {})
    setOwnKey(patch.set[piece.field] as JsonObject, piece.key, piece.value)
  } else if (piece.part === 'set') setOwnKey(patch.set as JsonObject, piece.field, piece.value)
  else setOwnKey(patch.ext, piece.key, piece.value)
}

/** Bytes a list of base64 changes adds to a body: each with its quotes and comma. */
function changesBytes(changes: readonly string[]): number {
  return changes.reduce((sum, change) => sum + change.length + 3, 0)
}

/** A create's text starts in it only when this much room is left (else its text events carry it all). */
const MIN_CREATE_TEXT_ROOM = 16 * 1024
/** What an Automerge change holds beyond its text (header, actor, dependencies, column metadata). */
const CHANGE_OVERHEAD_BYTES = 1024

/**
 * The changes that turn a document's text into `target`, written as `author`: a splice of what
 * lies between the common prefix and suffix, cut into deletions and insertions whose changes
 * fit. The first step takes at most `firstRoom` bytes (it goes in the create; empty when that
 * is too little), every other step at most `room`.
 */
function textSteps(document: Uint8Array, author: string, target: string, nowMs: number, firstRoom: number, room: number): { steps: string[][]; document: Uint8Array } {
  const current = textOf(document)
  const start = commonPrefix(current, target)
  const end = commonSuffix(current, target, start)
  const insert = target.slice(start, target.length - end)
  const deletion = current.length - start - end
  let deleted = 0
  let inserted = 0
  let after = document
  const steps: string[][] = []
  if (firstRoom < MIN_CREATE_TEXT_ROOM) steps.push([])
  while (deleted < deletion || inserted < insert.length) {
    const limit = steps.length === 0 ? firstRoom : room
    // Deletions first (all at once unless their change is too large), then insertions. Splice
    // indexes count UTF-16 units (as appendText's do), and no step cuts a surrogate pair.
    let count = deleted < deletion ? deletion - deleted : 0
    let budget = Math.floor(((limit - 3) * 3) / 4) - CHANGE_OVERHEAD_BYTES
    for (;;) {
      const stop = count > 0 ? inserted : cutText(insert, inserted, budget)
      if (count === 0 && stop === inserted) throw new LimitError('BODY_TOO_LARGE', `an event of ${limit} bytes holds no text`, { field: 'texts' })
      const edit = count > 0
        ? spliceText(after, author, start, count, '', nowMs)
        : spliceText(after, author, start + inserted, 0, insert.slice(inserted, stop), nowMs)
      const changes = encodeChanges(edit.changes)
      const size = changesBytes(changes)
      if (size <= limit) {
        steps.push(changes)
        after = edit.document
        deleted += count
        inserted = stop
        break
      }
      if (count > 0) {
        const fewer = pairSafeCount(current, start + deleted, Math.ceil(count / 2))
        if (fewer >= count) throw new LimitError('BODY_TOO_LARGE', `an event of ${limit} bytes holds no deletion`, { field: 'texts' })
        count = fewer
      } else budget = Math.floor((budget * limit * 0.9) / size)
    }
  }
  return { steps, document: after }
}

/** `count` units from `from`, one more when that would leave half a surrogate pair. */
function pairSafeCount(text: string, from: number, count: number): number {
  return isLowSurrogate(text.charCodeAt(from + count)) ? count + 1 : count
}

/**
 * Where a slice of `text` from `from` ends so that its change likely takes at most `budgetBytes`:
 * whole code points, an ASCII one costing a byte and another its UTF-8 bytes plus 3 (measured:
 * each run of one byte length costs a few bytes of column metadata, so mixed scripts take up to
 * ~1.4 bytes of change per UTF-8 byte). The change is measured after, and cut shorter if need be.
 */
function cutText(text: string, from: number, budgetBytes: number): number {
  let cost = 0
  let at = from
  while (at < text.length) {
    const code = text.codePointAt(at) as number
    const bytes = code < 0x80 ? 1 : (code < 0x800 ? 2 : code < 0x10000 ? 3 : 4) + 3
    if (cost + bytes > budgetBytes) break
    cost += bytes
    at += code > 0xffff ? 2 : 1
  }
  return at
}

const isHighSurrogate = (code: number): boolean => code >= 0xd800 && code <= 0xdbff
const isLowSurrogate = (code: number): boolean => code >= 0xdc00 && code <= 0xdfff

/** Length of the common prefix, never ending between the halves of a surrogate pair. */
function commonPrefix(a: string, b: string): number {
  const most = Math.min(a.length, b.length)
  let length = 0
  while (length < most && a.charCodeAt(length) === b.charCodeAt(length)) length++
  if (length > 0 && isHighSurrogate(a.charCodeAt(length - 1))) length--
  return length
}

/** Length of the common suffix after `start`, never starting between the halves of a pair. */
function commonSuffix(a: string, b: string, start: number): number {
  const most = Math.min(a.length, b.length) - start
  let length = 0
  while (length < most && a.charCodeAt(a.length - 1 - length) === b.charCodeAt(b.length - 1 - length)) length++
  if (length > 0 && isLowSurrogate(a.charCodeAt(a.length - length))) length--
  return length
}

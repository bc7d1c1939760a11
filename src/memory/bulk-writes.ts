/**
 * The bulk write paths: many records or updates validated up front and written as one atomic
 * signed batch, foreign-kind lines kept verbatim, and tombstones imported from elsewhere. Each
 * refuses the whole batch on any bad item, naming its index; nothing is written then.
 */
import { assertArray, assertNonEmptyString, assertObject, assertOneOf, assertString } from '../assert.js'
import { baseTextDocument, lastTextChangeTime, markText, newTombstoneWins, textOf } from '../crdt/index.js'
import { canonicalJson, type JsonValue } from '../log/index.js'
import { InputError, LimitError, relocate } from '../errors.js'
// The codec's layout module alone: the rules a vendor kind and line keep in a `.mem` file.
import { isPassthroughKindName, MAX_KIND_NAME_LENGTH, passthroughLineFault } from '../bundle/mem/layout.js'
// The import's walk of a held record (on log and projection alone): the times a write carries as kept.
import { keepNewerWrites, type KeptTimes } from '../bundle/portable-records.js'
import { encodeChanges, isRecordKind, MEMORY_OPS, refuseWriteOnce, validatePatch, type PatchInput, type RecordView } from '../projection/index.js'
import { atIndex, refuseOtherKind, refuseTombstoned, type Entry, type MemoryCore } from './memory-core.js'
import { createWrites, fitWithMore } from './create-split.js'
import { createEntry, redactionSkeleton, type CreateEntry } from './record-entries.js'
import type { RememberManyOptions } from './memory-types.js'
import { writeTimesOf } from './write-times.js'

/**
 * The vendor kind Cairn's `.mem` export writes from records (`items/cairnExtensions.jsonl`,
 * src/bundle/cairn-extensions.ts): never kept as lines, which would go stale.
 */
export const CAIRN_EXTENSIONS_KIND = 'cairnExtensions'

/**
 * Internal, for importers (merge-records.ts): Memory.rememberMany's option under this key gives,
 * by index in the records written, the times of what each held record's write carries as held
 * (`keptAt`, keepNewerWrites: the walk that chose those values), taken from write times read from
 * `from` on. rememberMany then reads write times only for a held record with none (undefined), or
 * whose `from` is not its source's second. Not in the public options (a symbol: assertOptions
 * sees only string keys).
 */
export const KEPT_TIMES: unique symbol = Symbol('cairn.keptTimes')

export interface TakenKeptTimes {
  /** The start of the second the times were read from (ms since the epoch). */
  readonly from: number
  readonly keptAt: KeptTimes
}

export type GivenKeptTimes = readonly (TakenKeptTimes | undefined)[]

/** RememberManyOptions with the importers' kept times. */
export interface RememberImportOptions extends RememberManyOptions {
  readonly [KEPT_TIMES]?: GivenKeptTimes
}

/** A foreign-lines event stays well under the body limit: several events when the lines are many. */
const FOREIGN_CHUNK_BYTES = 256 * 1024

/**
 * @param madeAt when the records' source was made (an import; ms since the epoch), for all of them
 *   or one time (or none) per record: the create and
 *   patches of a record carry it (`madeAt`, at most the write's own time) and its texts are
 *   changed at that time, so WriteTimes shows when its values were current, not when imported.
 *   A held record's create writes every field again, those the import kept as held too
 *   (merge-records.ts: written after the source was made): it carries their own times
 *   (`keptAt`), so they do not look older, and the values it changes look as old as the source,
 *   not as new as the import (three backups restored oldest first: the third was kept out).
 * @param given those times as the import took them with the values (GivenKeptTimes): their
 *   write times are not read again. A held record without them (a caller of its own) is timed
 *   here: every value it carries as held that was written in or after the source's second keeps
 *   that write's time; a value it replaces is as old as its source.
 */
export async function rememberMany(core: MemoryCore, records: readonly unknown[], madeAt?: number | readonly (number | undefined)[], given?: GivenKeptTimes): Promise<string[]> {
  const list = assertArray(records, 'records')
  const built = list.map((record, index) => atIndex(`records[${index}]`, () => createEntry(core, record)))
  const states = await core.states(built.map((entry) => entry.id))
  // The kind of each id so far: held here, or given earlier in this list.
  const kinds = new Map<string, string>()
  states.forEach((state, index) => {
    if (state?.tombstone) refuseTombstoned(state.tombstone.op, `records[${index}].id`)
    const entry = built[index] as (typeof built)[number]
    refuseOtherKind(kinds.get(entry.id) ?? state?.kind, entry.kind, `records[${index}].id`)
    kinds.set(entry.id, entry.kind)
  })
  // Texts go onto what is held, or onto an earlier create of the id in this list (onHeldTexts).
  // A record too large for one event is written as several, all in this one atomic batch.
  // The wall the batch's events will carry (or later): a source time is at most it.
  const now = core.eventNow()
  const sourceTimes = built.map((_, index) => {
    const time = typeof madeAt === 'number' ? madeAt : madeAt?.[index]
    return time === undefined ? undefined : Math.min(time, now)
  })
  // What a held record holds from writes in or after its source's second: its create carries
  // those values (merge-records kept them) with their own times.
  const heldFroms = sourceTimes.map((time) => (time === undefined ? undefined : Math.floor(time / 1000) * 1000))
  // Taken by the import with the values (from the same second: a source dated after this
  // replica's now is capped here, and its times are read again).
  const givenTimes = built.map((_, index) => {
    const taken = given?.[index]
    // A source's own time may be read from just after it (an entry's time, merge-records.ts):
    // what it leaves out was written at that time, which madeAt dates alike. Just after a time in
    // ms (a PAM entry's) may be the next second (…999): still the merge's read, and its choice.
    const time = sourceTimes[index]
    const isOwn = taken !== undefined && (Math.floor(taken.from / 1000) * 1000 === heldFroms[index] || (time !== undefined && taken.from === time + 1))
    return isOwn ? taken.keptAt : undefined
  })
  const keptOf = new Map<number, KeptTimes>()
  const unread = states.flatMap((state, index) => (state !== undefined && heldFroms[index] !== undefined && givenTimes[index] === undefined ? [index] : []))
  const earliest = Math.min(...unread.map((index) => heldFroms[index] as number))
  const [read, views] = unread.length > 0
    ? await Promise.all([writeTimesOf(unread.map((index) => states[index]), core.engine.log, earliest), core.currentViews(unread.map((index) => (built[index] as CreateEntry).id))])
    : [[], []]
  unread.forEach((index, n) => {
    const times = read[n]
    const heldFrom = heldFroms[index]
    const created = built[index] as CreateEntry
    const data = created.data as { readonly fields?: Readonly<Record<string, JsonValue>>; readonly ext?: Readonly<Record<string, JsonValue>> }
    // The fields and extension keys it writes as they are held keep their times (texts keep their
    // own); those it replaces are the caller's, as old as its source.
    if (times !== undefined && heldFrom !== undefined) keptOf.set(index, keepNewerWrites(created.kind, { ...data.fields, ...data.ext }, times, heldFrom, views[n], false).keptAt)
  })
  const documents = new Map<string, Readonly<Record<string, Uint8Array>>>()
  const writes = built.map((created, index) => {
    const sourceTime = sourceTimes[index]
    const heldFrom = heldFroms[index]
    const kept = (states[index] !== undefined ? givenTimes[index] ?? keptOf.get(index) : undefined) ?? {}
    // Dated by its source: a record new here, or held (its texts change only where the bundle's
    // differ, and those values are as old as the source). The first write of an id in the list.
    const sourced = sourceTime !== undefined && !documents.has(created.id)
    // A new record's texts are made again from the base document at its source's time (as built, they carry now).
    const held = documents.get(created.id) ?? states[index]?.texts ?? (sourced && states[index] === undefined ? baseDocuments(created) : undefined)
    const { entries, texts } = atIndexOfLimit(`records[${index}]`, () => createWrites(created, held, core.author, sourced ? sourceTime : now))
    // A held text the source holds too, last changed before it was made, is marked current at
    // its time (an empty change): the record's plain fields are written again with that time,
    // and the text kept an older one, so a bundle made between wrote over it (b1, b3, b2: helper-83).
    const marks = sourced && heldFrom !== undefined && states[index] !== undefined ? markHeldTexts(created, states[index]?.texts, texts, core.author, sourceTime, heldFrom) : undefined
    documents.set(created.id, marks?.texts ?? texts)
    if (!sourced) return entries
    const written = marks ? [...entries, ...marks.entries] : entries
    const keptAt = Object.keys(kept).length > 0 ? `,"keptAt":${canonicalJson(kept)}` : ''
    // Kept times that would not fit its bodies (in bytes, as bodies are measured: a key beyond
    // ASCII takes up to 3 per UTF-16 unit, helper-83): neither time, as before; every value then
    // looks as new as the import, none older than it is.
    if (keptAt !== '' && !fitWithMore(entries, Buffer.byteLength(keptAt))) return written
    const stamps: { [key: string]: JsonValue } = keptAt !== '' ? { madeAt: sourceTime, keptAt: kept } : { madeAt: sourceTime }
    return written.map((entry) => (entry.op === MEMORY_OPS.text ? entry : { ...entry, data: { ...(entry.data as { [key: string]: JsonValue }), ...stamps } }))
  })
  await core.refuseDeletedParents(built, (index) => `records[${index}]`)
  const events = writes.flat()
  if (events.length > 0) await core.append(events.map(({ op, data }) => ({ op, data })))
  return built.map((entry) => entry.id)
}

/**
 * Empty text changes dated `sourceTime` for the held texts a held record's import write leaves
 * as they are (the source holds the same text) whose latest change is before `from`.
 */
function markHeldTexts(created: CreateEntry, before: Readonly<Record<string, Uint8Array>> | undefined, after: Readonly<Record<string, Uint8Array>>, author: string, sourceTime: number, from: number): { entries: Entry[]; texts: Record<string, Uint8Array> } | undefined {
  const data = created.data as { readonly texts?: Readonly<Record<string, unknown>> }
  const entries: Entry[] = []
  const texts: Record<string, Uint8Array> = { ...after }
  for (const field of Object.keys(data.texts ?? {})) {
    const value = created.fields[field]
    const held = before !== undefined && Object.hasOwn(before, field) ? before[field] as Uint8Array : undefined
    const now = Object.hasOwn(after, field) ? after[field] as Uint8Array : undefined
    // Unchanged by the create (its text as held): the import writes nothing else to it.
    if (typeof value !== 'string' || held === undefined || now === undefined || textOf(held) !== value || textOf(now) !== value || lastTextChangeTime(now) >= from) continue
    const mark = markText(now, author, sourceTime)
    entries.push({ op: MEMORY_OPS.text, data: { kind: created.kind, id: created.id, field, changes: encodeChanges(mark.changes) } })
    texts[field] = mark.document
  }
  return entries.length > 0 ? { entries, texts } : undefined
}

/** The base document for each collaborative text a create carries. */
function baseDocuments(entry: Entry): Record<string, Uint8Array> {
  const texts = (entry.data as { readonly texts?: Readonly<Record<string, unknown>> }).texts ?? {}
  return Object.fromEntries(Object.keys(texts).map((field) => [field, baseTextDocument()]))
}

/** A refusal of one record too large for its events, named by its place (`records[3].episode.details`) as atIndex names input errors. */
function atIndexOfLimit<T>(path: string, run: () => T): T {
  try {
    return run()
  } catch (error) {
    if (error instanceof LimitError && error.where.field !== undefined) throw relocate(error, { ...error.where, field: `${path}.${error.where.field}` })
    throw error
  }
}

export async function updateMany(core: MemoryCore, updates: readonly { readonly id: string; readonly changes: PatchInput }[]): Promise<void> {
  const list = assertArray(updates, 'updates')
  const ids = list.map((update, index) => assertNonEmptyString(assertObject(update, `updates[${index}]`).id, `updates[${index}].id`))
  const unique = [...new Set(ids)]
  const found = await core.currentViews(unique)
  const views = new Map(unique.map((id, i) => [id, found[i]] as const))
  const states = await core.states(unique)
  unique.forEach((id, index) => {
    const tombstone = states[index]?.tombstone
    if (tombstone) refuseTombstoned(tombstone.op, `updates[${ids.indexOf(id)}].id`)
    if (!views.get(id)) throw new InputError('UNKNOWN_RECORD', 'no such record', { field: `updates[${ids.indexOf(id)}].id` })
  })
  const entries = list.map((update, index) => atIndex(`updates[${index}]`, () => {
    const view = views.get(ids[index] as string) as RecordView
    const patch = validatePatch(view.kind, (update as { changes: PatchInput }).changes)
    refuseWriteOnce(view.kind, patch)
    return { op: MEMORY_OPS.patch, data: { kind: view.kind, id: view.id, ...patch } as unknown as JsonValue }
  }))
  if (entries.length > 0) await core.append(entries)
}

export async function rememberForeign(core: MemoryCore, kind: string, lines: readonly string[]): Promise<void> {
  const name = assertNonEmptyString(kind, 'kind')
  if (isRecordKind(name)) throw new InputError('KNOWN_KIND', `${name} is a known kind; use remember`, { field: 'kind' })
  if (name === CAIRN_EXTENSIONS_KIND) throw new InputError('RESERVED_KIND', `${name} is written by Cairn's export from the records' tags and contextID`, { field: 'kind' })
  // What the `.mem` encoder would refuse is refused here: kept, it would fail every export.
  if (!isPassthroughKindName(name)) {
    throw new InputError('BAD_KIND_NAME', `${JSON.stringify(name.slice(0, 64))} cannot be a vendor kind: a kind is a safe file-name stem of at most ${MAX_KIND_NAME_LENGTH} characters (no "/", "\\", ":", control character or leading "."), not a reserved count key`, { field: 'kind' })
  }
  const list = assertArray(lines, 'lines').map((item, i) => {
    const line = assertString(item, `lines[${i}]`)
    const fault = passthroughLineFault(line)
    if (fault !== undefined) throw new InputError(fault.code, fault.message, { field: `lines[${i}]` })
    return line
  })
  const entries: Entry[] = []
  // Each line is numbered as the nth copy of its text in `lines`: a repeated line is kept as
  // often as it is given, and giving the same lines again stores nothing new.
  const seen = new Map<string, number>()
  let chunk: string[] = []
  let copies: number[] = []
  let size = 0
  const flush = (): void => {
    const data: Record<string, JsonValue> = { kind: name, lines: chunk }
    if (copies.some((n) => n > 0)) data.copies = copies
    entries.push({ op: MEMORY_OPS.foreign, data })
    chunk = []
    copies = []
    size = 0
  }
  for (const line of list) {
    if (chunk.length > 0 && size + line.length > FOREIGN_CHUNK_BYTES) flush()
    const copy = seen.get(line) ?? 0
    seen.set(line, copy + 1)
    chunk.push(line)
    copies.push(copy)
    // The line's quotes and comma, and its copy number with a comma when copies are listed.
    size += line.length + 8 + String(copy).length + 1
  }
  if (chunk.length > 0) flush()
  if (entries.length > 0) await core.append(entries)
}

/**
 * @param skeletons for redactions: the redacted record as the source holds it (a bundle's line),
 *   used whether or not this replica holds the target (its view only when the line is missing);
 *   its content fields are emptied again.
 */
export async function importTombstones(
  core: MemoryCore,
  tombstones: readonly { readonly [key: string]: JsonValue }[],
  skeletons?: ReadonlyMap<string, { readonly [key: string]: JsonValue }>,
): Promise<number> {
  const entries: Entry[] = []
  for (const [index, value] of assertArray(tombstones, 'tombstones').entries()) {
    const record = assertObject(value, `tombstones[${index}]`) as { [key: string]: JsonValue }
    const op = assertOneOf(record.op, ['delete', 'redact'], `tombstones[${index}].op`)
    const kind = record.targetKind
    if (!isRecordKind(kind)) throw new InputError('UNKNOWN_KIND', 'tombstone targets an unknown kind', { field: `tombstones[${index}].targetKind` })
    const target = assertNonEmptyString(record.targetID, `tombstones[${index}].targetID`)
    const state = await core.state(target)
    // A record already tombstoned takes this one only if it ranks first (the same rank sync
    // uses: record-state's tombstoneBeats, on the line), so which of two bundles' tombstones a
    // record keeps does not depend on the import order.
    if (state?.tombstone && !newTombstoneWins(op, record, state.tombstone)) continue
    const derivedBlock = (typeof record.derived === 'object' && record.derived !== null && !Array.isArray(record.derived) ? record.derived : {}) as Record<string, JsonValue>
    const ids = (field: string): string[] => (Array.isArray(derivedBlock[field]) ? (derivedBlock[field] as JsonValue[]).filter((id): id is string => typeof id === 'string') : [])
    // Cairn's `recordIDs` name records of other kinds: the kind is the one held here (one not held has nothing to remove).
    const others: { kind: string; id: string }[] = []
    for (const id of op === 'delete' ? ids('recordIDs') : []) {
      const held = (await core.state(id))?.kind
      if (held !== undefined) others.push({ kind: held, id })
    }
    const derived = op === 'delete'
      ? [...ids('factIDs').map((id) => ({ kind: 'fact', id })), ...ids('edgeIDs').map((id) => ({ kind: 'edge', id })),
        ...ids('entityIDs').map((id) => ({ kind: 'entity', id })), ...ids('chunkIDs').map((id) => ({ kind: 'chunk', id })), ...others]
      : []
    const data: Record<string, JsonValue> = { kind, id: target, tombstone: record, derived }
    if (op === 'redact') {
      // The bundle's line first, held or not: it is the skeleton the redacting side froze, as a
      // redact event carries it. From this replica's view when it held the record, the skeleton
      // kept fields (tags, contextID, scores) the bundle never said, and which bundle came
      // first decided what showed (bundle-merge property). The view only for a line the bundle lacks.
      const source = (skeletons?.has(target) ? { ...skeletons.get(target), kind, id: target } as RecordView : undefined) ?? (await core.reader.get(target))
      data.skeleton = (source ? redactionSkeleton(source, typeof record.deletedAt === 'string' ? record.deletedAt : undefined) : { id: target }) as JsonValue
    }
    entries.push({ op: op === 'delete' ? MEMORY_OPS.delete : MEMORY_OPS.redact, data })
  }
  if (entries.length > 0) await core.append(entries)
  return entries.length
}

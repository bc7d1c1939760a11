/**
 * Turning API input into event bodies: a validated create (plain fields, collaborative text as
 * Automerge changes from the shared base document, extensions), a signed tombstone, and the
 * skeleton a redaction keeps.
 */
import { assertObject } from '../assert.js'
import { canonicalJson, encodeBody, MAX_BODY_BYTES, type JsonValue } from '../log/index.js'
import { applyTextChanges, baseTextDocument, editText, spliceText } from '../crdt/index.js'
import { InputError, LimitError, relocate } from '../errors.js'
import { encodeChanges, fieldOf, formatTimestamp, isRecordKind, kindSpec, MEMORY_OPS, validateCreate, type RecordKind, type RecordView } from '../projection/index.js'
import type { DerivedBlock } from './forget-plan.js'
import type { Entry, MemoryCore } from './memory-core.js'

export interface CreateEntry extends Entry {
  readonly id: string
  readonly kind: RecordKind
  /** The validated fields, text fields included as plain strings. */
  readonly fields: Readonly<Record<string, JsonValue>>
}

export interface Tombstone {
  readonly id: string
  readonly op: 'delete' | 'redact'
  readonly targetKind: RecordKind
  readonly targetID: string
  readonly deletedAt: string
  readonly actor: string
  readonly derived: DerivedBlock
  readonly reason?: string
  readonly signature: string
}

/** What building a create takes from the replica: its clock, its randomness, its author key. */
export interface CreateContext {
  readonly nowMs: number
  readonly randomHex: (bytes: number) => string
  readonly author: string
}

/** The memory.create event for a record input (defaults filled, fields validated). */
export function createEntry(core: MemoryCore, input: unknown): CreateEntry {
  return buildCreateEntry({ nowMs: core.now(), randomHex: (bytes) => core.randomHex(bytes), author: core.author }, input)
}

/**
 * The log refuses a body over its limit naming only `data`: this names the record's largest
 * field as input checks do (`episode.details`, or `records[3].episode.details` with the list's
 * `path`). Other errors pass through. Runs only on the refusal: bodies are measured only then.
 */
export function nameOversizedRecord(error: unknown, entries: readonly CreateEntry[], path?: (index: number) => string): unknown {
  if (!(error instanceof LimitError) || error.code !== 'BODY_TOO_LARGE') return error
  const bytes = (value: JsonValue): number => Buffer.byteLength(canonicalJson(value))
  const sizes = entries.map((entry) => bytes(entry.data as JsonValue))
  const index = sizes.reduce((best, size, i) => (size > (sizes[best] as number) ? i : best), 0)
  const entry = entries[index]
  if (entry === undefined) return error
  // An episode's extensions are fields too, here.
  const ext = ((entry.data as { ext?: Record<string, JsonValue> }).ext ?? {})
  const [largest, size] = [...Object.entries(entry.fields), ...Object.entries(ext)].map(([name, value]) => [name, bytes(value)] as const).reduce((a, b) => (b[1] > a[1] ? b : a), ['', 0] as const)
  // Named only when it is most of the body; many middling fields make no one culprit.
  const field = size * 2 > (sizes[index] as number) ? largest : ''
  const where = [path?.(index), entry.kind, field].filter((part) => part).join('.')
  return relocate(error, { field: where }, `${error.reason}${field ? ` (${field} alone is ${size} bytes)` : ''}`)
}

/** A salt as long as a real one (32 hex), for bodies measured before they are written. */
const MEASURING_SALT = '0'.repeat(32)

/** The exact size in bytes of the event body `entry` will be written as (a check before writing). */
export function entryBodySize(entry: Entry): number {
  return Buffer.byteLength(encodeBody({ op: entry.op, data: entry.data as JsonValue, salt: MEASURING_SALT }))
}

/**
 * A check before writing: the refusal the log would give for a record too large for one event,
 * named as nameOversizedRecord names it; undefined when it fits.
 */
export function oversizedRecordRefusal(entry: CreateEntry): unknown {
  const size = entryBodySize(entry)
  if (size <= MAX_BODY_BYTES) return undefined
  return nameOversizedRecord(new LimitError('BODY_TOO_LARGE', `body is ${size} bytes, over ${MAX_BODY_BYTES}`, { field: 'data' }), [entry])
}

/**
 * A fact or edge written to end before it begins is refused by `remember` (and the CLI's dry
 * run), as supersede refuses it: no valid-time query would find it. Only there: Cairn's own
 * records can hold such an interval (concurrent creates of one id and a supersede), so the bulk
 * path, which imports and restores take, accepts what was exported, and a peer's such event
 * applies as written.
 * @throws InputError OUT_OF_RANGE naming `<kind>.tValidTo`
 */
export function refuseEndBeforeStart(entry: CreateEntry): void {
  const validTime = kindSpec(entry.kind).validTime
  if (!validTime) return
  const from = entry.fields[validTime.from]
  const to = entry.fields[validTime.to]
  if (typeof from === 'string' && typeof to === 'string' && Date.parse(to) < Date.parse(from)) {
    throw new InputError('OUT_OF_RANGE', `${to} is before ${validTime.from} ${from}: a version cannot end before it begins`, { field: `${entry.kind}.${validTime.to}` })
  }
}

/** createEntry with the replica's part given: an import measures the bodies it will write with it. */
export function buildCreateEntry(context: CreateContext, input: unknown): CreateEntry {
  const raw = assertObject(input, 'record')
  if (!isRecordKind(raw.kind)) throw new InputError('UNKNOWN_KIND', `unknown record kind ${JSON.stringify(String(raw.kind)).slice(0, 40)}`, { field: 'kind' })
  const kind = raw.kind
  const { kind: _kind, ...rest } = raw
  const record = validateCreate(kind, rest, { nowMs: context.nowMs, randomHex: context.randomHex })
  const spec = kindSpec(kind)
  const fields: Record<string, JsonValue> = {}
  const texts: Record<string, string[]> = {}
  for (const [field, value] of Object.entries(record.fields)) {
    if (spec.fields[field]?.merge === 'text') {
      const initial = typeof value === 'string' ? value : ''
      texts[field] = initial ? encodeChanges(spliceText(baseTextDocument(), context.author, 0, 0, initial, context.nowMs).changes) : []
    } else fields[field] = value
  }
  const data = { kind, id: record.id, fields, ...(Object.keys(texts).length > 0 ? { texts } : {}), ...(Object.keys(record.ext).length > 0 ? { ext: record.ext } : {}) }
  return { op: MEMORY_OPS.create, data, id: record.id, kind, fields: record.fields }
}

/**
 * A create's collaborative texts written onto the documents this replica holds for its id
 * (`held`: the record's state, or an earlier create of the id in the same batch): each text it
 * sets becomes an edit of the held document to that text, as `editText` makes. Built from the
 * base document instead, a second create of the record by one author (a remember of a core
 * block that exists, an import of its line) was a second first change of that author to the
 * field, with the same Automerge actor and seq as the one before: Automerge refused it when the
 * create was applied, after the event was stored, and the projection stopped there for good.
 * A text the create leaves empty changes nothing, as before; a field held nowhere starts from
 * the base document, as before (so independent creates of one block still share its history).
 * Returns the entry to write and the documents after it.
 */
export function onHeldTexts(
  entry: CreateEntry,
  held: Readonly<Record<string, Uint8Array>> | undefined,
  author: string,
  nowMs: number,
): { readonly entry: CreateEntry; readonly texts: Readonly<Record<string, Uint8Array>> } {
  const data = entry.data as { readonly texts?: Readonly<Record<string, readonly string[]>> }
  if (data.texts === undefined) return { entry, texts: held ?? {} }
  const texts: Record<string, string[]> = {}
  const after: Record<string, Uint8Array> = { ...held }
  for (const [field, changes] of Object.entries(data.texts)) {
    const value = entry.fields[field]
    const document = held !== undefined && Object.hasOwn(held, field) ? held[field] : undefined
    if (typeof value !== 'string' || value === '') {
      texts[field] = [...changes]
      continue
    }
    if (document === undefined) {
      // The changes as built, and the document they make (for a later create of the id).
      texts[field] = [...changes]
      after[field] = applyTextChanges(baseTextDocument(), changes.map((change) => new Uint8Array(Buffer.from(change, 'base64'))))
      continue
    }
    const edit = editText(document, author, value, nowMs)
    texts[field] = encodeChanges(edit.changes)
    after[field] = edit.document
  }
  return { entry: { ...entry, data: { ...(entry.data as Record<string, JsonValue>), texts } }, texts: after }
}

/**
 * A tombstone signed by this replica. Portable Memory §5: `ed25519:<public key>:<signature over
 * the canonical line without its signature>`.
 */
export function signTombstone(core: MemoryCore, unsigned: Omit<Tombstone, 'signature' | 'id' | 'deletedAt' | 'actor'>, id = `tomb_${core.randomHex(8)}`): Tombstone {
  const line = { id, ...unsigned, deletedAt: formatTimestamp(core.now()), actor: core.author }
  const ordered = {
    id: line.id, op: line.op, targetKind: line.targetKind, targetID: line.targetID, deletedAt: line.deletedAt,
    actor: line.actor, derived: line.derived, ...(line.reason !== undefined ? { reason: line.reason } : {}),
  }
  const signature = Buffer.from(core.engine.identity.sign(new TextEncoder().encode(canonicalJson(ordered as unknown as JsonValue)))).toString('hex')
  return { ...ordered, signature: `ed25519:${core.author}:${signature}` }
}

/**
 * What `redact` purges, by kind (docs/memory-model.md §1.1, last column): the content, and on
 * episodes the people in it. Unknown episode fields (ext) go too. Everything else (ids, times,
 * scores, states, structural ids, tags, contextID) stays.
 */
const REDACTED_FIELDS: Readonly<Record<RecordKind, readonly string[]>> = {
  episode: ['summary', 'details', 'actors', 'speaker', 'categories', 'metadata'],
  entity: ['canonicalName', 'aliases', 'summary'],
  edge: ['edgeType'],
  fact: ['subject', 'predicate', 'object', 'text', 'speaker'],
  factLink: [],
  episodeLink: [],
  resource: ['uri', 'contentHash', 'title', 'summary'],
  chunk: ['text', 'contextPrefix'],
  core: ['content'],
  procedure: ['name', 'triggerPattern', 'steps'],
  context: ['label'],
  community: ['label', 'summary'],
  category: ['name', 'description'],
  preference: ['key', 'value'],
  secretRef: ['label', 'preview'],
}

function emptyOf(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return []
  if (typeof value === 'object' && value !== null) return {}
  return ''
}

/**
 * What a redaction keeps of a record: the purged fields emptied when required (`""`, `[]`,
 * `{}`), dropped when optional, unknown fields dropped; on an episode, `deletedAt` set to the
 * redaction's time when given. A skeleton is its own skeleton (the relay checks that).
 */
export function redactionSkeleton(view: RecordView, redactedAt?: string): Record<string, JsonValue> {
  const spec = kindSpec(view.kind)
  const purged = REDACTED_FIELDS[view.kind]
  const skeleton: Record<string, JsonValue> = {}
  for (const [field, value] of Object.entries(view)) {
    const fieldSpec = fieldOf(spec, field)
    if (!fieldSpec || field === 'kind' || value === undefined) continue
    if (!purged.includes(field)) skeleton[field] = value
    else if (fieldSpec.required) skeleton[field] = emptyOf(value)
  }
  if (view.kind === 'episode' && redactedAt !== undefined) skeleton.deletedAt = redactedAt
  return skeleton
}

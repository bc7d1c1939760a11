/**
 * Collaborative text through Automerge (`@automerge/automerge`): each text field is one Automerge
 * document `{ text }`, and edits travel as Automerge change bytes inside log events, so
 * concurrent edits by several agents all survive and every replica converges.
 *
 * Every replica starts a field from the same base document, made with a fixed actor and time, so
 * two replicas that create the same block independently still share one history and merge.
 */
import * as Automerge from '@automerge/automerge'
import { defaultCrypto } from '../log/index.js'

interface TextDoc {
  text: string
}

const BASE_ACTOR = '00'.repeat(16)
let baseBytes: Uint8Array | undefined

/** The shared starting point of every text field. */
export function baseTextDocument(): Uint8Array {
  baseBytes ??= Automerge.save(Automerge.change(Automerge.init<TextDoc>({ actor: BASE_ACTOR }), { time: 0 }, (doc) => {
    doc.text = ''
  }))
  return baseBytes
}

/**
 * Documents recently loaded or saved, by the SHA-256 of their saved bytes, most recent last.
 * Loading costs about a millisecond per kilobyte of text and an append touched its document
 * four or five times (read the text, splice, apply, show), 50–90 ms per append to a small core
 * block; a clone costs ~0.2 ms and the hash microseconds. A kept document is only ever read or
 * cloned, never changed (Automerge refuses to change one twice), and is what loading its bytes
 * makes: `save` keeps queued changes, so a clone of it and a load of its bytes behave alike.
 */
const kept = new Map<string, Automerge.Doc<TextDoc>>()
const KEPT_DOCUMENTS = 16
/** Larger documents are loaded each time: a kept one holds its whole history in memory. */
const KEPT_MAX_BYTES = 1 << 20

function keep(bytes: Uint8Array, document: Automerge.Doc<TextDoc>): void {
  if (bytes.length > KEPT_MAX_BYTES) return
  const key = defaultCrypto().sha256Hex(bytes)
  kept.delete(key)
  kept.set(key, document)
  if (kept.size > KEPT_DOCUMENTS) kept.delete(kept.keys().next().value as string)
}

/** The document its bytes make, to read only. */
function loaded(bytes: Uint8Array): Automerge.Doc<TextDoc> {
  const key = bytes.length > KEPT_MAX_BYTES ? undefined : defaultCrypto().sha256Hex(bytes)
  const held = key === undefined ? undefined : kept.get(key)
  if (held !== undefined) {
    kept.delete(key as string)
    kept.set(key as string, held)
    return held
  }
  const document = Automerge.load<TextDoc>(bytes)
  keep(bytes, document)
  return document
}

/** A document to change, as `actor` (Automerge actor ids are hex; an author key is one, unique per writer). */
function load(bytes: Uint8Array, actor?: string): Automerge.Doc<TextDoc> {
  return Automerge.clone(loaded(bytes), actor ? { actor } : undefined)
}

/** Saves a document, and keeps it for the next read of those bytes. */
function save(document: Automerge.Doc<TextDoc>): Uint8Array {
  const bytes = Automerge.save(document)
  keep(bytes, document)
  return bytes
}

/**
 * When the latest change to a text was made (ms since the epoch; Automerge keeps whole seconds):
 * the time its writer gave the change (Memory's edits: the space's clock at the edit, MemoryCore.eventNow), 0 for the base alone.
 */
export function lastTextChangeTime(document: Uint8Array): number {
  let latest = 0
  for (const change of Automerge.getChangesMetaSince(loaded(document), [])) if (change.time > latest) latest = change.time
  return latest * 1000
}

export function textOf(document: Uint8Array): string {
  return loaded(document).text
}

/** Applies change bytes this replica wrote, in any order (Automerge queues what it cannot apply yet). */
export function applyTextChanges(document: Uint8Array, changes: readonly Uint8Array[]): Uint8Array {
  const [next] = Automerge.applyChanges(load(document), [...changes])
  return save(next)
}

const CHANGE_MAGIC = [0x85, 0x6f, 0x4a, 0x83]
/** Chunk type of an uncompressed change: what `Automerge.getChanges` returns, and so all Cairn writes. */
const CHANGE_CHUNK = 1

/** Reads an unsigned LEB128 number of at most five bytes at `at`; undefined past the end or beyond. */
function readUleb(bytes: Uint8Array, at: number): { value: number; next: number } | undefined {
  let value = 0
  for (let shift = 0, i = at; i < bytes.length && shift <= 28; shift += 7, i++) {
    const byte = bytes[i] as number
    value += (byte & 0x7f) * 2 ** shift
    if ((byte & 0x80) === 0) return { value, next: i + 1 }
  }
  return undefined
}

/**
 * Whether a change's Automerge actor is `author` (64 hex), read from the change's header:
 * magic, checksum, chunk type, length, then the dependency hashes and the actor. Decoding the
 * whole change (`Automerge.decodeChange`) costs milliseconds per kilobyte of text.
 */
export function isAuthoredBy(change: Uint8Array, author: string): boolean {
  if (change.length < 10 || CHANGE_MAGIC.some((byte, i) => change[i] !== byte) || change[8] !== CHANGE_CHUNK) return false
  const length = readUleb(change, 9)
  const deps = length && readUleb(change, length.next)
  if (!deps) return false
  const actor = readUleb(change, deps.next + deps.value * 32)
  if (!actor || actor.value * 2 !== author.length || actor.next + actor.value > change.length) return false
  return Buffer.from(change.subarray(actor.next, actor.next + actor.value)).toString('hex') === author
}

/**
 * Applies the text changes of a signed event whose author is `author` (the projection's path for
 * every event, this replica's own included). Returns undefined, and the caller keeps the document
 * as it was, when they are refused: a change that is not that author's (its actor is another
 * key, so no writer can take another's change numbers), that Automerge cannot apply (unparsable
 * bytes, a change number used twice, a reference to nothing), or that leaves `text` something
 * other than text (keys beside it are never read). Any granted writer can sign any bytes; thrown
 * from the projection, one such change stopped every replica that received it, for good.
 * Refusal depends on the changes and the document they meet, so it is the same on every replica,
 * except for a change built to reference what only a concurrent change holds: a hostile writer
 * can make one record's text differ between replicas, never stop one. A change that waits for
 * one that never comes is queued (Automerge) and holds up its own author's later changes only.
 */
export function applyAuthoredTextChanges(document: Uint8Array, changes: readonly Uint8Array[], author: string): Uint8Array | undefined {
  if (!changes.every((change) => isAuthoredBy(change, author))) return undefined
  let next: Automerge.Doc<TextDoc>
  try {
    ;[next] = Automerge.applyChanges(load(document), [...changes])
  } catch {
    return undefined
  }
  if (typeof next.text !== 'string') return undefined
  return save(next)
}

/**
 * Makes the changes that turn the document's text into `target` with a minimal edit, written
 * as `actor`. Returns the change bytes to ship and the document after them.
 */
export function editText(document: Uint8Array, actor: string, target: string, timeMs: number): { changes: Uint8Array[]; document: Uint8Array } {
  const before = load(document, actor)
  const after = Automerge.change(before, { time: Math.floor(timeMs / 1000) }, (doc) => {
    Automerge.updateText(doc, ['text'], target)
  })
  return { changes: Automerge.getChanges(before, after), document: save(after) }
}

/**
 * A change that edits nothing, dated `timeMs`: the text's latest change time then says it was
 * current then (an import of a source holding the same text, bulk-writes.ts).
 */
export function markText(document: Uint8Array, actor: string, timeMs: number): { changes: Uint8Array[]; document: Uint8Array } {
  const before = load(document, actor)
  const after = Automerge.emptyChange(before, { time: Math.floor(timeMs / 1000) })
  return { changes: Automerge.getChanges(before, after), document: save(after) }
}

/** Inserts and deletes at a position (a splice), for appends that must not clobber concurrent ones. */
export function spliceText(
  document: Uint8Array,
  actor: string,
  index: number,
  deleteCount: number,
  insert: string,
  timeMs: number,
): { changes: Uint8Array[]; document: Uint8Array } {
  const before = load(document, actor)
  const after = Automerge.change(before, { time: Math.floor(timeMs / 1000) }, (doc) => {
    Automerge.splice(doc, ['text'], index, deleteCount, insert)
  })
  return { changes: Automerge.getChanges(before, after), document: save(after) }
}

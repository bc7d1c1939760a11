/**
 * Encodings of what the log store keeps under each key (msgpack). These bytes are never hashed:
 * the hashed bytes are the canonical header and body, which are stored verbatim inside.
 */
import { Packr } from 'msgpackr'
import { StorageError } from '../errors.js'
import { bytesToHex } from './bytes.js'
import type { ControlEntry, Right } from './authorization.js'
import { ID_BYTES, type AuthorKey, type EventId } from './ids.js'
import type { VersionVector } from './version-vector.js'

const packr = new Packr({ useRecords: false, mapsAsObjects: true, variableMapSize: true })

export interface EventRecord {
  /** The header's canonical JSON text: the exact hashed bytes. */
  readonly header: string
  /**
   * The same header as UTF-8 bytes, when the record was decoded from storage (a view into the
   * stored value): sending an event needs the bytes, and encoding the text again cost ~16% of a
   * log read for sync (bench/README.md).
   */
  readonly headerBytes?: Uint8Array
  readonly body?: Uint8Array
  readonly signature?: Uint8Array
  /** The body was erased by a deletion or redaction; it is never stored again. */
  readonly erased?: boolean
  /** Position in this store's apply order. */
  readonly local: number
  /** Milliseconds since the epoch when this store applied the event. */
  readonly recordedAt: number
}

function corrupt(what: string, key: string, error?: unknown): never {
  throw new StorageError('CORRUPT_STORE', `${what} record does not decode`, { key }, { cause: error })
}

function unpackObject(bytes: Uint8Array, what: string, key: string): Record<string, unknown> {
  let value: unknown
  try {
    value = packr.unpack(bytes)
  } catch (error) {
    corrupt(what, key, error)
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) corrupt(what, key)
  return value as Record<string, unknown>
}

/*
 * Event records are the bulk of a store and are written on every append, so they use a fixed
 * binary layout rather than msgpack (measured ~4x cheaper to encode):
 *
 *   u8 flags (1 body, 2 signature, 4 erased) | f64 local | f64 recordedAt |
 *   u32 header length | header (UTF-8) | [u32 body length | body] | [signature, 64 bytes]
 */
const FLAG_BODY = 1
const FLAG_SIGNATURE = 2
const FLAG_ERASED = 4
const RECORD_FIXED_BYTES = 1 + 8 + 8 + 4
const SIGNATURE_BYTES = 64

export function encodeEventRecord(record: EventRecord): Uint8Array {
  const headerBytes = Buffer.byteLength(record.header)
  const bodyBytes = record.body === undefined ? 0 : 4 + record.body.length
  const signatureBytes = record.signature === undefined ? 0 : SIGNATURE_BYTES
  const out = Buffer.allocUnsafe(RECORD_FIXED_BYTES + headerBytes + bodyBytes + signatureBytes)
  out[0] = (record.body !== undefined ? FLAG_BODY : 0) | (record.signature !== undefined ? FLAG_SIGNATURE : 0) | (record.erased ? FLAG_ERASED : 0)
  out.writeDoubleLE(record.local, 1)
  out.writeDoubleLE(record.recordedAt, 9)
  out.writeUInt32LE(headerBytes, 17)
  let offset = RECORD_FIXED_BYTES + out.write(record.header, RECORD_FIXED_BYTES, 'utf8')
  if (record.body !== undefined) {
    out.writeUInt32LE(record.body.length, offset)
    out.set(record.body, offset + 4)
    offset += 4 + record.body.length
  }
  if (record.signature !== undefined) out.set(record.signature, offset)
  return out
}

export function decodeEventRecord(bytes: Uint8Array, key: string): EventRecord {
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  if (view.length < RECORD_FIXED_BYTES) corrupt('event', key)
  const flags = view[0] as number
  const headerBytes = view.readUInt32LE(17)
  let offset = RECORD_FIXED_BYTES + headerBytes
  if (flags > 7 || offset > view.length) corrupt('event', key)
  const record: { -readonly [K in keyof EventRecord]: EventRecord[K] } = {
    header: view.toString('utf8', RECORD_FIXED_BYTES, offset),
    headerBytes: bytes.subarray(RECORD_FIXED_BYTES, offset),
    local: view.readDoubleLE(1),
    recordedAt: view.readDoubleLE(9),
  }
  if (flags & FLAG_BODY) {
    if (offset + 4 > view.length) corrupt('event', key)
    const length = view.readUInt32LE(offset)
    if (offset + 4 + length > view.length) corrupt('event', key)
    record.body = bytes.subarray(offset + 4, offset + 4 + length)
    offset += 4 + length
  }
  if (flags & FLAG_SIGNATURE) {
    if (offset + SIGNATURE_BYTES > view.length) corrupt('event', key)
    record.signature = bytes.subarray(offset, offset + SIGNATURE_BYTES)
    offset += SIGNATURE_BYTES
  }
  if (offset !== view.length) corrupt('event', key)
  if (flags & FLAG_ERASED) record.erased = true
  return record
}

/** A run of event ids: 32 bytes each, concatenated. */
export function encodeIdRun(ids: readonly EventId[]): Uint8Array {
  const out = Buffer.allocUnsafe(ids.length * ID_BYTES)
  for (let i = 0; i < ids.length; i++) out.write(ids[i] as string, i * ID_BYTES, ID_BYTES, 'hex')
  return out
}

export function decodeIdRun(bytes: Uint8Array, key: string): EventId[] {
  if (bytes.length % ID_BYTES !== 0) corrupt('id run', key)
  const ids: EventId[] = []
  for (let offset = 0; offset < bytes.length; offset += ID_BYTES) {
    ids.push(bytesToHex(bytes.subarray(offset, offset + ID_BYTES)) as EventId)
  }
  return ids
}

export function encodeVector(vector: VersionVector): Uint8Array {
  return packr.pack(vector)
}

export function decodeVector(bytes: Uint8Array, key: string): VersionVector {
  const raw = unpackObject(bytes, 'vector', key)
  for (const seq of Object.values(raw)) if (typeof seq !== 'number') corrupt('vector', key)
  return raw as VersionVector
}

/** Written once, with the genesis. Tips and the next local seq are derived from the indexes. */
export interface SpaceMeta {
  readonly owner: AuthorKey
  readonly genesis: EventId
}

export function encodeMeta(meta: SpaceMeta): Uint8Array {
  return packr.pack({ owner: meta.owner, genesis: meta.genesis })
}

export function decodeMeta(bytes: Uint8Array, key: string): SpaceMeta {
  const raw = unpackObject(bytes, 'meta', key)
  if (typeof raw.owner !== 'string' || typeof raw.genesis !== 'string') corrupt('meta', key)
  return { owner: raw.owner as AuthorKey, genesis: raw.genesis as EventId }
}

export function encodeControl(entry: ControlEntry): Uint8Array {
  return packr.pack({ ...entry, rights: [...entry.rights] })
}

export function decodeControl(bytes: Uint8Array, key: string): ControlEntry {
  const raw = unpackObject(bytes, 'control', key)
  if (typeof raw.id !== 'string' || typeof raw.author !== 'string' || typeof raw.seq !== 'number' ||
      (raw.op !== 'space.grant' && raw.op !== 'space.revoke' && raw.op !== 'space.revoke-token') || typeof raw.target !== 'string' ||
      !Array.isArray(raw.rights) || typeof raw.vector !== 'object' || raw.vector === null) {
    corrupt('control', key)
  }
  return {
    id: raw.id as EventId,
    author: raw.author as AuthorKey,
    seq: raw.seq,
    op: raw.op,
    target: raw.target as AuthorKey,
    rights: raw.rights as Right[],
    vector: raw.vector as VersionVector,
  }
}

export interface PendingRecord {
  readonly id: EventId
  readonly header: string
  readonly body?: Uint8Array
  readonly signature?: Uint8Array
  /** The signed event whose signature authenticates this one. */
  readonly segmentEnd: EventId
}

export function encodePending(record: PendingRecord): Uint8Array {
  return packr.pack(record)
}

export function decodePending(bytes: Uint8Array, key: string): PendingRecord {
  const raw = unpackObject(bytes, 'pending', key)
  if (typeof raw.id !== 'string' || typeof raw.header !== 'string' || typeof raw.segmentEnd !== 'string') corrupt('pending', key)
  const record: { -readonly [K in keyof PendingRecord]: PendingRecord[K] } = {
    id: raw.id as EventId,
    header: raw.header,
    segmentEnd: raw.segmentEnd as EventId,
  }
  if (raw.body instanceof Uint8Array) record.body = raw.body
  if (raw.signature instanceof Uint8Array) record.signature = raw.signature
  return record
}

export interface EquivocationRecord {
  readonly author: AuthorKey
  readonly seq: number
  readonly ids: readonly EventId[]
  readonly detectedAt: number
}

export function encodeEquivocation(record: EquivocationRecord): Uint8Array {
  return packr.pack({ ...record, ids: [...record.ids] })
}

export function decodeEquivocation(bytes: Uint8Array, key: string): EquivocationRecord {
  const raw = unpackObject(bytes, 'flag', key)
  if (typeof raw.author !== 'string' || typeof raw.seq !== 'number' || !Array.isArray(raw.ids) || typeof raw.detectedAt !== 'number') {
    corrupt('flag', key)
  }
  return { author: raw.author as AuthorKey, seq: raw.seq, ids: raw.ids as EventId[], detectedAt: raw.detectedAt }
}

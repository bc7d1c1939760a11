/**
 * Encodings of what the log store keeps under each key (msgpack). These bytes are never hashed:
 * the hashed bytes are the canonical header and body, which are stored verbatim inside.
 */
import { Packr } from 'msgpackr'
import { StorageError } from '../errors.js'
import { bytesToHex, hexToBytes } from './bytes.js'
import type { ControlEntry, Right } from './authorization.js'
import type { Hlc } from './hlc.js'
import { ID_BYTES, type AuthorKey, type EventId } from './ids.js'
import type { VersionVector } from './version-vector.js'

const packr = new Packr({ useRecords: false, mapsAsObjects: true, variableMapSize: true })

export interface EventRecord {
  /** The header's canonical JSON text: the exact hashed bytes. */
  readonly header: string
  readonly body?: Uint8Array
  readonly signature?: Uint8Array
  /** The body was erased by a deletion or redaction; it is never stored again. */
  readonly erased?: boolean
  /** Position in this store's apply order. */
  readonly local: number
  /** Milliseconds since the epoch when this store applied the event. */
  readonly recordedAt: number
}

interface PackedEvent {
  h: string
  b?: Uint8Array
  s?: Uint8Array
  x?: 1
  l: number
  t: number
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

export function encodeEventRecord(record: EventRecord): Uint8Array {
  const packed: PackedEvent = { h: record.header, l: record.local, t: record.recordedAt }
  if (record.body !== undefined) packed.b = record.body
  if (record.signature !== undefined) packed.s = record.signature
  if (record.erased) packed.x = 1
  return packr.pack(packed)
}

export function decodeEventRecord(bytes: Uint8Array, key: string): EventRecord {
  const raw = unpackObject(bytes, 'event', key)
  if (typeof raw.h !== 'string' || typeof raw.l !== 'number' || typeof raw.t !== 'number') corrupt('event', key)
  const record: { -readonly [K in keyof EventRecord]: EventRecord[K] } = { header: raw.h, local: raw.l, recordedAt: raw.t }
  if (raw.b instanceof Uint8Array) record.body = raw.b
  if (raw.s instanceof Uint8Array) record.signature = raw.s
  if (raw.x === 1) record.erased = true
  return record
}

/** A run of event ids: 32 bytes each, concatenated. */
export function encodeIdRun(ids: readonly EventId[]): Uint8Array {
  const out = new Uint8Array(ids.length * ID_BYTES)
  ids.forEach((id, i) => out.set(hexToBytes(id), i * ID_BYTES))
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

export interface TipRecord {
  readonly seq: number
  readonly id: EventId
  readonly clock: Hlc
}

export function encodeTip(tip: TipRecord): Uint8Array {
  return packr.pack({ seq: tip.seq, id: tip.id, wall: tip.clock.wall, logical: tip.clock.logical })
}

export function decodeTip(bytes: Uint8Array, key: string): TipRecord {
  const raw = unpackObject(bytes, 'tip', key)
  if (typeof raw.seq !== 'number' || typeof raw.id !== 'string' || typeof raw.wall !== 'number' || typeof raw.logical !== 'number') {
    corrupt('tip', key)
  }
  return { seq: raw.seq, id: raw.id as EventId, clock: { wall: raw.wall, logical: raw.logical } }
}

export interface SpaceMeta {
  readonly owner: AuthorKey
  readonly genesis: EventId
  /** The local seq the next applied event gets. */
  readonly nextLocal: number
}

export function encodeMeta(meta: SpaceMeta): Uint8Array {
  return packr.pack({ owner: meta.owner, genesis: meta.genesis, nextLocal: meta.nextLocal })
}

export function decodeMeta(bytes: Uint8Array, key: string): SpaceMeta {
  const raw = unpackObject(bytes, 'meta', key)
  if (typeof raw.owner !== 'string' || typeof raw.genesis !== 'string' || typeof raw.nextLocal !== 'number') corrupt('meta', key)
  return { owner: raw.owner as AuthorKey, genesis: raw.genesis as EventId, nextLocal: raw.nextLocal }
}

export function encodeControl(entry: ControlEntry): Uint8Array {
  return packr.pack({ ...entry, rights: [...entry.rights] })
}

export function decodeControl(bytes: Uint8Array, key: string): ControlEntry {
  const raw = unpackObject(bytes, 'control', key)
  if (typeof raw.id !== 'string' || typeof raw.author !== 'string' || typeof raw.seq !== 'number' ||
      (raw.op !== 'space.grant' && raw.op !== 'space.revoke') || typeof raw.target !== 'string' ||
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

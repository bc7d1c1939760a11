/**
 * The sync protocol's messages: one msgpack map per WebSocket binary frame, a union on `type`.
 * Encoding and strict decoding live together here; docs/protocol.md gives the grammar.
 *
 * Events travel as their exact signed bytes (header, body, signature); the event id is not sent,
 * since the receiver derives it from the header (SHA-256) anyway.
 *
 * Invariant: decode never trusts a frame. Anything malformed, of the wrong type, or over a limit
 * is a ProtocolError naming the frame and field, and the session that received it closes.
 */
import { Packr } from 'msgpackr'
import { ProtocolError } from '../errors.js'
import type { VersionVector } from '../log/index.js'

/**
 * Versions this code speaks; a session runs the highest both sides do. Version 2 adds
 * `ack.withheld`: a relay keeps a token holder's write the token does not allow as a header, and
 * says so, where version 1 refuses the frame and ends the session (docs/protocol.md).
 */
export const PROTOCOL_VERSIONS: readonly number[] = [1, 2]
/** The first version in which a relay withholds a token holder's disallowed writes. */
export const WITHHOLDING_VERSION = 2
/** Largest frame accepted (bytes); the WebSocket layer refuses bigger ones before parsing. */
export const MAX_FRAME_BYTES = 32 * 1024 * 1024
/** Most events in one `events` frame. */
export const MAX_FRAME_EVENTS = 5000
export const NONCE_BYTES = 32
/** Most record ids in one `withdraw` frame. */
export const MAX_WITHDRAW_RECORDS = 10_000
/** Longest record id on the wire (the engine's own limit, src/projection/record-ids.ts). */
const MAX_RECORD_ID = 256

/** A token holder's event the relay stored as a header only: the token does not allow it (version 2). */
export interface WithheldEvent {
  /** The event id (64 hex). */
  readonly event: string
  /** Why, as a refusal would have said it: `PERMISSION_DENIED` and its message. */
  readonly code: string
  readonly message: string
}

export interface WireEvent {
  readonly header: Uint8Array
  readonly body?: Uint8Array
  readonly signature?: Uint8Array
}

export type Message =
  | { readonly type: 'hello'; readonly versions: readonly number[]; readonly space: string; readonly peer: string; readonly nonce: Uint8Array; readonly token?: string; readonly genesis?: WireEvent }
  | { readonly type: 'welcome'; readonly version: number; readonly relay: string; readonly nonce: Uint8Array; readonly proof: Uint8Array }
  | { readonly type: 'proof'; readonly proof: Uint8Array }
  | { readonly type: 'ready'; readonly permissions: readonly string[]; readonly full: boolean; readonly genesis?: true }
  /**
   * `maxFrameEvents`: the most events the sender wants per `events` frame (after a SLOW_FRAME).
   * `rescope`: the sender's access changed since it last synced (another token): send everything
   * it may see again, whatever its vector, and withdraw what it may no longer hold.
   */
  | { readonly type: 'want'; readonly vector: VersionVector; readonly maxFrameEvents?: number; readonly rescope?: true }
  | { readonly type: 'events'; readonly seq: number; readonly events: readonly WireEvent[] }
  /** `withheld` (version 2, relay to a token holder): events of the frame stored as headers only. */
  | { readonly type: 'ack'; readonly seq: number; readonly withheld?: readonly WithheldEvent[] }
  | { readonly type: 'caught-up' }
  /** Relay to a scoped reader: these records left its scope; drop what it holds of them. */
  | { readonly type: 'withdraw'; readonly records: readonly string[] }
  | { readonly type: 'error'; readonly code: string; readonly message: string }

export type MessageType = Message['type']

const packr = new Packr({ useRecords: false, mapsAsObjects: true, variableMapSize: true })
const HEX64 = /^[0-9a-f]{64}$/

export function encodeMessage(message: Message): Uint8Array {
  return packr.pack(message)
}

function fail(frame: string, message: string): never {
  throw new ProtocolError('BAD_FRAME', message, { frame })
}

function bytes(value: unknown, frame: string, field: string, exact?: number): Uint8Array {
  if (!(value instanceof Uint8Array)) fail(frame, `${field} is not bytes`)
  if (exact !== undefined && value.length !== exact) fail(frame, `${field} is ${value.length} bytes, not ${exact}`)
  return value
}

function hex64(value: unknown, frame: string, field: string): string {
  if (typeof value !== 'string' || !HEX64.test(value)) fail(frame, `${field} is not a 64-hex key`)
  return value
}

function nat(value: unknown, frame: string, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) fail(frame, `${field} is not a natural number`)
  return value
}

function text(value: unknown, frame: string, field: string, max = 4096): string {
  if (typeof value !== 'string' || value.length > max) fail(frame, `${field} is not a string of at most ${max} characters`)
  return value
}

function recordId(value: unknown, frame: string, field: string): string {
  if (text(value, frame, field, MAX_RECORD_ID) === '') fail(frame, `${field} is empty`)
  return value as string
}

function vector(value: unknown, frame: string): VersionVector {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(frame, 'vector is not a map')
  const out: Record<string, number> = {}
  const entries = Object.entries(value)
  if (entries.length > 100_000) fail(frame, 'vector has too many authors')
  for (const [author, seq] of entries) out[hex64(author, frame, 'vector key')] = nat(seq, frame, 'vector seq')
  return out
}

function withheldEvent(value: unknown, frame: string, index: number): WithheldEvent {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(frame, `withheld[${index}] is not a map`)
  const raw = value as Record<string, unknown>
  return {
    event: hex64(raw.event, frame, `withheld[${index}].event`),
    code: text(raw.code, frame, `withheld[${index}].code`, 64),
    message: text(raw.message, frame, `withheld[${index}].message`, 1000),
  }
}

/** Every event header is canonical JSON whose first member is the 64-hex author (log-format.md). */
const HEADER_START = new TextEncoder().encode('{"author":"')
const MIN_HEADER_BYTES = HEADER_START.length + 64 + 2

function isEventHeader(header: Uint8Array): boolean {
  return header.length >= MIN_HEADER_BYTES && HEADER_START.every((byte, i) => header[i] === byte)
}

function wireEvent(value: unknown, frame: string, index: number): WireEvent {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(frame, `events[${index}] is not a map`)
  const raw = value as Record<string, unknown>
  const header = bytes(raw.header, frame, `events[${index}].header`)
  // Checked here so that nothing reads an author or seq from a header that cannot hold them.
  if (!isEventHeader(header)) fail(frame, `events[${index}].header is not an event header (canonical JSON starting with the author)`)
  return {
    header,
    ...(raw.body !== undefined ? { body: bytes(raw.body, frame, `events[${index}].body`) } : {}),
    ...(raw.signature !== undefined ? { signature: bytes(raw.signature, frame, `events[${index}].signature`, 64) } : {}),
  }
}

/**
 * Decodes one frame.
 * @throws ProtocolError BAD_FRAME naming the message type and the field; LIMIT for too many events
 */
export function decodeMessage(data: Uint8Array): Message {
  if (data.length > MAX_FRAME_BYTES) throw new ProtocolError('FRAME_TOO_LARGE', `${data.length} bytes, over ${MAX_FRAME_BYTES}`, { frame: 'unknown' })
  // The transport hands a text frame over as no bytes.
  if (data.length === 0) throw new ProtocolError('BAD_FRAME', 'an empty frame (or a text frame): frames are binary msgpack maps', { frame: 'unknown' })
  let value: unknown
  try {
    value = packr.unpack(data)
  } catch (error) {
    throw new ProtocolError('BAD_FRAME', `not msgpack: ${(error as Error).message}`, { frame: 'unknown' }, { cause: error })
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail('unknown', 'a frame is a msgpack map')
  const raw = value as Record<string, unknown>
  const type = raw.type
  const frame = typeof type === 'string' ? type.slice(0, 32) : 'unknown'
  switch (type) {
    case 'hello': {
      if (!Array.isArray(raw.versions) || raw.versions.length === 0 || raw.versions.length > 16) fail(frame, 'versions is not a short list')
      const hello: Message = {
        type,
        versions: raw.versions.map((version, i) => nat(version, frame, `versions[${i}]`)),
        space: hex64(raw.space, frame, 'space'),
        peer: hex64(raw.peer, frame, 'peer'),
        nonce: bytes(raw.nonce, frame, 'nonce', NONCE_BYTES),
        ...(raw.token !== undefined ? { token: text(raw.token, frame, 'token', 64 * 1024) } : {}),
        ...(raw.genesis !== undefined ? { genesis: wireEvent(raw.genesis, frame, 0) } : {}),
      }
      return hello
    }
    case 'welcome':
      return { type, version: nat(raw.version, frame, 'version'), relay: hex64(raw.relay, frame, 'relay'), nonce: bytes(raw.nonce, frame, 'nonce', NONCE_BYTES), proof: bytes(raw.proof, frame, 'proof', 64) }
    case 'proof':
      return { type, proof: bytes(raw.proof, frame, 'proof', 64) }
    case 'ready':
      if (!Array.isArray(raw.permissions) || raw.permissions.length > 16) fail(frame, 'permissions is not a short list')
      if (typeof raw.full !== 'boolean') fail(frame, 'full is not a boolean')
      // Informational (the client's count of what it sent): anything but true reads as absent.
      return { type, permissions: raw.permissions.map((p, i) => text(p, frame, `permissions[${i}]`, 32)), full: raw.full, ...(raw.genesis === true ? { genesis: true } : {}) }
    case 'want': {
      const limit = raw.maxFrameEvents === undefined ? undefined : nat(raw.maxFrameEvents, frame, 'maxFrameEvents')
      if (limit !== undefined && (limit < 1 || limit > MAX_FRAME_EVENTS)) fail(frame, `maxFrameEvents is not between 1 and ${MAX_FRAME_EVENTS}`)
      if (raw.rescope !== undefined && raw.rescope !== true) fail(frame, 'rescope is true or absent')
      return { type, vector: vector(raw.vector, frame), ...(limit !== undefined ? { maxFrameEvents: limit } : {}), ...(raw.rescope === true ? { rescope: true } : {}) }
    }
    case 'events': {
      if (!Array.isArray(raw.events)) fail(frame, 'events is not a list')
      if (raw.events.length > MAX_FRAME_EVENTS) throw new ProtocolError('LIMIT', `${raw.events.length} events, over ${MAX_FRAME_EVENTS}`, { frame })
      return { type, seq: nat(raw.seq, frame, 'seq'), events: raw.events.map((event, i) => wireEvent(event, frame, i)) }
    }
    case 'ack': {
      if (raw.withheld === undefined) return { type, seq: nat(raw.seq, frame, 'seq') }
      if (!Array.isArray(raw.withheld) || raw.withheld.length === 0) fail(frame, 'withheld is not a non-empty list')
      if (raw.withheld.length > MAX_FRAME_EVENTS) throw new ProtocolError('LIMIT', `${raw.withheld.length} withheld events, over ${MAX_FRAME_EVENTS}`, { frame })
      return { type, seq: nat(raw.seq, frame, 'seq'), withheld: raw.withheld.map((item, i) => withheldEvent(item, frame, i)) }
    }
    case 'caught-up':
      return { type }
    case 'withdraw': {
      if (!Array.isArray(raw.records) || raw.records.length === 0) fail(frame, 'records is not a non-empty list')
      if (raw.records.length > MAX_WITHDRAW_RECORDS) throw new ProtocolError('LIMIT', `${raw.records.length} records, over ${MAX_WITHDRAW_RECORDS}`, { frame })
      return { type, records: raw.records.map((id, i) => recordId(id, frame, `records[${i}]`)) }
    }
    case 'error':
      return { type, code: text(raw.code, frame, 'code', 64), message: text(raw.message, frame, 'message') }
    default:
      return fail(frame, `unknown message type ${JSON.stringify(String(type)).slice(0, 40)}`)
  }
}

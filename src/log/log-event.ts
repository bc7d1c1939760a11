/**
 * The read side of an event: decoded header and body plus where it sits in this store.
 */
import { decodeBody, decodeHeader, type EventBody, type EventEnvelope, type EventHeader } from './event.js'
import type { EventId } from './ids.js'
import type { EventRecord } from './store-records.js'
import { utf8Encode } from './bytes.js'

/** `present`: body stored; `erased`: deleted on purpose, never stored again; `absent`: never received. */
export type BodyState = 'present' | 'erased' | 'absent'

export interface LogEvent {
  readonly id: EventId
  readonly header: EventHeader
  readonly body?: EventBody
  readonly bodyState: BodyState
  readonly signature?: Uint8Array
  /** Position in the order this store applied events (1, 2, 3…); causal order. */
  readonly local: number
  /** When this store applied the event (ms since the epoch): the event's recorded time here. */
  readonly recordedAt: number
}

export function bodyStateOf(record: EventRecord): BodyState {
  if (record.erased) return 'erased'
  return record.body !== undefined ? 'present' : 'absent'
}

/** Decodes a stored record. Stored bytes were verified on the way in, so this trusts them. */
export function toLogEvent(id: EventId, record: EventRecord): LogEvent {
  const header = decodeHeader(record.header, id)
  return {
    id,
    header,
    ...(record.body !== undefined ? { body: decodeBody(record.body, id) } : {}),
    bodyState: bodyStateOf(record),
    ...(record.signature !== undefined ? { signature: record.signature } : {}),
    local: record.local,
    recordedAt: record.recordedAt,
  }
}

export function toEnvelope(id: EventId, record: EventRecord, withBody: boolean, withSignature: boolean): EventEnvelope {
  return {
    id,
    header: record.headerBytes ?? utf8Encode(record.header),
    ...(withBody && record.body !== undefined ? { body: record.body } : {}),
    ...(withSignature && record.signature !== undefined ? { signature: record.signature } : {}),
  }
}

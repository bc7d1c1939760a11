/**
 * Decoding of shipped events: the first gate of ingest. Checks everything that one envelope can
 * show on its own: shape, canonical header, id = SHA-256(header), body bytes against the
 * header's hash and size, and that the event belongs to this space. Chains and signatures are
 * checked across envelopes in chain-authentication.ts.
 */
import { assertBytes, assertObject, describeType } from '../assert.js'
import { CairnError, InputError, LimitError, VerifyError } from '../errors.js'
import { utf8Decode } from './bytes.js'
import type { CryptoProvider } from './crypto/index.js'
import { decodeBody, decodeHeader, MAX_BODY_BYTES, type EventBody, type EventEnvelope, type EventHeader } from './event.js'
import { assertEventId, type EventId, type SpaceId } from './ids.js'

/** A header longer than this cannot be valid (MAX_DEPS ids plus fixed fields). */
export const MAX_HEADER_BYTES = 80 * 1024

/** An event that passed the single-envelope checks. */
export interface DecodedEvent {
  readonly id: EventId
  readonly header: EventHeader
  /** The canonical header text: the hashed bytes. */
  readonly headerText: string
  readonly body?: EventBody
  readonly bodyBytes?: Uint8Array
  readonly signature?: Uint8Array
}

/**
 * @param index position in the ingested list, for messages
 * @throws InputError BAD_ENVELOPE; VerifyError BAD_HEADER, BAD_ID, BAD_BODY, WRONG_SPACE; LimitError
 */
export function decodeEnvelope(value: unknown, index: number, space: SpaceId, crypto: CryptoProvider): DecodedEvent {
  const label = `events[${index}]`
  let envelope: EventEnvelope
  try {
    const raw = assertObject(value, label)
    const id = assertEventId(raw.id, `${label}.id`)
    const header = assertBytes(raw.header, `${label}.header`)
    const body = raw.body === undefined ? undefined : assertBytes(raw.body, `${label}.body`)
    const signature = raw.signature === undefined ? undefined : assertBytes(raw.signature, `${label}.signature`, 64)
    envelope = { id, header, ...(body ? { body } : {}), ...(signature ? { signature } : {}) }
  } catch (error) {
    if (error instanceof CairnError) {
      throw new InputError('BAD_ENVELOPE', `${label} is not an event envelope: ${error.message}`, { path: label }, { cause: error })
    }
    throw error
  }
  const where = { event: envelope.id }
  if (envelope.header.length > MAX_HEADER_BYTES) {
    throw new LimitError('HEADER_TOO_LARGE', `header is ${envelope.header.length} bytes, over ${MAX_HEADER_BYTES}`, where)
  }
  let headerText: string
  try {
    headerText = utf8Decode(envelope.header)
  } catch (error) {
    throw new VerifyError('BAD_HEADER', 'header is not UTF-8', where, { cause: error })
  }
  if (crypto.sha256Hex(envelope.header) !== envelope.id) {
    throw new VerifyError('BAD_ID', 'header does not hash to the event id', where)
  }
  const header = decodeHeader(headerText, envelope.id)
  if (header.space === undefined ? (envelope.id as string) !== space : header.space !== space) {
    throw new VerifyError('WRONG_SPACE', `event belongs to ${header.space ?? `its own space ${envelope.id}`}, not ${space}`, where)
  }
  const decoded: { -readonly [K in keyof DecodedEvent]: DecodedEvent[K] } = { id: envelope.id, header, headerText }
  if (envelope.signature) decoded.signature = envelope.signature
  if (envelope.body) {
    if (envelope.body.length > MAX_BODY_BYTES) {
      throw new LimitError('BODY_TOO_LARGE', `body is ${envelope.body.length} bytes, over ${MAX_BODY_BYTES}`, where)
    }
    if (envelope.body.length !== header.bodySize || crypto.sha256Hex(envelope.body) !== header.bodyHash) {
      throw new VerifyError('BAD_BODY', 'body does not match the hash and size in the header', where)
    }
    decoded.body = decodeBody(envelope.body, envelope.id)
    decoded.bodyBytes = envelope.body
  }
  return decoded
}

/** Refuses anything but an array of envelopes before any work starts. */
export function assertEnvelopeList(value: unknown): readonly unknown[] {
  if (!Array.isArray(value)) {
    throw new InputError('BAD_ENVELOPE', `ingest takes an array of event envelopes, got ${describeType(value)}`, { path: 'events' })
  }
  for (let i = 0; i < value.length; i++) {
    if (!(i in value)) throw new InputError('BAD_ENVELOPE', `events[${i}] is a hole in the array`, { path: `events[${i}]` })
  }
  return value
}

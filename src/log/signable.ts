/**
 * The only place that builds bytes to be signed. Each purpose has its own domain tag (ASCII,
 * NUL-terminated) so a signature made for one purpose can never be replayed as another.
 *
 *   event signature = Ed25519(author key, "cairn/event/v1" 0x00 || event id (32 bytes))
 *
 * One signature over the id of the newest event of an append batch covers the whole batch,
 * because each header names its predecessor's id (`prev`), forming a hash chain.
 */
import { concatBytes, hexToBytes, utf8Encode } from './bytes.js'
import type { EventId } from './ids.js'

export const EVENT_SIGNATURE_DOMAIN = 'cairn/event/v1'

const eventDomainBytes = utf8Encode(`${EVENT_SIGNATURE_DOMAIN}\u0000`)

/** Domain tag bytes for a purpose: the tag followed by one NUL byte. */
export function domainTag(tag: string): Uint8Array {
  return utf8Encode(`${tag}\u0000`)
}

export function eventSignable(id: EventId): Uint8Array {
  return concatBytes(eventDomainBytes, hexToBytes(id))
}

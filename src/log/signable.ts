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
  const out = Buffer.allocUnsafe(eventDomainBytes.length + 32)
  out.set(eventDomainBytes, 0)
  out.write(id, eventDomainBytes.length, 32, 'hex')
  return out
}

export const TOKEN_SIGNATURE_DOMAIN = 'cairn/token/v1'
export const HANDSHAKE_SIGNATURE_DOMAIN = 'cairn/handshake/v1'

/** A capability token signature covers the token's canonical JSON payload bytes. */
export function tokenSignable(payload: Uint8Array): Uint8Array {
  return concatBytes(domainTag(TOKEN_SIGNATURE_DOMAIN), payload)
}

/**
 * A handshake proof: the prover signs the other side's fresh nonce together with who is talking
 * to whom about what, so a proof can be replayed neither in another session nor by another peer.
 *
 *   "cairn/handshake/v1" 0x00 || role (1 byte: 'c' client, 'r' relay) || nonce (32) ||
 *   space id (32) || prover key (32) || verifier key (32)
 */
export function handshakeSignable(role: 'client' | 'relay', nonce: Uint8Array, space: string, prover: string, verifier: string): Uint8Array {
  return concatBytes(
    domainTag(HANDSHAKE_SIGNATURE_DOMAIN),
    utf8Encode(role === 'client' ? 'c' : 'r'),
    nonce,
    hexToBytes(space),
    hexToBytes(prover),
    hexToBytes(verifier),
  )
}

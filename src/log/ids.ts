/**
 * Branded identifiers. All are lowercase hex of 32 bytes: an event id is the SHA-256 of the
 * event header's canonical bytes, an author key is an Ed25519 public key, and a space id is the
 * id of the space's genesis event. Decoders and asserters hand these out; inner code trusts them.
 */
import * as ed from '@noble/ed25519'
import { assertHex } from '../assert.js'
import { InputError, type ErrorLocation } from '../errors.js'

export type EventId = string & { readonly __brand: 'EventId' }
export type AuthorKey = string & { readonly __brand: 'AuthorKey' }
export type SpaceId = string & { readonly __brand: 'SpaceId' }

export const ID_BYTES = 32

export function assertEventId(value: unknown, label: string | ErrorLocation): EventId {
  return assertHex(value, label, ID_BYTES) as EventId
}

export function assertAuthorKey(value: unknown, label: string | ErrorLocation): AuthorKey {
  return assertHex(value, label, ID_BYTES) as AuthorKey
}

/**
 * An author key that can sign: its 32 bytes decode (RFC 8032, strictly) to a point of the curve
 * that is not of small order. Other 64 hex characters are no key a seed gives: nothing it signs
 * verifies, or (small order) some verifiers accept signatures anyone can make. For keys given
 * to grant; events already signed are read with assertAuthorKey, as they always were.
 * @throws InputError BAD_HEX, WRONG_LENGTH, BAD_KEY
 */
export function assertPublicKey(value: unknown, label: string | ErrorLocation): AuthorKey {
  const key = assertAuthorKey(value, label)
  if (!isUsablePublicKey(key)) {
    throw new InputError('BAD_KEY', 'not an Ed25519 public key: the 64 hex characters are no point of the curve, or one of small order', typeof label === 'string' ? { field: label } : label)
  }
  return key
}

/**
 * Whether 64 hex characters are a key that can sign (assertPublicKey's test). A key of small
 * order verifies signatures nobody made: with the identity point as the key, R the identity and
 * s = 0 verify for every message.
 */
export function isUsablePublicKey(key: string): boolean {
  try {
    return !ed.Point.fromHex(key, false).isSmallOrder()
  } catch {
    return false
  }
}

export function assertSpaceId(value: unknown, label: string | ErrorLocation): SpaceId {
  return assertHex(value, label, ID_BYTES) as SpaceId
}

/** Short form for messages and listings: the first 12 hex characters. */
export function shortId(id: string): string {
  return id.length > 12 ? `${id.slice(0, 12)}…` : id
}

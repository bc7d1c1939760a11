/**
 * Branded identifiers. All are lowercase hex of 32 bytes: an event id is the SHA-256 of the
 * event header's canonical bytes, an author key is an Ed25519 public key, and a space id is the
 * id of the space's genesis event. Decoders and asserters hand these out; inner code trusts them.
 */
import { assertHex } from '../assert.js'
import type { ErrorLocation } from '../errors.js'

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

export function assertSpaceId(value: unknown, label: string | ErrorLocation): SpaceId {
  return assertHex(value, label, ID_BYTES) as SpaceId
}

/** Short form for messages and listings: the first 12 hex characters. */
export function shortId(id: string): string {
  return id.length > 12 ? `${id.slice(0, 12)}…` : id
}

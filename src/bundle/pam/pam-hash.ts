/**
 * The bytes PAM hashes and signs (seed 000 §3.1–3.2, PAM spec §3.1, §3.3):
 *
 *   entry id   = "blake3:" || hex(BLAKE3-256(canonical_json(entry without its top-level "id")))
 *   root hash  = "blake3:" || hex(BLAKE3-256(canonical_json(components)))
 *   signature  = "ed25519:" || hex(Ed25519(operator key, UTF-8 bytes of the root hash string))
 *
 * canonical_json is Cairn's (src/log/canonical-json.ts): keys sorted by code point, no
 * whitespace, UTF-8, minimal escapes, numbers in shortest round-trip form with integral values
 * below 1e16 as integers, which is the spec's §4.1 number rule. `components` is the whole
 * object: the five arrays in their order, plus any component this version does not know.
 *
 * Why not a domain-tagged signable from src/log/signable.ts: the message is fixed by the PAM
 * spec, and other PAM verifiers check exactly these bytes. It cannot collide with a Cairn
 * signature: every Cairn signable starts with "cairn/", a PAM message with "blake3:".
 * Envelope fields outside `components` (created_at, source_agent, capability_tokens) are not
 * covered by the root hash, as in the spec; nothing Cairn decides may rest on them alone.
 */
import { blake3 } from '@noble/hashes/blake3.js'
import { bytesToHex, canonicalJsonBytes, hexToBytes, type CryptoProvider, type Identity } from '../../log/index.js'
import type { JsonValue } from '../../log/index.js'
import type { JsonObject } from './pam-types.js'

export const HASH_PREFIX = 'blake3:'
export const SIGNATURE_PREFIX = 'ed25519:'

const textEncoder = new TextEncoder()

/** `blake3:` + hex of BLAKE3-256 over bytes. */
export function blake3Id(bytes: Uint8Array): string {
  return HASH_PREFIX + bytesToHex(blake3(bytes))
}

/** The content id of an entry: BLAKE3 of its canonical JSON with the top-level `id` left out. */
export function computeEntryId(entry: JsonObject): string {
  const { id: _id, ...content } = entry
  return blake3Id(canonicalJsonBytes(content))
}

/** The root hash of an artifact: BLAKE3 of the canonical JSON of its `components` object. */
export function computeRootHash(components: JsonValue): string {
  return blake3Id(canonicalJsonBytes(components))
}

/** The signed message: the root hash string as UTF-8 (spec §3.3). */
export function rootSignable(rootHash: string): Uint8Array {
  return textEncoder.encode(rootHash)
}

export function signRoot(identity: Identity, rootHash: string): string {
  return SIGNATURE_PREFIX + bytesToHex(identity.sign(rootSignable(rootHash)))
}

/** True when `signature` (`ed25519:<hex>`, already checked for form) verifies under the key. */
export function verifyRoot(crypto: CryptoProvider, signature: string, rootHash: string, publicKeyHex: string): boolean {
  return crypto.verify(hexToBytes(signature.slice(SIGNATURE_PREFIX.length)), rootSignable(rootHash), publicKeyHex)
}

/**
 * Ed25519 signatures of Portable Memory (spec notes §5): the detached token
 * `ed25519:<pubHex64>:<sigHex128>`, `manifest.sig` over the exact `manifest.json` bytes, and
 * signed tombstones (the token over the tombstone's canonical line without `signature`).
 *
 * These are the one place Cairn signs bytes that do not come from src/log/signable.ts: the
 * format fixes the signed bytes (the manifest as written, a canonical line) with no domain tag,
 * and other implementations must verify them. RFC 8032 signing is deterministic, so node's
 * Ed25519 reproduces `vectors/signed.mem/manifest.sig` exactly from the test seed.
 *
 * Invariant: verification fails closed. A token verifies only when it is well-formed, its
 * embedded key is one of the caller's trusted keys, and the signature holds over the bytes.
 */
import { describeType } from '../../assert.js'
import { InputError } from '../../errors.js'
import { bytesToHex, canonicalJson, defaultCrypto, hexToBytes, type CryptoProvider } from '../../log/index.js'
import { decodeTombstone } from './record-codec.js'
import type { JsonObject, MemSigner } from './types.js'

export const SIGNATURE_SCHEME = 'ed25519'

const PUBLIC_KEY_HEX = /^[0-9a-f]{64}$/
const ANY_CASE_PUBLIC_KEY_HEX = /^[0-9a-fA-F]{64}$/
/** Tokens are lowercase hex (§5): an uppercase digit is a different token, so a changed byte never verifies. */
const SIGNATURE_HEX = /^[0-9a-f]{128}$/
const textEncoder = new TextEncoder()

/** The outcome of checking a token: which key signed, or why it does not verify. */
export type TokenCheck =
  | { readonly isValid: true; readonly publicKeyHex: string }
  | { readonly isValid: false; readonly code: 'BAD_SIGNATURE' | 'UNTRUSTED_KEY'; readonly message: string }

/**
 * Trusted keys as a set of lowercase hex.
 * @throws InputError WRONG_TYPE, BAD_TRUSTED_KEY (not 64 hex characters)
 */
export function readTrustedKeys(keys: unknown): Set<string> {
  if (keys === undefined) return new Set()
  if (!Array.isArray(keys)) throw new InputError('WRONG_TYPE', `expected an array of hex keys, got ${describeType(keys)}`, { field: 'trustedKeys' })
  const trusted = new Set<string>()
  // An index loop, not map: map skips the holes of a sparse array.
  for (let i = 0; i < keys.length; i++) {
    const key: unknown = keys[i]
    if (typeof key !== 'string' || !ANY_CASE_PUBLIC_KEY_HEX.test(key)) {
      throw new InputError('BAD_TRUSTED_KEY', 'expected an Ed25519 public key as 64 hex characters', { field: `trustedKeys[${i}]` })
    }
    trusted.add(key.toLowerCase())
  }
  return trusted
}

/**
 * Checks a signer before it is used.
 * @throws InputError WRONG_TYPE, BAD_HEX
 */
export function assertSigner(signer: unknown, field = 'signer'): MemSigner {
  if (typeof signer !== 'object' || signer === null) throw new InputError('WRONG_TYPE', `expected { sign, publicKeyHex }, got ${describeType(signer)}`, { field })
  const { sign, publicKeyHex } = signer as Partial<MemSigner>
  if (typeof sign !== 'function') throw new InputError('WRONG_TYPE', 'sign must be a function', { field: `${field}.sign` })
  if (typeof publicKeyHex !== 'string' || !PUBLIC_KEY_HEX.test(publicKeyHex)) {
    throw new InputError('BAD_HEX', 'expected the public key as 64 lowercase hex characters', { field: `${field}.publicKeyHex` })
  }
  return signer as MemSigner
}

/**
 * A detached signature token over `bytes`. The signature is verified against the signer's
 * public key before it is returned, so a signer whose key does not match can never produce a
 * bundle nobody can verify.
 * @throws InputError WRONG_TYPE, BAD_HEX, SIGNER_MISMATCH
 */
export function signatureToken(bytes: Uint8Array, signer: MemSigner, crypto: CryptoProvider = defaultCrypto()): string {
  assertSigner(signer)
  const signature: unknown = signer.sign(bytes)
  if (!(signature instanceof Uint8Array) || signature.length !== 64) {
    throw new InputError('WRONG_TYPE', 'sign must return 64 signature bytes', { field: 'signer.sign' })
  }
  if (!crypto.verify(signature, bytes, signer.publicKeyHex)) {
    throw new InputError('SIGNER_MISMATCH', 'the signature does not verify with signer.publicKeyHex', { field: 'signer' })
  }
  return `${SIGNATURE_SCHEME}:${signer.publicKeyHex}:${bytesToHex(signature)}`
}

/** The bytes of `manifest.sig` for the exact `manifest.json` bytes: the token and one `\n`. */
export function manifestSignatureBytes(manifestBytes: Uint8Array, signer: MemSigner, crypto?: CryptoProvider): Uint8Array {
  return textEncoder.encode(`${signatureToken(manifestBytes, signer, crypto)}\n`)
}

/**
 * Checks a token over `bytes` (§5): surrounding whitespace is trimmed (as the reference
 * verifier does), then exactly three `:`-separated parts, the scheme `ed25519`, lowercase hex,
 * and the embedded key among `trustedKeys`.
 */
export function checkSignatureToken(
  token: string,
  bytes: Uint8Array,
  trustedKeys: ReadonlySet<string>,
  crypto: CryptoProvider = defaultCrypto(),
): TokenCheck {
  const parts = token.trim().split(':')
  const [scheme, keyHex, signatureHex] = parts
  if (parts.length !== 3 || scheme !== SIGNATURE_SCHEME || !PUBLIC_KEY_HEX.test(keyHex ?? '') || !SIGNATURE_HEX.test(signatureHex ?? '')) {
    return { isValid: false, code: 'BAD_SIGNATURE', message: 'not a signature token ed25519:<64 lowercase hex>:<128 lowercase hex>' }
  }
  const publicKeyHex = keyHex as string
  if (!trustedKeys.has(publicKeyHex)) {
    return { isValid: false, code: 'UNTRUSTED_KEY', message: `signed by ${publicKeyHex.slice(0, 16)}…, which is not a trusted key` }
  }
  if (!crypto.verify(hexToBytes(signatureHex as string), bytes, publicKeyHex)) {
    return { isValid: false, code: 'BAD_SIGNATURE', message: 'the signature does not verify over these bytes' }
  }
  return { isValid: true, publicKeyHex }
}

function unsignedLine(tombstone: JsonObject): { unsigned: JsonObject; bytes: Uint8Array } {
  const { signature: _signature, ...unsigned } = tombstone
  return { unsigned, bytes: textEncoder.encode(canonicalJson(unsigned)) }
}

/**
 * A copy of the tombstone (decoded as a bundle reader would, so the signed line is the line that
 * is written) carrying a `signature` over its canonical line without `signature`.
 * @throws InputError (a malformed tombstone, as decodeTombstone), WRONG_TYPE, BAD_HEX, SIGNER_MISMATCH
 */
export function signTombstone(tombstone: JsonObject, signer: MemSigner, crypto?: CryptoProvider): JsonObject {
  const { unsigned, bytes } = unsignedLine(decodeTombstone(tombstone).record)
  return { ...unsigned, signature: signatureToken(bytes, signer, crypto) }
}

/**
 * True when the tombstone carries a signature by one of `trustedKeys` over its canonical line
 * without `signature`. Unsigned or malformed tombstones are false (fail closed).
 * @throws InputError BAD_TRUSTED_KEY (a malformed trusted key)
 */
export function verifyTombstone(tombstone: JsonObject, trustedKeys: readonly string[], crypto?: CryptoProvider): boolean {
  const trusted = readTrustedKeys(trustedKeys)
  let record: JsonObject
  try {
    record = decodeTombstone(tombstone).record
  } catch {
    return false
  }
  const signature = record.signature
  if (typeof signature !== 'string') return false
  return checkSignatureToken(signature, unsignedLine(record).bytes, trusted, crypto).isValid
}

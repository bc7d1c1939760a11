/**
 * The crypto a Cairn store needs: SHA-256 and Ed25519 (RFC 8032, pure, no prehash).
 * Two implementations give identical bytes: the platform's native code (fast) and the
 * noble libraries (portable). Tests check them against each other.
 */

/** Signs with one private key, kept imported so each signature does no key parsing. */
export interface Signer {
  /** The 32-byte Ed25519 public key. */
  readonly publicKey: Uint8Array
  sign(message: Uint8Array): Uint8Array
}

export interface CryptoProvider {
  readonly name: 'native' | 'noble'
  sha256(data: Uint8Array | string): Uint8Array
  /** SHA-256 as lowercase hex (what ids are); natively about twice as fast as hex of `sha256`. */
  sha256Hex(data: Uint8Array | string): string
  /** A signer for a 32-byte RFC 8032 seed (what key files hold). */
  signerFromSeed(seed: Uint8Array): Signer
  /**
   * Verifies an Ed25519 signature. Public keys are imported once and cached per key, since
   * importing costs more than verifying on some paths. Malformed keys or signatures give false.
   */
  verify(signature: Uint8Array, message: Uint8Array, publicKeyHex: string): boolean
  randomBytes(length: number): Uint8Array
}

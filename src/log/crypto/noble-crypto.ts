/**
 * Pure-JS implementation of `CryptoProvider` on @noble/ed25519 and @noble/hashes, for runtimes
 * without native Ed25519. Produces the same bytes as the native path (RFC 8032 signing is
 * deterministic).
 */
import * as ed from '@noble/ed25519'
import { sha256, sha512 } from '@noble/hashes/sha2.js'
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js'
import type { CryptoProvider, Signer } from './provider.js'

// noble/ed25519 v3 needs a synchronous SHA-512 for its sync API.
ed.hashes.sha512 = sha512

const MAX_CACHED_KEYS = 4096
const textEncoder = new TextEncoder()

export class NobleCrypto implements CryptoProvider {
  readonly name = 'noble' as const
  private readonly publicKeys = new Map<string, Uint8Array | null>()

  sha256(data: Uint8Array | string): Uint8Array {
    return sha256(typeof data === 'string' ? textEncoder.encode(data) : data)
  }

  sha256Hex(data: Uint8Array | string): string {
    return bytesToHex(this.sha256(data))
  }

  signerFromSeed(seed: Uint8Array): Signer {
    if (seed.length !== 32) throw new RangeError('an Ed25519 seed is 32 bytes')
    const secret = Uint8Array.from(seed)
    return { publicKey: ed.getPublicKey(secret), sign: (message) => ed.sign(message, secret) }
  }

  verify(signature: Uint8Array, message: Uint8Array, publicKeyHex: string): boolean {
    if (signature.length !== 64) return false
    const key = this.publicKey(publicKeyHex)
    if (key === null) return false
    try {
      return ed.verify(signature, message, key)
    } catch {
      return false
    }
  }

  randomBytes(length: number): Uint8Array {
    return randomBytes(length)
  }

  private publicKey(hex: string): Uint8Array | null {
    const cached = this.publicKeys.get(hex)
    if (cached !== undefined) return cached
    const key = /^[0-9a-f]{64}$/.test(hex) ? ed.etc.hexToBytes(hex) : null
    if (this.publicKeys.size >= MAX_CACHED_KEYS) this.publicKeys.clear()
    this.publicKeys.set(hex, key)
    return key
  }
}

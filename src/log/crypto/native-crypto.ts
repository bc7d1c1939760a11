/**
 * node:crypto implementation of `CryptoProvider`. Measured on this project's machines: Ed25519
 * ~25k signs/s and ~8k verifies/s per core, ~9x and ~13x faster than pure JS. Public keys are
 * imported from JWK (~8 µs) rather than SPKI DER (~95 µs) and cached per key.
 */
import crypto, { type KeyObject } from 'node:crypto'
import type { CryptoProvider, Signer } from './provider.js'

// PKCS#8 wrapping of a raw Ed25519 seed (RFC 8410 §7): fixed prefix, then the 32 seed bytes.
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex')
const MAX_CACHED_KEYS = 4096
// Each randomBytes call into the CSPRNG costs ~5 µs whatever the size; salts are drawn from a pool.
const RANDOM_POOL_BYTES = 8192
const POOLED_MAX_BYTES = 256

class NativeSigner implements Signer {
  readonly publicKey: Uint8Array
  private readonly key: KeyObject

  constructor(seed: Uint8Array) {
    if (seed.length !== 32) throw new RangeError('an Ed25519 seed is 32 bytes')
    this.key = crypto.createPrivateKey({
      key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]),
      format: 'der',
      type: 'pkcs8',
    })
    const jwk = crypto.createPublicKey(this.key).export({ format: 'jwk' })
    this.publicKey = new Uint8Array(Buffer.from(jwk.x as string, 'base64url'))
  }

  sign(message: Uint8Array): Uint8Array {
    return new Uint8Array(crypto.sign(null, message, this.key))
  }
}

export class NativeCrypto implements CryptoProvider {
  readonly name = 'native' as const
  private readonly publicKeys = new Map<string, KeyObject | null>()
  private pool = Buffer.alloc(0)
  private poolOffset = 0

  sha256(data: Uint8Array | string): Uint8Array {
    return crypto.hash('sha256', data, 'buffer')
  }

  sha256Hex(data: Uint8Array | string): string {
    return crypto.hash('sha256', data, 'hex')
  }

  signerFromSeed(seed: Uint8Array): Signer {
    return new NativeSigner(seed)
  }

  verify(signature: Uint8Array, message: Uint8Array, publicKeyHex: string): boolean {
    if (signature.length !== 64) return false
    const key = this.publicKey(publicKeyHex)
    if (key === null) return false
    try {
      return crypto.verify(null, message, key, signature)
    } catch {
      return false
    }
  }

  randomBytes(length: number): Uint8Array {
    if (length > POOLED_MAX_BYTES) return new Uint8Array(crypto.randomBytes(length))
    if (this.poolOffset + length > this.pool.length) {
      this.pool = crypto.randomBytes(RANDOM_POOL_BYTES)
      this.poolOffset = 0
    }
    // Copy out, so bytes handed to one caller are never seen by another.
    const out = new Uint8Array(this.pool.subarray(this.poolOffset, this.poolOffset + length))
    this.poolOffset += length
    return out
  }

  private publicKey(hex: string): KeyObject | null {
    const cached = this.publicKeys.get(hex)
    if (cached !== undefined) return cached
    let key: KeyObject | null = null
    if (/^[0-9a-f]{64}$/.test(hex)) {
      try {
        const x = Buffer.from(hex, 'hex').toString('base64url')
        key = crypto.createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x }, format: 'jwk' })
      } catch {
        key = null
      }
    }
    if (this.publicKeys.size >= MAX_CACHED_KEYS) this.publicKeys.clear()
    this.publicKeys.set(hex, key)
    return key
  }
}

/** True when this runtime has the native primitives (`crypto.hash` needs Node >= 20.12). */
export function hasNativeCrypto(): boolean {
  try {
    if (typeof crypto.hash !== 'function') return false
    const signer = new NativeSigner(new Uint8Array(32))
    return signer.sign(new Uint8Array(1)).length === 64
  } catch {
    return false
  }
}

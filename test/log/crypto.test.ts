import nodeCrypto from 'node:crypto'
import fc from 'fast-check'
import { describe, expect, it, vi } from 'vitest'
import { bytesToHex } from '../../src/log/bytes.js'
import { NativeCrypto, NobleCrypto, hasNativeCrypto } from '../../src/log/crypto/index.js'

const native = new NativeCrypto()
const noble = new NobleCrypto()
const seed = fc.uint8Array({ minLength: 32, maxLength: 32 })
const message = fc.uint8Array({ maxLength: 512 })

describe('crypto providers', () => {
  it('has native crypto on this runtime', () => {
    expect(hasNativeCrypto()).toBe(true)
  })

  it('agree on SHA-256 of bytes and of strings', () => {
    fc.assert(fc.property(message, fc.string({ unit: 'grapheme' }), (bytes, text) => {
      expect(bytesToHex(native.sha256(bytes))).toBe(bytesToHex(noble.sha256(bytes)))
      expect(bytesToHex(native.sha256(text))).toBe(bytesToHex(noble.sha256(text)))
      expect(native.sha256Hex(bytes)).toBe(bytesToHex(native.sha256(bytes)))
      expect(noble.sha256Hex(text)).toBe(native.sha256Hex(text))
    }), { numRuns: 200 })
  })

  it('derive the same public key and signature from a seed, and verify each other', () => {
    fc.assert(fc.property(seed, message, (secret, bytes) => {
      const a = native.signerFromSeed(secret)
      const b = noble.signerFromSeed(secret)
      expect(bytesToHex(a.publicKey)).toBe(bytesToHex(b.publicKey))
      const signature = a.sign(bytes)
      expect(bytesToHex(signature)).toBe(bytesToHex(b.sign(bytes)))
      const key = bytesToHex(a.publicKey)
      expect(noble.verify(signature, bytes, key)).toBe(true)
      expect(native.verify(signature, bytes, key)).toBe(true)
    }), { numRuns: 50 })
  })

  it('both refuse a signature with any flipped bit', () => {
    fc.assert(fc.property(seed, message, fc.nat(), (secret, bytes, position) => {
      const signer = native.signerFromSeed(secret)
      const signature = signer.sign(bytes)
      const bit = position % (signature.length * 8)
      const bad = Uint8Array.from(signature)
      bad[bit >> 3] = (bad[bit >> 3] as number) ^ (1 << (bit & 7))
      const key = bytesToHex(signer.publicKey)
      expect(native.verify(bad, bytes, key)).toBe(false)
      expect(noble.verify(bad, bytes, key)).toBe(false)
    }), { numRuns: 50 })
  })

  it('both answer false, not throw, for malformed keys and signatures', () => {
    const signature = native.signerFromSeed(new Uint8Array(32)).sign(new Uint8Array(1))
    for (const provider of [native, noble]) {
      expect(provider.verify(signature, new Uint8Array(1), 'zz')).toBe(false)
      expect(provider.verify(signature, new Uint8Array(1), 'ff'.repeat(32))).toBe(false)
      expect(provider.verify(signature.subarray(0, 63), new Uint8Array(1), 'ab'.repeat(32))).toBe(false)
    }
  })

  it('imports each author\'s public key once: later verifications reuse it', () => {
    const provider = new NativeCrypto()
    const signer = provider.signerFromSeed(new Uint8Array(32).fill(9))
    const key = bytesToHex(signer.publicKey)
    const imports = vi.spyOn(nodeCrypto, 'createPublicKey')
    try {
      for (let i = 0; i < 5; i++) {
        const bytes = new Uint8Array([i])
        expect(provider.verify(signer.sign(bytes), bytes, key)).toBe(true)
      }
      expect(provider.verify(signer.sign(new Uint8Array([9])), new Uint8Array([8]), key)).toBe(false)
      expect(imports).toHaveBeenCalledTimes(1)
      provider.verify(signer.sign(new Uint8Array([1])), new Uint8Array([1]), 'ab'.repeat(32))
      expect(imports).toHaveBeenCalledTimes(2)
    } finally {
      imports.mockRestore()
    }
  })
})

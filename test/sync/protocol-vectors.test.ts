/**
 * Pins the token and handshake bytes to vectors made by an independent generator
 * (test/sync/vectors/generate-protocol-vectors.py: Python and OpenSSL Ed25519).
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { decodeToken, verifyToken } from '../../src/auth/index.js'
import { bytesToHex, hexToBytes } from '../../src/log/bytes.js'
import { canonicalJson } from '../../src/log/canonical-json.js'
import { NativeCrypto, NobleCrypto } from '../../src/log/crypto/index.js'
import { Identity } from '../../src/log/identity.js'
import { handshakeSignable } from '../../src/log/signable.js'
import { checkProof, proveKey } from '../../src/sync/handshake.js'
import { repoRoot } from '../helpers/conformance.js'

const vectors = JSON.parse(readFileSync(path.join(repoRoot, 'test/sync/vectors/protocol.json'), 'utf8')) as {
  keys: Record<'issuer' | 'holder' | 'relay', { seed: string; publicKey: string }>
  space: string
  token: { payload: Record<string, unknown>; payloadCanonical: string; signature: string; token: string }
  handshake: Record<string, string>
}

describe.each([['native', new NativeCrypto()], ['noble', new NobleCrypto()]] as const)('protocol golden vectors (%s crypto)', (_name, crypto) => {
  it('encodes the token payload canonically, as the generator did', () => {
    expect(canonicalJson(vectors.token.payload)).toBe(vectors.token.payloadCanonical)
  })

  it('decodes and verifies the vector token', () => {
    const token = decodeToken(vectors.token.token, crypto)
    expect(token).toMatchObject(vectors.token.payload)
    const verified = verifyToken(vectors.token.token, {
      space: vectors.space, audience: vectors.keys.holder.publicKey, nowMs: 1700000100000, crypto,
      isRevoked: () => false, canIssue: (issuer) => issuer === vectors.keys.issuer.publicKey,
    })
    expect(verified.id).toBe('ab'.repeat(32))
  })

  it('signs the token payload to the vector signature', () => {
    const issuer = Identity.fromSeed(hexToBytes(vectors.keys.issuer.seed), crypto)
    const signable = new Uint8Array([...new TextEncoder().encode('cairn/token/v1\u0000'), ...new TextEncoder().encode(vectors.token.payloadCanonical)])
    expect(bytesToHex(issuer.sign(signable))).toBe(vectors.token.signature)
  })

  it('builds the handshake signables and proofs of the vectors', () => {
    const { holder, relay } = vectors.keys
    const h = vectors.handshake as Record<string, string>
    expect(bytesToHex(handshakeSignable('relay', hexToBytes(h.clientNonce as string), vectors.space, relay.publicKey, holder.publicKey))).toBe(h.relayProofSignable)
    expect(bytesToHex(handshakeSignable('client', hexToBytes(h.relayNonce as string), vectors.space, holder.publicKey, relay.publicKey))).toBe(h.clientProofSignable)
    const relayIdentity = Identity.fromSeed(hexToBytes(relay.seed), crypto)
    const holderIdentity = Identity.fromSeed(hexToBytes(holder.seed), crypto)
    expect(bytesToHex(proveKey(relayIdentity, 'relay', hexToBytes(h.clientNonce as string), vectors.space, holder.publicKey))).toBe(h.relayProof)
    expect(bytesToHex(proveKey(holderIdentity, 'client', hexToBytes(h.relayNonce as string), vectors.space, relay.publicKey))).toBe(h.clientProof)
    expect(checkProof(crypto, hexToBytes(h.clientProof as string), 'client', hexToBytes(h.relayNonce as string), vectors.space, holder.publicKey, relay.publicKey)).toBe(true)
    expect(checkProof(crypto, hexToBytes(h.clientProof as string), 'relay', hexToBytes(h.relayNonce as string), vectors.space, holder.publicKey, relay.publicKey)).toBe(false)
  })
})

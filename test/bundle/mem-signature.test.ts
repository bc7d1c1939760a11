/**
 * Signed tombstones (spec notes §5, L3): the token `ed25519:<pub>:<sig>` over the tombstone's
 * canonical line without `signature`, checked against a line and signature computed here with
 * node:crypto; verification fails closed; a signed tombstone survives a bundle round trip.
 */
import { describe, expect, it } from 'vitest'
import {
  checkSignatureToken, readMemBundle, signatureToken, signTombstone, verifyTombstone, writeMemBundle,
} from '../../src/bundle/mem/index.js'
import { NobleCrypto } from '../../src/log/index.js'
import { otherSigner, TEST_KEY, tempBundlePath, testSigner } from './helpers/mem-fixtures.js'
import { emptyContent, OPTIONS, T, tombstone } from './helpers/mem-records.js'

const UNSIGNED_LINE =
  `{"actor":"user","deletedAt":"${T}","derived":{"chunkIDs":[],"edgeIDs":[],"embeddingCacheKeys":[],"entityIDs":[],` +
  '"episodeLinkCount":0,"factIDs":[],"sentenceIDs":[]},"id":"tomb_1","op":"delete","targetID":"ep_1","targetKind":"episode"}'
const TRUSTED = [TEST_KEY.publicKeyHex]

describe('signed tombstones', () => {
  it('signs the canonical line without signature, in the token form', () => {
    const signed = signTombstone(tombstone('tomb_1', 'ep_1', { vendor: 'dropped' }), testSigner())
    const expected = Buffer.from(testSigner().sign(Buffer.from(UNSIGNED_LINE))).toString('hex')
    expect(signed.signature).toBe(`ed25519:${TEST_KEY.publicKeyHex}:${expected}`)
    expect('vendor' in signed).toBe(false)
  })

  it('verifies only with a trusted key and only the signed content', () => {
    const signed = signTombstone(tombstone('tomb_1', 'ep_1'), testSigner())
    expect(verifyTombstone(signed, TRUSTED)).toBe(true)
    expect(verifyTombstone(signed, [TEST_KEY.publicKeyHex.toUpperCase()])).toBe(true)
    expect(verifyTombstone(signed, [otherSigner().publicKeyHex])).toBe(false)
    expect(verifyTombstone(signed, [])).toBe(false)
    expect(verifyTombstone({ ...signed, reason: 'changed' }, TRUSTED)).toBe(false)
    expect(verifyTombstone({ ...signed, targetID: 'ep_2' }, TRUSTED)).toBe(false)
    expect(verifyTombstone(tombstone('tomb_1', 'ep_1'), TRUSTED)).toBe(false)
    expect(verifyTombstone({ ...signed, op: 'erase' }, TRUSTED)).toBe(false)
    expect(verifyTombstone({ ...signed, signature: 'ed25519:zz' }, TRUSTED)).toBe(false)
  })

  it('keeps a tombstone signature valid through write and read', async () => {
    const dir = tempBundlePath()
    await writeMemBundle(dir, { ...emptyContent(), tombstones: [signTombstone(tombstone('tomb_1', 'ep_1'), testSigner())] }, OPTIONS)
    const { content } = await readMemBundle(dir)
    expect(content.tombstones[0]?.signature).toMatch(/^ed25519:[0-9a-f]{64}:[0-9a-f]{128}$/)
    expect(verifyTombstone(content.tombstones[0] ?? {}, TRUSTED)).toBe(true)
  })

  it('refuses a signer whose key does not match its signatures, before anything is written', async () => {
    const liar = { sign: testSigner().sign, publicKeyHex: otherSigner().publicKeyHex }
    expect(() => signatureToken(new Uint8Array([1]), liar)).toThrow(expect.objectContaining({ code: 'SIGNER_MISMATCH' }))
    expect(() => signatureToken(new Uint8Array([1]), { sign: () => new Uint8Array(10), publicKeyHex: TEST_KEY.publicKeyHex })).toThrow(expect.objectContaining({ code: 'WRONG_TYPE' }))
    const dir = tempBundlePath()
    await expect(writeMemBundle(dir, emptyContent(), { ...OPTIONS, signer: liar })).rejects.toMatchObject({ code: 'SIGNER_MISMATCH' })
  })

  it('gives the same verdicts with the native and the noble verifier', () => {
    const bytes = new TextEncoder().encode(UNSIGNED_LINE)
    const token = signatureToken(bytes, testSigner())
    const noble = new NobleCrypto()
    const trusted = new Set(TRUSTED)
    expect(checkSignatureToken(token, bytes, trusted)).toEqual(checkSignatureToken(token, bytes, trusted, noble))
    expect(checkSignatureToken(token, bytes, trusted, noble).isValid).toBe(true)
    const other = new TextEncoder().encode(`${UNSIGNED_LINE} `)
    expect(checkSignatureToken(token, other, trusted, noble)).toMatchObject({ isValid: false, code: 'BAD_SIGNATURE' })
    expect(checkSignatureToken(token, other, trusted)).toMatchObject({ isValid: false, code: 'BAD_SIGNATURE' })
  })
})

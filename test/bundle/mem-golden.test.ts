/**
 * The Portable Memory golden bundles (fixtures/sample.mem, fixtures/sample-1.1.mem,
 * vectors/signed.mem), read where they live: each reads, and written again its data files and
 * CHECKSUMS are byte-identical to the fixture's; the manifest matches but for generator,
 * createdAt and the 1.1 upgrade; the signed vector's manifest.sig is reproduced exactly.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  manifestSignatureBytes, readMemBundle, validateMemBundle, writeMemBundle, type MemManifest,
} from '../../src/bundle/mem/index.js'
import { Identity } from '../../src/log/index.js'
import {
  FIXTURES, listFiles, optionsFrom, otherSigner, readBundleBytes, readRawManifest, sha256Hex, TEST_KEY, tempBundlePath, testSigner,
} from './helpers/mem-fixtures.js'

const REWRITE_GENERATOR = 'cairn-test/0.1'
const REWRITE_CREATED_AT = '2030-01-02T03:04:05Z'
/** Fields a 1.1 export adds to a 1.0 manifest, and the two a rewrite may change. */
const VERSION_FIELDS = new Set(['format', 'bundleDigest', 'coverage', 'scopes', 'specURL'])
const FREE_FIELDS = new Set(['generator', 'createdAt'])

const cases = [
  { name: 'sample.mem', dir: FIXTURES.sample, isSigned: false },
  { name: 'sample-1.1.mem', dir: FIXTURES.sample11, isSigned: false },
  { name: 'signed.mem', dir: FIXTURES.signed, isSigned: true },
] as const

async function rewrite(dir: string, isSigned: boolean, overrides = {}): Promise<{ out: string; manifest: MemManifest }> {
  const { manifest, content } = await readMemBundle(dir, isSigned ? { trustedKeys: [TEST_KEY.publicKeyHex] } : {})
  const out = tempBundlePath()
  await writeMemBundle(out, content, optionsFrom(manifest, {
    generator: REWRITE_GENERATOR, createdAt: REWRITE_CREATED_AT, ...(isSigned ? { signer: testSigner() } : {}), ...overrides,
  }))
  return { out, manifest }
}

describe('golden bundles', () => {
  for (const { name, dir, isSigned } of cases) {
    it(`${name} validates and reads with no warnings`, async () => {
      const report = await validateMemBundle(dir)
      expect(report.problems).toEqual([])
      expect(report.valid).toBe(true)
      const { warnings } = await readMemBundle(dir)
      expect(warnings).toEqual([])
    })

    it(`${name} written again has byte-identical data files and CHECKSUMS`, async () => {
      const { out } = await rewrite(dir, isSigned)
      const fixtureFiles = readRawManifest(dir).files.map((file) => file.path)
      for (const file of [...fixtureFiles, 'CHECKSUMS']) {
        expect(readBundleBytes(out, file).equals(readBundleBytes(dir, file)), file).toBe(true)
      }
      const extra = isSigned ? ['manifest.sig'] : []
      expect(listFiles(out)).toEqual([...fixtureFiles, 'CHECKSUMS', 'manifest.json', ...extra].sort())
    })

    it(`${name} written again has the fixture's manifest fields but generator and createdAt, upgraded to 1.1`, async () => {
      const { out } = await rewrite(dir, isSigned)
      const fixture = readRawManifest(dir)
      const written = readRawManifest(out)
      for (const [key, value] of Object.entries(fixture)) {
        if (FREE_FIELDS.has(key) || VERSION_FIELDS.has(key)) continue
        expect(written[key], key).toEqual(value)
      }
      expect(written.generator).toBe(REWRITE_GENERATOR)
      expect(written.createdAt).toBe(REWRITE_CREATED_AT)
      expect(written.format).toBe('1.1.0')
      expect(written.bundleDigest).toBe(sha256Hex(readBundleBytes(dir, 'CHECKSUMS')))
      if (fixture.format === '1.1.0') {
        for (const key of VERSION_FIELDS) expect(written[key], key).toEqual(fixture[key])
      }
      // No field is invented beyond the 1.1 ones.
      for (const key of Object.keys(written)) expect(key in fixture || VERSION_FIELDS.has(key), key).toBe(true)
    })
  }

  it('sample.mem carries its ext key, its vendor kind raw and its tombstone', async () => {
    const { content } = await readMemBundle(FIXTURES.sample)
    const episodes = content.records.episode ?? []
    expect(episodes.map((episode) => episode.id)).toEqual(['ep_0001', 'ep_0002'])
    expect(episodes[1]?.vendorScore).toBe(0.92)
    expect(content.passthrough).toEqual({ vendorThing: ['{"id":"vt_1","blob":"opaque"}'] })
    expect(content.tombstones).toHaveLength(1)
    expect(content.tombstones[0]?.targetID).toBe('ep_legacy')
    expect(content.auditLog).toEqual([])
  })

  it('sample.mem written again is 1.1 with the coverage of its episodes and no scopes', async () => {
    const { out } = await rewrite(FIXTURES.sample, false)
    const written = readRawManifest(out)
    expect(written.coverage).toEqual({ from: '2023-11-14T22:13:20Z', to: '2023-11-14T22:13:20Z' })
    expect('scopes' in written).toBe(false)
  })

  it('sample-1.1.mem written with its own generator and createdAt reproduces manifest.json byte for byte', async () => {
    const { out } = await rewrite(FIXTURES.sample11, false, { generator: 'portable-memory-fixture/1.1', createdAt: '2026-09-14T08:15:02Z' })
    expect(readBundleBytes(out, 'manifest.json').equals(readBundleBytes(FIXTURES.sample11, 'manifest.json'))).toBe(true)
  })

  it('signed.mem keeps a UInt64 ext value exact', async () => {
    const { content } = await readMemBundle(FIXTURES.signed)
    expect(content.records.episode?.[0]?.vendorId).toBe(18446744073709551615n)
  })

  it('signed.mem reads with and without its trusted key, and is refused with another key', async () => {
    await expect(readMemBundle(FIXTURES.signed)).resolves.toBeDefined()
    await expect(readMemBundle(FIXTURES.signed, { trustedKeys: [TEST_KEY.publicKeyHex] })).resolves.toBeDefined()
    await expect(readMemBundle(FIXTURES.signed, { trustedKeys: [otherSigner().publicKeyHex] })).rejects.toMatchObject({ code: 'UNTRUSTED_KEY', where: { file: 'manifest.sig' } })
  })

  it('signing the exact manifest bytes with the test key reproduces vectors/signed.mem/manifest.sig', () => {
    const manifestBytes = readBundleBytes(FIXTURES.signed, 'manifest.json')
    const expected = readBundleBytes(FIXTURES.signed, 'manifest.sig')
    expect(Buffer.from(manifestSignatureBytes(manifestBytes, testSigner())).equals(expected)).toBe(true)
    // The engine's own key type signs the same bytes.
    const identity = Identity.fromSeed(Buffer.from(TEST_KEY.privateKeyHex, 'hex'))
    const signer = { sign: (bytes: Uint8Array) => identity.sign(bytes), publicKeyHex: identity.author }
    expect(Buffer.from(manifestSignatureBytes(manifestBytes, signer)).equals(expected)).toBe(true)
  })

  it('signed.mem written again with the test key is signed over its own manifest bytes', async () => {
    const { out } = await rewrite(FIXTURES.signed, true)
    const manifestBytes = readFileSync(path.join(out, 'manifest.json'))
    expect(readFileSync(path.join(out, 'manifest.sig'), 'utf8')).toBe(
      `ed25519:${TEST_KEY.publicKeyHex}:${Buffer.from(testSigner().sign(manifestBytes)).toString('hex')}\n`,
    )
    const report = await validateMemBundle(out, { trustedKeys: [TEST_KEY.publicKeyHex] })
    expect(report.problems).toEqual([])
    expect(readRawManifest(out).capabilities).toContain('signed')
  })
})

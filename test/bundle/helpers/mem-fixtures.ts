/**
 * Helpers for the `.mem` codec tests: where the golden bundles are (read in place, never
 * copied), an Ed25519 signer for the conformance test key built on node:crypto alone (so the
 * vector is not reproduced by the code under test), temporary directories that are removed
 * after the suite, and tools that edit a written bundle and reseal its checksums with
 * node:crypto, so a test can break exactly one thing.
 */
import { createHash, createPrivateKey, createPublicKey, sign } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll } from 'vitest'
import type { MemManifest, MemSigner, WriteOptions } from '../../../src/bundle/mem/index.js'
import { conformancePath } from '../../helpers/conformance.js'

export const FIXTURES = {
  sample: conformancePath('fixtures', 'sample.mem'),
  sample11: conformancePath('fixtures', 'sample-1.1.mem'),
  signed: conformancePath('vectors', 'signed.mem'),
} as const

interface TestKeyFile { readonly publicKeyHex: string; readonly privateKeyHex: string }
export const TEST_KEY = JSON.parse(readFileSync(conformancePath('vectors', 'signing-test-key.json'), 'utf8')) as TestKeyFile

// RFC 8410 PKCS#8 wrapping of a raw Ed25519 seed.
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex')

/** A signer for a 32-byte seed (hex), on node:crypto only. */
export function nodeSigner(seedHex: string): MemSigner {
  const key = createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, Buffer.from(seedHex, 'hex')]), format: 'der', type: 'pkcs8' })
  const jwk = createPublicKey(key).export({ format: 'jwk' })
  return {
    publicKeyHex: Buffer.from(jwk.x as string, 'base64url').toString('hex'),
    sign: (bytes: Uint8Array) => new Uint8Array(sign(null, bytes, key)),
  }
}

export const testSigner = (): MemSigner => nodeSigner(TEST_KEY.privateKeyHex)
/** Another key (seed 20..3f), trusted by nobody unless a test says so. */
export const otherSigner = (): MemSigner => nodeSigner(Buffer.from(Array.from({ length: 32 }, (_, i) => i + 32)).toString('hex'))

export function sha256Hex(bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('hex')
}

const made: string[] = []
// A long soak (RUNS in the thousands) leaves thousands of bundles: their removal may take over
// the 60 s hook limit on a loaded machine (helper-85).
afterAll(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true })
}, 600_000)

/** A fresh temporary directory, removed after the suite. */
export function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'cairn-mem-'))
  made.push(dir)
  return dir
}

/** A path for a bundle that does not exist yet, inside a fresh temporary directory. */
export function tempBundlePath(name = 'bundle.mem'): string {
  return path.join(tempDir(), name)
}

/** Every file under `dir`, bundle-relative with `/`, sorted. */
export function listFiles(dir: string, prefix = ''): string[] {
  const out: string[] = []
  for (const entry of readdirSync(path.join(dir, prefix), { withFileTypes: true })) {
    const relative = prefix === '' ? entry.name : `${prefix}/${entry.name}`
    if (entry.isDirectory()) out.push(...listFiles(dir, relative))
    else out.push(relative)
  }
  return out.sort()
}

export function readBundleBytes(dir: string, relative: string): Buffer {
  return readFileSync(path.join(dir, ...relative.split('/')))
}

/** Write options that reproduce a manifest's fields, with some overridden. */
export function optionsFrom(manifest: MemManifest, overrides: Partial<WriteOptions> = {}): WriteOptions {
  return {
    generator: manifest.generator,
    createdAt: manifest.createdAt,
    exportMode: manifest.exportMode,
    conformanceLevel: manifest.conformanceLevel,
    embeddingModel: manifest.embeddingModel,
    embeddingDim: manifest.embeddingDim,
    schemaVersion: manifest.schemaVersion,
    ...(manifest.since === undefined ? {} : { since: manifest.since }),
    ...(manifest.specURL === undefined ? {} : { specURL: manifest.specURL }),
    ...overrides,
  }
}

type RawManifest = Record<string, unknown> & { files: { path: string; sha256: string; bytes: number }[] }

export function readRawManifest(dir: string): RawManifest {
  return JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as RawManifest
}

/**
 * Recomputes, with node:crypto, the sha256 and size of every listed file that exists, then
 * CHECKSUMS and bundleDigest, so the only thing wrong with the bundle is what the test broke.
 */
export function reseal(dir: string, manifest: RawManifest = readRawManifest(dir)): void {
  for (const file of manifest.files) {
    try {
      const bytes = readBundleBytes(dir, file.path)
      file.sha256 = sha256Hex(bytes)
      file.bytes = bytes.length
    } catch {
      // Missing or unreadable on purpose: leave the entry as it is.
    }
  }
  const sorted = [...manifest.files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  const checksums = sorted.length === 0 ? '\n' : sorted.map((file) => `${file.sha256}  ${file.path}\n`).join('')
  writeFileSync(path.join(dir, 'CHECKSUMS'), checksums)
  if (manifest.bundleDigest !== undefined) manifest.bundleDigest = sha256Hex(checksums)
  writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify(manifest))
}

/** Changes the manifest; with `isResealed`, CHECKSUMS and bundleDigest follow the change. */
export function editManifest(dir: string, edit: (manifest: RawManifest) => void, isResealed = true): void {
  const manifest = readRawManifest(dir)
  edit(manifest)
  if (isResealed) reseal(dir, manifest)
  else writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify(manifest))
}

/** Rewrites one data file's text and reseals the bundle around it. */
export function editFile(dir: string, relative: string, edit: (text: string) => string): void {
  const target = path.join(dir, ...relative.split('/'))
  writeFileSync(target, edit(readFileSync(target, 'utf8')))
  reseal(dir)
}

/** Rewrites a JSONL data file's lines as another tool would: its count in the manifest and the checksums follow. */
export function rewriteLines(dir: string, file: string, change: (lines: string[]) => string[]): void {
  let count = 0
  editFile(dir, file, (text) => {
    const changed = change(text.split('\n').filter((line) => line.length > 0))
    count = changed.length
    return changed.map((line) => `${line}\n`).join('')
  })
  editManifest(dir, (manifest) => {
    (manifest.counts as Record<string, number>)[path.basename(file, '.jsonl')] = count
  })
}

/** Replaces line `line` (1-based) of a JSONL file and reseals. */
export function replaceLine(dir: string, relative: string, line: number, text: string): void {
  editFile(dir, relative, (body) => {
    const lines = body.split('\n')
    lines[line - 1] = text
    return lines.join('\n')
  })
}

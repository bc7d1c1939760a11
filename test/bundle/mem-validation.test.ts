/**
 * Validation of untrusted bundles (spec notes §7, §9): every broken thing is found before any
 * content is returned, and each problem names its file (and line). Bundles are written from the
 * golden fixtures' content into temporary directories, then broken one thing at a time; the
 * fixtures themselves are never touched.
 */
import { appendFileSync, copyFileSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import fc from 'fast-check'
import { beforeAll, describe, expect, it } from 'vitest'
import {
  readMemBundle, recordRowBatches, validateAndReadMemBundle, validateMemBundle, writeMemBundle, type MemBundleContent, type MemManifest, type MemProblem, type ReadOptions,
} from '../../src/bundle/mem/index.js'
import { InputError, LimitError, VerifyError } from '../../src/errors.js'
import {
  editFile, editManifest, FIXTURES, listFiles, optionsFrom, otherSigner, readBundleBytes, replaceLine, reseal, TEST_KEY, tempBundlePath,
  tempDir, testSigner,
} from './helpers/mem-fixtures.js'

let sample: { manifest: MemManifest; content: MemBundleContent }
let sample11: { manifest: MemManifest; content: MemBundleContent }
let signed: { manifest: MemManifest; content: MemBundleContent }

beforeAll(async () => {
  sample = await readMemBundle(FIXTURES.sample)
  sample11 = await readMemBundle(FIXTURES.sample11)
  signed = await readMemBundle(FIXTURES.signed)
})

type Which = 'sample' | 'sample11' | 'signed'
const TRUSTED: ReadOptions = { trustedKeys: [TEST_KEY.publicKeyHex] }

/** A fresh bundle with a golden fixture's content (signed.mem's signed with the test key). */
async function freshBundle(which: Which = 'sample'): Promise<string> {
  const source = which === 'sample' ? sample : which === 'sample11' ? sample11 : signed
  const dir = tempBundlePath()
  await writeMemBundle(dir, source.content, optionsFrom(source.manifest, which === 'signed' ? { signer: testSigner() } : {}))
  return dir
}

async function problemsOf(dir: string, options: ReadOptions = {}): Promise<MemProblem[]> {
  const report = await validateMemBundle(dir, options)
  expect(report.valid).toBe(report.problems.length === 0)
  return [...report.problems]
}

function expectProblem(problems: readonly MemProblem[], code: string, file?: string, line?: number): void {
  const match = problems.find((problem) => problem.code === code && (file === undefined || problem.file === file) && (line === undefined || problem.line === line))
  expect(match, `${code} ${file ?? ''}:${line ?? ''} in ${JSON.stringify(problems)}`).toBeDefined()
}

describe('bundle validation', () => {
  it('accepts an untouched bundle, and the helpers that reseal one keep it valid', async () => {
    const dir = await freshBundle()
    expect(await problemsOf(dir)).toEqual([])
    reseal(dir)
    expect(await problemsOf(dir)).toEqual([])
  })

  it('validateAndReadMemBundle gives the report, and the content of a valid bundle as readMemBundle does (its records as file bytes), from one read', async () => {
    for (const which of ['sample', 'sample11', 'signed'] as const) {
      const dir = await freshBundle(which)
      const options = which === 'signed' ? TRUSTED : {}
      const { report, read } = await validateAndReadMemBundle(dir, options)
      expect(report).toEqual(await validateMemBundle(dir, options))
      const whole = await readMemBundle(dir, options)
      expect(read?.content).toEqual({ ...whole.content, records: {} })
      expect({ manifest: read?.manifest, warnings: read?.warnings }).toEqual({ manifest: whole.manifest, warnings: whole.warnings })
      expect(Object.fromEntries((read?.recordFiles ?? []).map((file) => [file.kind, [...recordRowBatches(file, 3)].flat().map(({ record }) => record)]))).toEqual(whole.content.records)
    }
    const broken = await freshBundle()
    const data = listFiles(broken).find((file) => file.endsWith('.jsonl')) as string
    appendFileSync(path.join(broken, data), '\n')
    const { report, read } = await validateAndReadMemBundle(broken)
    expect(report.valid).toBe(false)
    expect(report).toEqual(await validateMemBundle(broken))
    expect(read).toBeUndefined()
  })

  it('finds a changed byte in any file, naming that file', async () => {
    const dirs = { sample: await freshBundle('sample'), sample11: await freshBundle('sample11'), signed: await freshBundle('signed') }
    const original = new Map<string, Buffer>()
    for (const [which, dir] of Object.entries(dirs)) for (const file of listFiles(dir)) original.set(`${which}/${file}`, readBundleBytes(dir, file))
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<Which>('sample', 'sample11', 'signed'), fc.nat(), fc.nat(), fc.integer({ min: 1, max: 255 }),
        async (which, fileChoice, offsetChoice, mask) => {
          const dir = dirs[which]
          // Without a signature nothing authenticates manifest.json (a changed createdAt cannot be
          // seen, by design); the signed bundle, checked with its key, covers the manifest too.
          const files = listFiles(dir).filter((file) => which === 'signed' || file !== 'manifest.json')
          const file = files[fileChoice % files.length] as string
          const bytes = Buffer.from(original.get(`${which}/${file}`) as Buffer)
          // The verifier trims whitespace around the token (§5), so the sig's final newline is not covered.
          const size = file === 'manifest.sig' ? bytes.length - 1 : bytes.length
          const offset = offsetChoice % size
          bytes[offset] = (bytes[offset] as number) ^ mask
          const target = path.join(dir, ...file.split('/'))
          writeFileSync(target, bytes)
          try {
            const problems = await problemsOf(dir, which === 'signed' ? TRUSTED : {})
            expect(problems.length).toBeGreaterThan(0)
            const isNamed = problems.some((problem) => problem.file === file)
            const isSignatureOverManifest = file === 'manifest.json' && problems.some((problem) => problem.code === 'BAD_SIGNATURE')
            expect(isNamed || isSignatureOverManifest, `${which} ${file}@${offset}: ${JSON.stringify(problems)}`).toBe(true)
            await expect(readMemBundle(dir, which === 'signed' ? TRUSTED : {})).rejects.toBeInstanceOf(Error)
          } finally {
            writeFileSync(target, original.get(`${which}/${file}`) as Buffer)
          }
        },
      ),
      { numRuns: 150 },
    )
  })

  it('refuses listed paths that escape the bundle', async () => {
    for (const bad of ['../outside.jsonl', '/etc/passwd', 'items\\episode.jsonl', 'items/./episode.jsonl', 'items//episode.jsonl', 'C:/x.jsonl', 'manifest.json']) {
      const dir = await freshBundle()
      writeFileSync(path.join(path.dirname(dir), 'outside.jsonl'), '{}\n')
      editManifest(dir, (manifest) => manifest.files.push({ path: bad, sha256: 'a'.repeat(64), bytes: 3 }))
      const problems = await problemsOf(dir)
      expectProblem(problems, 'BAD_PATH', bad)
    }
  })

  it('refuses a listed file that is a symlink, even to identical bytes', async () => {
    const dir = await freshBundle()
    const outside = path.join(tempDir(), 'entity.jsonl')
    copyFileSync(path.join(dir, 'items', 'entity.jsonl'), outside)
    unlinkSync(path.join(dir, 'items', 'entity.jsonl'))
    symlinkSync(outside, path.join(dir, 'items', 'entity.jsonl'))
    expectProblem(await problemsOf(dir), 'SYMLINK', 'items/entity.jsonl')
  })

  it('refuses a symlinked directory of the bundle', async () => {
    const dir = await freshBundle()
    const outside = path.join(tempDir(), 'items')
    renameSync(path.join(dir, 'items'), outside)
    symlinkSync(outside, path.join(dir, 'items'))
    const problems = await problemsOf(dir)
    expectProblem(problems, 'SYMLINK', 'items/episode.jsonl')
    expectProblem(problems, 'SYMLINK', 'items')
  })

  it('refuses a file over the size cap without reading it', async () => {
    const dir = await freshBundle()
    editFile(dir, 'items/episode.jsonl', (text) => text + text.replaceAll('ep_000', 'ep_100'))
    const cap = readBundleBytes(dir, 'manifest.json').length
    expect(readBundleBytes(dir, 'items/episode.jsonl').length).toBeGreaterThan(cap)
    const problems = await problemsOf(dir, { limits: { maxFileBytes: cap } })
    expect(problems).toEqual([{ code: 'FILE_TOO_LARGE', message: expect.any(String), file: 'items/episode.jsonl' }])
    expect(await problemsOf(dir)).toEqual([])
  })

  it('refuses files the manifest does not list in items/, audit/, embeddings/ and provenance/', async () => {
    for (const extra of ['items/extra.jsonl', 'audit/log.jsonl', 'embeddings/episode.test.vec', 'provenance/edges.jsonl', 'items/nested/episode.jsonl']) {
      const dir = await freshBundle()
      mkdirSync(path.dirname(path.join(dir, extra)), { recursive: true })
      writeFileSync(path.join(dir, extra), '{}\n')
      const shown = extra === 'items/nested/episode.jsonl' ? 'items/nested' : extra
      expectProblem(await problemsOf(dir), 'UNLISTED_FILE', shown)
    }
  })

  it('allows files outside the policed directories', async () => {
    const dir = await freshBundle()
    writeFileSync(path.join(dir, 'README.txt'), 'hello')
    expect(await problemsOf(dir)).toEqual([])
  })

  it('recomputes bundleDigest and refuses one that does not match CHECKSUMS', async () => {
    const dir = await freshBundle()
    editManifest(dir, (manifest) => { manifest.bundleDigest = 'b'.repeat(64) }, false)
    expectProblem(await problemsOf(dir), 'DIGEST_MISMATCH', 'CHECKSUMS')
  })

  it('refuses a CHECKSUMS that does not cover exactly manifest.files, or is missing', async () => {
    const dir = await freshBundle()
    appendFileSync(path.join(dir, 'CHECKSUMS'), `${'c'.repeat(64)}  items/ghost.jsonl\n`)
    editManifest(dir, (manifest) => { delete manifest.bundleDigest }, false)
    expectProblem(await problemsOf(dir), 'CHECKSUMS_MISMATCH', 'CHECKSUMS')
    rmSync(path.join(dir, 'CHECKSUMS'))
    expectProblem(await problemsOf(dir), 'MISSING_FILE', 'CHECKSUMS')
  })

  it('refuses a listed file that is missing, or whose byte count is wrong', async () => {
    const dir = await freshBundle()
    rmSync(path.join(dir, 'items', 'edge.jsonl'))
    expectProblem(await problemsOf(dir), 'MISSING_FILE', 'items/edge.jsonl')
    const other = await freshBundle()
    editManifest(other, (manifest) => { (manifest.files[1] as { bytes: number }).bytes += 1 }, false)
    expectProblem(await problemsOf(other), 'SIZE_MISMATCH', 'items/edge.jsonl')
  })

  it('names the file and line of a truncated file', async () => {
    const dir = await freshBundle()
    const file = path.join(dir, 'items', 'episode.jsonl')
    truncateSync(file, readFileSync(file).length - 1)
    reseal(dir)
    expectProblem(await problemsOf(dir), 'TRUNCATED', 'items/episode.jsonl', 2)
    truncateSync(file, readFileSync(file).indexOf('\n') + 40)
    reseal(dir)
    expectProblem(await problemsOf(dir), 'TRUNCATED', 'items/episode.jsonl', 2)
  })

  it('names the file and line of bad JSON, bad UTF-8 and a line over the cap', async () => {
    const dir = await freshBundle()
    replaceLine(dir, 'items/episode.jsonl', 2, '{"id":')
    expectProblem(await problemsOf(dir), 'BAD_JSON', 'items/episode.jsonl', 2)
    const utf8 = await freshBundle()
    const edges = path.join(utf8, 'items', 'edge.jsonl')
    writeFileSync(edges, Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}\n')]))
    reseal(utf8)
    expectProblem(await problemsOf(utf8), 'BAD_UTF8', 'items/edge.jsonl', 1)
    const long = await freshBundle()
    expectProblem(await problemsOf(long, { limits: { maxLineBytes: 300 } }), 'LINE_TOO_LONG', 'items/episode.jsonl', 1)
  })

  it('names the file, line and field of a wrong-typed or missing field', async () => {
    const dir = await freshBundle()
    editFile(dir, 'items/episode.jsonl', (text) => text.replace('"accessCount":0', '"accessCount":"0"'))
    let problems = await problemsOf(dir)
    expectProblem(problems, 'WRONG_TYPE', 'items/episode.jsonl', 1)
    expect(problems[0]?.message).toContain('accessCount')

    const metadata = await freshBundle()
    replaceLine(metadata, 'items/entity.jsonl', 1, readBundleBytes(metadata, 'items/entity.jsonl').toString().trim().replace('"aliases":[]', '"aliases":[1]'))
    expectProblem(await problemsOf(metadata), 'WRONG_TYPE', 'items/entity.jsonl', 1)

    const values = await freshBundle('sample11')
    editFile(values, 'items/episode.jsonl', (text) => text.replace('"transfer_line":"8"', '"transfer_line":8'))
    problems = await problemsOf(values)
    expectProblem(problems, 'WRONG_TYPE', 'items/episode.jsonl', 1)
    expect(problems[0]?.message).toContain('metadata.transfer_line')

    const missing = await freshBundle()
    editFile(missing, 'items/edge.jsonl', (text) => text.replace('"edgeType":"launches_on",', ''))
    expectProblem(await problemsOf(missing), 'MISSING_FIELD', 'items/edge.jsonl', 1)

    const tombstone = await freshBundle()
    editFile(tombstone, 'audit/tombstones.jsonl', (text) => text.replace('"op":"delete"', '"op":"erase"'))
    expectProblem(await problemsOf(tombstone), 'BAD_VALUE', 'audit/tombstones.jsonl', 1)
  })

  it('throws the first problem from readMemBundle, in its family, with file and line', async () => {
    const dir = await freshBundle()
    editFile(dir, 'items/episode.jsonl', (text) => text.replace('"pinned":false', '"pinned":"no"'))
    const error = await readMemBundle(dir).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(InputError)
    expect(error).toMatchObject({ code: 'WRONG_TYPE', where: { file: 'items/episode.jsonl', line: 1 } })
    const tampered = await freshBundle()
    appendFileSync(path.join(tampered, 'items', 'entity.jsonl'), ' ')
    await expect(readMemBundle(tampered)).rejects.toBeInstanceOf(VerifyError)
    await expect(readMemBundle(tampered, { limits: { maxFileBytes: 10 } })).rejects.toBeInstanceOf(LimitError)
  })

  it('refuses a bundle with no manifest, an unreadable manifest, or a manifest of major version 2', async () => {
    const dir = await freshBundle()
    rmSync(path.join(dir, 'manifest.json'))
    expectProblem(await problemsOf(dir), 'MANIFEST_MISSING', 'manifest.json')
    await expect(readMemBundle(dir)).rejects.toMatchObject({ code: 'MANIFEST_MISSING' })

    const garbage = await freshBundle()
    writeFileSync(path.join(garbage, 'manifest.json'), '{"format":')
    expectProblem(await problemsOf(garbage), 'BAD_JSON', 'manifest.json')

    const typed = await freshBundle()
    editManifest(typed, (manifest) => { manifest.embeddingDim = '8' })
    expectProblem(await problemsOf(typed), 'BAD_MANIFEST', 'manifest.json')

    const two = await freshBundle()
    editManifest(two, (manifest) => { manifest.format = '2.0.0' })
    expectProblem(await problemsOf(two), 'UNSUPPORTED_VERSION', 'manifest.json')
    await expect(readMemBundle(two)).rejects.toMatchObject({ code: 'UNSUPPORTED_VERSION' })

    const minor = await freshBundle()
    editManifest(minor, (manifest) => { manifest.format = '1.9.3'; manifest.vendorExtension = { any: 'thing' } })
    expect(await problemsOf(minor)).toEqual([])
  })

  it('reports a directory that is not a bundle', async () => {
    expectProblem(await problemsOf(path.join(tempDir(), 'nothing-here')), 'NOT_FOUND')
    expectProblem(await problemsOf(tempDir()), 'MANIFEST_MISSING', 'manifest.json')
  })

  it('accepts a signed bundle only with the right trusted key', async () => {
    const dir = await freshBundle('signed')
    expect(await problemsOf(dir, TRUSTED)).toEqual([])
    expect(await problemsOf(dir, { trustedKeys: [otherSigner().publicKeyHex, TEST_KEY.publicKeyHex.toUpperCase()] })).toEqual([])
    expectProblem(await problemsOf(dir, { trustedKeys: [otherSigner().publicKeyHex] }), 'UNTRUSTED_KEY', 'manifest.sig')
    await expect(readMemBundle(dir, { trustedKeys: [otherSigner().publicKeyHex] })).rejects.toBeInstanceOf(VerifyError)
  })

  it('refuses a bundle without a signature when keys are configured, and ignores signatures when none are', async () => {
    const dir = await freshBundle()
    expectProblem(await problemsOf(dir, TRUSTED), 'SIGNATURE_MISSING', 'manifest.sig')
    expect(await problemsOf(dir, { trustedKeys: [] })).toEqual([])
    writeFileSync(path.join(dir, 'manifest.sig'), 'not a signature')
    expect(await problemsOf(dir)).toEqual([])
    expectProblem(await problemsOf(dir, TRUSTED), 'BAD_SIGNATURE', 'manifest.sig')
  })

  it('refuses a signature by a trusted key over other bytes, and a manifest changed after signing', async () => {
    const dir = await freshBundle('signed')
    const forged = `ed25519:${TEST_KEY.publicKeyHex}:${Buffer.from(testSigner().sign(Buffer.from('other bytes'))).toString('hex')}\n`
    writeFileSync(path.join(dir, 'manifest.sig'), forged)
    expectProblem(await problemsOf(dir, TRUSTED), 'BAD_SIGNATURE', 'manifest.sig')
    const edited = await freshBundle('signed')
    editManifest(edited, (manifest) => { manifest.generator = 'someone-else/1.0' }, false)
    expectProblem(await problemsOf(edited, TRUSTED), 'BAD_SIGNATURE', 'manifest.sig')
    expect(await problemsOf(edited)).toEqual([])
  })

  it('ignores whitespace around the signature token, as the reference verifier trims it', async () => {
    const dir = await freshBundle('signed')
    const token = readFileSync(path.join(dir, 'manifest.sig'), 'utf8').trim()
    writeFileSync(path.join(dir, 'manifest.sig'), `  ${token}\r\n`)
    expect(await problemsOf(dir, TRUSTED)).toEqual([])
    writeFileSync(path.join(dir, 'manifest.sig'), token.toUpperCase().replace('ED25519', 'ed25519'))
    expectProblem(await problemsOf(dir, TRUSTED), 'BAD_SIGNATURE', 'manifest.sig')
  })

  it('refuses a vendor kind whose name cannot be a kind', async () => {
    const dir = await freshBundle()
    writeFileSync(path.join(dir, 'items', '.hidden.jsonl'), 'x\n')
    editManifest(dir, (manifest) => manifest.files.push({ path: 'items/.hidden.jsonl', sha256: '', bytes: 0 }))
    expectProblem(await problemsOf(dir), 'BAD_KIND_NAME', 'items/.hidden.jsonl')
  })
})

describe('the problem list', () => {
  it('keeps MAX_PROBLEMS problems and says how many more there were, in the right number', async () => {
    const { ProblemList } = await import('../../src/bundle/mem/problems.js')
    const { MAX_PROBLEMS } = await import('../../src/bundle/mem/layout.js')
    for (const [extra, note] of [[0, undefined], [1, '1 more problem was not listed'], [3, '3 more problems were not listed']] as const) {
      const list = new ProblemList()
      for (let i = 0; i < MAX_PROBLEMS + extra; i++) list.add('BAD_LINE', `line ${i}`, 'records/episode.jsonl', i + 1)
      const problems = list.finish()
      expect(problems.slice(0, MAX_PROBLEMS).map((problem) => problem.line)).toEqual(Array.from({ length: MAX_PROBLEMS }, (_, i) => i + 1))
      expect(problems[MAX_PROBLEMS]?.message).toBe(note)
    }
  })
})

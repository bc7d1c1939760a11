/**
 * The edges of the codec: bad content and options are refused before anything is written,
 * every entry point refuses test/helpers/bad-inputs.ts with a CairnError, existing files are
 * never overwritten, limits hold on write as on read, and progress is reported.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { MemBundleBuilder, readMemBundle, validateMemBundle, writeBuiltBundle, writeMemBundle, type MemBundleContent, type WriteOptions } from '../../src/bundle/mem/index.js'
import { CairnError, LimitError } from '../../src/errors.js'
import { badValues } from '../helpers/bad-inputs.js'
import { listFiles, tempBundlePath, tempDir } from './helpers/mem-fixtures.js'
import { emptyContent, entity, episode, OPTIONS } from './helpers/mem-records.js'

/** Runs `run`; when it throws, the error must be a CairnError (some bad-inputs values are valid options, e.g. `{}`). */
async function isRefused(run: () => Promise<unknown>): Promise<boolean> {
  const error = await run().then(() => undefined, (caught: unknown) => caught)
  if (error !== undefined) expect(error).toBeInstanceOf(CairnError)
  return error !== undefined
}

async function refusalOf(run: () => Promise<unknown>): Promise<CairnError> {
  const error = await run().then(() => undefined, (caught: unknown) => caught)
  expect(error).toBeInstanceOf(CairnError)
  return error as CairnError
}

describe('.mem writer edges', () => {
  const badContent: [string, unknown, string, string][] = [
    ['a vendor kind among records', { ...emptyContent(), records: { vendorThing: [] } }, 'UNKNOWN_KIND', 'content.records.vendorThing'],
    ['a passthrough named like a PM kind', { ...emptyContent(), passthrough: { episode: ['x'] } }, 'BAD_KIND_NAME', 'content.passthrough.episode'],
    ['a passthrough named like a count key', { ...emptyContent(), passthrough: { tombstone: ['x'] } }, 'BAD_KIND_NAME', 'content.passthrough.tombstone'],
    ['a passthrough name that escapes items/', { ...emptyContent(), passthrough: { '../x': ['x'] } }, 'BAD_KIND_NAME', 'content.passthrough.../x'],
    ['a hidden passthrough name', { ...emptyContent(), passthrough: { '.x': ['x'] } }, 'BAD_KIND_NAME', 'content.passthrough..x'],
    ['a passthrough line holding a newline', { ...emptyContent(), passthrough: { v: ['a\nb'] } }, 'BAD_LINE', 'content.passthrough.v[0]'],
    ['a wrong-typed record', { ...emptyContent(), records: { episode: [episode('ep_1'), episode('ep_2', { accessCount: '1' })] } }, 'WRONG_TYPE', 'records.episode[1].accessCount'],
    ['a malformed tombstone', { ...emptyContent(), tombstones: [{ id: 't' }] }, 'MISSING_FIELD', 'tombstones[0].op'],
    ['an unknown content key', { ...emptyContent(), extra: [] }, 'UNKNOWN_FIELD', 'content.extra'],
    ['missing tombstones', { records: {}, passthrough: {}, auditLog: [] }, 'MISSING_FIELD', 'content.tombstones'],
  ]
  for (const [name, content, code, field] of badContent) {
    it(`refuses ${name} before writing anything`, async () => {
      const dir = tempBundlePath()
      const error = await refusalOf(() => writeMemBundle(dir, content as MemBundleContent, OPTIONS))
      expect({ code: error.code, field: error.where.field }).toEqual({ code, field })
      expect(existsSync(dir)).toBe(false)
    })
  }

  it('refuses a target that is not empty and leaves it unchanged, and writes into an empty one', async () => {
    const parent = tempDir()
    writeFileSync(path.join(parent, 'keep.txt'), 'mine')
    expect((await refusalOf(() => writeMemBundle(parent, emptyContent(), OPTIONS))).code).toBe('TARGET_NOT_EMPTY')
    expect(listFiles(parent)).toEqual(['keep.txt'])
    expect((await refusalOf(() => writeMemBundle(path.join(parent, 'keep.txt'), emptyContent(), OPTIONS))).code).toBe('NOT_A_DIRECTORY')
    // Below a file: named as such, without node's message and its second copy of the path.
    const below = await refusalOf(() => writeMemBundle(path.join(parent, 'keep.txt', 'out.mem'), emptyContent(), OPTIONS))
    expect({ code: below.code, message: below.message }).toEqual({ code: 'NOT_A_DIRECTORY', message: expect.not.stringContaining('ENOTDIR') })
    expect(readFileSync(path.join(parent, 'keep.txt'), 'utf8')).toBe('mine')
    const empty = path.join(parent, 'empty.mem')
    mkdirSync(empty)
    await writeMemBundle(empty, emptyContent(), OPTIONS)
    expect(listFiles(empty)).toEqual(['CHECKSUMS', 'manifest.json'])
    expect(listFiles(parent).filter((file) => file.includes('partial'))).toEqual([])
  })

  it('holds the line and file caps on write, so what is written always reads back', async () => {
    const content = { ...emptyContent(), records: { episode: [episode('ep_1', { details: 'x'.repeat(500) })] } }
    const error = await refusalOf(() => writeMemBundle(tempBundlePath(), content, { ...OPTIONS, limits: { maxLineBytes: 400 } }))
    expect(error).toBeInstanceOf(LimitError)
    expect([error.code, error.where.file, error.where.line]).toEqual(['LINE_TOO_LONG', 'items/episode.jsonl', 1])
    const big = await refusalOf(() => writeMemBundle(tempBundlePath(), content, { ...OPTIONS, limits: { maxFileBytes: 600 } }))
    expect([big.code, big.where.file]).toEqual(['FILE_TOO_LARGE', 'items/episode.jsonl'])
  })

  it('refuses bad options naming the option', async () => {
    const cases: [Partial<Record<keyof WriteOptions, unknown>> & { typo?: unknown }, string][] = [
      [{ generator: '' }, 'EMPTY'],
      [{ createdAt: 'now' }, 'BAD_TIMESTAMP'],
      [{ exportMode: 'partial' }, 'BAD_VALUE'],
      [{ conformanceLevel: 'L4' }, 'BAD_VALUE'],
      [{ embeddingDim: -1 }, 'OUT_OF_RANGE'],
      [{ signer: { sign: () => new Uint8Array(64), publicKeyHex: 'AB' } }, 'BAD_HEX'],
      [{ onProgress: 'yes' }, 'WRONG_TYPE'],
      [{ limits: { maxLineBytes: 0 } }, 'OUT_OF_RANGE'],
      [{ typo: 1 }, 'UNKNOWN_FIELD'],
    ]
    for (const [change, code] of cases) {
      const dir = tempBundlePath()
      expect((await refusalOf(() => writeMemBundle(dir, emptyContent(), { ...OPTIONS, ...change } as WriteOptions))).code, JSON.stringify(change)).toBe(code)
      expect(existsSync(dir)).toBe(false)
    }
  })

  it('refuses every bad input at every entry point with a CairnError, writing nothing', async () => {
    const valid = tempBundlePath()
    await writeMemBundle(valid, { ...emptyContent(), records: { entity: [entity('ent_1', [])] } }, OPTIONS)
    for (const { name, value } of badValues()) {
      const dir = tempBundlePath()
      await refusalOf(() => writeMemBundle(dir, value as MemBundleContent, OPTIONS))
      await refusalOf(() => writeMemBundle(dir, emptyContent(), value as WriteOptions))
      if (typeof value !== 'string') {
        await refusalOf(() => writeMemBundle(value as string, emptyContent(), OPTIONS))
        await refusalOf(() => readMemBundle(value as string))
        await refusalOf(() => validateMemBundle(value as string))
      }
      if (value !== undefined) {
        const isRefusedAsOptions = await isRefused(() => readMemBundle(valid, value as object))
        expect(isRefusedAsOptions || (typeof value === 'object' && value !== null && Object.keys(value).length === 0), name).toBe(true)
        // Hex keys of either case are valid trusted keys (they are compared lowercase).
        const isKeyList = Array.isArray(value) && Array.from(value as unknown[]).every((key) => typeof key === 'string' && /^[0-9a-fA-F]{64}$/.test(key))
        if (!isKeyList) {
          // Refused as an argument, not read as a set of keys that then finds no signature.
          const error = await refusalOf(() => readMemBundle(valid, { trustedKeys: value as string[] }))
          expect(['WRONG_TYPE', 'BAD_TRUSTED_KEY'], name).toContain(error.code)
        }
      }
      expect(existsSync(dir), name).toBe(false)
    }
  })

  it('reports progress on write and read, ending at the total', async () => {
    const episodes = Array.from({ length: 9000 }, (_, i) => episode(`ep_${i}`))
    const writes: [number, number][] = []
    const dir = tempBundlePath()
    await writeMemBundle(dir, { ...emptyContent(), records: { episode: episodes } }, { ...OPTIONS, onProgress: (done, total) => writes.push([done, total]) })
    expect(writes.length).toBeGreaterThan(2)
    expect(writes.at(-1)).toEqual([9000, 9000])
    expect(writes.every(([done], i) => i === 0 || done >= (writes[i - 1] as [number, number])[0])).toBe(true)
    const reads: [number, number][] = []
    await readMemBundle(dir, { onProgress: (done, total) => reads.push([done, total]) })
    const size = readFileSync(path.join(dir, 'items', 'episode.jsonl')).length
    expect(reads.length).toBeGreaterThan(2)
    expect(reads.at(-1)).toEqual([size, size])
    expect(reads.every(([done], i) => i === 0 || done >= (reads[i - 1] as [number, number])[0])).toBe(true)
  })
})

describe('building a bundle row by row', () => {
  it('gives the bytes writeMemBundle gives for the same content, whatever order the rows come in', async () => {
    const content: MemBundleContent = {
      ...emptyContent(),
      records: { episode: [episode('ep_2'), episode('ep_1'), episode('ep_3')], entity: [entity('ent_b', ['b']), entity('ent_a', [])] },
      passthrough: { vendorThing: ['{"a":1}', '{"b":2}'] },
    }
    const whole = tempBundlePath()
    await writeMemBundle(whole, content, OPTIONS)
    const builder = new MemBundleBuilder(OPTIONS)
    builder.record('entity', entity('ent_a', []))
    builder.record('episode', episode('ep_3'))
    builder.passthrough('vendorThing', ['{"a":1}', '{"b":2}'])
    builder.record('episode', episode('ep_1'))
    builder.record('entity', entity('ent_b', ['b']))
    builder.record('episode', episode('ep_2'))
    const streamed = tempBundlePath()
    await writeBuiltBundle(streamed, builder.finish())
    expect(listFiles(streamed)).toEqual(listFiles(whole))
    for (const file of listFiles(whole)) expect(readFileSync(path.join(streamed, file)), file).toEqual(readFileSync(path.join(whole, file)))
    expect((await validateMemBundle(streamed)).valid).toBe(true)
  })

  it('refuses a bad row when it is added, naming it, and a file over the limit when it finishes', () => {
    const builder = new MemBundleBuilder(OPTIONS)
    builder.record('episode', episode('ep_1'))
    let error: unknown
    try {
      builder.record('episode', episode('ep_2', { accessCount: '1' }))
    } catch (caught) {
      error = caught
    }
    expect(error).toBeInstanceOf(CairnError)
    expect([(error as CairnError).code, (error as CairnError).where.field]).toEqual(['WRONG_TYPE', 'records.episode[1].accessCount'])
    const small = new MemBundleBuilder({ ...OPTIONS, limits: { maxFileBytes: 600 } })
    for (let i = 0; i < 5; i++) small.record('episode', episode(`ep_${i}`))
    expect(() => small.finish()).toThrow(LimitError)
  })
})


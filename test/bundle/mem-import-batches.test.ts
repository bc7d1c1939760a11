/**
 * A `.mem` import larger than one batch: its records are decoded again from the checked file bytes
 * batch by batch as they are written (mem-import.ts), so these check what crosses batches: Cairn's
 * extension lines, a redaction's skeleton, ids unique across the whole bundle, and a record
 * refused in a late batch stopping the import before anything is written, named by file and line.
 */
import { cpSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { MERGE_BATCH } from '../../src/bundle/merge-records.js'
import { BundleProgress } from '../../src/cli/bundle-progress.js'
import { validateBundle } from '../../src/cli/bundle-validation.js'
import { ManualClock } from '../../src/log/clock.js'
import { Memory } from '../../src/memory/index.js'
import { rejection } from '../helpers/error-code.js'
import { listFiles, rewriteLines, tempBundlePath } from './helpers/mem-fixtures.js'

const EPISODES = 2 * MERGE_BATCH + 500
const ENTITIES = MERGE_BATCH + 100
/** The entity redacted at the source: in the second batch of entities. */
const REDACTED = `ent_${String(ENTITIES - 50).padStart(5, '0')}`

const opened: Memory[] = []
afterEach(async () => {
  for (const memory of opened.splice(0)) await memory.close()
})

async function open(): Promise<Memory> {
  const memory = await Memory.open()
  opened.push(memory)
  return memory
}

const dataFiles = (dir: string): Record<string, string> =>
  Object.fromEntries(listFiles(dir).filter((file) => file.endsWith('.jsonl') && !file.startsWith('audit/log')).map((file) => [file, readFileSync(path.join(dir, file), 'utf8')]))

let bundle = ''
beforeAll(async () => {
  const source = await Memory.open()
  const episodes = Array.from({ length: EPISODES }, (_, i) => ({ kind: 'episode' as const, id: `ep_${String(i).padStart(5, '0')}`, summary: `episode ${i}`, ...(i % 7 === 0 ? { tags: [`t${i % 3}`] } : {}) }))
  // Every third entity has tags: they travel in items/cairnExtensions.jsonl, met across batches.
  const entities = Array.from({ length: ENTITIES }, (_, i) => ({ kind: 'entity' as const, id: `ent_${String(i).padStart(5, '0')}`, type: 'person', canonicalName: `Person ${i}`, ...(i % 3 === 0 ? { tags: [`group${i % 5}`] } : {}) }))
  await source.rememberMany([...episodes, ...entities])
  await source.redact(REDACTED, { reason: 'test' })
  bundle = tempBundlePath()
  await source.export(bundle)
  await source.close()
}, 120_000)

describe('a .mem import of several batches', () => {
  it('writes every record with its extensions and the redacted skeleton, reporting progress batch by batch, and exports the same files again', async () => {
    expect(readFileSync(path.join(bundle, 'items/cairnExtensions.jsonl'), 'utf8').split('\n').length).toBeGreaterThan(MERGE_BATCH / 3)
    const target = await open()
    const progress: [string, number, number][] = []
    const report = await target.import(bundle, { onProgress: (phase, done, total) => progress.push([phase, done, total]) })
    expect(report.format === 'mem' && report.imported).toEqual({ episode: EPISODES, entity: ENTITIES - 1 })
    expect((await target.get(`ent_${String(ENTITIES - 3).padStart(5, '0')}`))?.tags).toEqual([`group${(ENTITIES - 3) % 5}`])
    expect((await target.get('ep_04186'))?.tags).toEqual(['t1'])
    expect(await target.lookup([REDACTED])).toEqual([expect.objectContaining({ status: 'redacted' })])
    // Every record is checked before the first is written, batch by batch, after the bytes are.
    const phases = progress.map(([phase]) => phase)
    expect(phases.lastIndexOf('verify')).toBeLessThan(phases.indexOf('check'))
    expect(phases.lastIndexOf('check')).toBeLessThan(phases.indexOf('import'))
    const checking = progress.filter(([phase]) => phase === 'check').map(([, done, total]) => [done, total])
    expect(checking[0]).toEqual([0, EPISODES + ENTITIES])
    expect(checking.at(-1)).toEqual([EPISODES + ENTITIES, EPISODES + ENTITIES])
    expect(checking.length).toBeGreaterThanOrEqual(5)
    expect(checking.every(([done], i) => i === 0 || (done as number) > (checking[i - 1]?.[0] as number))).toBe(true)
    const writing = progress.filter(([phase]) => phase === 'import').map(([, done, total]) => [done, total])
    expect(writing.length).toBeGreaterThanOrEqual(5)
    expect(writing.at(-1)).toEqual([EPISODES + ENTITIES, EPISODES + ENTITIES])
    expect(writing.every(([done], i) => i === 0 || (done as number) >= (writing[i - 1]?.[0] as number))).toBe(true)
    const again = tempBundlePath()
    await target.export(again)
    expect(dataFiles(again)).toEqual(dataFiles(bundle))
    // Importing it again writes nothing.
    const before = target.versionVector()
    await target.import(bundle)
    expect(target.versionVector()).toEqual(before)
  }, 120_000)

  it('refuses a record in a late batch before writing anything, naming its file and line; cairn validate names the same', async () => {
    const late = MERGE_BATCH * 2 + 321
    const first = readFileSync(path.join(bundle, 'items/entity.jsonl'), 'utf8').split('\n').findIndex((row) => row.includes('"ent_00000"')) + 1
    expect(first).toBeGreaterThan(0)
    expect(first).toBeLessThanOrEqual(MERGE_BATCH)
    const cases: [string, (rows: string[]) => string[], string, number, string, string][] = [
      ['items/episode.jsonl', (rows) => rows.map((row, i) => (i === late - 1 ? row.replace('{', '{"kind":"vendor",') : row)), 'RESERVED_KEY', late, 'episode.kind', `episode record ${late}:`],
      // An id met twice, in the first batch of its kind and again in the last (the redacted skeleton keeps its line).
      ['items/entity.jsonl', (rows) => [...rows, (rows[first - 1] as string).replace('"Person 0"', '"Someone else"')], 'DUPLICATE_ID', ENTITIES + 1, 'entity.id', `entity record ${ENTITIES + 1} has the id ent_00000, as entity record ${first} has`],
    ]
    for (const [file, change, code, line, field, reason] of cases) {
      const copy = tempBundlePath()
      cpSync(bundle, copy, { recursive: true })
      rewriteLines(copy, file, change)
      const target = await open()
      const before = target.versionVector()
      const error = await rejection(target.import(copy))
      expect({ code: error.code, ...error.where }, code).toEqual({ code, file, line, field })
      expect(error.reason, code).toContain(reason)
      expect(target.versionVector(), code).toEqual(before)
      expect(await target.query({ limit: 1 }), code).toEqual(expect.objectContaining({ records: [] }))
      const validation = await validateBundle({ given: copy, resolved: copy }, 'mem', [], new BundleProgress('validate', { write: () => Promise.resolve() }, new ManualClock(0)))
      expect(validation.problems, code).toEqual([expect.objectContaining({ code, file: path.join(copy, file), line, path: `$.${field}` })])
    }
  }, 120_000)
})

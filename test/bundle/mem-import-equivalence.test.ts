/**
 * A `.mem` import decided and written batch by batch (mergeRecordBatches) against the
 * same bundle merged whole (mergeRecords, decide all then write, as importMem did before): the
 * same report and the same memory, over batches, with a record kept newer here, a counter
 * caught up, a redaction skeleton, an orphan under a parent deleted here and a later kind's link
 * naming it; and an import stopped between batches and run again ends where one run does.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { madeAtOf, mergeRecords, MERGE_BATCH } from '../../src/bundle/merge-records.js'
import { readMemImport } from '../../src/bundle/mem-import.js'
import type { JsonObject } from '../../src/bundle/mem/index.js'
import { ManualClock } from '../../src/log/clock.js'
import { Memory } from '../../src/memory/index.js'
import type { RecordKind } from '../../src/projection/index.js'
import { tempBundlePath } from './helpers/mem-fixtures.js'

const T0 = Date.UTC(2026, 2, 1, 9)
const EPISODES = MERGE_BATCH + 100

const opened: Memory[] = []
afterEach(async () => {
  for (const memory of opened.splice(0)) await memory.close()
})

let bundle = ''
let ids: string[] = []
beforeAll(async () => {
  const source = await Memory.open({ clock: new ManualClock(T0) })
  const episodes = Array.from({ length: EPISODES }, (_, i) => ({ kind: 'episode' as const, id: `ep_${String(i).padStart(5, '0')}`, summary: `episode ${i}`, ...(i % 5 === 0 ? { tags: [`t${i % 3}`] } : {}) }))
  await source.rememberMany([
    ...episodes,
    { kind: 'episode', id: 'ep_parent', summary: 'deleted on the target' },
    ...Array.from({ length: 6 }, (_, i) => ({ kind: 'entity' as const, id: `ent_${i}`, type: 'person', canonicalName: `P${i}`, tags: ['x'] })),
    { kind: 'edge', id: 'edge_1', srcEntityID: 'ent_1', dstEntityID: 'ent_2', edgeType: 'knows' },
    { kind: 'fact', id: 'fact_ok', episodeID: `ep_${String(EPISODES - 1).padStart(5, '0')}`, subject: 'u', predicate: 'likes', object: 'tea' },
    { kind: 'fact', id: 'fact_orphan', episodeID: 'ep_parent', subject: 'u', predicate: 'likes', object: 'coffee' },
    { kind: 'factLink', srcFactID: 'fact_orphan', dstFactID: 'fact_ok', linkType: 'derived_from' },
    { kind: 'procedure', id: 'proc_1', name: 'from the source', triggerPattern: 'x', successCount: 2 },
  ])
  await source.redact('ent_3', { reason: 'test' })
  bundle = tempBundlePath()
  await source.export(bundle)
  ids = []
  for await (const view of source.records()) ids.push(view.id)
  ids.push('ent_3', 'ep_parent', 'fact_orphan')
  await source.close()
}, 120_000)

/** A target holding an edit made after the bundle, a higher counter and a deleted parent. */
async function target(): Promise<Memory> {
  const memory = await Memory.open({ clock: new ManualClock(T0 + 60_000) })
  opened.push(memory)
  await memory.remember({ kind: 'episode', id: 'ep_00010', summary: 'edited here after the bundle' })
  await memory.remember({ kind: 'episode', id: 'ep_parent', summary: 'about to go' })
  await memory.forget('ep_parent')
  await memory.remember({ kind: 'procedure', id: 'proc_1', name: 'here', triggerPattern: 'x', successCount: 5 })
  return memory
}

async function state(memory: Memory): Promise<unknown> {
  const views: unknown[] = []
  for await (const view of memory.records()) views.push(view)
  const statuses = (await memory.lookup(ids)).map((found, i) => `${ids[i]}:${found?.status}`)
  const tombstones = (await memory.tombstones()).map((row) => `${row.op}:${row.targetID}`).sort()
  return { views: views.sort((a, b) => ((a as { id: string }).id < (b as { id: string }).id ? -1 : 1)), statuses, tombstones }
}

/** importMem as it was before the batches: the whole bundle decided, then written. */
async function importWhole(memory: Memory): Promise<unknown> {
  const plan = await readMemImport(bundle)
  const records: Partial<Record<RecordKind, JsonObject[]>> = {}
  for (const [kind, batch] of plan.recordBatches(MERGE_BATCH)) (records[kind] ??= []).push(...batch)
  await memory.importTombstones(plan.content.tombstones, { skeletons: plan.skeletons })
  const madeAt = madeAtOf(plan.manifest.createdAt)
  return mergeRecords(memory, records, { checked: true, ...(madeAt !== undefined ? { madeAt } : {}) })
}

const merged = (report: unknown): unknown => {
  const { imported, unchanged, blocked, keptNewer } = report as Record<string, unknown>
  return { imported, unchanged, blocked, keptNewer }
}

describe('a .mem import batch by batch', () => {
  it('reports and writes what merging the whole bundle at once does', async () => {
    const whole = await target()
    const batched = await target()
    const expected = merged(await importWhole(whole))
    expect(expected).toMatchObject({ keptNewer: 2 }) // ep_00010's summary, proc_1's name
    expect(merged(await batched.import(bundle))).toEqual(expected)
    expect(await state(batched)).toEqual(await state(whole))
    expect((await batched.get('proc_1'))?.successCount).toBe(5)
    expect(await batched.status('fact_orphan')).toBe('deleted')
  }, 120_000)

  it('stopped after its first batch and run again, ends as one run does', async () => {
    const once = await target()
    await once.import(bundle)
    const stopped = await target()
    const error = await stopped.import(bundle, {
      onProgress: (phase, done, total) => {
        if (phase === 'import' && done > 0 && done < total) throw new Error('stop')
      },
    }).then(() => undefined, (caught: unknown) => caught)
    expect(error).toBeInstanceOf(Error)
    await stopped.import(bundle)
    expect(await state(stopped)).toEqual(await state(once))
  }, 120_000)
})

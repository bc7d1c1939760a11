/**
 * Deferred ingest (what sync uses): the log takes each frame at once and the projection catches
 * up behind it. When catch-ups queue up, the first to run applies the later frames' events from
 * what was handed over instead of reading them back from the log, and the result is the same as
 * ingesting everything at once.
 */
import { afterEach, expect, it, vi } from 'vitest'
import type { EventEnvelope } from '../../src/log/index.js'
import { Memory } from '../../src/memory/index.js'

const opened: Memory[] = []
afterEach(async () => {
  vi.restoreAllMocks()
  for (const memory of opened.splice(0)) await memory.close()
})

async function open(options: { space?: string } = {}): Promise<Memory> {
  const memory = await Memory.open(options)
  opened.push(memory)
  return memory
}

/** Splits a causal list of envelopes into parts that each end at a signed event. */
function signedParts(envelopes: readonly EventEnvelope[]): EventEnvelope[][] {
  const parts: EventEnvelope[][] = []
  let current: EventEnvelope[] = []
  for (const envelope of envelopes) {
    current.push(envelope)
    if (envelope.signature) {
      parts.push(current)
      current = []
    }
  }
  return parts
}

it('queued catch-ups apply handed-over events without reading the log back, and match a whole ingest', async () => {
  const source = await open()
  for (let batch = 0; batch < 4; batch++) {
    const ids = await source.rememberMany(Array.from({ length: 50 }, (_, i) => ({ kind: 'episode' as const, summary: `note ${batch}-${i}`, tags: [`t${i % 3}`] })))
    await source.updateMany(ids.slice(0, 10).map((id) => ({ id, changes: { set: { summary: `edited ${id}` } } })))
  }
  const parts = signedParts(await source.log.envelopesSince({}, { signatures: 'stored' }))
  expect(parts.length).toBeGreaterThan(4)

  const replica = await open({ space: source.space })
  const logReads = vi.spyOn(replica.log, 'readApplied')
  for (const part of parts) await replica.ingestDeferred(part)
  await replica.settled()

  expect(logReads).not.toHaveBeenCalled()
  expect(await replica.digest()).toBe(await source.digest())
  const whole = await open({ space: source.space })
  await whole.ingest(await source.events())
  expect(await replica.digest()).toBe(await whole.digest())
})

// A peer's catch-up (`more`): the records wait for a batch's worth of events, so a record the
// events touch many times is written once; reads, `applyPending` and a full batch apply them.
it('with more to come, the records wait for applyPending, a read or a full batch, and hear one change per record', async () => {
  const source = await open()
  const ids = await source.rememberMany(Array.from({ length: 20 }, (_, i) => ({ kind: 'episode' as const, summary: `note ${i}` })))
  for (let round = 0; round < 5; round++) await source.updateMany(ids.map((id) => ({ id, changes: { set: { summary: `round ${round} of ${id}` } } })))
  const parts = signedParts(await source.log.envelopesSince({}, { signatures: 'stored' }))
  expect(parts.length).toBeGreaterThan(3)

  const replica = await open({ space: source.space })
  const heard: string[] = []
  replica.subscribe(({ changes }) => { for (const change of changes) heard.push(`${change.id}:${change.action}`) })
  for (const part of parts) await replica.ingestDeferred(part, { more: true })
  await new Promise((resolve) => setTimeout(resolve, 20))
  expect(heard).toEqual([])
  replica.applyPending()
  await replica.settled()
  expect(heard.filter((entry) => entry.endsWith(':updated'))).toEqual([])
  expect(heard.filter((entry) => entry.endsWith(':created'))).toHaveLength(20)
  expect(await replica.digest()).toBe(await source.digest())

  // A read catches up by itself.
  const reader = await open({ space: source.space })
  for (const part of parts) await reader.ingestDeferred(part, { more: true })
  expect((await reader.get(ids[7] as string))?.summary).toBe(`round 4 of ${ids[7]}`)

  // A full batch does not wait.
  const batched = await open({ space: source.space })
  const projection = (batched as unknown as { core: { projection: { limits: object } } }).core.projection
  projection.limits = { chunk: 2000, batchEvents: 30, batchRecords: 10_000, batchNewRecords: 2000, derivedWrites: 0 }
  const changes: number[] = []
  batched.subscribe(({ changes: batch }) => changes.push(batch.length))
  for (const part of parts) await batched.ingestDeferred(part, { more: true })
  await new Promise((resolve) => setTimeout(resolve, 20))
  expect(changes.length).toBeGreaterThan(0)
})

it('refuses a non-boolean more', async () => {
  const memory = await open()
  await expect(memory.ingestDeferred([], { more: 'yes' as unknown as boolean })).rejects.toMatchObject({ code: 'WRONG_TYPE' })
})

it('holds no event in memory once its batch is stored, however long the catch-up', async () => {
  const source = await open()
  for (let round = 0; round < 12; round++) await source.rememberMany(Array.from({ length: 100 }, (_, i) => ({ kind: 'episode' as const, summary: `note ${round} ${i}` })))
  const parts = signedParts(await source.log.envelopesSince({}, { signatures: 'stored' }))
  const replica = await open({ space: source.space })
  const projection = (replica as unknown as { core: { projection: { limits: object; cursor: number; handedOver: Map<number, unknown> } } }).core.projection
  projection.limits = { chunk: 50, batchEvents: 200, batchRecords: 10_000, batchNewRecords: 10_000, derivedWrites: 0 }
  let stale = 0
  const watch = setInterval(() => {
    let behindCursor = 0
    for (const local of projection.handedOver.keys()) if (local <= projection.cursor) behindCursor++
    stale = Math.max(stale, behindCursor)
  }, 0)
  // Handed over all at once, so one catch-up runs through every batch.
  for (const part of parts) await replica.ingestDeferred(part, { more: true })
  replica.applyPending()
  await replica.settled()
  clearInterval(watch)
  expect(stale).toBeLessThanOrEqual(250)
  expect(projection.handedOver.size).toBe(0)
  expect(await replica.digest()).toBe(await source.digest())
})

it('applies a frame holding a deletion at once, more to come or not', async () => {
  const source = await open()
  const [kept, gone] = await source.rememberMany([{ kind: 'episode', summary: 'kept' }, { kind: 'episode', summary: 'gone' }]) as [string, string]
  const replica = await open({ space: source.space })
  await replica.ingestDeferred(await source.events({}), { more: true })
  const heard: string[] = []
  replica.subscribe(({ changes }) => { for (const change of changes) heard.push(`${change.id}:${change.action}`) })
  await source.forget(gone)
  await replica.ingestDeferred(await source.events(replica.versionVector()), { more: true })
  await new Promise((resolve) => setTimeout(resolve, 20))
  expect(heard).toContain(`${kept}:created`)
  expect(await replica.status(gone)).toBe('deleted')
})

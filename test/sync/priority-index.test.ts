/**
 * The log's priority index (src/log/priority-index.ts) and the streamed catch-up built on it
 * (catchUpBatches): deletions and redactions are indexed by apply position from a space's start,
 * including a body that arrives after its header; a store from before the index answers nothing
 * for its older events, and a catch-up reaching back there reads everything at once as before.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { Identity, LogStore, type EventEnvelope } from '../../src/log/index.js'
import { PRIORITY_OPS } from '../../src/log/priority-index.js'
import { Memory } from '../../src/memory/index.js'
import { MEMORY_OPS } from '../../src/projection/index.js'
import { catchUpBatches, deletionsFirst } from '../../src/sync/catch-up-order.js'

const opened: { close(): Promise<void> }[] = []
afterEach(async () => {
  for (const item of opened.splice(0).reverse()) await item.close()
})

async function collect(batches: AsyncIterable<EventEnvelope[]>): Promise<EventEnvelope[][]> {
  const out: EventEnvelope[][] = []
  for await (const batch of batches) out.push(batch)
  return out
}

/** A memory on a shared in-memory store, with a deletion and a redaction among 2,000 records. */
async function history(): Promise<{ store: LogStore; identity: Identity; memory: Memory; tombstones: string[] }> {
  const store = await LogStore.open({})
  opened.push(store)
  const identity = Identity.generate()
  const log = await store.createSpace(identity)
  const memory = await Memory.attach(store, log.space, identity)
  opened.push(memory)
  const ids = await memory.rememberMany(Array.from({ length: 1000 }, (_, i) => ({ kind: 'episode' as const, summary: `first ${i}` })))
  await memory.forget(ids[3] as string)
  await memory.rememberMany(Array.from({ length: 1000 }, (_, i) => ({ kind: 'episode' as const, summary: `second ${i}` })))
  await memory.redact(ids[7] as string)
  const tombstones = (await memory.log.envelopesSince({})).filter((envelope) => {
    const text = Buffer.from(envelope.body ?? new Uint8Array()).toString('utf8')
    return /"op":"memory\.(delete|redact)"/.test(text)
  }).map((envelope) => envelope.id)
  return { store, identity, memory, tombstones }
}

describe('the priority index', () => {
  it('names the memory layer\'s deletion and redaction ops', () => {
    expect([...PRIORITY_OPS].sort()).toEqual([MEMORY_OPS.delete, MEMORY_OPS.redact].sort())
  })

  it('holds every deletion and redaction from the space\'s start, and a catch-up streams in batches', async () => {
    const { memory, tombstones } = await history()
    expect(tombstones).toHaveLength(2)
    expect(await memory.log.priorityEventsFrom(1)).toEqual(tombstones)
    const batches = await collect(catchUpBatches(memory.log, {}, 500))
    expect(batches.length).toBeGreaterThan(2)
    const expected = await deletionsFirst(await memory.log.envelopesSince({}, { signatures: 'stored' }), (id) => memory.log.causalVector(id))
    expect(batches.flat().map((event) => event.id)).toEqual(expected.map((event) => event.id))
  })

  it('is filled in, in the background, for a store written before it, and goes on with new events', async () => {
    const { store, identity, memory, tombstones } = await history()
    const space = memory.space
    // As a store written before the index: no start, no entries.
    const entries: string[] = []
    for await (const key of store.storage.keys({ gte: `${space}:t:`, lt: `${space}:t:\u{10FFFF}` })) entries.push(key)
    expect(entries).toHaveLength(2)
    await store.storage.write([`${space}:i`, ...entries].map((key) => ({ type: 'del' as const, key })))
    const reopened = await Memory.attach(await LogStore.open({ storage: store.storage }), space, identity)
    opened.push(reopened)
    await reopened.log.priorityBackfilled()
    expect(await reopened.log.priorityEventsFrom(1)).toEqual(tombstones)
    const ordered = async (since: Record<string, number>) => (await deletionsFirst(await reopened.log.envelopesSince(since, { signatures: 'stored' }), (id) => reopened.log.causalVector(id))).map((event) => event.id)
    const all = await collect(catchUpBatches(reopened.log, {}, 500))
    expect(all.length).toBeGreaterThan(2)
    expect(all.flat().map((event) => event.id)).toEqual(await ordered({}))

    const vector = reopened.versionVector()
    const [later] = await reopened.rememberMany([{ kind: 'episode', summary: 'later' }])
    await reopened.forget(later as string)
    const forget = (await reopened.log.envelopesSince(vector)).at(-1)
    expect(await reopened.log.priorityEventsFrom(1)).toEqual([...tombstones, forget?.id])
    const streamed = await collect(catchUpBatches(reopened.log, vector, 1))
    expect(streamed).toHaveLength(2)
    expect(streamed.flat().map((event) => event.id)).toEqual(await ordered(vector))
  })

  it('reads a catch-up at once, in the same order, where the index does not reach back', async () => {
    const { memory } = await history()
    // A log whose index says nothing of these events (a store before the index, not filled in yet).
    const log = Object.create(memory.log, { priorityEventsFrom: { value: async () => undefined } }) as typeof memory.log
    const all = await collect(catchUpBatches(log, {}, 500))
    expect(all).toHaveLength(1)
    const expected = await deletionsFirst(await memory.log.envelopesSince({}, { signatures: 'stored' }), (id) => memory.log.causalVector(id))
    expect(all[0]?.map((event) => event.id)).toEqual(expected.map((event) => event.id))
  })

  it('indexes a deletion whose body comes after its header', async () => {
    const { memory, tombstones } = await history()
    const envelopes = await memory.log.envelopesSince({}, { signatures: 'stored' })
    const replica = await Memory.open({ space: memory.space })
    opened.push(replica)
    const withoutBodies = envelopes.map((envelope) => (tombstones.includes(envelope.id) ? { id: envelope.id, header: envelope.header, ...(envelope.signature ? { signature: envelope.signature } : {}) } : envelope))
    await replica.ingest(withoutBodies)
    expect(await replica.log.priorityEventsFrom(1)).toEqual([])
    const filled = await replica.ingest(envelopes.filter((envelope) => tombstones.includes(envelope.id)))
    expect(filled.filled.sort()).toEqual([...tombstones].sort())
    expect(await replica.log.priorityEventsFrom(1)).toEqual(tombstones)
  })
})

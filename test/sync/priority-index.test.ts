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
import { closeAll, deliver, openReplicas } from '../helpers/memory-replicas.js'

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

  it('no longer sends first a deletion whose body was erased since, as deletionsFirst does not', async () => {
    const { memories } = await openReplicas(3)
    const [owner, writer, peer] = memories as [Memory, Memory, Memory]
    opened.push({ close: () => closeAll(memories) })
    // The peer applies the writer's records first, then the owner's deletion (not in their past):
    // a catch-up from it sends the deletion and its past ahead of the writer's records.
    await writer.rememberMany(Array.from({ length: 50 }, (_, i) => ({ kind: 'episode' as const, summary: `writer ${i}` })))
    const [doomed] = await owner.rememberMany([{ kind: 'episode', summary: 'doomed' }])
    await owner.forget(doomed as string)
    await deliver(writer, peer)
    await deliver(owner, peer)
    const [forget] = await peer.log.priorityEventsFrom(1) ?? []
    const order = async () => ({
      expected: (await deletionsFirst(await peer.log.envelopesSince({}, { signatures: 'stored' }), (id) => peer.log.causalVector(id))).map((event): string => event.id),
      streamed: (await collect(catchUpBatches(peer.log, {}, 10))).flat().map((event): string => event.id),
    })
    const before = await order()
    expect(before.streamed).toEqual(before.expected)
    const writersLast = (await writer.log.envelopesSince({})).at(-1)?.id
    expect(before.streamed.indexOf(forget as string)).toBeLessThan(before.streamed.indexOf(writersLast as string))
    // Erased (a log-level erasure): the index still names it, the envelope no longer says what it is.
    await peer.log.erase([forget as string])
    const after = await order()
    expect(after.streamed).toEqual(after.expected)
    expect(after.streamed.indexOf(forget as string)).toBeGreaterThan(after.streamed.indexOf(writersLast as string))
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

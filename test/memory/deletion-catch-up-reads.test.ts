/**
 * A replica catching up on deletions reads what it purges (each deleted record's versions and
 * history, and who references it) by scanning their prefixes together (prefix-scan.ts), not
 * with three range reads per record; what it stores is what one event per batch (one record
 * per scan, as the reads were) stores.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { Memory } from '../../src/memory/index.js'
import { CATCH_UP_LIMITS, type CatchUpLimits, type Projection } from '../../src/projection/index.js'
import type { EventEnvelope } from '../../src/log/index.js'
import type { LogStorage, StorageRange } from '../../src/log/storage.js'
import { ManualClock } from '../../src/log/clock.js'

const open: Memory[] = []
afterEach(async () => {
  for (const memory of open.splice(0)) await memory.close()
})

const ONE_EVENT_A_BATCH: CatchUpLimits = { chunk: 1, batchEvents: 1, batchRecords: 1, batchNewRecords: 1, derivedWrites: 1 }

function storageOf(memory: Memory): LogStorage {
  return (memory.log as unknown as { storage: LogStorage }).storage
}

/** Counts the range reads (iterators) opened on a memory's storage from now on. */
function countRanges(memory: Memory): () => number {
  const storage = storageOf(memory) as { keys: LogStorage['keys']; entries: LogStorage['entries'] }
  const keys = storage.keys.bind(storage)
  const entries = storage.entries.bind(storage)
  let count = 0
  storage.keys = (range: StorageRange) => (count++, keys(range))
  storage.entries = (range: StorageRange) => (count++, entries(range))
  return () => count
}

/** Every projection key and value but the meta. */
async function projectionDump(memory: Memory): Promise<string[]> {
  const root = `${memory.space}:q:`
  const rows: string[] = []
  for await (const [key, value] of storageOf(memory).entries({ gte: root, lt: `${root}\u{10FFFF}` })) if (key !== `${root}m`) rows.push(`${key}=${Buffer.from(value).toString('hex')}`)
  return rows
}

async function replicaOf(space: string, clock: ManualClock, creations: readonly EventEnvelope[]): Promise<Memory> {
  const replica = await Memory.open({ clock, space })
  open.push(replica)
  await replica.ingest([...creations])
  return replica
}

describe('deletion catch-up reads', () => {
  it('scans the purged records\' prefixes together and stores what one record at a time stores', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1))
    const owner = await Memory.open({ clock })
    open.push(owner)
    const episodes = 120
    // Ids in no order of their own, some escaped or past U+FFFF (keys sort by UTF-8 bytes).
    const episodeId = (i: number) => `ep_${((i * 7919) % 1000).toString(36)}${i % 5 === 0 ? ':x' : i % 7 === 0 ? '\u{1F600}' : ''}`
    await owner.rememberMany(Array.from({ length: episodes }, (_, i) => ({ kind: 'episode' as const, id: episodeId(i), summary: `episode ${i}`, details: `marker${i}` })))
    await owner.rememberMany(Array.from({ length: episodes }, (_, i) => ({ kind: 'fact' as const, id: `fact_${episodeId(i).slice(3)}`, episodeID: episodeId(i), subject: `subject ${i}`, predicate: 'p', object: 'o' })))
    const creations = await owner.log.envelopesSince({}, { signatures: 'stored' })
    clock.advance(1000)
    // Every third episode keeps its fact; a few facts are redacted before their episode goes.
    for (let i = 0; i < episodes; i += 3) await owner.update(episodeId(i), { set: { summary: `episode ${i} again` } })
    const forgotten = Array.from({ length: episodes }, (_, i) => i).filter((i) => i % 3 !== 0)
    for (const i of forgotten.slice(0, 10)) await owner.redact(`fact_${episodeId(i).slice(3)}`)
    for (const i of forgotten) await owner.forget(episodeId(i))
    const all = await owner.log.envelopesSince({}, { signatures: 'stored' })
    const later = all.slice(creations.length)

    const scanned = await replicaOf(owner.space, clock, creations)
    const ranges = countRanges(scanned)
    await scanned.ingest(later)
    // One range read per purged record and prefix was 3 × 160; the scans' iterators are a few per prefix family.
    expect(ranges()).toBeLessThan(40)

    const oneByOne = await replicaOf(owner.space, clock, creations)
    projectionOf(oneByOne).limits = ONE_EVENT_A_BATCH
    await oneByOne.ingest(later)
    projectionOf(oneByOne).limits = CATCH_UP_LIMITS
    const dump = await projectionDump(scanned)
    expect(dump).toEqual(await projectionDump(oneByOne))
    expect(await scanned.digest()).toBe(await owner.digest())
    for (const i of forgotten) {
      expect(await scanned.get(episodeId(i))).toBeUndefined()
      expect(await scanned.search(`marker${i}`)).toEqual([])
    }
    expect(dump.some((row) => row.includes(`:q:h:${encodeURIComponent(episodeId(forgotten[0] as number))}:`))).toBe(true)
    expect(await scanned.search('marker0')).toHaveLength(1)
  })
})

describe('deletion catch-up reads, few among many', () => {
  // A few deleted records among many (ids random, so far apart) read one range each: a scan
  // would read through the other records between them. Here they are adjacent, so a scan would
  // take one iterator; the batch goes by their share of the records alone.
  it('reads the purged records one range each when they are under a third of the records, and stores what one record at a time stores', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1))
    const owner = await Memory.open({ clock })
    open.push(owner)
    const gone = Array.from({ length: 20 }, (_, i) => `ep_a${String(i).padStart(3, '0')}`)
    const kept = Array.from({ length: 280 }, (_, i) => `ep_b${String(i).padStart(3, '0')}`)
    await owner.rememberMany([...gone, ...kept].map((id) => ({ kind: 'episode' as const, id, summary: `episode ${id}` })))
    const creations = await owner.log.envelopesSince({}, { signatures: 'stored' })
    clock.advance(1000)
    for (const id of gone) await owner.forget(id)
    const later = (await owner.log.envelopesSince({}, { signatures: 'stored' })).slice(creations.length)

    const spread = await replicaOf(owner.space, clock, creations)
    const ranges = countRanges(spread)
    await spread.ingest(later)
    // Versions, history and referrers: one range read per record each (a scan would be a few).
    expect(ranges()).toBeGreaterThanOrEqual(3 * gone.length)

    const oneByOne = await replicaOf(owner.space, clock, creations)
    projectionOf(oneByOne).limits = ONE_EVENT_A_BATCH
    await oneByOne.ingest(later)
    expect(await projectionDump(spread)).toEqual(await projectionDump(oneByOne))
    expect(await spread.digest()).toBe(await owner.digest())
  })
})

function projectionOf(memory: Memory): Projection {
  return (memory as unknown as { core: { projection: Projection } }).core.projection
}

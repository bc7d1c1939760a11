/**
 * Deletions travel first in a catch-up (src/sync/catch-up-order.ts). Over random histories of
 * three replicas (records, updates, forgets, partial exchanges), the reordered catch-up of a
 * peer at a random point: holds exactly the same events; is a causal order (cut into frames, it
 * ingests frame by frame into a replica at that point with nothing held, and ends at the same
 * digest); and sends every deletion before any event outside the deletions' causal pasts.
 * Against a relay, a fresh peer applies a deletion in its first frame even when thousands of
 * newer events were applied before it on the relay.
 */
import { createHash } from 'node:crypto'
import fc from 'fast-check'
import { afterEach, describe, expect, it } from 'vitest'
import type { EventEnvelope, EventId } from '../../src/log/index.js'
import { Memory } from '../../src/memory/index.js'
import { catchUpBatches, deletionsFirst, isTombstoneEnvelope } from '../../src/sync/catch-up-order.js'
import { authorAndSeq, cutFrames } from '../../src/sync/frames.js'
import { closeAll, deliver, openReplicas, randomStep } from '../helpers/memory-replicas.js'
import { SeededRandom } from '../helpers/seeded-random.js'
import { openOwner, openReplica, startRelay, startSync, Teardown } from '../helpers/sync-fixtures.js'

const teardown = new Teardown()
afterEach(() => teardown.run())

function idOf(header: Uint8Array): EventId {
  return createHash('sha256').update(header).digest('hex') as EventId
}

/**
 * A random history of `steps` over `memories` (with redactions if `redact`), everything then
 * delivered to the owner (memories[0]), and a new peer (added to `memories`) holding a prefix of
 * the owner's apply order that ends signed (whole frames), chosen by `cutAt`.
 */
async function historyAndPeer(memories: Memory[], random: SeededRandom, steps: number, cutAt: number, redact: boolean): Promise<Memory> {
  const owner = memories[0] as Memory
  const ids: string[] = []
  for (let step = 0; step < steps; step++) {
    const memory = await randomStep(memories, ids, random, step, { redact })
    if (random.int(0, 2) === 0) await deliver(memory, random.pick(memories))
  }
  for (const memory of memories) await deliver(memory, owner)
  const frames = cutFrames(await owner.log.envelopesSince({}, { signatures: 'stored' }), 3)
  const prefix = frames.slice(0, cutAt % (frames.length + 1)).flat()
  const peer = await Memory.open({ space: owner.space })
  memories.push(peer)
  if (prefix.length > 0) await peer.ingest(prefix.map((event) => ({ id: idOf(event.header), ...event })))
  return peer
}

describe('deletionsFirst', () => {
  it('is a causal order of the same events that puts every deletion before anything outside its causal past', async () => {
    await fc.assert(fc.asyncProperty(fc.nat(), fc.nat({ max: 60 }), async (seed, cutAt) => {
      const random = new SeededRandom(seed)
      const { memories } = await openReplicas(3)
      const owner = memories[0] as Memory
      try {
        const peer = await historyAndPeer(memories, random, 14, cutAt, false)
        const lacking = await owner.log.envelopesSince(peer.versionVector(), { signatures: 'stored' })
        const ordered = await deletionsFirst(lacking, (id) => owner.log.causalVector(id))

        expect(ordered.map((event) => event.id).sort()).toEqual(lacking.map((event) => event.id).sort())
        const reach: Record<string, number> = {}
        for (const event of lacking.filter(isTombstoneEnvelope)) {
          for (const [author, seq] of Object.entries((await owner.log.causalVector(event.id)) ?? {})) reach[author] = Math.max(reach[author] ?? 0, seq)
        }
        const inPast = (event: EventEnvelope) => authorAndSeq(event).seq <= (reach[authorAndSeq(event).author] ?? 0)
        const lastTombstone = ordered.map(isTombstoneEnvelope).lastIndexOf(true)
        const firstOutside = ordered.findIndex((event) => !inPast(event))
        if (lastTombstone >= 0 && firstOutside >= 0) expect(lastTombstone).toBeLessThan(firstOutside)

        for (const frame of cutFrames(ordered)) {
          const result = await peer.ingest(frame.map((event) => ({ id: idOf(event.header), ...event })))
          expect(result.held).toEqual([])
        }
        expect(peer.versionVector()).toEqual(owner.versionVector())
        expect(await peer.digest()).toBe(await owner.digest())
      } finally {
        await closeAll(memories)
      }
    }), { numRuns: 12 })
  })
})

/** Every author's last event in the list carries a signature (a frame may end there). */
function endsSigned(events: readonly EventEnvelope[]): boolean {
  const last = new Map<string, EventEnvelope>()
  for (const event of events) last.set(authorAndSeq(event).author, event)
  return [...last.values()].every((event) => event.signature !== undefined)
}

async function collect(batches: AsyncIterable<EventEnvelope[]>): Promise<EventEnvelope[][]> {
  const out: EventEnvelope[][] = []
  for await (const batch of batches) out.push(batch)
  return out
}

describe('catchUpBatches', () => {
  it('streams exactly what deletionsFirst orders, in batches that end signed, for any peer vector', async () => {
    await fc.assert(fc.asyncProperty(fc.nat(), fc.nat({ max: 80 }), fc.integer({ min: 1, max: 7 }), async (seed, cutAt, batch) => {
      const random = new SeededRandom(seed)
      const { memories } = await openReplicas(3)
      const owner = memories[0] as Memory
      try {
        // A peer holding a prefix of the owner's apply order (whole frames), or any replica's vector.
        const peer = await historyAndPeer(memories, random, 16, cutAt, true)
        for (const since of [peer.versionVector(), (memories[1] as Memory).versionVector(), {}]) {
          const expected = await deletionsFirst(await owner.log.envelopesSince(since, { signatures: 'stored' }), (id) => owner.log.causalVector(id))
          const batches = await collect(catchUpBatches(owner.log, since, batch))
          expect(batches.flat().map((event) => event.id)).toEqual(expected.map((event) => event.id))
          expect(batches.flat().map((event) => event.signature !== undefined)).toEqual(expected.map((event) => event.signature !== undefined))
          for (const each of batches.slice(0, -1)) {
            expect(each.length).toBeGreaterThanOrEqual(batch)
            expect(endsSigned(each)).toBe(true)
          }
        }
      } finally {
        await closeAll(memories)
      }
    }), { numRuns: 15 })
  })
})

it('a fresh peer applies a deletion in its first frame, though many newer events came before it at the relay', async () => {
  const relay = await startRelay(teardown)
  const owner = await openOwner(teardown)
  const doomed = await owner.remember({ kind: 'episode', summary: 'to forget' })
  const admin = await openReplica(teardown, owner)
  await owner.grant(admin.author, ['admin'])
  await (await startSync(teardown, owner, relay.url, { live: false })).synced()
  const adminSync = await startSync(teardown, admin, relay.url, { live: false })
  await adminSync.synced()
  await adminSync.close()
  // The admin deletes offline while the owner writes 3,000 more records and uploads them first.
  await admin.forget(doomed)
  for (let i = 0; i < 3; i++) await owner.rememberMany(Array.from({ length: 1000 }, (_, j) => ({ kind: 'episode', summary: `later ${i}.${j}` })))
  const ownerSync = await startSync(teardown, owner, relay.url, { live: false })
  await ownerSync.synced()
  const again = await startSync(teardown, admin, relay.url, { live: false })
  await again.synced()

  const fresh = await openReplica(teardown, owner)
  await owner.grant(fresh.author, ['admin'])
  await (await startSync(teardown, owner, relay.url, { live: false })).synced()
  const order: boolean[] = []
  fresh.log.on('events-applied', (events) => {
    for (const event of events) order.push(event.body?.op === 'memory.delete')
  })
  const client = await startSync(teardown, fresh, relay.url, { live: false })
  await client.synced()
  expect(fresh.versionVector()).toEqual(owner.versionVector())
  expect(order.length).toBeGreaterThan(3000)
  expect(order.indexOf(true)).toBeGreaterThanOrEqual(0)
  expect(order.indexOf(true)).toBeLessThan(10)
  expect(await fresh.status(doomed)).toBe('deleted')
})

/**
 * The streamed catch-up (catchUpBatches, Outgoing.more) beyond what catch-up-order.test.ts and
 * priority-index.test.ts hold: stores that got their events through frames (which keep only each
 * author's newest signature per frame), header-only copies and late bodies; the session moving
 * the peer's vector as each batch goes; and the index start surviving a reopen.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { Identity, LogStore, type EventEnvelope } from '../../src/log/index.js'
import { Memory } from '../../src/memory/index.js'
import { catchUpBatches, deletionsFirst } from '../../src/sync/catch-up-order.js'
import { authorAndSeq, cutFrames } from '../../src/sync/frames.js'
import { MemoryEndpoint } from '../../src/sync/memory-endpoint.js'
import { SyncSession } from '../../src/sync/sync-session.js'
import type { Transport } from '../../src/sync/transport.js'
import { closeAll, openReplicas, randomStep } from '../helpers/memory-replicas.js'
import { SeededRandom } from '../helpers/seeded-random.js'
import { waitFor } from '../helpers/sync-fixtures.js'

function endsSigned(events: readonly EventEnvelope[]): boolean {
  const last = new Map<string, EventEnvelope>()
  for (const event of events) last.set(authorAndSeq(event).author, event)
  return [...last.values()].every((event) => event.signature !== undefined)
}

const isControl = (envelope: { header: Uint8Array }) => /"kind":"control"/.test(Buffer.from(envelope.header).toString('latin1'))

/** Sends what `to` lacks as a session would (frames of 1 to 6, one signature per author each), some bodies left out. */
async function deliverFramed(from: Memory, to: Memory, random: SeededRandom, headerOnly: boolean): Promise<void> {
  const fresh = await from.log.envelopesSince(to.versionVector(), { signatures: 'stored' })
  const byHeader = new Map(fresh.map((envelope) => [envelope.header, envelope]))
  for (const frame of cutFrames(fresh, random.int(1, 6))) {
    await to.ingest(frame.map((wire) => {
      const strip = headerOnly && wire.body !== undefined && !isControl(wire) && random.int(0, 2) === 0
      return {
        id: (byHeader.get(wire.header) as EventEnvelope).id, header: wire.header,
        ...(wire.body && !strip ? { body: wire.body } : {}), ...(wire.signature ? { signature: wire.signature } : {}),
      }
    }))
  }
}

/** Fills in at `to` the bodies `from` holds of events `to` holds header-only. */
async function fillBodies(from: Memory, to: Memory): Promise<void> {
  const held = new Map((await to.log.envelopesSince({})).map((envelope) => [envelope.id, envelope]))
  const fills = (await from.log.envelopesSince({})).filter((envelope) => envelope.body && held.has(envelope.id) && !held.get(envelope.id)?.body)
  if (fills.length > 0) await to.ingest(fills.map(({ id, header, body }) => ({ id, header, ...(body ? { body } : {}) })))
}

describe('catchUpBatches on stores synced through frames', () => {
  it('streams what deletionsFirst orders, batches ending signed, though most stored events carry no signature', async () => {
    await fc.assert(fc.asyncProperty(fc.nat(), fc.integer({ min: 1, max: 9 }), async (seed, batch) => {
      const random = new SeededRandom(seed)
      const { memories } = await openReplicas(3)
      try {
        const ids: string[] = []
        for (let step = 0; step < 22; step++) {
          const memory = await randomStep(memories, ids, random, step, { redact: true })
          const exchange = random.int(0, 5)
          if (exchange <= 1) await deliverFramed(memory, random.pick(memories), random, exchange === 1)
          else if (exchange === 2) await fillBodies(random.pick(memories), random.pick(memories))
        }
        for (const target of memories) {
          const vectors: Record<string, number>[] = [{}, ...memories.map((memory) => memory.versionVector())]
          for (const since of vectors) {
            const expected = await deletionsFirst(await target.log.envelopesSince(since, { signatures: 'stored' }), (id) => target.log.causalVector(id))
            const batches: EventEnvelope[][] = []
            for await (const each of catchUpBatches(target.log, since, batch)) batches.push(each)
            expect(batches.flat().map((event) => event.id)).toEqual(expected.map((event) => event.id))
            expect(batches.flat().map((event) => event.body?.length ?? -1)).toEqual(expected.map((event) => event.body?.length ?? -1))
            for (const each of batches.slice(0, -1)) expect(endsSigned(each)).toBe(true)
          }
        }
      } finally {
        await closeAll(memories)
      }
    }), { numRuns: 15 })
  }, 120_000)
})

/** Two sessions wired to each other in process. */
function sessionPair(a: Memory, b: Memory): { left: SyncSession; right: SyncSession } {
  const sessions: SyncSession[] = []
  const transport = (to: number): Transport => ({
    bufferedAmount: 0,
    isOpen: true,
    send: async (data) => {
      setImmediate(() => sessions[to]?.receive(data))
    },
    onMessage: () => undefined,
    onClose: () => undefined,
    close: () => undefined,
  })
  sessions.push(new SyncSession(transport(1), new MemoryEndpoint(a)), new SyncSession(transport(0), new MemoryEndpoint(b)))
  return { left: sessions[0] as SyncSession, right: sessions[1] as SyncSession }
}

describe('a streamed catch-up in a session', () => {
  it('counts what each batch sent as the peer\'s: a live event afterwards goes alone', async () => {
    const owner = await Memory.open({ name: 'streamed' })
    const peer = await Memory.open({ space: owner.space })
    try {
      await owner.rememberMany(Array.from({ length: 300 }, (_, i) => ({ kind: 'episode' as const, summary: `e ${i}` })))
      const { left, right } = sessionPair(owner, peer)
      let sent = 0
      left.on('sent', ({ events }) => { sent += events })
      await left.start()
      await right.start()
      await waitFor(() => left.synced && right.synced, 'the catch-up')
      expect(sent).toBe(301)
      await owner.remember({ kind: 'episode', summary: 'live' })
      await waitFor(() => peer.versionVector()[owner.author] === 302, 'the live event')
      await new Promise((resolve) => setTimeout(resolve, 50))
      expect(sent).toBe(302)
      left.close()
      right.close()
    } finally {
      await peer.close()
      await owner.close()
    }
  })
})

describe('the priority index across a reopen', () => {
  it('keeps its start: a fresh peer of the reopened store is still streamed, in deletionsFirst order', async () => {
    const store = await LogStore.open({})
    const identity = Identity.generate()
    const log = await store.createSpace(identity)
    const memory = await Memory.attach(store, log.space, identity)
    const ids = await memory.rememberMany(Array.from({ length: 300 }, (_, i) => ({ kind: 'episode' as const, summary: `a ${i}` })))
    await memory.forget(ids[3] as string)
    await memory.rememberMany(Array.from({ length: 300 }, (_, i) => ({ kind: 'episode' as const, summary: `b ${i}` })))
    await memory.redact(ids[9] as string)
    await memory.remember({ kind: 'episode', summary: 'last' })
    await memory.close()
    const reopened = await Memory.attach(await LogStore.open({ storage: store.storage }), log.space, identity)
    try {
      expect(await reopened.log.priorityEventsFrom(1)).toHaveLength(2)
      const batches: EventEnvelope[][] = []
      for await (const each of catchUpBatches(reopened.log, {}, 100)) batches.push(each)
      expect(batches.length).toBeGreaterThan(1)
      const expected = await deletionsFirst(await reopened.log.envelopesSince({}, { signatures: 'stored' }), (id) => reopened.log.causalVector(id))
      expect(batches.flat().map((event) => event.id)).toEqual(expected.map((event) => event.id))
    } finally {
      await reopened.close()
      await store.close()
    }
  })
})

/**
 * One final event set, fed in one delivery to fresh replicas whose catch-ups are cut differently
 * (one batch, one event a batch, random cuts), must leave the same projection bytes, the same
 * bodies in each log and the same digest. Writers create one id as an episode or as a fact of a
 * parent, forget parents and the id, link from it, redact, patch; the owner, an admin that
 * would name inferred deletions, sits out, so what each replica infers stays as it inferred it.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { CairnError } from '../../src/errors.js'
import { ManualClock } from '../../src/log/clock.js'
import type { EventEnvelope } from '../../src/log/index.js'
import { Memory } from '../../src/memory/index.js'
import { CATCH_UP_LIMITS, type CatchUpLimits, type Projection } from '../../src/projection/index.js'
import { closeAll, deliver, openReplicas } from '../helpers/memory-replicas.js'
import { SeededRandom } from '../helpers/seeded-random.js'

const REFUSALS = new Set(['UNKNOWN_RECORD', 'FORGOTTEN', 'REDACTED', 'SUPERSEDED', 'ID_TAKEN', 'UNKNOWN_FIELD'])
const ONE_EVENT_A_BATCH: CatchUpLimits = { chunk: 1, batchEvents: 1, batchRecords: 1, batchNewRecords: 1, derivedWrites: 1 }

interface Outcome { readonly dump: string; readonly bodies: string; readonly digest: string }

/** A fresh replica of `space` takes `events` in one delivery, its catch-ups cut by `limits`. */
async function feed(space: string, clock: ManualClock, events: readonly EventEnvelope[], limits: CatchUpLimits): Promise<Outcome> {
  const memory = await Memory.open({ clock, space })
  try {
    ;(memory as unknown as { core: { projection: Projection } }).core.projection.limits = limits
    await memory.ingest([...events])
    const storage = (memory.log as unknown as { storage: { entries(range: object): AsyncIterable<[string, Uint8Array]> } }).storage
    const root = `${space}:q:`
    const rows: string[] = []
    for await (const [key, value] of storage.entries({ gte: root, lt: `${root}\u{10FFFF}` })) if (key !== `${root}m`) rows.push(`${key.slice(root.length)}=${Buffer.from(value).toString('utf8')}`)
    const bodies = await Promise.all(events.map(async (event) => `${event.id.slice(0, 12)}:${String((await memory.log.get(event.id))?.bodyState)}`))
    return { dump: rows.join('\n'), bodies: bodies.join('\n'), digest: await memory.digest() }
  } finally {
    await memory.close()
  }
}

describe('catch-up cuts', () => {
  it('the same events, fed to fresh replicas that cut their catch-ups differently, end alike', async () => {
    const limits = fc.record({ chunk: fc.integer({ min: 1, max: 4 }), batchEvents: fc.integer({ min: 1, max: 12 }), batchRecords: fc.integer({ min: 1, max: 6 }), batchNewRecords: fc.integer({ min: 1, max: 6 }), derivedWrites: fc.integer({ min: 0, max: 20 }) })
    const step = fc.record({ replica: fc.nat(2), action: fc.nat(10), a: fc.oneof(fc.constant(0), fc.constant(0), fc.constant(1)), b: fc.oneof(fc.constant(0), fc.constant(0), fc.constant(1)), tick: fc.nat(2) })
    await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 3, maxLength: 18 }), limits, fc.nat(), async (history, cut, seed) => {
      const random = new SeededRandom(seed)
      const clock = new ManualClock(Date.UTC(2026, 0, 1))
      const { memories } = await openReplicas(4, clock)
      const [owner, ...writers] = memories as [Memory, Memory, Memory, Memory]
      for (const parent of ['ep_p0', 'ep_p1', 'ep_base']) await owner.remember({ kind: 'episode', id: parent, summary: `parent ${parent}` })
      await owner.remember({ kind: 'fact', id: 'fact_base', episodeID: 'ep_base', subject: 'a', predicate: 'b', object: 'c' })
      for (const writer of writers) await deliver(owner, writer)
      const links: string[] = []
      for (const { replica, action, a, b, tick } of history) {
        clock.advance(tick)
        const memory = writers[replica] as Memory
        const id = `shared_${a}`
        try {
          switch (action) {
            case 0: await memory.remember({ kind: 'episode', id, summary: `secret-${id}-episode ${b}` }); break
            case 1: await memory.remember({ kind: 'fact', id, episodeID: `ep_p${b}`, subject: `secret-${id}-fact`, predicate: 'is', object: `o${b}` }); break
            case 2: await memory.forget(`ep_p${b}`); break
            case 3: await memory.forget(id); break
            case 4: links.push(await memory.remember({ kind: 'factLink', srcFactID: id, dstFactID: 'fact_base', linkType: `secret-link-${id}-${b}` })); break
            case 5: if (links.length > 0) await memory.redact(links[b % links.length] as string); break
            case 6: await memory.redact(id); break
            case 7: await memory.update(id, { set: { importance: b / 2 + 0.1 } }); break
            case 8: await memory.update(id, { set: { [(await memory.get(id))?.kind === 'fact' ? 'speaker' : 'summary']: `secret-${id}-update ${tick}` } }); break
            default: await deliver(writers[(replica + 1 + b) % 3] as Memory, memory, random)
          }
        } catch (error) {
          if (!(error instanceof CairnError) || !REFUSALS.has(error.code)) throw error
        }
      }
      // Every author's own events, interleaved at random, each author's in its order.
      const queues: EventEnvelope[][] = []
      for (const memory of memories) {
        const own = (await memory.log.envelopesSince({}, { signatures: 'stored' }))
          .filter((event) => (JSON.parse(Buffer.from(event.header).toString('utf8')) as { author: string }).author === memory.author)
        if (own.length > 0) queues.push(own)
      }
      const events: EventEnvelope[] = []
      while (queues.length > 0) {
        const pick = random.int(0, queues.length - 1)
        const queue = queues[pick] as EventEnvelope[]
        events.push(queue.shift() as EventEnvelope)
        if (queue.length === 0) queues.splice(pick, 1)
      }
      await closeAll(memories)
      const [first, ...others] = [
        await feed(owner.space, clock, events, CATCH_UP_LIMITS),
        await feed(owner.space, clock, events, ONE_EVENT_A_BATCH),
        await feed(owner.space, clock, events, cut),
      ] as [Outcome, Outcome, Outcome]
      for (const other of others) {
        expect(other.bodies).toBe(first.bodies)
        expect(other.dump).toBe(first.dump)
        expect(other.digest).toBe(first.digest)
      }
    }), { numRuns: Number(process.env.RUNS ?? 200) })
  })
})

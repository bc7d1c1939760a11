/**
 * One final event set, fed to fresh replicas whose catch-ups are cut differently (one batch, one
 * event a batch, random cuts), must leave the same projection bytes, the same bodies in each log
 * and the same digest. Writers create one id as an episode or as a fact of a parent, forget
 * parents and the id, link from it, redact, patch.
 *
 * Variants: the owner (an admin, which names the deletions it infers) sits out, so what each
 * replica infers stays as it inferred it; the owner takes part (it receives writers' events at
 * random points, names the deletions it infers, writes and forgets like the writers); the set
 * reaches a fresh replica in several deliveries of one causal order (with stale duplicates, at
 * one recorded time or several), compared with one delivery of that order; and in deliveries of
 * another order (causal or not, shuffled, out of order: the log holds what misses its deps).
 * Two more: the fresh replicas hold `admin` (granted by the owner in the set), so each names the
 * deletions it infers while it catches up, and what it appends is compared with the rest; and
 * the set reaches a fresh replica with some bodies withheld (headers only) and sent later, which
 * must end as the whole set in one delivery once every body has arrived.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { CairnError } from '../../src/errors.js'
import { ManualClock } from '../../src/log/clock.js'
import { defaultCrypto, Identity, type CryptoProvider, type EventEnvelope } from '../../src/log/index.js'
import { Memory } from '../../src/memory/index.js'
import { CATCH_UP_LIMITS, type CatchUpLimits, type Projection } from '../../src/projection/index.js'
import { closeAll, deliver, openReplicas } from '../helpers/memory-replicas.js'
import { SeededRandom } from '../helpers/seeded-random.js'

const REFUSALS = new Set(['UNKNOWN_RECORD', 'FORGOTTEN', 'REDACTED', 'SUPERSEDED', 'ID_TAKEN', 'UNKNOWN_FIELD'])
const ONE_EVENT_A_BATCH: CatchUpLimits = { chunk: 1, batchEvents: 1, batchRecords: 1, batchNewRecords: 1, derivedWrites: 1 }
const START = Date.UTC(2026, 0, 1)
/** `RUNS` and `SEED` from the environment override the defaults (long runs, replays); `FCPATH` replays one counterexample's path. */
function checkOptions(defaultRuns: number): { numRuns: number; seed?: number } {
  const seed = process.env.SEED
  return { numRuns: Number(process.env.RUNS ?? defaultRuns), ...(seed !== undefined && seed !== '' ? { seed: Number(seed) } : {}), ...(process.env.FCPATH ? { path: process.env.FCPATH, endOnFailure: true } : {}) }
}
/** Vitest's limit for a property, ~0.25 s a run (each feeds several replicas), or `perRun` ms. */
const timeoutFor = (defaultRuns: number, perRun = 250): number => Math.max(60_000, checkOptions(defaultRuns).numRuns * perRun)

/**
 * What a replica ends with: its projection (the meta aside; as-of versions and recorded-time
 * index apart), its bodies, its digest; and the events it appended itself (an admin's naming
 * deletes, as it would send them).
 */
interface Outcome { readonly dump: string; readonly asOf: string; readonly bodies: string; readonly digest: string; readonly own: EventEnvelope[]; readonly log: EventEnvelope[] }

interface Step { readonly replica: number; readonly action: number; readonly a: number; readonly b: number; readonly tick: number }

const limitsArbitrary = fc.record({ chunk: fc.integer({ min: 1, max: 4 }), batchEvents: fc.integer({ min: 1, max: 12 }), batchRecords: fc.integer({ min: 1, max: 6 }), batchNewRecords: fc.integer({ min: 1, max: 6 }), derivedWrites: fc.integer({ min: 0, max: 20 }) })
const oneInThree = fc.oneof(fc.constant(0), fc.constant(0), fc.constant(1))
/** `replica` picks among the replicas that act (three writers, or four with the owner). */
const stepArbitrary = (replicas: number) => fc.record({ replica: fc.nat(replicas - 1), action: fc.nat(10), a: oneInThree, b: oneInThree, tick: fc.nat(2) })
/**
 * Longer histories, for the variants added later: fast-check's default size keeps arrays near
 * ten steps, where few writes survive their refusals (an inferred deletion or a late body for
 * something deleted is then rare).
 */
const longHistory = fc.array(stepArbitrary(4), { minLength: 6, maxLength: 30, size: 'max' })

/**
 * `history` with every create of a redacted id made in the shape of its first create (an episode,
 * or a fact of one parent), so that no redaction meets the case still open (see its use).
 */
function oneShapeWhereRedacted(history: readonly Step[]): Step[] {
  const redacted = new Set(history.filter((step) => step.action === 6).map((step) => step.a))
  const shapes = new Map<number, Pick<Step, 'action' | 'b'>>()
  return history.map((step) => {
    if ((step.action !== 0 && step.action !== 1) || !redacted.has(step.a)) return step
    const shape = shapes.get(step.a) ?? { action: step.action, b: step.b }
    shapes.set(step.a, shape)
    return { ...step, ...shape }
  })
}

function headerOf(event: EventEnvelope): { author: string; deps: readonly string[]; space?: string; kind?: string } {
  return JSON.parse(Buffer.from(event.header).toString('utf8')) as { author: string; deps: readonly string[]; space?: string; kind?: string }
}

/**
 * The default crypto with salts drawn from `seed`: two fresh replicas of one key that append the
 * same operations at the same times then append the same events (an admin's naming deletes), so
 * their outcomes compare byte for byte.
 */
function seededSalts(seed: number): CryptoProvider {
  const base = defaultCrypto()
  const random = new SeededRandom(seed)
  return {
    name: base.name,
    sha256: (data) => base.sha256(data),
    sha256Hex: (data) => base.sha256Hex(data),
    signerFromSeed: (key) => base.signerFromSeed(key),
    verify: (signature, message, key) => base.verify(signature, message, key),
    randomBytes: (length) => random.bytes(length),
  }
}

/** The key fresh replicas use when they hold `admin` (granted by the owner, `playHistory`). */
const FRESH_ADMIN = Identity.fromSeed(new Uint8Array(32).fill(7))

/**
 * Plays `history` on an owner and three writers it granted, and returns each author's own
 * events (in its order). With `ownerActs` the owner is one of the replicas that act: it receives
 * events (and names the deletions it infers) and writes like the others. With `freshAdmin` the
 * owner first grants `admin` to FRESH_ADMIN, the key the fresh replicas then use.
 */
async function playHistory(history: readonly Step[], random: SeededRandom, ownerActs: boolean, freshAdmin = false): Promise<{ space: string; now: number; byAuthor: EventEnvelope[][] }> {
  const clock = new ManualClock(START)
  const { memories } = await openReplicas(4, clock)
  const [owner, ...writers] = memories as [Memory, Memory, Memory, Memory]
  try {
    for (const parent of ['ep_p0', 'ep_p1', 'ep_base']) await owner.remember({ kind: 'episode', id: parent, summary: `parent ${parent}` })
    await owner.remember({ kind: 'fact', id: 'fact_base', episodeID: 'ep_base', subject: 'a', predicate: 'b', object: 'c' })
    if (freshAdmin) await owner.grant(FRESH_ADMIN.author, ['admin'])
    for (const writer of writers) await deliver(owner, writer)
    const actors = ownerActs ? [...writers, owner] : writers
    const links: string[] = []
    for (const { replica, action, a, b, tick } of history) {
      clock.advance(tick)
      const memory = actors[replica % actors.length] as Memory
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
          default: await deliver(actors[(replica + 1 + b) % actors.length] as Memory, memory, random)
        }
      } catch (error) {
        if (!(error instanceof CairnError) || !REFUSALS.has(error.code)) throw error
      }
    }
    const byAuthor: EventEnvelope[][] = []
    for (const memory of memories) {
      const log = await memory.log.envelopesSince({}, { signatures: 'stored' })
    const own = log.filter((event) => headerOf(event).author === memory.author)
      if (own.length > 0) byAuthor.push(own)
    }
    return { space: owner.space, now: clock.nowMs(), byAuthor }
  } finally {
    await closeAll(memories)
  }
}

/**
 * What an order is made of: runs of one author's events that one `ingest` must take together,
 * since only the last carries a stored signature (several events appended at once, such as the
 * deletes an admin names together, are signed once). One author's units, in its order, each.
 */
type Units = readonly (readonly EventEnvelope[])[][]

/** Each event a unit of its own (for a single delivery, where no unit is cut). */
function eventByEvent(byAuthor: readonly EventEnvelope[][]): Units {
  return byAuthor.map((events) => events.map((event) => [event]))
}

/** Each author's events cut after every event that carries a signature. */
function signedSegments(byAuthor: readonly EventEnvelope[][]): Units {
  return byAuthor.map((events) => {
    const segments: EventEnvelope[][] = [[]]
    for (const event of events) {
      ;(segments[segments.length - 1] as EventEnvelope[]).push(event)
      if (event.signature !== undefined) segments.push([])
    }
    return segments.filter((segment) => segment.length > 0)
  })
}

/** Every author's units interleaved at random, each author's in its order: not always causal. */
function authorInterleaving(units: Units, random: SeededRandom): (readonly EventEnvelope[])[] {
  return interleave(units, random, () => true)
}

/** A random causal order: each unit after the genesis and the deps of its events (an author's own come in order). */
function causalOrder(units: Units, random: SeededRandom): (readonly EventEnvelope[])[] {
  return interleave(units, random, (unit, placed) => {
    const own = new Set<string>(unit.map((event) => event.id))
    return unit.every((event) => {
      const header = headerOf(event)
      return [...(header.space === undefined ? [] : [header.space]), ...header.deps].every((id) => placed.has(id) || own.has(id))
    })
  })
}

/** Takes the head of a random queue whose head is `ready` (given the ids placed so far), until all are empty. */
function interleave(units: Units, random: SeededRandom, ready: (unit: readonly EventEnvelope[], placed: ReadonlySet<string>) => boolean): (readonly EventEnvelope[])[] {
  const queues = units.map((queue) => [...queue])
  const placed = new Set<string>()
  const out: (readonly EventEnvelope[])[] = []
  while (queues.length > 0) {
    const open = queues.filter((queue) => ready(queue[0] as readonly EventEnvelope[], placed))
    if (open.length === 0) throw new Error('no causal order: an event depends on one no author wrote')
    const queue = random.pick(open)
    const unit = queue.shift() as readonly EventEnvelope[]
    out.push(unit)
    for (const event of unit) placed.add(event.id)
    if (queue.length === 0) queues.splice(queues.indexOf(queue), 1)
  }
  return out
}

/**
 * `order` cut between units at random points into deliveries, in order; each may carry stale
 * copies of events already sent. Cuts fall close together in half the runs (where they meet what
 * one run of recorded time must settle), far apart in the others.
 */
function inOrderDeliveries(order: readonly (readonly EventEnvelope[])[], random: SeededRandom): EventEnvelope[][] {
  const deliveries: EventEnvelope[][] = []
  const longest = random.int(0, 1) === 0 ? 2 : Math.ceil(order.length / 3)
  for (let from = 0; from < order.length;) {
    const to = Math.min(order.length, from + random.int(1, longest))
    deliveries.push([...order.slice(0, from).flat().filter(() => random.int(0, 5) === 0), ...order.slice(from, to).flat()])
    from = to
  }
  return deliveries
}

/** Deliveries that may also come shuffled and out of order (the log sorts them, and holds what misses its deps). */
function scrambledDeliveries(order: readonly (readonly EventEnvelope[])[], random: SeededRandom): EventEnvelope[][] {
  const deliveries = inOrderDeliveries(order, random).map((delivery) => (random.int(0, 1) === 0 ? random.shuffle(delivery) : delivery))
  return random.int(0, 2) === 0 ? random.shuffle(deliveries) : deliveries
}

/**
 * A fresh replica of `space` takes `deliveries`, one `ingest` each, its catch-ups cut by
 * `limits`. Its clock starts at `now` and moves by `tick` after each delivery (0: every delivery
 * is recorded at one time, so all fall in one run of equal recorded time). With `admin` it is
 * FRESH_ADMIN, salting what it appends from one fixed seed.
 */
async function feed(space: string, now: number, deliveries: readonly (readonly EventEnvelope[])[], limits: CatchUpLimits, tick = 0, admin = false): Promise<Outcome> {
  const clock = new ManualClock(now)
  const memory = await Memory.open({ clock, space, ...(admin ? { identity: FRESH_ADMIN, crypto: seededSalts(1) } : {}) })
  try {
    ;(memory as unknown as { core: { projection: Projection } }).core.projection.limits = limits
    for (const delivery of deliveries) {
      await memory.ingest([...delivery])
      clock.advance(tick)
    }
    expect(memory.log.heldCount).toBe(0)
    // Every body that came late is placed (the log's marker gone).
    expect(await memory.log.lateBodies()).toEqual([])
    const storage = (memory.log as unknown as { storage: { entries(range: object): AsyncIterable<[string, Uint8Array]> } }).storage
    const root = `${space}:q:`
    const rows: string[] = []
    const asOf: string[] = []
    for await (const [key, bytes] of storage.entries({ gte: root, lt: `${root}\u{10FFFF}` })) {
      const part = key.slice(root.length)
      const value = Buffer.from(bytes).toString('utf8')
      if (part === 'm') continue
      if (part.startsWith('V:') || part.startsWith('T:')) asOf.push(`${part}=${value}`)
      else rows.push(`${part}=${value}`)
    }
    // What it appended itself (an admin's naming deletes) too.
    const log = await memory.log.envelopesSince({}, { signatures: 'stored' })
    const own = log.filter((event) => headerOf(event).author === memory.author)
    const ids = [...new Set([...deliveries.flat(), ...own].map((event) => event.id))].sort()
    const bodies = await Promise.all(ids.map(async (id) => `${id.slice(0, 12)}:${String((await memory.log.get(id))?.bodyState)}`))
    return { dump: rows.join('\n'), asOf: asOf.join('\n'), bodies: bodies.join('\n'), digest: await memory.digest(), own, log }
  } finally {
    await memory.close()
  }
}

/**
 * History entries (q:h:<id>:<position> = "<op><event id>") keyed by event instead: positions
 * follow the order a replica applied the events in, which differs between delivery orders.
 */
function historyByEvent(dump: string): string {
  return dump.split('\n').map((row) => {
    if (!row.startsWith('h:')) return row
    const key = row.slice(0, row.indexOf('='))
    const entry = JSON.parse(row.slice(key.length + 1)) as string
    return `${key.slice(0, key.lastIndexOf(':'))}:${entry.slice(1)}=${entry[0]}`
  }).sort().join('\n')
}

/** Equal outcomes: as-of versions only when both recorded every event at one time, positions only when both applied in one order. */
function expectAlike(other: Outcome, first: Outcome, { asOf = true, sameOrder = true } = {}): void {
  expect(other.bodies).toBe(first.bodies)
  if (sameOrder) expect(other.dump).toBe(first.dump)
  else expect(historyByEvent(other.dump)).toBe(historyByEvent(first.dump))
  if (asOf) expect(other.asOf).toBe(first.asOf)
  expect(other.digest).toBe(first.digest)
}

/**
 * The histories' events in one delivery, fed to replicas cut as `limits` says and as the defaults
 * and one event a batch. With `freshAdmin` they name the deletions they infer, and a replica
 * without the right that takes the events with those deletes after them ends as they do.
 */
async function expectCutsAlike(history: readonly Step[], cut: CatchUpLimits, seed: number, ownerActs: boolean, freshAdmin = false): Promise<Played> {
  const random = new SeededRandom(seed)
  const played = await playHistory(history, random, ownerActs, freshAdmin)
  const { space, now, byAuthor } = played
  const events = authorInterleaving(eventByEvent(byAuthor), random).flat()
  const first = await feed(space, now, [events], CATCH_UP_LIMITS, 0, freshAdmin)
  for (const limits of [ONE_EVENT_A_BATCH, cut]) expectAlike(await feed(space, now, [events], limits, 0, freshAdmin), first)
  if (freshAdmin) expectAlike(await feed(space, now, [[...events, ...first.own]], cut), first)
  return { ...played, random }
}

/** What `playHistory` gave, and the generator it went on with. */
interface Played { readonly space: string; readonly now: number; readonly byAuthor: EventEnvelope[][]; readonly random: SeededRandom }

/** Without its body, as a replica holds an event whose body it was not sent (yet). */
function headerOnly({ body: _body, ...header }: EventEnvelope): EventEnvelope {
  return header
}

/**
 * `order` in deliveries (inOrderDeliveries) with the body of each event in `late` withheld, and
 * the withheld bodies sent later: some after the delivery that brought their headers (a random
 * part of those owed so far), all the rest at the end, shuffled, in one or two deliveries.
 */
function lateBodyDeliveries(order: readonly (readonly EventEnvelope[])[], late: ReadonlySet<string>, random: SeededRandom): EventEnvelope[][] {
  const deliveries: EventEnvelope[][] = []
  const owed = new Map<string, EventEnvelope>()
  for (const delivery of inOrderDeliveries(order, random)) {
    deliveries.push(delivery.map((event) => (late.has(event.id) ? headerOnly(event) : event)))
    for (const event of delivery) if (late.has(event.id)) owed.set(event.id, event)
    if (random.int(0, 2) !== 0) continue
    const now = [...owed.values()].filter(() => random.int(0, 1) === 0)
    for (const event of now) owed.delete(event.id)
    if (now.length > 0) deliveries.push(random.shuffle(now))
  }
  const rest = random.shuffle([...owed.values()])
  const split = random.int(0, rest.length)
  for (const part of [rest.slice(0, split), rest.slice(split)]) if (part.length > 0) deliveries.push(part)
  return deliveries
}

describe('catch-up cuts', () => {
  it('the same events, fed to fresh replicas that cut their catch-ups differently, end alike', async () => {
    await fc.assert(fc.asyncProperty(fc.array(stepArbitrary(3), { minLength: 3, maxLength: 18 }), limitsArbitrary, fc.nat(), async (history, cut, seed) => {
      await expectCutsAlike(history, cut, seed, false)
    }), checkOptions(200))
  }, timeoutFor(200))

  // Found by a random seed: one id created as an episode and redacted by one writer, and as facts
  // of ep_p0 and ep_p1 by the others, ep_p0 forgotten. One event a batch, the fact of ep_p1 arrives
  // after the forget's seal deleted the record, and what it names is not noted (a deleted record
  // learns nothing); in one batch it arrived while the record was still redacted, and was noted
  // (q:p). Content reaching a redacted record now closes the run's deletions first.
  it('content reaching a redacted record whose parent a forget in the same batch deleted notes what a cut after the forget does', async () => {
    const history: Step[] = [
      { replica: 1, action: 2, a: 1, b: 0, tick: 0 }, { replica: 2, action: 0, a: 0, b: 0, tick: 0 }, { replica: 2, action: 6, a: 0, b: 1, tick: 0 },
      { replica: 1, action: 1, a: 0, b: 1, tick: 0 }, { replica: 0, action: 0, a: 1, b: 0, tick: 0 }, { replica: 0, action: 1, a: 0, b: 0, tick: 0 },
    ]
    await expectCutsAlike(history, { chunk: 1, batchEvents: 1, batchRecords: 1, batchNewRecords: 1, derivedWrites: 0 }, 1678458628, false)
  })

  // Kept out as below (oneShapeWhereRedacted), though without the filter it now passes too (600
  // runs, helper-68): every order of two shapes ends deleted (docs/design-decisions.md, "A redacted
  // record learns the parents of the bodies it erases").
  it('with the owner taking part (naming the deletions it infers, writing and forgetting), the cuts end alike', async () => {
    await fc.assert(fc.asyncProperty(fc.array(stepArbitrary(4), { minLength: 3, maxLength: 18 }).map(oneShapeWhereRedacted), limitsArbitrary, fc.nat(), async (history, cut, seed) => {
      await expectCutsAlike(history, cut, seed, true)
    }), checkOptions(100))
  }, timeoutFor(100))

  // Deliveries recorded at one time fall in one run, as one delivery does: everything stored
  // must be equal. Recorded at several times, the as-of versions differ as they should (each is
  // the view at the end of a run of equal recorded time, docs/design-decisions.md "Rebuild equals
  // incremental"); nothing else may.
  it('the same events in one causal order, reaching a fresh replica in several deliveries, end as in one', async () => {
    await fc.assert(fc.asyncProperty(fc.array(stepArbitrary(4), { minLength: 3, maxLength: 18 }), fc.boolean(), fc.nat(1), limitsArbitrary, fc.nat(), async (history, ownerActs, tick, cut, seed) => {
      const random = new SeededRandom(seed)
      const { space, now, byAuthor } = await playHistory(history, random, ownerActs)
      const order = causalOrder(signedSegments(byAuthor), random)
      const deliveries = inOrderDeliveries(order, random)
      const first = await feed(space, now, [order.flat()], CATCH_UP_LIMITS)
      for (const limits of [CATCH_UP_LIMITS, cut]) expectAlike(await feed(space, now, deliveries, limits, tick), first, { asOf: tick === 0 })
    }), checkOptions(100))
  }, timeoutFor(100))

  // Found by a soak (helper-80): shared_0 created as a fact of ep_p1 by a writer and by the owner,
  // as a fact of ep_p0 by another writer, who redacts it; a third makes it an episode. Cut one
  // event a batch, the redaction's seal had learned ep_p1 from a body it erased before a later
  // fact of ep_p1 arrived, so that one's erasure noted no teaching; in one batch nothing was
  // learned yet and it did (q:p differed). What a seal learned no longer counts as known there.
  it('content erased at a redacted record teaches the parents it names whether or not a seal learned them first', async () => {
    const history: Step[] = [
      { replica: 1, action: 1, a: 0, b: 1, tick: 0 }, { replica: 0, action: 9, a: 1, b: 0, tick: 0 }, { replica: 0, action: 1, a: 0, b: 0, tick: 0 },
      { replica: 3, action: 1, a: 0, b: 1, tick: 0 }, { replica: 0, action: 6, a: 0, b: 0, tick: 0 }, { replica: 2, action: 0, a: 0, b: 0, tick: 0 },
      { replica: 0, action: 0, a: 0, b: 0, tick: 0 }, { replica: 0, action: 0, a: 0, b: 0, tick: 0 }, { replica: 0, action: 0, a: 1, b: 0, tick: 0 },
    ]
    const random = new SeededRandom(156865516)
    const { space, now, byAuthor } = await playHistory(history, random, true)
    const order = causalOrder(signedSegments(byAuthor), random)
    const deliveries = inOrderDeliveries(order, random)
    const first = await feed(space, now, [order.flat()], CATCH_UP_LIMITS)
    for (const limits of [CATCH_UP_LIMITS, { ...ONE_EVENT_A_BATCH, derivedWrites: 0 }]) expectAlike(await feed(space, now, deliveries, limits, 0), first, { asOf: true })
    // A body arriving after its header, once the record is redacted, is replayed and teaches
    // the same (helper-82: a late body counted what a seal learned as known, was erased
    // directly and noted nothing). Each body in turn comes last.
    for (const event of order.flat()) {
      if (event.body === undefined || headerOf(event).kind === 'control') continue
      const held = order.map((unit) => unit.map((each) => (each.id === event.id ? headerOnly(each) : each)))
      expectAlike(await feed(space, now, [...inOrderDeliveries(held, random), [event]], CATCH_UP_LIMITS), first, { asOf: true })
    }
  })

  // The owner grants FRESH_ADMIN `admin` first; each fresh replica is that key, so it names what
  // it infers at the end of its ingest (writers never name theirs; an acting owner names some
  // first). Its deletes, salted alike, must be the same events whatever the cuts, and a replica
  // without the right that gets them after the set must end as the admin did.
  // Then the set in several deliveries of one causal order: the admin names after each, so what
  // it appends differs from one delivery's, but the events in the order its log holds them (the
  // set's as their authors sent them: the admin's log would send headers of what it erased, and
  // the deletion of a link erased at once is what no log shows, q:z), in one delivery to a
  // replica without the right, must give what the admin stored (as-of versions apart when it
  // recorded at several times).
  async function expectAdminAlike(history: readonly Step[], ownerActs: boolean, tick: number, cut: CatchUpLimits, seed: number): Promise<void> {
    const { space, now, byAuthor, random } = await expectCutsAlike(history, cut, seed, ownerActs, true)
    const admin = await feed(space, now, inOrderDeliveries(causalOrder(signedSegments(byAuthor), random), random), cut, tick, true)
    const sent = new Map(byAuthor.flat().map((event) => [event.id, event]))
    expectAlike(await feed(space, now, [admin.log.map((event) => sent.get(event.id) ?? event)], CATCH_UP_LIMITS), admin, { asOf: tick === 0 })
  }

  it('fresh replicas holding admin (naming the deletions they infer while catching up) end alike however cut', async () => {
    await fc.assert(fc.asyncProperty(longHistory, fc.boolean(), fc.nat(1), limitsArbitrary, fc.nat(), expectAdminAlike), checkOptions(60))
  }, timeoutFor(60, 1000))

  // Found by a random seed (1 in ~400 runs): shared_0 patched as an episode, created as a fact of
  // ep_p0, then redacted as an episode. In one batch the redaction came while the record's kind
  // was still to be decided by a replay at the seal, not created as either kind, and it did not
  // learn the parent the fact's create named, which its erasure then hid; the admin, whose cut let
  // the replay run first, did learn it.
  it('a redaction reaching a record whose kind a replay has yet to decide learns what its bodies name', async () => {
    const history: Step[] = [
      { replica: 2, action: 0, a: 0, b: 1, tick: 0 }, { replica: 1, action: 9, a: 0, b: 0, tick: 0 }, { replica: 1, action: 7, a: 0, b: 1, tick: 0 },
      { replica: 0, action: 0, a: 1, b: 1, tick: 0 }, { replica: 0, action: 1, a: 0, b: 0, tick: 0 }, { replica: 0, action: 0, a: 0, b: 1, tick: 0 },
      { replica: 0, action: 0, a: 1, b: 0, tick: 0 }, { replica: 0, action: 0, a: 0, b: 1, tick: 0 }, { replica: 0, action: 4, a: 0, b: 0, tick: 0 },
      { replica: 2, action: 6, a: 0, b: 1, tick: 0 }, { replica: 0, action: 0, a: 0, b: 1, tick: 0 },
    ]
    await expectAdminAlike(history, false, 0, { chunk: 1, batchEvents: 1, batchRecords: 1, batchNewRecords: 1, derivedWrites: 0 }, 1077269210)
  })

  // Headers before bodies: the log keeps a header-only event, and a body arriving later is
  // placed (SpaceLog.lateBodies) by replaying its records, or erased at once where its record is
  // deleted or redacted. Once every body has arrived, everything stored must be as one delivery
  // with every body left it (the as-of versions too, when all is recorded at one time). Kept out
  // as in the orders below (oneShapeWhereRedacted): a late body changes what a replica applied
  // before what, and with two shapes the record now ends deleted either way, but what the erased
  // create taught it is stored under the event that erased it (q:p: the redaction, or the create
  // itself when it came after), so the stores differ in those rows.
  it('the same events with some bodies withheld and sent later end as in one delivery with every body', async () => {
    await fc.assert(fc.asyncProperty(longHistory.map(oneShapeWhereRedacted), fc.boolean(), fc.nat(1), limitsArbitrary, fc.nat(), async (history, ownerActs, tick, cut, seed) => {
      const random = new SeededRandom(seed)
      const { space, now, byAuthor } = await playHistory(history, random, ownerActs)
      const order = causalOrder(signedSegments(byAuthor), random)
      // Control events (genesis, grants) always come whole, as a relay sends them; of the rest,
      // any that carries a body may come without it.
      const late = new Set(order.flat().filter((event) => event.body !== undefined && headerOf(event).kind !== 'control' && random.int(0, 1) === 0).map((event) => event.id))
      const first = await feed(space, now, [order.flat()], CATCH_UP_LIMITS)
      for (const limits of [CATCH_UP_LIMITS, cut]) expectAlike(await feed(space, now, lateBodyDeliveries(order, late, random), limits, tick), first, { asOf: tick === 0 })
    }), checkOptions(100))
  }, timeoutFor(100, 1000))

  // Another order changes the log positions, so history entries are compared by event. Kept out:
  // an id redacted and created in more than one shape (an episode, a fact of ep_p0, of ep_p1).
  // Such a record ends the same in every order (docs/design-decisions.md, "A redacted record
  // learns the parents of the bodies it erases"; inferred-deletion.test.ts), but what an erased
  // create taught it (q:p) is keyed by the event that erased it, which depends on the order.
  it('the same events in other orders, split, shuffled and out of order, end alike', async () => {
    const steps = fc.array(stepArbitrary(4), { minLength: 3, maxLength: 18 }).map(oneShapeWhereRedacted)
    await fc.assert(fc.asyncProperty(steps, fc.boolean(), fc.boolean(), fc.nat(1), limitsArbitrary, fc.nat(), async (history, ownerActs, causal, tick, cut, seed) => {
      const random = new SeededRandom(seed)
      const { space, now, byAuthor } = await playHistory(history, random, ownerActs)
      const units = signedSegments(byAuthor)
      const first = await feed(space, now, [causalOrder(units, random).flat()], CATCH_UP_LIMITS)
      // Two other orders (more orders meet more of what arrives before what), cut two ways.
      for (const limits of [CATCH_UP_LIMITS, cut]) {
        const order = causal ? causalOrder(units, random) : authorInterleaving(units, random)
        expectAlike(await feed(space, now, scrambledDeliveries(order, random), limits, tick), first, { asOf: tick === 0, sameOrder: false })
      }
    }), checkOptions(100))
  }, timeoutFor(100))
})

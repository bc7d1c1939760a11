/**
 * Two replicas that choose one id for records of two kinds before seeing each other's end
 * alike (memory-model.md §1.3): the id takes its earliest create's kind whatever arrived first,
 * the other kind's operations neither show nor count, a deletion takes the id whatever its kind
 * and erases the bodies of both, and a replay interrupted by a crash resumes on open. Stores of
 * projection layout 4 whose log holds such an id are rebuilt when they open.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/log/clock.js'
import { Identity, LogStore, type EventEnvelope } from '../../src/log/index.js'
import { Memory } from '../../src/memory/index.js'
import { CATCH_UP_LIMITS, type Projection } from '../../src/projection/index.js'
import { decodeMeta } from '../../src/projection/projection-codec.js'
import { reopenAtLayout } from '../helpers/layout-reopen.js'
import { bodyText, deliver, openReplicas } from '../helpers/memory-replicas.js'

const open: { close(): Promise<void> }[] = []
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close()
})

function projectionOf(memory: Memory): Projection {
  return (memory as unknown as { core: { projection: Projection } }).core.projection
}

/** The kind each event in a record's history was written for. */
async function historyKinds(memory: Memory, id: string): Promise<string[]> {
  const out: string[] = []
  for (const item of await memory.history(id)) {
    const event = await memory.log.get(item.event)
    out.push(String((event?.body?.data as { kind?: unknown } | undefined)?.kind))
  }
  return out
}

/** A laptop writes `shared` as an entity at 1,000 ms, a phone as an episode at 2,000 ms, each unseen by the other. */
async function twoKinds(order: 'laptop first' | 'phone first') {
  const clock = new ManualClock(Date.UTC(2026, 0, 1))
  const { memories: [laptop, phone] } = await openReplicas(2, clock)
  open.push(laptop as Memory, phone as Memory)
  clock.advance(1000)
  await (laptop as Memory).remember({ kind: 'entity', id: 'shared', type: 'person', canonicalName: 'Ann', summary: 'secret-entity' })
  clock.advance(1000)
  await (phone as Memory).remember({ kind: 'episode', id: 'shared', summary: 'secret-episode', tags: ['walk'] })
  await (phone as Memory).update('shared', { set: { importance: 0.9 } })
  const [first, second] = order === 'laptop first' ? [laptop, phone] : [phone, laptop]
  await deliver(first as Memory, second as Memory)
  await deliver(second as Memory, first as Memory)
  return { laptop: laptop as Memory, phone: phone as Memory }
}

const ON_DEMAND = { fullText: false, asOf: false, onDemand: true }

describe('one id created as two kinds', () => {
  // The laptop creates `shared` as an episode first; the phone then creates it as a fact of its
  // episode ep_p, with a link to another fact, and the laptop forgets ep_p. On the phone, the
  // laptop's events flag `shared` for a replay as an episode; the forget in the same catch-up
  // must not delete `shared` as a fact of ep_p meanwhile, nor its link with it (erasing the
  // link's body), which no replay of `shared` brings back.
  for (const delivery of ['in one catch-up', 'one event at a time'] as const) {
    it(`a deletion in the catch-up that changes a record's kind is judged under the winning kind (${delivery})`, async () => {
      const clock = new ManualClock(Date.UTC(2026, 0, 1))
      const [laptop, phone] = (await openReplicas(2, clock)).memories as [Memory, Memory]
      open.push(laptop, phone)
      clock.advance(1000)
      await phone.remember({ kind: 'episode', id: 'ep_p', summary: 'parent episode' })
      await phone.remember({ kind: 'episode', id: 'ep_q', summary: 'other episode' })
      await phone.remember({ kind: 'fact', id: 'fact_f2', episodeID: 'ep_q', subject: 'a', predicate: 'b', object: 'c' })
      await deliver(phone, laptop)
      clock.advance(1000)
      await laptop.remember({ kind: 'episode', id: 'shared', summary: 'laptop episode' })
      clock.advance(1000)
      await phone.remember({ kind: 'fact', id: 'shared', episodeID: 'ep_p', subject: 'x', predicate: 'y', object: 'z' })
      const link = await phone.remember({ kind: 'factLink', srcFactID: 'shared', dstFactID: 'fact_f2', linkType: 'supports-link' })
      clock.advance(1000)
      await laptop.forget('ep_p')
      await deliver(phone, laptop)
      if (delivery === 'in one catch-up') await deliver(laptop, phone)
      else for (const envelope of await laptop.log.envelopesSince(phone.versionVector(), { signatures: 'stored' })) await phone.ingest([envelope])
      for (const memory of [laptop, phone]) {
        expect(await memory.get('shared')).toMatchObject({ kind: 'episode', summary: 'laptop episode' })
        expect(await memory.status(link)).toBe('visible')
        expect(await bodyText(memory)).toContain('supports-link')
      }
      expect(await phone.digest()).toBe(await laptop.digest())
      const digest = await phone.digest()
      await phone.rebuild()
      expect(await phone.digest()).toBe(digest)
    })
  }

  for (const order of ['laptop first', 'phone first'] as const) {
    it(`takes the earliest create's kind on every replica (${order})`, async () => {
      const { laptop, phone } = await twoKinds(order)
      for (const memory of [laptop, phone]) {
        // The phone showed its episode until the laptop's earlier entity arrived.
        expect(await memory.get('shared')).toMatchObject({ kind: 'entity', canonicalName: 'Ann', summary: 'secret-entity' })
        expect(await memory.query({ kind: 'episode' })).toEqual({ records: [] })
        expect(await memory.search('secret')).toEqual([expect.objectContaining({ record: expect.objectContaining({ kind: 'entity' }) })])
        // The episode's events are not the entity's history.
        expect(await historyKinds(memory, 'shared')).toEqual(['entity'])
      }
      expect(await phone.digest()).toBe(await laptop.digest())
      const digest = await phone.digest()
      await phone.rebuild()
      expect(await phone.digest()).toBe(digest)
    })
  }

  it('a record deleted only through its parent still takes the kind of an earlier create that arrives later, and a link deleted through it comes back', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1))
    const [owner, phone, laptop] = (await openReplicas(3, clock)).memories as [Memory, Memory, Memory]
    open.push(owner, phone, laptop)
    await owner.remember({ kind: 'episode', id: 'ep_p', summary: 'parent episode' })
    await owner.remember({ kind: 'episode', id: 'ep_q', summary: 'other episode' })
    await owner.remember({ kind: 'fact', id: 'fact_f2', episodeID: 'ep_q', subject: 'a', predicate: 'b', object: 'c' })
    await deliver(owner, phone)
    await deliver(owner, laptop)
    clock.advance(1000)
    await laptop.remember({ kind: 'episode', id: 'shared', summary: 'laptop episode' })   // the earliest create
    clock.advance(1000)
    await owner.forget('ep_p')
    clock.advance(1000)
    await phone.remember({ kind: 'fact', id: 'shared', episodeID: 'ep_p', subject: 'x', predicate: 'y', object: 'z' })
    const link = await phone.remember({ kind: 'factLink', srcFactID: 'shared', dstFactID: 'fact_f2', linkType: 'supports-link' })
    // The phone deletes its fact, and the link through it, with the episode; then it learns of
    // the laptop's earlier episode, which gives the record back, and the link with it.
    await deliver(owner, phone)
    expect(await phone.status('shared')).toBe('deleted')
    expect(await phone.status(link)).toBe('deleted')
    await deliver(laptop, phone)
    expect(await phone.get('shared')).toMatchObject({ kind: 'episode', summary: 'laptop episode' })
    expect(await phone.status(link)).toBe('visible')
    for (const [from, to] of [[phone, owner], [phone, laptop], [laptop, owner], [owner, laptop]] as const) await deliver(from, to)
    for (const memory of [owner, phone, laptop]) {
      expect(await memory.get('shared'), memory.author).toMatchObject({ kind: 'episode', summary: 'laptop episode' })
      expect(await memory.status(link), memory.author).toBe('visible')
      expect(await bodyText(memory)).toContain('supports-link')
    }
    expect(new Set(await Promise.all([owner, phone, laptop].map((memory) => memory.digest()))).size).toBe(1)
    for (const memory of [owner, phone, laptop]) {
      const digest = await memory.digest()
      await memory.rebuild()
      expect(await memory.digest()).toBe(digest)
    }
  })

  // The phone forgets ep_p and then creates `shared` as an episode; the laptop, which made it a
  // fact of ep_p earlier (the fact wins), applies both in one run of recorded time. Whether the
  // deletion through ep_p is found before the episode's create (a catch-up cut between them) or
  // after it (one batch), the create's history entry is the same: kept, like the fact's.
  it('a create of the other kind on a record deleted through its parent is kept in its history however catch-ups are cut', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1))
    // The owner, an admin, would name the deletion (erasing the bodies): two writers instead.
    const [owner, laptop, phone] = (await openReplicas(3, clock)).memories as [Memory, Memory, Memory]
    open.push(owner, laptop, phone)
    await owner.remember({ kind: 'episode', id: 'ep_p', summary: 'parent episode' })
    for (const memory of [laptop, phone]) await deliver(owner, memory)
    await laptop.remember({ kind: 'fact', id: 'shared', episodeID: 'ep_p', subject: 'x', predicate: 'y', object: 'z' })
    await phone.forget('ep_p')
    await phone.remember({ kind: 'episode', id: 'shared', summary: 'phone episode' })
    // The laptop applies the phone's events one at a time, in a run of their own.
    clock.advance(1)
    projectionOf(laptop).limits = { chunk: 1, batchEvents: 1, batchRecords: 1, batchNewRecords: 1, derivedWrites: 1 }
    await deliver(phone, laptop)
    expect(await laptop.status('shared')).toBe('deleted')
    const storage = laptop.log as unknown as { storage: { entries(range: object): AsyncIterable<[string, Uint8Array]> } }
    const history = async (): Promise<string[]> => {
      const prefix = `${laptop.space}:q:h:shared:`
      const out: string[] = []
      for await (const [, value] of storage.storage.entries({ gte: prefix, lt: `${prefix}\uffff` })) out.push((JSON.parse(Buffer.from(value).toString('utf8')) as string).slice(0, 1))
      return out
    }
    // The fact's create and the episode's, both kept until a deletion names `shared`.
    expect(await history()).toEqual(['k', 'k'])
    // Derived again with the default cuts (the whole log in one batch): the same.
    expect((await laptop.checkProjection()).named).toEqual([])
    projectionOf(laptop).limits = CATCH_UP_LIMITS
    await laptop.rebuild()
    expect(await history()).toEqual(['k', 'k'])
  })

  // A writer forgets ep_p, then creates `shared` as an episode and redacts it; another made it a
  // fact of ep_p, and the owner creates it as an episode too. The fact's deletion through ep_p
  // took its earliest create out of its state, so where a cut fell between that deletion and the
  // owner's create, the create "won" the kind however late it was; the redaction then erased the
  // kept creates before the replay could undo that, and the replay took the redaction's kind: a
  // redacted episode one event a batch, a deleted fact in one batch. (Every order now ends deleted:
  // the fact's create teaches the redacted record ep_p; the cuts must not decide it either way.)
  for (const winner of ['fact', 'episode'] as const) it(`a create of the other kind on a record deleted through its parent wins only if it is earlier, however catch-ups are cut (${winner} earliest)`, async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1))
    const { memories } = await openReplicas(3, clock)
    const [owner, w0, w1] = memories as [Memory, Memory, Memory]
    open.push(...memories)
    await owner.remember({ kind: 'episode', id: 'ep_p', summary: 'parent episode' })
    for (const memory of [w0, w1]) await deliver(owner, memory)
    const mine = async (memory: Memory): Promise<EventEnvelope[]> => (await memory.log.envelopesSince({}, { signatures: 'stored' }))
      .filter((event) => (JSON.parse(Buffer.from(event.header).toString('utf8')) as { author: string }).author === memory.author)
    const base = await mine(owner)
    if (winner === 'episode') await owner.remember({ kind: 'episode', id: 'shared', summary: 'owner episode' })
    clock.advance(1000)
    await w0.forget('ep_p')
    await w1.remember({ kind: 'fact', id: 'shared', episodeID: 'ep_p', subject: 'x', predicate: 'y', object: 'z' })
    await w0.remember({ kind: 'episode', id: 'shared', summary: 'w0 episode' })
    await w0.redact('shared')
    clock.advance(1000)
    if (winner === 'fact') await owner.remember({ kind: 'episode', id: 'shared', summary: 'owner episode' })
    const [forget, episode, redaction] = await mine(w0) as [EventEnvelope, EventEnvelope, EventEnvelope]
    const [fact] = await mine(w1) as [EventEnvelope]
    const ownerEpisode = (await mine(owner)).at(-1) as EventEnvelope
    const orders = (events: EventEnvelope[]): EventEnvelope[][] => events.length === 0 ? [[]]
      : events.flatMap((event, i) => orders([...events.slice(0, i), ...events.slice(i + 1)]).map((rest) => [event, ...rest]))
    const causal = orders([forget, episode, redaction, fact, ownerEpisode])
      .filter((order) => order.indexOf(forget) < order.indexOf(episode) && order.indexOf(episode) < order.indexOf(redaction))
    for (const order of causal) {
      const seen: string[] = []
      for (const limits of [CATCH_UP_LIMITS, { chunk: 1, batchEvents: 1, batchRecords: 1, batchNewRecords: 1, derivedWrites: 1 }]) {
        const fresh = await Memory.open({ clock, space: owner.space })
        open.push(fresh)
        projectionOf(fresh).limits = limits
        await fresh.ingest([...base, ...order])
        seen.push(`${await fresh.status('shared')} ${await fresh.digest()} ${(await fresh.checkProjection()).named.length}`)
      }
      expect(seen[1], order.map((event) => event.id.slice(0, 8)).join()).toBe(seen[0])
      // The order found: the fact's deletion is found before the redaction, which loses to it
      // where the fact wins. Where the episode wins, the redaction erases the fact's create (of
      // the losing kind), which named the forgotten ep_p: the redacted record learns that parent
      // and is deleted with it (design-decisions.md, "a redacted record learns the parents of the
      // bodies it erases"). Either way the replica matches its own log.
      if (order.map((event) => event.id).join() === [forget, episode, fact, ownerEpisode, redaction].map((event) => event.id).join()) expect(seen[0]).toMatch(/^deleted \S+ 0$/)
    }
  })

  // A reader holds every event of `shared` header-only (its bodies left out, then sent late),
  // the phone's episode first in its log. Placing the bodies replays a record it never stored:
  // the replay must start it with the kind its events decide, as it does a stored one, or the
  // episode, applied first, keeps the id and the laptop's earlier entity create only notes it.
  // Found by the late-bodies variant of catch-up-cuts.property.test.ts.
  it('bodies that arrive late for every create of a record never stored give the earliest create\'s kind', async () => {
    const { laptop, phone } = await twoKinds('laptop first')
    const reader = await Memory.open({ space: laptop.space, clock: new ManualClock(Date.UTC(2026, 0, 2)) })
    open.push(reader)
    const events = await laptop.log.envelopesSince({}, { signatures: 'stored' })
    const isControl = (event: EventEnvelope): boolean => Buffer.from(event.header).toString('utf8').includes('"kind":"control"')
    const authorOf = (event: EventEnvelope): string => (JSON.parse(Buffer.from(event.header).toString('utf8')) as { author: string }).author
    const data = events.filter((event) => !isControl(event))
    const phoneFirst = [...data.filter((event) => authorOf(event) === phone.author), ...data.filter((event) => authorOf(event) !== phone.author)]
    await reader.ingest([...events.filter(isControl), ...phoneFirst.map(({ body: _body, ...header }) => header)])
    expect(await reader.get('shared')).toBeUndefined()
    expect((await reader.ingest(data)).filled).toHaveLength(data.length)
    expect(await reader.get('shared')).toMatchObject({ kind: 'entity', canonicalName: 'Ann', summary: 'secret-entity' })
    expect(await historyKinds(reader, 'shared')).toEqual(['entity'])
    expect(await reader.digest()).toBe(await laptop.digest())
    expect((await reader.checkProjection()).named).toEqual([])
  })

  it('a deletion takes the id whatever kind the deleting replica held, and erases the bodies of both kinds everywhere', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1))
    const { memories: [laptop, phone] } = await openReplicas(2, clock)
    open.push(laptop as Memory, phone as Memory)
    await (laptop as Memory).remember({ kind: 'entity', id: 'shared', type: 'person', canonicalName: 'Ann', summary: 'secret-entity' })
    clock.advance(1000)
    await (phone as Memory).remember({ kind: 'episode', id: 'shared', summary: 'secret-episode' })
    // The phone forgets its episode before it has seen the laptop's entity (which wins the kind).
    await (phone as Memory).forget('shared')
    await deliver(laptop as Memory, phone as Memory)
    await deliver(phone as Memory, laptop as Memory)
    for (const memory of [laptop as Memory, phone as Memory]) {
      expect(await memory.status('shared')).toBe('deleted')
      const bodies = await bodyText(memory)
      expect(bodies).not.toContain('secret-entity')
      expect(bodies).not.toContain('secret-episode')
    }
    expect(await (phone as Memory).digest()).toBe(await (laptop as Memory).digest())
  })

  it('forgetting the winner erases the losing kind\'s bodies too, on every replica that holds them', async () => {
    const { laptop, phone } = await twoKinds('phone first')
    // Both hold the phone's episode create (and its edit) as operations of the losing kind.
    expect(await bodyText(laptop)).toContain('secret-episode')
    await laptop.forget('shared')
    await deliver(laptop, phone)
    for (const memory of [laptop, phone]) {
      expect(await memory.status('shared')).toBe('deleted')
      const bodies = await bodyText(memory)
      expect(bodies).not.toContain('secret-entity')
      expect(bodies).not.toContain('secret-episode')
      expect(bodies).not.toContain('0.9')
    }
    expect(await phone.digest()).toBe(await laptop.digest())
  })

  for (const [name, features] of [['a full projection', undefined], ['an on-demand projection (a relay)', ON_DEMAND]] as const) it(`a replay the kind change needs, cut short by a crash, is done when the store opens again (${name})`, async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1))
    const owner = await Memory.open({ clock })
    const store = await LogStore.open()
    const identity = Identity.generate()
    const phoneLog = await store.openSpace(owner.space)
    await owner.grant(identity.author)
    let phone = await Memory.attach(store, phoneLog.space, identity, features)
    open.push(owner, store)
    await phone.ingest(await owner.events())
    await owner.remember({ kind: 'entity', id: 'shared', type: 'person', canonicalName: 'Ann' })
    clock.advance(1000)
    await phone.remember({ kind: 'episode', id: 'shared', summary: 'a walk' })
    // The replay never runs: as if the process died once the batch that found the change was stored.
    const projection = projectionOf(phone) as unknown as { replayKindChanges(): Promise<unknown[]> }
    projection.replayKindChanges = async () => []
    await phone.ingest(await owner.events(phone.versionVector()))
    expect((await phone.get('shared'))?.kind).toBe('episode')
    await phone.close()
    phone = await Memory.attach(store, phoneLog.space, identity, features)
    open.push(phone)
    expect(await phone.get('shared')).toMatchObject({ kind: 'entity', canonicalName: 'Ann' })
    expect(decodeMeta(await store.storage.get(`${phone.space}:q:m`)).kindReplays).toBeUndefined()
    await owner.ingest(await phone.events(owner.versionVector()))
    expect(await phone.digest()).toBe(await owner.digest())
  })
})

describe('projection layout 4 → 5', () => {
  /** A store whose meta says layout 4, opened again; `twoKinds`: its log holds one id written as two kinds. */
  async function storeAtLayout4(twoKinds: boolean) {
    const store = await LogStore.open()
    const identity = Identity.generate()
    const log = await store.createSpace(identity)
    const memory = await Memory.attach(store, log.space, identity)
    await memory.remember({ kind: 'entity', id: 'shared', type: 'person', canonicalName: 'Ann' })
    // Layout 4 refused nothing here: another kind's create of the id was skipped on arrival.
    if (twoKinds) await memory.log.append(identity, { op: 'memory.create', data: { kind: 'episode', id: 'shared', fields: { summary: 'a walk' } } })
    await memory.get('shared')
    await memory.close()
    open.push(store)
    const { memory: reopened, marker } = await reopenAtLayout(store, log.space, identity, 4)
    open.push(reopened)
    return { store, memory: reopened, marker }
  }

  it('rebuilds a store whose log holds one id written as two kinds', async () => {
    const { store, memory, marker } = await storeAtLayout4(true)
    expect(await store.storage.get(marker)).toBeUndefined()
    expect((await memory.get('shared'))?.kind).toBe('entity')
  })

  it('only records layout 5 on a store without one', async () => {
    const { store, memory, marker } = await storeAtLayout4(false)
    expect(await store.storage.get(marker)).toBeDefined()
    expect((await memory.get('shared'))?.kind).toBe('entity')
  })
})

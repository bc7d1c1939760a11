/**
 * The relay's view of events for a tag-scoped reader (RelayEndpoint.visible), with the relay's
 * records changing while it judges a batch, as they do when another peer's frame is applied
 * meanwhile. Every event of a record in one batch is judged on the same view of it, so what the
 * reader holds of the record ends as the record's place in its scope: every body while it is in
 * scope, none once it left. The change is made between two reads of the record, by wrapping
 * `get` on the relay's memory: no sockets, no timing.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { decodeToken } from '../../src/auth/index.js'
import { defaultCrypto, joinVectors, type EventEnvelope, type VersionVector } from '../../src/log/index.js'
import type { Memory } from '../../src/memory/index.js'
import { vectorOfEvents } from '../../src/sync/frames.js'
import { deletionsFirst } from '../../src/sync/catch-up-order.js'
import { RelayEndpoint } from '../../src/sync/relay-endpoint.js'
import type { Outgoing } from '../../src/sync/sync-session.js'
import { eventsOf, openOwner, openReplica, Teardown, tokenFor } from '../helpers/sync-fixtures.js'

const teardown = new Teardown()
afterEach(() => teardown.run())

/** The owner's memory serves as the relay's; `change` runs once, right after the first read of `id`. */
async function setting(tags: string[]) {
  const owner = await openOwner(teardown)
  const reader = await openReplica(teardown, owner)
  const token = decodeToken(tokenFor(owner, reader, { tags: { any: ['work'] } }), defaultCrypto())
  // The reader holds the space's start: a peer holding nothing gets no fills or withdrawals.
  const start = owner.versionVector()
  const id = await owner.remember({ kind: 'episode', summary: 'repainting the kitchen ochre', tags })
  await owner.update(id, { set: { details: 'two coats' } })
  const endpoint = new RelayEndpoint(owner, { key: reader.author, token })
  return { owner, endpoint, id, start }
}

function changeAfterFirstRead(memory: Memory, id: string, change: () => Promise<unknown>): void {
  const get = memory.get.bind(memory)
  let changed = false
  memory.get = async (...args: Parameters<Memory['get']>) => {
    const view = await get(...args)
    if (!changed && args[0] === id) {
      changed = true
      await change()
    }
    return view
  }
}

/** Sends what the owner holds beyond `vector` through the endpoint; returns it and the reader's vector after. */
async function exchange(owner: Memory, endpoint: RelayEndpoint, vector: VersionVector): Promise<{ outgoing: Outgoing; vector: VersionVector }> {
  const envelopes = await owner.log.envelopesSince(vector, { signatures: 'stored' })
  const outgoing = await endpoint.visible(envelopes, vector)
  return { outgoing, vector: joinVectors(vector, vectorOfEvents(envelopes)) }
}

/** The bodies of `events` a reader ends with, applying each outgoing in order (withdrawals, fills, events). */
function bodiesHeld(outgoings: readonly Outgoing[], id: string, events: readonly string[]): string[] {
  const held = new Set<string>()
  const take = (envelopes: readonly EventEnvelope[] | undefined): void => {
    for (const envelope of envelopes ?? []) if (envelope.body && events.includes(envelope.id)) held.add(envelope.id)
  }
  for (const outgoing of outgoings) {
    if (outgoing.withdraw?.includes(id)) held.clear()
    take(outgoing.fills)
    take(outgoing.events)
  }
  return events.filter((event) => held.has(event))
}

describe('a record whose tags change while the relay judges a batch for a tag reader', () => {
  it('arrives whole once it came into scope: the batch\'s earlier events are filled in too', async () => {
    const { owner, endpoint, id, start } = await setting(['home'])
    changeAfterFirstRead(owner, id, () => owner.update(id, { add: { tags: ['work'] } }))
    const first = await exchange(owner, endpoint, start)
    // The tag change is pushed after the batch, as a relay pushes what it applied meanwhile.
    const second = await exchange(owner, endpoint, first.vector)
    const events = await eventsOf(owner, id)
    expect(events).toHaveLength(3)
    expect(bodiesHeld([first.outgoing, second.outgoing], id, events)).toEqual(events)
  })

  it('keeps nothing of it once it left scope: no body of the batch follows its withdrawal', async () => {
    const { owner, endpoint, id, start } = await setting(['work'])
    changeAfterFirstRead(owner, id, () => owner.update(id, { remove: { tags: ['work'] }, add: { tags: ['home'] } }))
    const first = await exchange(owner, endpoint, start)
    const second = await exchange(owner, endpoint, first.vector)
    const events = await eventsOf(owner, id)
    expect(bodiesHeld([first.outgoing, second.outgoing], id, events)).toEqual([])
  })
})

describe('a catch-up for a token peer', () => {
  /** A relay's memory holding preferences and episodes, one of each deleted, and a reader's token of `scope`. */
  async function catchUp(scope: Parameters<typeof tokenFor>[2]) {
    const owner = await openOwner(teardown)
    const reader = await openReplica(teardown, owner)
    for (let i = 0; i < 30; i++) {
      await owner.rememberMany([
        { kind: 'preference', key: `p${i}`, value: `v${i}` },
        { kind: 'episode', summary: `episode ${i}`, tags: i % 2 === 0 ? ['work'] : ['home'] },
      ])
    }
    const [preference] = (await owner.query({ kind: 'preference', limit: 1 })).records
    const [episode] = (await owner.query({ kind: 'episode', limit: 1 })).records
    await owner.forget(preference?.id as string)
    await owner.forget(episode?.id as string)
    const endpoint = new RelayEndpoint(owner, { key: reader.author, token: decodeToken(tokenFor(owner, reader, scope), defaultCrypto()) })
    // What the whole-set path sends: the same catch-up order, judged at once.
    const whole = await endpoint.visible(await deletionsFirst(await owner.log.envelopesSince({}, { signatures: 'stored' }), (id) => owner.log.causalVector(id)), {})
    return { outgoing: await endpoint.envelopesFor({}), whole }
  }
  const shape = (events: readonly EventEnvelope[]) => events.map((event) => `${event.id}:${event.body ? 'body' : 'header'}`)

  it('is streamed and judged batch by batch when the scope names no tags, as the whole set would be', async () => {
    const { outgoing, whole } = await catchUp({ kinds: ['preference'] })
    expect(outgoing.events).toEqual([])
    expect(outgoing.more).toBeDefined()
    const streamed: EventEnvelope[] = []
    for await (const batch of outgoing.more ?? []) streamed.push(...batch)
    expect(whole.fills ?? []).toEqual([])
    expect(shape(streamed)).toEqual(shape(whole.events))
    expect(streamed.filter((event) => event.body).length).toBeLessThan(streamed.length)
  })

  it('is judged over the whole set when the scope names tags', async () => {
    const { outgoing, whole } = await catchUp({ tags: { any: ['work'] } })
    expect(outgoing.more).toBeUndefined()
    expect(shape(outgoing.events)).toEqual(shape(whole.events))
  })
})

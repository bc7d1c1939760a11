/**
 * What a version-2 relay takes from a token holder, beyond its own writes judged one by one
 * (test/sync/scope.test.ts): events of other authors it holds (never withheld: left to their
 * author, the holder retrying until the author has brought them whole), bodies of events the relay keeps as headers (never filled in
 * from a token holder), a frame that repeats an event or reorders an author's events, and what
 * the refusal messages give away about records outside the scope (nothing).
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { EventEnvelope } from '../../src/log/index.js'
import type { Memory } from '../../src/memory/index.js'
import { recordIdFor } from '../../src/projection/index.js'
import type { WithheldEvent } from '../../src/sync/messages.js'
import { craftChain, RawPeer } from '../helpers/raw-peer.js'
import { download, openOwner, openReplica, startRelay, startSync, storeText, Teardown, tokenFor, waitFor } from '../helpers/sync-fixtures.js'

const teardown = new Teardown()
afterEach(() => teardown.run())

const wire = (events: readonly EventEnvelope[]) => events.map(({ header, body, signature }) => ({ header, ...(body ? { body } : {}), ...(signature ? { signature } : {}) }))

async function syncOnce(memory: Memory, url: string, token?: string): Promise<WithheldEvent[]> {
  const client = await startSync(teardown, memory, url, { live: false, ...(token ? { token } : {}) })
  const withheld: WithheldEvent[] = []
  client.on('withheld', ({ events }) => withheld.push(...events))
  await client.synced()
  return withheld
}

/** A relay holding an owner's space, and a writer the owner granted. */
async function stage() {
  const relay = await startRelay(teardown)
  const owner = await openOwner(teardown)
  const writer = await openReplica(teardown, owner, { grant: true })
  await syncOnce(owner, relay.url)
  return { relay, owner, writer }
}

async function rawSession(url: string, writer: Memory, space: string, token: string): Promise<RawPeer> {
  const peer = await RawPeer.connect(url)
  teardown.add(0, () => peer.close())
  expect((await peer.handshake(writer.identity, space, { token, versions: [1, 2] }))?.type).toBe('ready')
  return peer
}

describe('events of other authors from a token holder', () => {
  /** The writer syncs, live, until it is synced; the owner may sync meanwhile. */
  async function startWriter(writer: Memory, url: string, token: string) {
    const client = await startSync(teardown, writer, url, { token })
    const errors: string[] = []
    client.on('error', (error) => errors.push(error.code))
    return { client, errors }
  }

  it('one its token does not allow is left to its author: the writer retries until the author has brought it whole', async () => {
    const { relay, owner, writer } = await stage()
    const token = tokenFor(owner, writer, { kinds: ['preference'] }, ['read', 'write'])
    await syncOnce(writer, relay.url, token)
    // The owner writes offline; the writer gets the owner's log out of band (a log snapshot, say).
    const episode = await owner.remember({ kind: 'episode', summary: 'the lighthouse keeper diary' })
    const preference = await owner.remember({ kind: 'preference', key: 'light', value: 'dim' })
    await writer.ingest(await owner.log.envelopesSince(writer.versionVector(), { signatures: 'stored' }))
    const mine = await writer.remember({ kind: 'preference', key: 'tea', value: 'oolong' })
    const { client, errors } = await startWriter(writer, relay.url, token)
    // Sent away, it tries again (a closed connection may show up between tries).
    await waitFor(() => errors.filter((code) => code === 'AWAITING_AUTHOR').length >= 2, 'the writer to be sent away, twice')
    expect(client.status).not.toBe('error')
    // Nothing of those frames was stored.
    expect((await download(teardown, relay.url, owner)).versionVector()[writer.author]).toBeUndefined()
    // The owner syncs: the writer's next try goes through, and nothing of the owner's was lost.
    await syncOnce(owner, relay.url)
    await client.synced()
    await syncOnce(owner, relay.url)
    const copy = await download(teardown, relay.url, owner)
    expect(copy.versionVector()).toEqual(writer.versionVector())
    expect((await copy.get(episode))?.summary).toBe('the lighthouse keeper diary')
    expect((await copy.get(preference))?.value).toBe('dim')
    expect((await owner.get(mine))?.value).toBe('oolong')
    expect(await copy.digest()).toBe(await owner.digest())
  })

  it('the owner\'s deletion, relayed first by a writer without redact, is left to the owner, and takes effect when it syncs', async () => {
    const { relay, owner, writer } = await stage()
    const episode = await owner.remember({ kind: 'episode', summary: 'a diagnosis to forget: brucellosis' })
    await syncOnce(owner, relay.url)
    const token = tokenFor(owner, writer, { all: true }, ['read', 'write'])
    await syncOnce(writer, relay.url, token)
    await owner.forget(episode)
    await writer.ingest(await owner.log.envelopesSince(writer.versionVector(), { signatures: 'stored' }))
    const { client, errors } = await startWriter(writer, relay.url, token)
    await waitFor(() => errors.includes('AWAITING_AUTHOR'), 'the writer to be sent away')
    await syncOnce(owner, relay.url)
    await client.synced()
    const copy = await download(teardown, relay.url, owner)
    expect(await copy.status(episode)).toBe('deleted')
    expect(await storeText(copy)).not.toContain('brucellosis')
  })
})

describe('what a token holder cannot bring to the relay', () => {
  it('the body of a withheld event, sent again, even through a wider token: the relay and the owner stay alike', async () => {
    const { relay, owner, writer } = await stage()
    const narrow = tokenFor(owner, writer, { kinds: ['preference'] }, ['read', 'write'])
    const wide = tokenFor(owner, writer, { all: true }, ['read', 'write'])
    const [create] = await craftChain(owner, writer.identity, [
      { op: 'memory.create', data: { kind: 'episode', id: 'ep_0000000000c0ffee', fields: { id: 'ep_0000000000c0ffee', summary: 'zanzibar espresso' } } },
    ]) as [EventEnvelope]
    const first = await rawSession(relay.url, writer, owner.space, narrow)
    await first.sendMessage({ type: 'events', seq: 1, events: wire([create]) })
    expect((await first.next('ack'))?.withheld?.map((entry) => entry.event)).toEqual([create.id])
    first.close()
    await syncOnce(owner, relay.url)
    const again = await rawSession(relay.url, writer, owner.space, wide)
    await again.sendMessage({ type: 'events', seq: 1, events: wire([create]) })
    // Held already: nothing to judge, nothing to withhold, nothing stored.
    expect((await again.next('ack'))?.withheld).toBeUndefined()
    await syncOnce(owner, relay.url)
    const copy = await download(teardown, relay.url, owner)
    for (const memory of [copy, owner]) {
      expect((await memory.log.get(create.id))?.bodyState).toBe('absent')
      expect(await memory.status('ep_0000000000c0ffee')).toBe('absent')
    }
    expect(await copy.digest()).toBe(await owner.digest())
  })

  it('a frame that repeats an event judges it once, as the log keeps it', async () => {
    const { relay, owner, writer } = await stage()
    const token = tokenFor(owner, writer, { kinds: ['episode'] }, ['read', 'write'])
    // The patch comes first in the writer's chain, before the create of its record.
    const [patch, create] = await craftChain(owner, writer.identity, [
      { op: 'memory.patch', data: { kind: 'episode', id: 'ep_0000000000000bee', set: { summary: 'quokka' } } },
      { op: 'memory.create', data: { kind: 'episode', id: 'ep_0000000000000bee', fields: { id: 'ep_0000000000000bee', summary: 'first' } } },
    ]) as [EventEnvelope, EventEnvelope]
    const peer = await rawSession(relay.url, writer, owner.space, token)
    await peer.sendMessage({ type: 'events', seq: 1, events: wire([patch, create, patch]) })
    expect((await peer.next('ack'))?.withheld?.map((entry) => entry.event)).toEqual([patch.id])
    await syncOnce(owner, relay.url)
    expect((await owner.log.get(patch.id))?.bodyState).toBe('absent')
    expect(await storeText(owner)).not.toContain('quokka')
    expect((await owner.get('ep_0000000000000bee'))?.summary).toBe('first')
  })

  it('an author\'s events are judged in their chain\'s order, whatever order the frame gives them', async () => {
    const { relay, owner, writer } = await stage()
    const token = tokenFor(owner, writer, { kinds: ['episode'] }, ['read', 'write'])
    const [patch, create] = await craftChain(owner, writer.identity, [
      { op: 'memory.patch', data: { kind: 'episode', id: 'ep_0000000000000bee', set: { summary: 'quokka' } } },
      { op: 'memory.create', data: { kind: 'episode', id: 'ep_0000000000000bee', fields: { id: 'ep_0000000000000bee', summary: 'first' } } },
    ]) as [EventEnvelope, EventEnvelope]
    const peer = await rawSession(relay.url, writer, owner.space, token)
    await peer.sendMessage({ type: 'events', seq: 1, events: wire([create, patch]) })
    const ack = await peer.next('ack')
    expect(ack?.withheld?.map((entry) => [entry.event, entry.message.replace(/ \(event .*\)$/, '')])).toEqual([[patch.id, 'record ep_0000000000000bee is outside the token\'s scope or does not exist here']])
  })
})

describe('refusals say nothing of records outside the scope', () => {
  it('a change to a record that exists outside the scope and to one that does not exist read alike', async () => {
    const { relay, owner, writer } = await stage()
    await owner.remember({ kind: 'preference', key: 'medication', value: 'lithium' })
    await owner.forget(await owner.remember({ kind: 'fact', episodeID: 'ep_none', subject: 'user', predicate: 'takes', object: 'lithium' }))
    await syncOnce(owner, relay.url)
    const token = tokenFor(owner, writer, { kinds: ['episode'] }, ['read', 'write', 'redact'])
    const facts = (await owner.tombstones()).filter((row) => row.targetKind === 'fact')
    const deletedFact = facts[0]?.targetID as string
    const probes = [
      // a preference that exists, one that does not (their ids derive from their keys)
      { op: 'memory.patch', data: { kind: 'preference', id: recordIdFor('preference', { key: 'medication' }), set: { value: 'x' } } },
      { op: 'memory.patch', data: { kind: 'preference', id: recordIdFor('preference', { key: 'religion' }), set: { value: 'x' } } },
      // claimed as episodes: a deleted fact, and an id nobody holds
      { op: 'memory.patch', data: { kind: 'episode', id: deletedFact, set: { summary: 'x' } } },
      { op: 'memory.patch', data: { kind: 'episode', id: 'fact_0000000000000000', set: { summary: 'x' } } },
      // a preference that exists, as an episode
      { op: 'memory.patch', data: { kind: 'episode', id: recordIdFor('preference', { key: 'medication' }), set: { summary: 'x' } } },
    ]
    const events = await craftChain(owner, writer.identity, probes)
    const peer = await rawSession(relay.url, writer, owner.space, token)
    await peer.sendMessage({ type: 'events', seq: 1, events: wire(events) })
    const ack = await peer.next('ack')
    const messages = (ack?.withheld ?? []).map((entry) => entry.message.replace(/^record \S+ /, 'record X ').replace(/ \(event .*\)$/, ''))
    expect(messages).toEqual(probes.map(() => 'record X is outside the token\'s scope or does not exist here'))
  })
})

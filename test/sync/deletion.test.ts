/**
 * A deletion reaches every copy. One peer forgets a record; on every other peer (live ones, one
 * that was offline at the time and reconnects later, one that was offline and even edited the
 * record concurrently) and on the relay, the record is gone with what was derived from it,
 * search finds nothing, every body that carried its content is erased (or was never received),
 * and no byte of that content is left in the store.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { Memory } from '../../src/memory/index.js'
import type { SyncClient } from '../../src/sync/sync-client.js'
import {
  download, eventsOf, openOwner, openReplica, sleep, startRelay, startSync, storeText, Teardown, tokenFor, waitFor,
} from '../helpers/sync-fixtures.js'

const teardown = new Teardown()
afterEach(() => teardown.run())

const WORDS = ['zanzibar', 'pemba', 'stonetown', 'kilwakisiwani']

/** The record and what was derived from it are gone, and no trace of their content is left. */
async function expectErased(memory: Memory, ids: readonly string[], contentEvents: readonly string[], label: string): Promise<void> {
  for (const id of ids) {
    expect(await memory.get(id), `${label}: ${id}`).toBeUndefined()
    expect(['deleted', 'absent'], `${label}: ${id}`).toContain(await memory.status(id))
  }
  expect(await memory.status(ids[0] as string), label).toBe('deleted')
  for (const event of contentEvents) {
    const state = (await memory.log.get(event))?.bodyState
    expect(['erased', 'absent'], `${label}: body of ${event}`).toContain(state)
  }
  for (const word of WORDS) expect(await memory.search(word), `${label}: search ${word}`).toEqual([])
  const text = await storeText(memory)
  for (const word of WORDS) expect(text.includes(word), `${label}: "${word}" left in the store`).toBe(false)
  expect((await memory.log.verify()).ok, label).toBe(true)
}

describe('deletion over sync', () => {
  it('a forget on one peer erases the content on every peer, including offline ones, and on the relay', async () => {
    const relay = await startRelay(teardown)
    const owner = await openOwner(teardown)
    const live = await openReplica(teardown, owner, { grant: true })
    const offline = await openReplica(teardown, owner)
    const stale = await openReplica(teardown, owner, { grant: true })
    const episode = await owner.remember({ kind: 'episode', summary: 'the zanzibar itinerary', tags: ['travel'] })
    const fact = await owner.remember({ kind: 'fact', episodeID: episode, subject: 'user', predicate: 'visits', object: 'stonetown' })
    const keep = await owner.remember({ kind: 'episode', summary: 'unrelated note about bread' })

    const clients = new Map<Memory, SyncClient>()
    const connect = async (memory: Memory, token?: string): Promise<void> => {
      const client = await startSync(teardown, memory, relay.url, token ? { token } : {})
      await client.synced()
      clients.set(memory, client)
    }
    const tokens = new Map<Memory, string>([
      [live, tokenFor(owner, live, { all: true }, ['read', 'write'])],
      [offline, tokenFor(owner, offline, { all: true })],
      [stale, tokenFor(owner, stale, { all: true }, ['read', 'write'])],
    ])
    await connect(owner)
    for (const [memory, token] of tokens) await connect(memory, token)
    await live.update(episode, { set: { details: 'ferry to pemba' } })
    const everyone = [owner, live, offline, stale]
    const converged = (memories: readonly Memory[]) => () =>
      memories.every((memory) => JSON.stringify(memory.versionVector()) === JSON.stringify(owner.versionVector()))
    await waitFor(converged(everyone), 'everyone to hold the edit')
    expect((await offline.get(episode))?.details).toBe('ferry to pemba')

    // Two peers go offline; one of them edits the record while away.
    await clients.get(offline)?.close()
    await clients.get(stale)?.close()
    await stale.update(episode, { set: { importance: 0.9, details: 'dhow to kilwakisiwani' } })
    const shared = [...new Set([...(await eventsOf(owner, episode)), ...(await eventsOf(owner, fact))])]
    const staleEdit = (await eventsOf(stale, episode)).filter((id) => !shared.includes(id))
    expect(staleEdit).toHaveLength(1)
    const contentEvents = [...shared, ...staleEdit]

    const tombstone = await owner.forget(episode, { reason: 'asked to' })
    expect(tombstone.derived.factIDs).toEqual([fact])
    await waitFor(async () => (await live.status(episode)) === 'deleted', 'the deletion to reach the live peer')
    await expectErased(owner, [episode, fact], shared, 'owner')
    await expectErased(live, [episode, fact], shared, 'live peer')
    // The offline reader still holds the content until it reconnects.
    expect((await offline.get(episode))?.summary).toBe('the zanzibar itinerary')

    await connect(offline, tokens.get(offline))
    await connect(stale, tokens.get(stale))
    await waitFor(converged(everyone), 'everyone to converge after reconnecting')
    for (const [memory, client] of clients) expect(client.status, memory.author).toBe('live')
    for (const [memory, label] of [[owner, 'owner'], [live, 'live peer'], [offline, 'offline peer'], [stale, 'stale peer']] as const) {
      await expectErased(memory, [episode, fact], contentEvents, label)
      expect((await memory.get(keep))?.summary, label).toBe('unrelated note about bread')
    }
    const relayCopy = await download(teardown, relay.url, owner)
    expect(relayCopy.versionVector()).toEqual(owner.versionVector())
    await expectErased(relayCopy, [episode, fact], contentEvents, 'relay')
    const digest = await owner.digest()
    for (const memory of [live, offline, stale, relayCopy]) expect(await memory.digest()).toBe(digest)
  })

  it('a fact a peer wrote offline under an episode the owner forgot is named by the owner when it arrives, and goes from every copy', async () => {
    const relay = await startRelay(teardown)
    const owner = await openOwner(teardown)
    const writer = await openReplica(teardown, owner, { grant: true })
    const token = tokenFor(owner, writer, { all: true }, ['read', 'write'])
    const episode = await owner.remember({ kind: 'episode', summary: 'the zanzibar itinerary' })
    const ownerClient = await startSync(teardown, owner, relay.url)
    await ownerClient.synced()
    const first = await startSync(teardown, writer, relay.url, { token })
    await first.synced()
    await waitFor(async () => (await writer.get(episode)) !== undefined, 'the writer to hold the episode')
    await first.close()
    // Offline, the writer derives a fact from the episode; meanwhile the owner forgets it.
    const fact = await writer.remember({ kind: 'fact', episodeID: episode, subject: 'user', predicate: 'visits', object: 'pemba' })
    const created = await eventsOf(writer, fact)
    await owner.forget(episode)
    const second = await startSync(teardown, writer, relay.url, { token })
    await second.synced()
    // The owner finds the fact deleted through its episode and names it; that delete comes back.
    await waitFor(async () => !(await storeText(writer)).includes('pemba'), 'the writer to lose the fact\'s content')
    await waitFor(() => JSON.stringify(writer.versionVector()) === JSON.stringify(owner.versionVector()), 'the two to converge')
    for (const [memory, label] of [[owner, 'owner'], [writer, 'writer']] as const) {
      await expectErased(memory, [episode, fact], created, label)
      expect((await memory.tombstones()).some((row) => row.targetID === fact), label).toBe(true)
    }
    const relayCopy = await download(teardown, relay.url, owner)
    expect(relayCopy.versionVector()).toEqual(owner.versionVector())
    await expectErased(relayCopy, [episode, fact], created, 'relay')
    expect(await writer.digest()).toBe(await owner.digest())
  })

  it('a one-shot sync sends the deletes an admin names at the end of its catch-up before it closes', async () => {
    const relay = await startRelay(teardown)
    const owner = await openOwner(teardown)
    const writer = await openReplica(teardown, owner, { grant: true })
    const token = tokenFor(owner, writer, { all: true }, ['read', 'write'])
    const once = async (memory: Memory, options: { token?: string } = {}): Promise<void> => {
      const client = await startSync(teardown, memory, relay.url, { ...options, live: false })
      const seen: string[] = []
      client.on('finishing', () => seen.push('finishing'))
      client.on('status', (status) => seen.push(status))
      await client.synced()
      expect(seen.slice(-2)).toEqual(['finishing', 'closed'])
    }
    const episode = await owner.remember({ kind: 'episode', summary: 'the zanzibar itinerary' })
    await once(owner)
    await once(writer, { token })
    await owner.forget(episode)
    const fact = await writer.remember({ kind: 'fact', episodeID: episode, subject: 'user', predicate: 'visits', object: 'pemba' })
    const created = await eventsOf(writer, fact)
    await once(writer, { token })
    // The owner finds the fact deleted through its episode as its catch-up ends, and names it:
    // the relay has that delete once the one-shot sync is done.
    await once(owner)
    expect(await owner.status(fact)).toBe('deleted')
    const relayCopy = await download(teardown, relay.url, owner)
    expect(relayCopy.versionVector()).toEqual(owner.versionVector())
    await expectErased(relayCopy, [episode, fact], created, 'relay')
    await once(writer, { token })
    await expectErased(writer, [episode, fact], created, 'writer')
  })

  it('a one-shot sync whose connection drops while it finishes ends synced, without connecting again', async () => {
    const relay = await startRelay(teardown)
    const owner = await openOwner(teardown)
    const writer = await openReplica(teardown, owner, { grant: true })
    const token = tokenFor(owner, writer, { all: true }, ['read', 'write'])
    await (await startSync(teardown, owner, relay.url, { live: false })).synced()
    await (await startSync(teardown, writer, relay.url, { token, live: false })).synced()
    await writer.remember({ kind: 'episode', summary: 'the zanzibar itinerary' })
    await (await startSync(teardown, writer, relay.url, { token, live: false })).synced()
    // The owner, an admin, finishes by bringing its records up to date and naming what they show
    // deleted; here that takes a while, and the relay goes away meanwhile.
    const applyPending = owner.applyPending.bind(owner)
    owner.applyPending = () => applyPending().then(() => sleep(400))
    const client = await startSync(teardown, owner, relay.url, { live: false })
    const seen: string[] = []
    client.on('status', (status) => seen.push(status))
    client.on('finishing', () => {
      seen.push('finishing')
      void relay.stop()
    })
    await client.synced()
    await sleep(300)
    expect(seen.slice(seen.indexOf('finishing'))).toEqual(['finishing', 'closed'])
    expect(client.status).toBe('closed')
    expect(owner.versionVector()).toEqual(writer.versionVector())
  })

  it('a one-shot sync whose finishing work does not end closes after finishTimeoutMs', async () => {
    const relay = await startRelay(teardown)
    const owner = await openOwner(teardown)
    await owner.remember({ kind: 'episode', summary: 'the zanzibar itinerary' })
    // The admin's finishing work (bringing records up to date, naming deletions) never ends.
    owner.applyPending = () => new Promise<void>(() => undefined)
    const client = await startSync(teardown, owner, relay.url, { live: false, finishTimeoutMs: 150 })
    const seen: string[] = []
    client.on('finishing', () => seen.push('finishing'))
    client.on('status', (status) => seen.push(status))
    await waitFor(() => client.status === 'closed', 'the sync to close once finishTimeoutMs passed', 5000)
    expect(seen.slice(seen.indexOf('finishing'))).toEqual(['finishing', 'closed'])
  })

  it('a peer that joins after the deletion never receives the content', async () => {
    const relay = await startRelay(teardown)
    const owner = await openOwner(teardown)
    const episode = await owner.remember({ kind: 'episode', summary: 'notes from zanzibar' })
    const events = await eventsOf(owner, episode)
    await owner.forget(episode)
    const ownerClient = await startSync(teardown, owner, relay.url, { live: false })
    await ownerClient.synced()
    const late = await download(teardown, relay.url, owner)
    expect(late.versionVector()).toEqual(owner.versionVector())
    for (const event of events) expect((await late.log.get(event))?.bodyState).toBe('absent')
    await expectErased(late, [episode], events, 'late peer')
  })
})

/**
 * Records that move in or out of a tag scope after a reader synced. A reader shows the records
 * in its scope as they are now: one that comes into scope arrives whole (the relay sends the
 * bodies of its events the reader holds header-only), one that leaves is withdrawn (the reader
 * drops its content, from its log too). Kinds and ids scopes never change, and pay nothing.
 */
import fc from 'fast-check'
import type { Permission, TokenScope } from '../../src/auth/index.js'
import { afterEach, describe, expect, it } from 'vitest'
import { AuthError, CairnError } from '../../src/errors.js'
import type { Memory, RecordChange } from '../../src/index.js'
import { MemoryEndpoint } from '../../src/sync/memory-endpoint.js'
import { decodeMessage, encodeMessage, type Message } from '../../src/sync/messages.js'
import { SyncSession } from '../../src/sync/sync-session.js'
import type { Transport } from '../../src/sync/transport.js'
import {
  eventsOf, failureOf, openOwner, openReplica, startRelay, startSync, storeText, Teardown, tokenFor, waitFor,
} from '../helpers/sync-fixtures.js'

const teardown = new Teardown()
afterEach(() => teardown.run())

async function syncOnce(memory: Memory, url: string, token?: string): Promise<void> {
  const client = await startSync(teardown, memory, url, { live: false, ...(token ? { token } : {}) })
  await client.synced()
}

/** What a reader shows, by id: the view without nothing left out. */
async function shown(memory: Memory): Promise<Map<string, unknown>> {
  return new Map((await memory.query({ limit: 1000 })).records.map((record) => [record.id, record]))
}

/** An owner with two episodes, one shared (tag `work`) and one not, on a relay; a reader of `work` synced once. */
async function setting() {
  const relay = await startRelay(teardown)
  const owner = await openOwner(teardown)
  const shared = await owner.remember({ kind: 'episode', summary: 'planning with marta', tags: ['work'] })
  const private_ = await owner.remember({ kind: 'episode', summary: 'repainting the kitchen ochre', tags: ['home'] })
  await syncOnce(owner, relay.url)
  const reader = await openReplica(teardown, owner)
  const token = tokenFor(owner, reader, { tags: { any: ['work'] } })
  await syncOnce(reader, relay.url, token)
  expect([...(await shown(reader)).keys()]).toEqual([shared])
  return { relay, owner, reader, token, shared, private: private_ }
}

describe('a record that comes into a tag scope', () => {
  it('arrives whole at a reader that held its events header-only, with what changed meanwhile', async () => {
    const { relay, owner, reader, token, private: id } = await setting()
    await owner.update(id, { set: { details: 'ochre, two coats' } })
    await syncOnce(owner, relay.url)
    await syncOnce(reader, relay.url, token)
    expect(await reader.get(id)).toBeUndefined()

    await owner.update(id, { add: { tags: ['work'] } })
    await syncOnce(owner, relay.url)
    await syncOnce(reader, relay.url, token)
    expect(await reader.get(id)).toEqual(await owner.get(id))
    expect((await reader.search('ochre')).map((hit) => hit.record.id)).toEqual([id])
    for (const event of await eventsOf(owner, id)) expect((await reader.log.get(event))?.bodyState).toBe('present')
    const shape = (items: { event: string; op?: string; type: string }[]) => items.map(({ event, op, type }) => ({ event, op, type }))
    expect(shape(await reader.history(id))).toEqual(shape(await owner.history(id)))
    expect((await reader.log.verify()).ok).toBe(true)
  })

  it('arrives at a live reader as soon as it is tagged', async () => {
    const { relay, owner, reader, token, private: id } = await setting()
    await startSync(teardown, owner, relay.url)
    await startSync(teardown, reader, relay.url, { token })
    const changes: RecordChange[] = []
    reader.subscribe(({ changes: batch }) => changes.push(...batch))
    await owner.update(id, { add: { tags: ['work'] } })
    await waitFor(async () => (await reader.get(id)) !== undefined, 'the tagged record to reach the reader')
    expect(await reader.get(id)).toEqual(await owner.get(id))
    expect(changes).toContainEqual({ id, kind: 'episode', action: 'created' })
  })
})

describe('a record that leaves a tag scope', () => {
  it('is withdrawn: gone from reads, from search and from the reader\'s store', async () => {
    const { relay, owner, reader, token, shared } = await setting()
    const events = await eventsOf(reader, shared)
    await owner.update(shared, { remove: { tags: ['work'] }, set: { details: 'marta resigned' } })
    await syncOnce(owner, relay.url)
    await syncOnce(reader, relay.url, token)
    expect(await reader.get(shared)).toBeUndefined()
    expect(await reader.status(shared)).toBe('absent')
    expect((await reader.query({ limit: 100 })).records).toEqual([])
    expect(await reader.search('marta')).toEqual([])
    expect(await storeText(reader)).not.toContain('marta')
    for (const event of events) expect((await reader.log.get(event))?.bodyState).toBe('absent')
    expect((await reader.log.verify()).ok).toBe(true)
  })

  it('is withdrawn from a live reader, whose subscribers hear it', async () => {
    const { relay, owner, reader, token, shared } = await setting()
    await startSync(teardown, owner, relay.url)
    await startSync(teardown, reader, relay.url, { token })
    const changes: RecordChange[] = []
    reader.subscribe(({ changes: batch }) => changes.push(...batch))
    await owner.update(shared, { remove: { tags: ['work'] } })
    await waitFor(async () => (await reader.get(shared)) === undefined, 'the record to be withdrawn')
    expect(changes).toContainEqual({ id: shared, kind: 'episode', action: 'withdrawn' })
    expect(await storeText(reader)).not.toContain('marta')
  })

  it('comes back whole when it is tagged again, with what changed while it was out', async () => {
    const { relay, owner, reader, token, shared } = await setting()
    await owner.update(shared, { remove: { tags: ['work'] } })
    await syncOnce(owner, relay.url)
    await syncOnce(reader, relay.url, token)
    expect(await reader.get(shared)).toBeUndefined()
    await owner.update(shared, { set: { details: 'marta is back' } })
    await owner.update(shared, { add: { tags: ['work'] } })
    await syncOnce(owner, relay.url)
    await syncOnce(reader, relay.url, token)
    expect(await reader.get(shared)).toEqual(await owner.get(shared))
    expect((await reader.search('back')).map((hit) => hit.record.id)).toEqual([shared])
  })

  it('is withdrawn when it was also redacted, though the relay no longer holds its content', async () => {
    const { relay, owner, reader, token, shared } = await setting()
    await owner.update(shared, { remove: { tags: ['work'] } })
    await owner.redact(shared)
    await syncOnce(owner, relay.url)
    await syncOnce(reader, relay.url, token)
    expect(await reader.get(shared)).toBeUndefined()
    expect(await storeText(reader)).not.toContain('marta')
  })

  it('keeps what the reader wrote itself', async () => {
    const relay = await startRelay(teardown)
    const owner = await openOwner(teardown)
    await syncOnce(owner, relay.url)
    const writer = await openReplica(teardown, owner, { grant: true })
    await syncOnce(owner, relay.url)
    const token = tokenFor(owner, writer, { tags: { any: ['work'] } }, ['read', 'write'])
    await syncOnce(writer, relay.url, token)
    const id = await writer.remember({ kind: 'episode', summary: 'minutes of the standup', tags: ['work'] })
    const [created] = await eventsOf(writer, id)
    await syncOnce(writer, relay.url, token)
    await syncOnce(owner, relay.url)
    await owner.update(id, { remove: { tags: ['work'] } })
    await syncOnce(owner, relay.url)
    await syncOnce(writer, relay.url, token)
    expect((await writer.log.get(created as string))?.bodyState).toBe('present')
    expect((await writer.get(id))?.summary).toBe('minutes of the standup')
  })
})

describe('a reader whose token changes', () => {
  /** An owner with a preference and a `work` episode on a relay, and a reader synced once with `scope`. */
  async function readerWith(scope: TokenScope) {
    const relay = await startRelay(teardown)
    const owner = await openOwner(teardown)
    const pref = await owner.remember({ kind: 'preference', key: 'tone', value: 'laconic' })
    const work = await owner.remember({ kind: 'episode', summary: 'planning with marta', tags: ['work'] })
    await syncOnce(owner, relay.url)
    const reader = await openReplica(teardown, owner)
    await syncOnce(reader, relay.url, tokenFor(owner, reader, scope))
    return { relay, owner, reader, pref, work }
  }

  it('sees records its new scope adds, though nothing touched them since', async () => {
    const { relay, owner, reader, pref, work } = await readerWith({ kinds: ['preference'] })
    expect([...(await shown(reader)).keys()]).toEqual([pref])
    await syncOnce(reader, relay.url, tokenFor(owner, reader, { tags: { any: ['work'] } }))
    expect(await reader.get(work)).toEqual(await owner.get(work))
    expect(await reader.get(pref)).toBeUndefined() // out of the new scope: withdrawn
    expect(await storeText(reader)).not.toContain('laconic')
  })

  it('drops what its new scope leaves out, and keeps nothing of it', async () => {
    const { relay, owner, reader, pref, work } = await readerWith({ tags: { any: ['work'] } })
    expect([...(await shown(reader)).keys()]).toEqual([work])
    await syncOnce(reader, relay.url, tokenFor(owner, reader, { kinds: ['preference'] }))
    expect([...(await shown(reader)).keys()]).toEqual([pref])
    expect(await storeText(reader)).not.toContain('marta')
  })

  it('gets everything once it is granted full access', async () => {
    const { relay, owner, reader } = await readerWith({ kinds: ['preference'] })
    await owner.grant(reader.author, ['admin'])
    await syncOnce(owner, relay.url)
    await syncOnce(reader, relay.url)
    expect(await reader.digest()).toBe(await owner.digest())
  })

  it('drops all content when its new token may no longer read', async () => {
    const { relay, owner, reader } = await readerWith({ kinds: ['preference'] })
    await syncOnce(reader, relay.url, tokenFor(owner, reader, { all: true }, ['write']))
    expect((await reader.query({ limit: 10 })).records).toEqual([])
    expect(await storeText(reader)).not.toContain('laconic')
  })

  it('asks again after a sync with a new token that did not finish, whichever token comes next', async () => {
    const { relay, owner, reader, pref, work } = await readerWith({ tags: { any: ['work'] } })
    // The sync with the new token ends right after its first frame is stored (the token revoked
    // mid-way, say): the replica now holds some of each access.
    const ingest = reader.ingestDeferred.bind(reader)
    reader.ingestDeferred = async (events, options) => {
      await ingest(events, options)
      reader.ingestDeferred = ingest
      throw new AuthError('TOKEN_REVOKED', 'revoked while the sync ran')
    }
    const other = await startSync(teardown, reader, relay.url, { token: tokenFor(owner, reader, { kinds: ['preference'] }) })
    expect((await failureOf(other)).code).toBe('TOKEN_REVOKED')
    expect(await reader.get(pref)).toBeDefined()
    await syncOnce(reader, relay.url, tokenFor(owner, reader, { tags: { any: ['work'] } }))
    expect([...(await shown(reader)).keys()]).toEqual([work])
    expect(await storeText(reader)).not.toContain('laconic')
    expect(await reader.get(pref)).toBeUndefined()
  })

  it('records full access when the relay grants it, whatever token it showed', async () => {
    const { relay, owner, reader, work } = await readerWith({ kinds: ['preference'] })
    await owner.grant(reader.author, ['admin'])
    await syncOnce(owner, relay.url)
    const token = tokenFor(owner, reader, { kinds: ['preference'] })
    await syncOnce(reader, relay.url, token)
    expect(await reader.get(work)).toBeDefined() // an admin reads everything
    await owner.revoke(reader.author)
    await syncOnce(owner, relay.url)
    await syncOnce(reader, relay.url, token)
    expect(await reader.get(work)).toBeUndefined()
    expect(await storeText(reader)).not.toContain('marta')
  })

  it('is not sent everything again when its access is the same as last time', async () => {
    const { relay, owner, reader } = await readerWith({ kinds: ['preference'] })
    const client = await startSync(teardown, reader, relay.url, { live: false, token: tokenFor(owner, reader, { kinds: ['preference'] }) })
    let received = 0
    client.on('received', ({ events }) => { received += events })
    await client.synced()
    expect(received).toBe(0)
  })
})

describe('a withdraw frame', () => {
  /** A transport that keeps what the session sends. */
  function transport(sent: Message[] = []): Transport {
    return {
      bufferedAmount: 0,
      isOpen: true,
      send: async (data) => {
        sent.push(decodeMessage(data))
      },
      onMessage: () => undefined,
      onClose: () => undefined,
      close: () => undefined,
    }
  }

  it('is refused by a replica with full access, which keeps the record', async () => {
    const owner = await openOwner(teardown)
    const id = await owner.remember({ kind: 'episode', summary: 'kept by its owner' })
    const sent: Message[] = []
    const sync = new SyncSession(transport(sent), new MemoryEndpoint(owner))
    const closed = new Promise<CairnError | undefined>((resolve) => sync.on('closed', ({ error }) => resolve(error)))
    sync.receive(encodeMessage({ type: 'withdraw', records: [id] }))
    expect((await closed)?.code).toBe('UNEXPECTED_FRAME')
    expect(sent).toContainEqual(expect.objectContaining({ type: 'error', code: 'UNEXPECTED_FRAME' }))
    expect((await owner.get(id))?.summary).toBe('kept by its owner')
  })

  it('drops the record on a replica syncing through a token', async () => {
    const owner = await openOwner(teardown)
    const reader = await openReplica(teardown, owner)
    const id = await owner.remember({ kind: 'episode', summary: 'shared then withdrawn' })
    await reader.ingest(await owner.events())
    const sync = new SyncSession(transport(), new MemoryEndpoint(reader, { scoped: true }))
    sync.receive(encodeMessage({ type: 'withdraw', records: [id] }))
    await sync.drain()
    expect(await reader.get(id)).toBeUndefined()
    expect(await storeText(reader)).not.toContain('withdrawn')
    sync.close()
  })
})

describe('property', () => {
  const RECORDS = 4
  const step = fc.oneof(
    fc.record({ type: fc.constant('tag' as const), record: fc.nat(RECORDS - 1), on: fc.boolean() }),
    fc.record({ type: fc.constant('edit' as const), record: fc.nat(RECORDS - 1), word: fc.constantFrom('alder', 'birch', 'cedar', 'damson') }),
    fc.record({ type: fc.constant('redact' as const), record: fc.nat(RECORDS - 1) }),
    fc.record({ type: fc.constant('owner-sync' as const) }),
    fc.record({ type: fc.constant('reader-sync' as const) }),
    fc.record({ type: fc.constant('switch-token' as const) }),
  )

  it('after any tagging, editing, token switching and syncing, a tag reader shows exactly the records now in scope, as the owner does', async () => {
    await fc.assert(fc.asyncProperty(fc.array(fc.boolean(), { minLength: RECORDS, maxLength: RECORDS }), fc.array(step, { maxLength: 12 }), async (initial, steps) => {
      const relay = await startRelay(teardown)
      const owner = await openOwner(teardown)
      const ids: string[] = []
      for (const [i, tagged] of initial.entries()) ids.push(await owner.remember({ kind: 'episode', summary: `note ${i} word${i}x`, tags: tagged ? ['share'] : ['keep'] }))
      await syncOnce(owner, relay.url)
      const reader = await openReplica(teardown, owner)
      // Two tokens: one reads the records tagged share, the other those tagged keep.
      const tokens = { share: tokenFor(owner, reader, { tags: { any: ['share'] } }), keep: tokenFor(owner, reader, { tags: { any: ['keep'] } }) }
      let current: keyof typeof tokens = 'share'
      const redacted = new Set<string>()
      for (const next of steps) {
        const id = 'record' in next ? (ids[next.record] as string) : ''
        // A redacted record takes no more changes (REDACTED): the step is skipped.
        if (next.type === 'tag' && !redacted.has(id)) await owner.update(id, next.on ? { add: { tags: ['share'] } } : { remove: { tags: ['share'] } })
        else if (next.type === 'edit' && !redacted.has(id)) await owner.update(id, { set: { details: `${next.word} word${next.record}x` } })
        else if (next.type === 'redact' && !redacted.has(id)) {
          await owner.redact(id)
          redacted.add(id)
        } else if (next.type === 'owner-sync') await syncOnce(owner, relay.url)
        else if (next.type === 'reader-sync') await syncOnce(reader, relay.url, tokens[current])
        else if (next.type === 'switch-token') current = current === 'share' ? 'keep' : 'share'
      }
      await syncOnce(owner, relay.url)
      await syncOnce(reader, relay.url, tokens[current])

      const expected = new Map<string, unknown>()
      for (const id of ids) {
        const view = await owner.get(id)
        if (view && Array.isArray(view.tags) && view.tags.includes(current)) expected.set(id, view)
      }
      expect(await shown(reader)).toEqual(expected)
      const text = await storeText(reader)
      for (const [i, id] of ids.entries()) {
        if (!expected.has(id) || redacted.has(id)) expect(text.includes(`word${i}x`), `record ${i} is out of scope or redacted`).toBe(false)
        else expect((await reader.search(`word${i}x`)).map((hit) => hit.record.id)).toEqual([id])
      }
      expect((await reader.log.verify()).ok).toBe(true)
      await teardown.run()
    }), { numRuns: 40 })
  }, 120_000)
})

/**
 * A relay projects records on demand: full-access peers are served from its log alone, so their
 * uploads and downloads apply nothing to records; a token peer's scope check brings the records
 * up to date before anything is sent to it; a deletion is applied (and the content it reaches
 * erased from the relay's store) as soon as it arrives, with no reader involved. Restarting a
 * relay does not replay its log into records either.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { LogStore } from '../../src/log/index.js'
import type { Relay } from '../../src/sync/relay.js'
import {
  eventCount, eventsOf, openOwner, openReplica, startRelay, startSync, storeText, Teardown, tokenFor, waitFor,
} from '../helpers/sync-fixtures.js'

const teardown = new Teardown()
afterEach(() => teardown.run())

async function relayDirectory(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cairn-relay-on-demand-'))
  teardown.add(2, () => rm(dir, { recursive: true, force: true }))
  return dir
}

const statsOf = (relay: Relay, space: string) => relay.stats().spaces.find((stats) => stats.space === space)

/** Every body of `ids` in the relay's store at `dir` (the relay stopped), by event id. */
async function bodyStates(dir: string, space: string, ids: readonly string[]): Promise<(string | undefined)[]> {
  const store = await LogStore.open({ path: path.join(dir, 'store') })
  try {
    const log = await store.openSpace(space)
    expect((await log.verify()).ok).toBe(true)
    return await Promise.all(ids.map(async (id) => (await log.get(id))?.bodyState))
  } finally {
    await store.close()
  }
}

it('serves full-access peers from the log without projecting, and projects before serving a token peer', async () => {
  const relay = await startRelay(teardown)
  const owner = await openOwner(teardown)
  await owner.rememberMany(Array.from({ length: 30 }, (_, i) => ({ kind: 'episode', summary: `shared ${i}`, tags: [i % 2 === 0 ? 'even' : 'odd'] })))
  const admin = await openReplica(teardown, owner)
  await owner.grant(admin.author, ['admin'])
  const upload = await startSync(teardown, owner, relay.url)
  await upload.synced()
  const adminClient = await startSync(teardown, admin, relay.url, { live: false })
  await adminClient.synced()
  expect(admin.versionVector()).toEqual(owner.versionVector())
  expect(await admin.digest()).toBe(await owner.digest())
  const held = eventCount(owner.versionVector())
  expect(statsOf(relay, owner.space)).toMatchObject({ events: held, projected: 0 })

  // A reader whose token covers only `even` gets those bodies: the relay's records were needed.
  const reader = await openReplica(teardown, owner)
  const client = await startSync(teardown, reader, relay.url, { token: tokenFor(owner, reader, { tags: { any: ['even'] } }), live: false })
  await client.synced()
  expect(statsOf(relay, owner.space)).toMatchObject({ events: held, projected: held })
  const summaries = (await reader.query({ kind: 'episode', limit: 100 })).records.map((record) => record.summary).sort()
  expect(summaries).toEqual(Array.from({ length: 15 }, (_, i) => `shared ${i * 2}`).sort())
})

it('applies a deletion when it arrives and erases the content it held, with no reader asking', async () => {
  const dir = await relayDirectory()
  const relay = await startRelay(teardown, { path: dir })
  const owner = await openOwner(teardown)
  const secret = await owner.remember({ kind: 'episode', summary: 'the door code is 4471' })
  await owner.remember({ kind: 'episode', summary: 'kept' })
  const client = await startSync(teardown, owner, relay.url)
  await client.synced()
  expect(statsOf(relay, owner.space)?.projected).toBe(0)
  const contentEvents = await eventsOf(owner, secret)

  await owner.forget(secret)
  const held = eventCount(owner.versionVector())
  await waitFor(() => statsOf(relay, owner.space)?.projected === held, 'the relay to apply the deletion')
  await relay.settled()
  await relay.stop()

  expect(await bodyStates(dir, owner.space, contentEvents)).toEqual(contentEvents.map(() => 'erased'))
})

it('reopens without replaying its log into records, and a token peer still gets exactly its scope', async () => {
  const dir = await relayDirectory()
  const first = await startRelay(teardown, { path: dir })
  const owner = await openOwner(teardown)
  await owner.rememberMany([
    { kind: 'preference', key: 'tone', value: 'direct' },
    { kind: 'episode', summary: 'private' },
  ])
  const upload = await startSync(teardown, owner, first.url, { live: false })
  await upload.synced()
  await upload.close()
  await first.stop()

  const relay = await startRelay(teardown, { path: dir })
  const admin = await openReplica(teardown, owner)
  await owner.grant(admin.author, ['admin'])
  const ownerAgain = await startSync(teardown, owner, relay.url, { live: false })
  await ownerAgain.synced()
  const adminClient = await startSync(teardown, admin, relay.url, { live: false })
  await adminClient.synced()
  expect(await admin.digest()).toBe(await owner.digest())
  expect(statsOf(relay, owner.space)).toMatchObject({ events: eventCount(owner.versionVector()), projected: 0 })
  const reader = await openReplica(teardown, owner)
  const client = await startSync(teardown, reader, relay.url, { token: tokenFor(owner, reader, { kinds: ['preference'] }), live: false })
  await client.synced()
  expect((await reader.query({ limit: 10 })).records.map((record) => record.kind)).toEqual(['preference'])
  expect(statsOf(relay, owner.space)?.projected).toBe(eventCount(owner.versionVector()))
})

it('erases content that arrives after the deletion it runs into, with no reader asking', async () => {
  const dir = await relayDirectory()
  const relay = await startRelay(teardown, { path: dir })
  const owner = await openOwner(teardown)
  const record = await owner.remember({ kind: 'episode', summary: 'the old plan' })
  const admin = await openReplica(teardown, owner)
  await owner.grant(admin.author, ['admin'])
  const ownerClient = await startSync(teardown, owner, relay.url)
  await ownerClient.synced()
  const first = await startSync(teardown, admin, relay.url, { live: false })
  await first.synced()
  await first.close()

  // Offline, the admin edits the record; meanwhile the owner deletes it and the relay applies that.
  await admin.update(record, { set: { summary: 'the late secret 4471' } })
  const late = (await admin.history(record)).at(-1)?.event as string
  await owner.forget(record)
  await waitFor(() => statsOf(relay, owner.space)?.projected === eventCount(owner.versionVector()), 'the relay to apply the deletion')

  const again = await startSync(teardown, admin, relay.url, { live: false })
  await again.synced()
  const held = eventCount(admin.versionVector())
  await waitFor(() => statsOf(relay, owner.space)?.events === held && statsOf(relay, owner.space)?.projected === held, 'the relay to apply the late edit')
  await relay.stop()
  expect(await bodyStates(dir, owner.space, [late])).toEqual(['erased'])
})

it('after a crash between storing a deletion and applying it, a restarted relay applies it when the space opens', async () => {
  const dir = await relayDirectory()
  const first = await startRelay(teardown, { path: dir })
  const owner = await openOwner(teardown)
  const secret = await owner.remember({ kind: 'episode', summary: 'the door code is 4471' })
  const upload = await startSync(teardown, owner, first.url, { live: false })
  await upload.synced()
  await upload.close()
  await first.stop()
  const contentEvents = await eventsOf(owner, secret)

  // The deletion reaches the relay's log, but the process "dies" before applying it: written
  // straight into the stopped relay's store, as an acknowledged frame would have been.
  const sinceUpload = owner.versionVector()
  await owner.forget(secret)
  const store = await LogStore.open({ path: path.join(dir, 'store') })
  await (await store.openSpace(owner.space)).ingest(await owner.events(sinceUpload))
  await store.close()

  const relay = await startRelay(teardown, { path: dir })
  const client = await startSync(teardown, owner, relay.url, { live: false })
  await client.synced()
  const held = eventCount(owner.versionVector())
  await waitFor(() => statsOf(relay, owner.space)?.projected === held, 'the restarted relay to apply the deletion')
  await relay.stop()
  expect(await bodyStates(dir, owner.space, contentEvents)).toEqual(contentEvents.map(() => 'erased'))
})

it('a token without read gets headers, with the bodies every replica needs (genesis, grants, tombstones within its scope), and stays live', async () => {
  const relay = await startRelay(teardown)
  const owner = await openOwner(teardown)
  const gone = await owner.remember({ kind: 'preference', key: 'tone', value: 'to be forgotten' })
  await owner.remember({ kind: 'episode', summary: 'private' })
  await owner.forget(gone)
  const ownerClient = await startSync(teardown, owner, relay.url)
  await ownerClient.synced()
  const writer = await openReplica(teardown, owner)
  await owner.grant(writer.author)
  const client = await startSync(teardown, writer, relay.url, { token: tokenFor(owner, writer, { kinds: ['episode'] }, ['write']) })
  await client.synced()
  await waitFor(() => eventCount(writer.versionVector()) === eventCount(owner.versionVector()), 'the writer to hold every event')
  expect(client.status).toBe('live')
  expect((await writer.query({ limit: 10 })).records).toEqual([])
  // The forgotten record is outside what the writer may write, so it never held it: the
  // deletion (and its reason) comes as a header.
  expect(await writer.status(gone)).toBe('absent')
  const written = await writer.remember({ kind: 'episode', summary: 'from the writer' })
  const redacted = await writer.remember({ kind: 'episode', summary: 'card number 4111-1111' })
  await waitFor(async () => (await owner.status(redacted)) === 'visible', 'the writes to reach the owner')
  expect((await owner.get(written))?.summary).toBe('from the writer')
  // What the writer may write, it may hold: a deletion or redaction of it reaches the writer
  // whole, and erases it there.
  await owner.forget(written, { reason: 'the writer\'s own record' })
  await owner.redact(redacted)
  await waitFor(async () => (await writer.status(written)) === 'deleted' && (await writer.status(redacted)) === 'redacted', 'the tombstones to reach the writer')
  expect(await storeText(writer)).not.toContain('4111-1111')
  expect((await writer.log.verify()).ok).toBe(true)
})

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
  eventCount, eventsOf, openOwner, openReplica, startRelay, startSync, Teardown, tokenFor, waitFor,
} from '../helpers/sync-fixtures.js'

const teardown = new Teardown()
afterEach(() => teardown.run())

async function relayDirectory(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cairn-relay-on-demand-'))
  teardown.add(2, () => rm(dir, { recursive: true, force: true }))
  return dir
}

const statsOf = (relay: Relay, space: string) => relay.stats().spaces.find((stats) => stats.space === space)

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

  const store = await LogStore.open({ path: path.join(dir, 'store') })
  try {
    const log = await store.openSpace(owner.space)
    for (const id of contentEvents) expect((await log.get(id))?.bodyState, `event ${id.slice(0, 8)}`).toBe('erased')
    expect((await log.verify()).ok).toBe(true)
  } finally {
    await store.close()
  }
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

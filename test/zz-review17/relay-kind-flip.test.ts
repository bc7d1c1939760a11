import { afterEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/log/clock.js'
import type { Memory } from '../../src/memory/index.js'
import { openOwner, openReplica, startRelay, startSync, Teardown, tokenFor } from '../helpers/sync-fixtures.js'

const teardown = new Teardown()
afterEach(() => teardown.run())

async function syncOnce(memory: Memory, url: string, token?: string): Promise<void> {
  const client = await startSync(teardown, memory, url, { live: false, ...(token ? { token } : {}) })
  await client.synced()
}

describe('review17: relay header-only for another kind, then that kind wins', () => {
  it('a reader whose scope reaches both kinds ends like everyone else', async () => {
    const clock = new ManualClock(Date.now())
    const relay = await startRelay(teardown)
    const owner = await openOwner(teardown, { clock })
    const phone = await openReplica(teardown, owner, { clock, grant: true })
    const laptop = await openReplica(teardown, owner, { clock, grant: true })
    const pt = tokenFor(owner, phone, { all: true }, ['read', 'write'])
    const lt = tokenFor(owner, laptop, { all: true }, ['read', 'write'])
    await syncOnce(owner, relay.url)
    await syncOnce(phone, relay.url, pt)
    await syncOnce(laptop, relay.url, lt)
    clock.advance(1000)
    await laptop.remember({ kind: 'entity', id: 'shared', type: 'person', canonicalName: 'Ann' })   // earliest create, offline
    clock.advance(1000)
    await owner.remember({ kind: 'episode', id: 'shared', summary: 'owner episode' })
    clock.advance(1000)
    await phone.remember({ kind: 'entity', id: 'shared', type: 'person', canonicalName: 'Bob' })    // latest create
    await syncOnce(owner, relay.url)
    const reader = await openReplica(teardown, owner, { clock })
    const token = tokenFor(owner, reader, { kinds: ['entity', 'episode'] })
    await syncOnce(reader, relay.url, token)
    await syncOnce(phone, relay.url, pt)       // relay holds `shared` as an episode: phone's entity create goes header-only
    await syncOnce(reader, relay.url, token)
    await syncOnce(laptop, relay.url, lt)      // the earliest create: `shared` becomes an entity
    await syncOnce(reader, relay.url, token)
    await syncOnce(owner, relay.url)
    for (const m of [owner, phone, laptop, reader]) console.log(m.author.slice(0,6), JSON.stringify(m.versionVector()), (await m.get('shared'))?.kind, JSON.stringify(await m.history('shared')))
    const seen = await Promise.all([owner, reader].map(async (m) => m.get('shared')))
    console.log(JSON.stringify(seen))
    expect(seen[1]).toEqual(seen[0])
  })
})

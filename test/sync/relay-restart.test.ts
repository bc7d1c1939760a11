/**
 * A relay crash loses nothing it acknowledged. A relay runs as a child process on disk; a peer
 * uploads a large log to it; the relay is SIGKILLed after a random number of acknowledged frames
 * (others still in flight), restarted on the same directory and port, and, before any peer can
 * reconnect, reports what its store holds: at least everything acknowledged, and a log that
 * verifies. The peer's client reconnects on its own (backoff) and resumes; a second peer then
 * downloads from the restarted relay and shows the same memory; no event was applied twice.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { seedFromEnv, SeededRandom } from '../helpers/seeded-random.js'
import { spawnRelay, type RelayChild } from '../helpers/relay-child.js'
import { download, eventCount, openOwner, recordStatuses, startSync, Teardown, waitFor } from '../helpers/sync-fixtures.js'
import { tapTransports } from '../helpers/wire-tap.js'

const teardown = new Teardown()
afterEach(() => teardown.run())

const EVENTS = 4_000

describe('relay killed mid-sync', () => {
  it('keeps everything it acknowledged, and the peer resumes without loss or duplicates', async () => {
    const seed = seedFromEnv('RELAY_RESTART_SEED')
    const random = new SeededRandom(seed)
    const dir = await mkdtemp(path.join(os.tmpdir(), 'cairn-relay-'))
    teardown.add(2, () => rm(dir, { recursive: true, force: true }))
    const tap = tapTransports()
    teardown.add(0, () => tap.restore())
    const starting = spawnRelay(dir, 0)
    teardown.add(1, async () => { await (await starting).kill('SIGTERM') })

    const owner = await openOwner(teardown)
    // A large upload (frames of ~4 MB): plain log events in signed batches, fast to write, plus
    // records for the digests to compare.
    await owner.log.appendBatch(owner.identity, Array.from({ length: EVENTS }, (_, i) => ({ op: 'note', data: `note ${i} ${'lorem ipsum '.repeat(340)}` })))
    await owner.rememberMany(Array.from({ length: 20 }, (_, i) => ({ kind: 'episode', summary: `record ${i}` })))
    let relay: RelayChild = await starting
    teardown.add(1, async () => { await relay.kill('SIGTERM') })
    const total = eventCount(owner.versionVector())

    // Kill after a random number of acknowledged frames; more are in flight at that moment.
    const killAfter = random.int(1, 3)
    let killed: Promise<number | null> | undefined
    let ackedAtKill: Record<string, number> = {}
    tap.onAck(() => {
      if (killed || tap.ackCount < killAfter) return
      ackedAtKill = { ...tap.ackedVector() }
      killed = relay.kill('SIGKILL')
    })
    const client = await startSync(teardown, owner, relay.url, { initialDelayMs: 50, maxDelayMs: 400 })
    await waitFor(() => killed !== undefined, `the kill after ${killAfter} acknowledged frames (seed ${seed})`, 30_000)
    expect(await killed).toBeNull()
    const acked = eventCount(ackedAtKill)
    expect(acked, `seed ${seed}: the kill came mid-upload`).toBeGreaterThan(0)
    expect(acked, `seed ${seed}: the kill came mid-upload`).toBeLessThan(total)
    await waitFor(() => client.status === 'connecting', 'the client to notice')
    const statuses = recordStatuses(client)

    relay = await spawnRelay(dir, relay.port, [owner.space])
    const survived = relay.spaces[owner.space]
    expect(survived?.ok, `seed ${seed}: the store verifies after the crash`).toBe(true)
    for (const [author, seq] of Object.entries(ackedAtKill)) {
      expect(survived?.vector[author] ?? 0, `seed ${seed}: acknowledged events of ${author.slice(0, 8)} survived`).toBeGreaterThanOrEqual(seq)
    }
    expect(survived?.events).toBe(eventCount(survived?.vector ?? {}))

    // The client reconnects by itself and finishes the upload.
    await client.synced()
    expect(statuses).toContain('live')
    const copy = await download(teardown, relay.url, owner)
    expect(copy.versionVector()).toEqual(owner.versionVector())
    expect(await copy.digest()).toBe(await owner.digest())
    const report = await copy.log.verify()
    expect(report.ok).toBe(true)
    expect(report.events).toBe(total)

    // On disk, after a clean stop: every event once, the log verifies.
    expect(await relay.kill('SIGTERM')).toBe(0)
    relay = await spawnRelay(dir, 0, [owner.space])
    expect(relay.spaces[owner.space]).toEqual({ vector: owner.versionVector(), events: total, ok: true })
  })
})

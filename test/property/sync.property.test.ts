/**
 * Sync as a law over random histories: 3–5 replicas of one space (the owner, admins that sync by
 * key, writers that sync with a token), all through one relay on loopback, doing random
 * operations (remember, update, forget, appendText on a shared core block) interleaved with
 * random disconnects, reconnects and partitions (some peers offline while others write). Once
 * everyone is back and synced, every replica shows the same memory, every log verifies, and
 * every event written is held exactly once everywhere: none lost, none applied twice.
 *
 * The second property widens the history: facts under the episodes (so a forget deletes
 * through a parent, and admins name what they infer), redactions, restarts of the relay on its
 * store, and a replica that reads through a token scoped to one tag. Each create carries a
 * marker word only it holds. Once settled: the writers show the same memory, the reader shows
 * every record of its scope exactly as the owner does and nothing outside it, no replica holds a
 * marker of a deleted or redacted record (a deletion reaches every copy, the scoped one too),
 * and the reader holds no marker of a record that was never in its scope (tags only grow here).
 */
import fc from 'fast-check'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { CairnError } from '../../src/errors.js'
import { joinVectors } from '../../src/log/index.js'
import type { MemoryRecord } from '../../src/index.js'
import { Memory } from '../../src/memory/index.js'
import { Relay } from '../../src/sync/relay.js'
import type { SyncClient } from '../../src/sync/sync-client.js'
import { eventCount, sleep, storeText, waitFor } from '../helpers/sync-fixtures.js'

const EPISODES = ['ep_a', 'ep_b', 'ep_c', 'ep_d']
const TAGS = ['x', 'y', 'z']
const WORDS = ['tea', 'oslo', 'rust', 'garden', 'kayak']
const EXPECTED = new Set(['UNKNOWN_RECORD', 'FORGOTTEN', 'REDACTED'])

type Step = { peer: number; action: number; pick: number; value: number }
const steps = fc.array(fc.record({ peer: fc.nat(), action: fc.nat(), pick: fc.nat(), value: fc.nat() }), { minLength: 8, maxLength: 36 })

interface Peer {
  readonly memory: Memory
  readonly token?: string
  client?: SyncClient
}

interface SwarmOptions {
  /** The relay keeps its store here, so `restartRelay` brings back what it held. */
  readonly relayPath?: string
  /** A replica that only reads, through a token scoped to this tag. */
  readonly readerTag?: string
}

class Swarm {
  /** The scoped reader, when asked for: not a writer, so never in `peers`. */
  reader: Peer | undefined

  private constructor(public relay: Relay, readonly peers: Peer[], private readonly options: SwarmOptions) {}

  /** The owner, then admins (even index) and token writers (odd index), all granted; a shared core block. */
  static async open(count: number, options: SwarmOptions = {}): Promise<Swarm> {
    const relay = await Relay.start(options.relayPath === undefined ? {} : { path: options.relayPath })
    const owner = await Memory.open({ name: 'swarm' })
    await owner.remember({ kind: 'core', id: 'shared', content: 'Shared.' })
    const peers: Peer[] = [{ memory: owner }]
    for (let i = 1; i < count; i++) {
      const memory = await Memory.open({ space: owner.space })
      const isAdmin = i % 2 === 0
      await owner.grant(memory.author, isAdmin ? ['admin'] : ['write'])
      peers.push(isAdmin ? { memory } : {
        memory,
        // Writers update and forget, so their tokens carry write and redact.
        token: owner.createToken({ audience: memory.author, scope: { all: true }, permissions: ['read', 'write', 'redact'], expiresIn: 3_600_000 }),
      })
    }
    const swarm = new Swarm(relay, peers, options)
    if (options.readerTag !== undefined) {
      const memory = await Memory.open({ space: owner.space })
      swarm.reader = { memory, token: owner.createToken({ audience: memory.author, scope: { tags: { any: [options.readerTag] } }, permissions: ['read'], expiresIn: 3_600_000 }) }
    }
    // The owner brings the space (genesis, grants) to the relay before the others connect.
    await swarm.connect(peers[0] as Peer)
    await peers[0]?.client?.synced()
    await swarm.converge()
    return swarm
  }

  /** Every replica: the writers, then the reader. */
  get replicas(): Peer[] {
    return this.reader === undefined ? this.peers : [...this.peers, this.reader]
  }

  /** Stops the relay and starts it again on the same port and store; clients reconnect by themselves. */
  async restartRelay(): Promise<void> {
    const port = Number(new URL(this.relay.url).port)
    await this.relay.stop()
    this.relay = await Relay.start({ port, ...(this.options.relayPath === undefined ? {} : { path: this.options.relayPath }) })
  }

  async connect(peer: Peer): Promise<void> {
    if (peer.client) return
    peer.client = await peer.memory.sync(this.relay.url, { initialDelayMs: 20, maxDelayMs: 200, ...(peer.token ? { token: peer.token } : {}) })
  }

  async disconnect(peer: Peer): Promise<void> {
    await peer.client?.close()
    peer.client = undefined
  }

  /** Everyone connected and synced, and every replica holding every event. */
  async converge(): Promise<Record<string, number>> {
    for (const peer of this.replicas) await this.connect(peer)
    for (const [i, peer] of this.replicas.entries()) {
      const client = peer.client as SyncClient
      await Promise.race([
        client.synced(),
        sleep(15_000).then(() => { throw new Error(`peer ${i} not synced within 15 s (status ${client.status})`) }),
      ])
    }
    // Headers of what is outside a scope travel too: the reader's vector ends as everyone's.
    const all = () => joinVectors(...this.replicas.map((peer) => peer.memory.versionVector()))
    await waitFor(() => this.replicas.every((peer) => JSON.stringify(peer.memory.versionVector()) === JSON.stringify(all())), 'every replica to hold every event', 15_000)
    return all()
  }

  /** `converge` until nothing new appears (an admin names the deletions it infers after applying). */
  async settle(): Promise<Record<string, number>> {
    let vector = await this.converge()
    for (let round = 0; round < 10; round++) {
      await Promise.all(this.replicas.map((peer) => peer.memory.applyPending()))
      await sleep(30)
      const next = await this.converge()
      if (JSON.stringify(next) === JSON.stringify(vector)) return next
      vector = next
    }
    throw new Error('the replicas kept writing after they converged')
  }

  async close(): Promise<void> {
    for (const peer of this.replicas) await this.disconnect(peer)
    await this.relay.stop()
    for (const peer of this.replicas) await peer.memory.close()
  }
}

/** One random step; returns how many events it wrote. */
async function act(swarm: Swarm, step: Step): Promise<number> {
  const peer = swarm.peers[step.peer % swarm.peers.length] as Peer
  const memory = peer.memory
  const episode = EPISODES[step.pick % EPISODES.length] as string
  const word = WORDS[step.value % WORDS.length] as string
  try {
    switch (step.action % 10) {
      case 0: await memory.remember({ kind: 'episode', id: episode, summary: `about ${word}`, tags: [TAGS[step.value % TAGS.length] as string] }); return 1
      case 1: await memory.update(episode, { set: { importance: (step.value % 10) / 10 }, add: { tags: [TAGS[step.value % TAGS.length] as string] } }); return 1
      case 2: await memory.forget(episode); return 1
      case 3: await memory.appendText('shared', ` ${word}`); return 1
      case 4: await swarm.disconnect(peer); return 0
      case 5: await swarm.connect(peer); return 0
      case 6: {
        // A partition: the peers whose bit is set in `value` go offline together.
        for (const [i, other] of swarm.peers.entries()) if ((step.value >> i) & 1) await swarm.disconnect(other)
        return 0
      }
      case 7: await sleep(step.value % 25); return 0
      case 8: {
        // A batch: several events under one signature, cut into frames at that signature.
        const ids = [episode, EPISODES[(step.pick + 1) % EPISODES.length] as string]
        return (await memory.rememberMany(ids.map((id) => ({ kind: 'episode' as const, id, summary: `batch ${word}` })))).length
      }
      default: await memory.update(episode, { increment: { accessCount: 1 } }); return 1
    }
  } catch (error) {
    if (error instanceof CairnError && EXPECTED.has(error.code)) return 0
    throw error
  }
}

/** RUNS in the environment runs the properties longer (a deeper hunt than the suite's default). */
const runs = (fallback: number): number => Number(process.env.RUNS ?? fallback)
/** A run takes well under a second; a slow machine gets three each, past the default minute. */
const timeoutFor = (count: number): number => Math.max(60_000, count * 3_000)
/** SEED (and FCPATH, the path fast-check prints) replay a failing run; NOSHRINK=1 reports it unshrunk. */
const replay = (): { seed?: number; path?: string; endOnFailure?: boolean } => ({
  ...(process.env.SEED ? { seed: Number(process.env.SEED) } : {}),
  ...(process.env.FCPATH ? { path: process.env.FCPATH } : {}),
  ...(process.env.NOSHRINK === '1' ? { endOnFailure: true } : {}),
})

describe('sync through a relay', () => {
  it('replicas converge after random operations, disconnects and partitions: equal digests, every event exactly once', async () => {
    await fc.assert(fc.asyncProperty(fc.integer({ min: 3, max: 5 }), steps, async (count, history) => {
      const swarm = await Swarm.open(count)
      try {
        const before = eventCount(swarm.peers[0]?.memory.versionVector() ?? {})
        let written = 0
        for (const step of history) written += await act(swarm, step)
        const vector = await swarm.converge()
        const total = eventCount(vector)
        expect(total, 'no event lost').toBe(before + written)
        const owner = (swarm.peers[0] as Peer).memory
        expect(vector).toEqual(owner.versionVector())
        const digest = await owner.digest()
        for (const peer of swarm.peers) {
          expect(peer.client?.status).toBe('live')
          expect(peer.memory.versionVector()).toEqual(vector)
          expect(await peer.memory.digest()).toBe(digest)
          const report = await peer.memory.log.verify()
          expect(report.problems).toEqual([])
          expect(report.ok).toBe(true)
          expect(report.events, 'no event applied twice').toBe(total)
        }
      } finally {
        await swarm.close()
      }
    }), { numRuns: runs(10), ...replay() })
  }, timeoutFor(runs(10)))

  it('with facts under episodes, redactions, relay restarts and a tag-scoped reader: deletions reach every copy, the reader holds its scope and nothing else', async () => {
    const wideSteps = fc.array(fc.record({ peer: fc.nat(), action: fc.integer({ min: 0, max: 15 }), pick: fc.nat(), value: fc.nat() }), { minLength: 12, maxLength: 40 })
    await fc.assert(fc.asyncProperty(fc.integer({ min: 3, max: 4 }), wideSteps, async (count, history) => {
      const relayPath = await mkdtemp(path.join(tmpdir(), 'cairn-sync-property-'))
      const swarm = await Swarm.open(count, { relayPath, readerTag: READER_TAG })
      try {
        const markers = new Map<string, string>()
        for (const step of history) await actWide(swarm, step, markers)
        const vector = await swarm.settle()
        const total = eventCount(vector)
        const owner = (swarm.peers[0] as Peer).memory
        const digest = await owner.digest()
        for (const peer of swarm.replicas) {
          expect(peer.memory.versionVector()).toEqual(vector)
          const report = await peer.memory.log.verify()
          expect(report.problems).toEqual([])
          expect(report.events, 'every event held once').toBe(total)
          if (peer !== swarm.reader) expect(await peer.memory.digest()).toBe(digest)
        }

        // What the owner shows, and where each record stands.
        const shown = new Map<string, MemoryRecord>()
        for await (const record of owner.records()) shown.set(record.id, record)
        const ids = [...new Set(markers.values())]
        const looked = await owner.lookup(ids)
        const statuses = new Map(ids.map((id, i) => [id, looked[i]?.status]))
        const inScope = (record: MemoryRecord | undefined): boolean => ((record as { tags?: readonly string[] } | undefined)?.tags ?? []).includes(READER_TAG)

        // The reader shows every record of its scope as the owner does, and nothing outside it.
        const reader = (swarm.reader as Peer).memory
        const seen = new Map<string, MemoryRecord>()
        for await (const record of reader.records()) seen.set(record.id, record)
        for (const [id, record] of shown) {
          if (statuses.get(id) === 'redacted' || !inScope(record)) continue
          expect(seen.get(id), `the reader shows ${id} as the owner does`).toEqual(record)
        }
        for (const [id, record] of seen) {
          expect(shown.has(id), `the reader shows ${id}, which the owner does not`).toBe(true)
          if (statuses.get(id) !== 'redacted') expect(inScope(record), `${id} is in the reader's scope`).toBe(true)
        }

        // Content of deleted and redacted records is on no replica; out-of-scope content never reached the reader.
        const texts = await Promise.all(swarm.replicas.map((peer) => storeText(peer.memory)))
        const readerText = texts[texts.length - 1] as string
        for (const [marker, id] of markers) {
          const status = statuses.get(id)
          if (status === 'deleted' || status === 'redacted') {
            texts.forEach((text, i) => expect(text.includes(marker), `${marker} of ${status} ${id} left on replica ${i}`).toBe(false))
          } else if (status === 'visible' && !inScope(shown.get(id))) {
            expect(readerText.includes(marker), `${marker} of out-of-scope ${id} reached the reader`).toBe(false)
          }
        }
      } finally {
        await swarm.close()
        await rm(relayPath, { recursive: true, force: true })
      }
      // A run that hangs fails with its counterexample instead of timing the test out.
    }), { numRuns: runs(6), timeout: 30_000, ...replay() })
  }, timeoutFor(runs(6)))
})

const READER_TAG = 'x'
const FACTS = ['fact_a', 'fact_b', 'fact_c']

/** One random step of the wider history: creates carry a marker only they hold (mapped to their record). */
async function actWide(swarm: Swarm, step: Step, markers: Map<string, string>): Promise<void> {
  const peer = swarm.peers[step.peer % swarm.peers.length] as Peer
  const memory = peer.memory
  const episode = EPISODES[step.pick % EPISODES.length] as string
  const fact = FACTS[step.pick % FACTS.length] as string
  const tag = TAGS[step.value % TAGS.length] as string
  // Long enough not to turn up by chance: stores hold base64 (the shared block's text documents),
  // where a four-character marker turns up about once in 8,000 runs (measured: 1.2e-4 a run).
  // `mk3q` once did (seed 92392927): "left on replica 0", the owner, which had refused that
  // create (FORGOTTEN: it had forgotten the fact itself, offline) in every replay (helper-81).
  const marker = (id: string): string => {
    const text = `mk${markers.size}qzxv`
    markers.set(text, id)
    return text
  }
  try {
    // Creates come up about one step in three, so later steps find records to work on.
    switch (step.action % 16) {
      case 0: case 14: await memory.remember({ kind: 'episode', id: episode, summary: `about ${marker(episode)}`, tags: [tag] }); return
      case 1: await memory.update(episode, { set: { importance: (step.value % 10) / 10 }, add: { tags: [tag] } }); return
      case 2: await memory.forget(episode); return
      case 3: await memory.appendText('shared', ` ${WORDS[step.value % WORDS.length] as string}`); return
      case 4: await swarm.disconnect(peer); return
      case 5: await swarm.connect(peer); return
      case 6: for (const [i, other] of swarm.peers.entries()) if ((step.value >> i) & 1) await swarm.disconnect(other); return
      // Time for live pushes to land, so later steps on other replicas find what was written.
      case 7: await sleep(10 + (step.value % 40)); return
      case 8: case 15: await memory.remember({ kind: 'fact', id: fact, episodeID: episode, subject: marker(fact), predicate: 'is', object: 'o', tags: [tag] }); return
      case 9: await memory.redact(step.value % 2 === 0 ? episode : fact); return
      case 10: await memory.forget(fact); return
      case 11: {
        const reader = swarm.reader as Peer
        if (reader.client) await swarm.disconnect(reader)
        else await swarm.connect(reader)
        return
      }
      case 12: {
        if (step.value % 3 === 0) await swarm.restartRelay()
        else await sleep(20)
        return
      }
      default: await memory.update(fact, { add: { tags: [tag] } }); return
    }
  } catch (error) {
    if (error instanceof CairnError && EXPECTED.has(error.code)) return
    throw error
  }
}

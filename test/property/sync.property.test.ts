/**
 * Sync as a law over random histories: 3–5 replicas of one space (the owner, admins that sync by
 * key, writers that sync with a token), all through one relay on loopback, doing random
 * operations (remember, update, forget, appendText on a shared core block) interleaved with
 * random disconnects, reconnects and partitions (some peers offline while others write). Once
 * everyone is back and synced, every replica shows the same memory, every log verifies, and
 * every event written is held exactly once everywhere: none lost, none applied twice.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { CairnError } from '../../src/errors.js'
import { joinVectors } from '../../src/log/index.js'
import { Memory } from '../../src/memory/index.js'
import { Relay } from '../../src/sync/relay.js'
import type { SyncClient } from '../../src/sync/sync-client.js'
import { eventCount, sleep, waitFor } from '../helpers/sync-fixtures.js'

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

class Swarm {
  private constructor(readonly relay: Relay, readonly peers: Peer[]) {}

  /** The owner, then admins (even index) and token writers (odd index), all granted; a shared core block. */
  static async open(count: number): Promise<Swarm> {
    const relay = await Relay.start()
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
    const swarm = new Swarm(relay, peers)
    // The owner brings the space (genesis, grants) to the relay before the others connect.
    await swarm.connect(peers[0] as Peer)
    await peers[0]?.client?.synced()
    await swarm.converge()
    return swarm
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
    for (const peer of this.peers) await this.connect(peer)
    for (const [i, peer] of this.peers.entries()) {
      const client = peer.client as SyncClient
      await Promise.race([
        client.synced(),
        sleep(15_000).then(() => { throw new Error(`peer ${i} not synced within 15 s (status ${client.status})`) }),
      ])
    }
    const all = () => joinVectors(...this.peers.map((peer) => peer.memory.versionVector()))
    await waitFor(() => this.peers.every((peer) => JSON.stringify(peer.memory.versionVector()) === JSON.stringify(all())), 'every replica to hold every event', 15_000)
    return all()
  }

  async close(): Promise<void> {
    for (const peer of this.peers) await this.disconnect(peer)
    await this.relay.stop()
    for (const peer of this.peers) await peer.memory.close()
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
    }), { numRuns: 10 })
  })
})

/**
 * The Cairn relay for the sync benchmark: `Relay.start({ path })` (what `cairn serve` runs) on
 * the data directory, on loopback. Runs inside `relay-child.ts`, like the peers' relays. What it
 * holds and the bytes it moved come from the relay's public `stats()`.
 *
 * Invariant: `holds` resolves only once the space's log covers the target vector (the log
 * advances its vector after the atomic write, so that is "persisted"). The relay projects
 * records on demand (a token peer's scope, a deletion), and these peers have full access, so
 * there is nothing else to wait for: its stats report `projected` behind `events`.
 */
import { Relay, type VersionVector } from '../../src/index.js'
import type { BenchRelay, CreateBenchRelay } from './relay-contract.js'
import { waitFor } from './sync-harness.js'
import { epochMs } from './sync-workload.js'

/** What `holds` waits for: a space whose log covers this version vector. */
export interface CairnRelayTarget {
  space: string
  vector: VersionVector
}

/** Whether `held` has at least every author's seq in `target`. */
export function coversVector(held: VersionVector, target: VersionVector): boolean {
  return Object.entries(target).every(([author, seq]) => (held[author] ?? 0) >= seq)
}

export const createRelay: CreateBenchRelay = async ({ dataDir, host }) => {
  const relay = await Relay.start({ path: dataDir, host, port: 0 })
  const bench: BenchRelay = {
    url: relay.url,
    async holds(target, timeoutMs) {
      const { space, vector } = target as CairnRelayTarget
      const heldAt = await waitFor(
        () => {
          const held = relay.stats().spaces.find((stats) => stats.space === space)
          return held !== undefined && coversVector(held.versionVector, vector)
        },
        { timeoutMs, label: `relay to hold space ${space.slice(0, 8)}`, pollMs: 2 },
      )
      const heldAtEpochMs = performance.timeOrigin + heldAt
      return { heldAtEpochMs, persistedAtEpochMs: epochMs() }
    },
    traffic: () => {
      const { bytesIn, bytesOut } = relay.stats()
      return { receivedBytes: bytesIn, sentBytes: bytesOut }
    },
    close: () => relay.stop(),
  }
  return bench
}

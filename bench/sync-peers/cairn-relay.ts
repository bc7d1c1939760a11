/**
 * The Cairn relay for the sync benchmark: `Relay.start({ path })` (what `cairn serve` runs) on
 * the data directory, on loopback. Runs inside `relay-child.ts`, like the peers' relays.
 *
 * The relay has no public "what do you hold" API, so `holds` and the traffic counter reach its
 * private `spaces` map and `server` the way test/helpers reach a store's storage: read-only,
 * and only here. If those fields are renamed this module fails loudly at start, not silently.
 *
 * Invariant: `holds` resolves only once the space's log covers the target vector (the log
 * advances its vector after the atomic LevelDB batch is written, so that is "persisted") and
 * the relay's own projection has caught up with it (`Memory.status` waits for that).
 */
import type { WebSocketServer } from 'ws'
import { Relay, type Memory, type VersionVector } from '../../src/index.js'
import { countWebSocketTraffic, type BenchRelay, type CreateBenchRelay } from './relay-contract.js'
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

/** The private parts of `Relay` this bench reads (see the header). */
interface RelayInternals {
  spaces: Map<string, Promise<Memory>>
  server: WebSocketServer
}

export const createRelay: CreateBenchRelay = async ({ dataDir, host }) => {
  const relay = await Relay.start({ path: dataDir, host, port: 0 })
  const internals = relay as unknown as RelayInternals
  if (!(internals.spaces instanceof Map) || typeof internals.server?.on !== 'function') {
    await relay.stop()
    throw new Error('Relay internals changed: update bench/sync-peers/cairn-relay.ts')
  }
  const traffic = countWebSocketTraffic(internals.server)
  // Spaces are opened lazily on a peer's hello; a resolved Memory is read synchronously below.
  const opened = new Map<string, Memory>()
  const memoryOf = (space: string): Memory | undefined => {
    const cached = opened.get(space)
    if (cached) return cached
    void internals.spaces.get(space)?.then((memory) => opened.set(space, memory), () => undefined)
    return undefined
  }

  const bench: BenchRelay = {
    url: relay.url,
    async holds(target, timeoutMs) {
      const { space, vector } = target as CairnRelayTarget
      const heldAt = await waitFor(
        () => {
          const memory = memoryOf(space)
          return memory !== undefined && coversVector(memory.versionVector(), vector)
        },
        { timeoutMs, label: `relay to hold space ${space.slice(0, 8)}`, pollMs: 2 },
      )
      const heldAtEpochMs = performance.timeOrigin + heldAt
      // Any id will do: status() first waits until the projection has caught up.
      await (opened.get(space) as Memory).status('bench-settled')
      return { heldAtEpochMs, persistedAtEpochMs: epochMs() }
    },
    traffic,
    close: () => relay.stop(),
  }
  return bench
}

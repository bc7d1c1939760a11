/**
 * The automerge-repo relay for the sync benchmark, configured as automerge's own
 * `automerge-repo-sync-server` is: a `Repo` with `NodeFSStorageAdapter` on the data directory,
 * a `WebSocketServerAdapter` on a `ws` server, and `sharePolicy: async () => false` (the server
 * does not announce documents; it syncs those that peers ask for or send). Runs inside
 * `relay-child.ts`.
 *
 * Invariant: `holds` resolves only after `repo.flush` wrote the held heads to the data directory.
 */
import * as Automerge from '@automerge/automerge'
import { Repo, type DocumentId, type PeerId } from '@automerge/automerge-repo'
import { WebSocketServerAdapter } from '@automerge/automerge-repo-network-websocket'
import { NodeFSStorageAdapter } from '@automerge/automerge-repo-storage-nodefs'
import { WebSocketServer } from 'ws'
import { countWebSocketTraffic, type BenchRelay, type CreateBenchRelay } from './relay-contract.js'
import { waitFor } from './sync-harness.js'
import { epochMs } from './sync-workload.js'

/** What `holds` waits for: the document and its exact heads (hex change hashes). */
export interface AutomergeRelayTarget {
  documentId: string
  heads: string[]
}

export function sameHeads(left: readonly string[], right: readonly string[]): boolean {
  if (left.length !== right.length) return false
  const set = new Set(left)
  return right.every((head) => set.has(head))
}

export const createRelay: CreateBenchRelay = async ({ dataDir, host }) => {
  const server = new WebSocketServer({ host, port: 0 })
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve)
    server.once('error', reject)
  })
  const traffic = countWebSocketTraffic(server)
  const repo = new Repo({
    storage: new NodeFSStorageAdapter(dataDir),
    // The adapter's types name isomorphic-ws's server; `ws`'s is the same class at runtime.
    network: [new WebSocketServerAdapter(server as never)],
    peerId: `bench-relay-${process.pid}` as PeerId,
    sharePolicy: async () => false,
  })
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0

  const relay: BenchRelay = {
    url: `ws://${host}:${port}`,
    async holds(target, timeoutMs) {
      const { documentId, heads } = target as AutomergeRelayTarget
      const id = documentId as DocumentId
      // The handle appears when the first sync message for the document arrives.
      const heldAt = await waitFor(
        () => {
          const handle = repo.handles[id]
          return handle !== undefined && handle.isReady() && sameHeads(Automerge.getHeads(handle.doc()), heads)
        },
        { timeoutMs, label: `relay to hold ${documentId}`, pollMs: 2 },
      )
      const heldAtEpochMs = performance.timeOrigin + heldAt
      await repo.flush([id])
      return { heldAtEpochMs, persistedAtEpochMs: epochMs() }
    },
    traffic,
    async close() {
      await repo.shutdown()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
  return relay
}

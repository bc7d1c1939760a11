/**
 * The Yjs relay for the sync benchmark: `@y/websocket-server` (`setupWSConnection`) on a `ws`
 * server, persisted with `y-leveldb`. The persistence binding is the one the server installs
 * itself when `YPERSISTENCE` is set (load the stored doc, store the in-memory state, then store
 * every update), repeated here only so it uses this directory and the top-level `y-leveldb`
 * 0.2 rather than the server's nested optional copy. Runs inside `relay-child.ts`.
 *
 * Invariant: `holds` resolves only after every update queued on the LevelDB store before the
 * target was held has been written (y-leveldb runs its writes one after another on `tr`).
 */
import { setPersistence, setupWSConnection, docs, type WSSharedDoc } from '@y/websocket-server/utils'
import { LeveldbPersistence } from 'y-leveldb'
import * as Y from 'yjs'
import { WebSocketServer } from 'ws'
import { countWebSocketTraffic, type BenchRelay, type CreateBenchRelay } from './relay-contract.js'
import { waitFor } from './sync-harness.js'
import { drainWrites } from './y-leveldb-drain.js'
import { epochMs } from './sync-workload.js'

/** What `holds` waits for: a room's document covering this state vector. */
export interface YjsRelayTarget {
  docName: string
  stateVector: Uint8Array
}

/** Whether `held` (a state vector) covers every client clock in `target`. */
export function coversStateVector(held: Uint8Array, target: Uint8Array): boolean {
  const have = Y.decodeStateVector(held)
  for (const [client, clock] of Y.decodeStateVector(target)) {
    if ((have.get(client) ?? 0) < clock) return false
  }
  return true
}

export const createRelay: CreateBenchRelay = async ({ dataDir, host }) => {
  const server = new WebSocketServer({ host, port: 0 })
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve)
    server.once('error', reject)
  })
  const traffic = countWebSocketTraffic(server)
  const store = new LeveldbPersistence(dataDir)
  setPersistence({
    provider: store,
    bindState: async (docName: string, doc: WSSharedDoc) => {
      const persisted = await store.getYDoc(docName)
      void store.storeUpdate(docName, Y.encodeStateAsUpdate(doc))
      Y.applyUpdate(doc, Y.encodeStateAsUpdate(persisted))
      doc.on('update', (update: Uint8Array) => {
        void store.storeUpdate(docName, update)
      })
    },
    writeState: async () => {},
  })
  server.on('connection', (socket, request) => setupWSConnection(socket, request))
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0

  const relay: BenchRelay = {
    url: `ws://${host}:${port}`,
    async holds(target, timeoutMs) {
      const { docName, stateVector } = target as YjsRelayTarget
      const heldAt = await waitFor(
        () => {
          const doc = docs.get(docName)
          return doc !== undefined && coversStateVector(Y.encodeStateVector(doc), stateVector)
        },
        { timeoutMs, label: `relay to hold ${docName}`, pollMs: 2 },
      )
      const heldAtEpochMs = performance.timeOrigin + heldAt
      await drainWrites(store)
      return { heldAtEpochMs, persistedAtEpochMs: epochMs() }
    },
    traffic,
    async close() {
      for (const socket of server.clients) socket.terminate()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await drainWrites(store)
      await store.destroy()
    },
  }
  return relay
}

/**
 * What a system's relay module provides to the sync benchmark. The relay runs in its own child
 * process (`relay-child.ts`), as a server would, so its memory can be measured on its own and
 * its work runs beside the peers' rather than interleaved with it on one thread.
 *
 * A relay module (`automerge-repo-relay.ts`, `y-websocket-relay.ts`, later Cairn's) exports
 * `createRelay: CreateBenchRelay`. Everything that crosses the process boundary is structured-
 * clone data (`child_process` "advanced" serialization), so targets may hold `Uint8Array`s.
 *
 * Invariant: `holds` resolves only once the relay holds the target in memory *and* has written
 * it to its own storage; a relay never reports progress it could lose in a crash-free restart.
 */
import type { WebSocketServer } from 'ws'

export interface BenchRelayOptions {
  /** An empty or previously used directory that is the relay's only storage. */
  dataDir: string
  /** Loopback host to listen on (port 0: the system picks one). */
  host: string
}

/** Times (epoch ms, `epochMs()`) at which the relay first held a target and had persisted it. */
export interface HoldsReport {
  heldAtEpochMs: number
  persistedAtEpochMs: number
}

export interface BenchRelay {
  /** `ws://host:port` (peers append their own path, e.g. the room name). */
  url: string
  /**
   * Resolves once the relay holds `target` (system-specific: heads, a state vector, a version
   * vector) and has written it to its storage.
   * @throws Error after `timeoutMs`.
   */
  holds(target: unknown, timeoutMs: number): Promise<HoldsReport>
  /** Bytes received and sent on the relay's WebSockets so far, when the relay counts them. */
  traffic?(): { receivedBytes: number; sentBytes: number }
  /** Flushes everything to storage and stops serving. */
  close(): Promise<void>
}

export type CreateBenchRelay = (options: BenchRelayOptions) => Promise<BenchRelay>

/**
 * Counts bytes on every connection of a `ws` server, for relays that own one. Call it before
 * the system attaches its own `connection` listener, so messages sent during the handshake are
 * counted too.
 */
export function countWebSocketTraffic(server: WebSocketServer): () => { receivedBytes: number; sentBytes: number } {
  let receivedBytes = 0
  let sentBytes = 0
  server.on('connection', (socket) => {
    socket.on('message', (data: Buffer | ArrayBuffer | Buffer[]) => {
      receivedBytes += Array.isArray(data)
        ? data.reduce((sum, part) => sum + part.byteLength, 0)
        : data.byteLength
    })
    const send = socket.send.bind(socket) as (data: unknown, ...rest: unknown[]) => void
    ;(socket as unknown as { send: (data: unknown, ...rest: unknown[]) => void }).send = (data, ...rest) => {
      if (data instanceof ArrayBuffer || ArrayBuffer.isView(data)) sentBytes += data.byteLength
      else if (typeof data === 'string') sentBytes += Buffer.byteLength(data)
      send(data, ...rest)
    }
  })
  return () => ({ receivedBytes, sentBytes })
}

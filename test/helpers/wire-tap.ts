/**
 * Listens in on this process's sync transports (WebSocketTransport, the only code that touches
 * sockets): which `events` frames each connection sent, and which of them the other side
 * acknowledged. From that, the vector of everything acknowledged, which a relay must never lose.
 *
 * Invariant: the tap only observes; every call goes through to the real transport unchanged.
 */
import { vi } from 'vitest'
import { joinVectors, type VersionVector } from '../../src/log/index.js'
import { vectorOfEvents } from '../../src/sync/frames.js'
import { decodeMessage } from '../../src/sync/messages.js'
import { WebSocketTransport } from '../../src/sync/transport.js'

interface Connection {
  readonly sent: Map<number, VersionVector>
  readonly acked: Set<number>
}

export interface WireTap {
  /** Everything some connection sent and had acknowledged. */
  ackedVector(): VersionVector
  /** Acknowledged `events` frames, over all connections. */
  readonly ackCount: number
  /** Called after each acknowledgement is seen (synchronously, before the session sees it). */
  onAck(listener: () => void): void
  restore(): void
}

function decoded(data: Uint8Array) {
  try {
    return decodeMessage(data)
  } catch {
    return undefined
  }
}

export function tapTransports(): WireTap {
  const connections = new Map<WebSocketTransport, Connection>()
  const listeners: (() => void)[] = []
  let ackCount = 0
  const connection = (transport: WebSocketTransport): Connection => {
    let found = connections.get(transport)
    if (!found) {
      found = { sent: new Map(), acked: new Set() }
      connections.set(transport, found)
    }
    return found
  }
  const send = WebSocketTransport.prototype.send
  const onMessage = WebSocketTransport.prototype.onMessage
  const sendSpy = vi.spyOn(WebSocketTransport.prototype, 'send').mockImplementation(function (this: WebSocketTransport, data: Uint8Array) {
    const message = decoded(data)
    if (message?.type === 'events') connection(this).sent.set(message.seq, vectorOfEvents(message.events))
    return send.call(this, data)
  })
  const messageSpy = vi.spyOn(WebSocketTransport.prototype, 'onMessage').mockImplementation(function (this: WebSocketTransport, listener: (data: Uint8Array) => void) {
    onMessage.call(this, (data) => {
      const message = decoded(data)
      if (message?.type === 'ack' && connection(this).sent.has(message.seq)) {
        connection(this).acked.add(message.seq)
        ackCount++
        for (const notify of listeners) notify()
      }
      listener(data)
    })
  })
  return {
    ackedVector() {
      let vector: VersionVector = {}
      for (const { sent, acked } of connections.values()) for (const seq of acked) vector = joinVectors(vector, sent.get(seq) ?? {})
      return vector
    },
    get ackCount() {
      return ackCount
    },
    onAck(listener) {
      listeners.push(listener)
    },
    restore() {
      sendSpy.mockRestore()
      messageSpy.mockRestore()
    },
  }
}

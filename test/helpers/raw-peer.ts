/**
 * A hand-driven sync peer on a raw `ws` socket, for tests that must send what a real client never
 * would: garbage, frames out of order, oversized frames, events that break the rules. It can run
 * the real handshake (hello, proof) with any identity and token, and records every frame it
 * receives and how the socket closed.
 *
 * Invariant: it never throws on what the relay sends; undecodable frames are recorded as such.
 */
import WebSocket from 'ws'
import { CairnError } from '../../src/errors.js'
import { buildEvent, eventSignable, nextHlc, type EventEnvelope, type Identity } from '../../src/log/index.js'
import { NONCE_BYTES, decodeMessage, encodeMessage, type Message } from '../../src/sync/messages.js'
import { proveKey } from '../../src/sync/handshake.js'
import type { Memory } from '../../src/memory/index.js'
import { randomBytes } from 'node:crypto'

export interface Closed {
  readonly code: number
  readonly reason: string
}

export type Received = Message | { readonly type: 'undecodable'; readonly error: string }

export class RawPeer {
  readonly received: Received[] = []
  readonly closed: Promise<Closed>
  private waiters: (() => void)[] = []
  private closedWith: Closed | undefined

  private constructor(readonly socket: WebSocket) {
    this.closed = new Promise((resolve) => {
      socket.on('close', (code, reason) => {
        this.closedWith = { code, reason: reason.toString() }
        resolve(this.closedWith)
        this.wake()
      })
    })
    socket.on('error', () => undefined)
    socket.on('message', (data) => {
      const buffer = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data as ArrayBuffer)
      try {
        this.received.push(decodeMessage(new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength)))
      } catch (error) {
        this.received.push({ type: 'undecodable', error: error instanceof CairnError ? error.code : String(error) })
      }
      this.wake()
    })
  }

  static connect(url: string, options: { maxPayload?: number } = {}): Promise<RawPeer> {
    const socket = new WebSocket(url, { maxPayload: options.maxPayload ?? 64 * 1024 * 1024 })
    return new Promise((resolve, reject) => {
      socket.once('open', () => resolve(new RawPeer(socket)))
      socket.once('error', reject)
    })
  }

  get isClosed(): boolean {
    return this.closedWith !== undefined
  }

  private wake(): void {
    for (const waiter of this.waiters.splice(0)) waiter()
  }

  /** Sends raw bytes as one binary frame (or a string as a text frame). */
  send(data: Uint8Array | string): Promise<void> {
    return new Promise((resolve) => {
      if (this.socket.readyState !== WebSocket.OPEN) return resolve()
      this.socket.send(data, { binary: typeof data !== 'string' }, () => resolve())
    })
  }

  sendMessage(message: Message): Promise<void> {
    return this.send(encodeMessage(message))
  }

  /** The first received frame (from `from` on) that matches, waiting for it; undefined if the socket closes first. */
  async next<Type extends Received['type']>(type: Type, timeoutMs = 10_000, from = 0): Promise<Extract<Received, { type: Type }> | undefined> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const found = this.received.slice(from).find((message) => message.type === type)
      if (found) return found as Extract<Received, { type: Type }>
      if (this.isClosed) return undefined
      if (Date.now() > deadline) throw new Error(`no ${type} frame within ${timeoutMs} ms`)
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve)
        setTimeout(resolve, 50)
      })
    }
  }

  /**
   * Runs the client side of the handshake as `identity` for `space`: hello, check nothing, prove
   * the key over the relay's nonce. Resolves with `ready`, or the `error` frame the relay sent.
   */
  async handshake(
    identity: Identity,
    space: string,
    options: { token?: string; genesis?: EventEnvelope; versions?: number[]; claim?: string } = {},
  ): Promise<Message | undefined> {
    const genesis = options.genesis
    // `claim`: the key the hello names, when it is not the key that proves (an impostor).
    await this.sendMessage({
      type: 'hello', versions: options.versions ?? [1], space, peer: options.claim ?? identity.author, nonce: new Uint8Array(randomBytes(NONCE_BYTES)),
      ...(options.token !== undefined ? { token: options.token } : {}),
      ...(genesis ? { genesis: { header: genesis.header, ...(genesis.body ? { body: genesis.body } : {}), ...(genesis.signature ? { signature: genesis.signature } : {}) } } : {}),
    })
    const welcome = await this.next('welcome')
    if (!welcome) return this.received.find((message) => message.type === 'error') as Message | undefined
    await this.sendMessage({ type: 'proof', proof: proveKey(identity, 'client', welcome.nonce, space, welcome.relay) })
    const index = this.received.indexOf(welcome) + 1
    for (;;) {
      const answer = this.received.slice(index).find((message) => message.type === 'ready' || message.type === 'error')
      if (answer) return answer as Message
      if (this.isClosed) return undefined
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve)
        setTimeout(resolve, 50)
      })
    }
  }

  close(): void {
    if (this.socket.readyState === WebSocket.OPEN || this.socket.readyState === WebSocket.CONNECTING) this.socket.terminate()
  }
}

/**
 * A data event by `identity` that extends its chain on top of everything `memory` holds, signed,
 * but never stored anywhere: what a writer the log does not authorize would send.
 */
export async function craftEvent(memory: Memory, identity: Identity, data: unknown, op = 'memory.create'): Promise<EventEnvelope> {
  const [event] = await craftChain(memory, identity, [{ op, data }])
  return event as EventEnvelope
}

/**
 * Data events by `identity`, each signed, the first on top of everything `memory` holds and each
 * next one after it in the author's chain (seq 1, 2, …), never stored anywhere: what a peer
 * running other code could send in one frame, whatever a replica would make of its own events.
 */
export async function craftChain(memory: Memory, identity: Identity, entries: readonly { op: string; data: unknown }[]): Promise<EventEnvelope[]> {
  const deps = memory.log.heads()
  const clocks = []
  for (const id of deps) {
    const event = await memory.log.get(id)
    if (event) clocks.push(event.header.clock)
  }
  const out: EventEnvelope[] = []
  let clock = nextHlc(Date.now(), clocks)
  for (const [i, { op, data }] of entries.entries()) {
    const previous = out[i - 1]
    const event = buildEvent({
      space: memory.log.space, author: identity.author, seq: i + 1, deps: previous ? [] : deps, clock, kind: 'data', op, data: data as never,
      ...(previous ? { prev: previous.id } : {}),
    }, memory.crypto)
    clock = nextHlc(Date.now(), [clock])
    out.push({
      id: event.id,
      header: new TextEncoder().encode(event.headerText),
      body: event.bodyBytes as Uint8Array,
      signature: identity.sign(eventSignable(event.id)),
    })
  }
  return out
}

/**
 * A message transport: binary frames in and out, the amount queued for sending, close. Only this
 * file touches WebSockets (`ws`); sessions see this interface.
 */
import type WebSocket from 'ws'

export interface Transport {
  /** Resolves once the frame is handed to the operating system. */
  send(data: Uint8Array): Promise<void>
  /** Bytes queued but not yet sent: sessions pause above a high-water mark. */
  readonly bufferedAmount: number
  onMessage(listener: (data: Uint8Array) => void): void
  onClose(listener: (code: number, reason: string) => void): void
  close(code?: number, reason?: string): void
  readonly isOpen: boolean
}

/** Close codes: 1000 normal, 1008 policy (auth), 1009 too big, 4000+ Cairn protocol errors. */
export const CLOSE_NORMAL = 1000
export const CLOSE_POLICY = 1008
export const CLOSE_TOO_BIG = 1009
export const CLOSE_PROTOCOL = 4000
/**
 * Reported to this side's close listeners (never sent: the connection is cut, not closed) when
 * nothing came from the peer (no frame, byte, ping or pong) through two heartbeat intervals.
 */
export const CLOSE_PEER_TIMEOUT = 4008

/** Heartbeat interval of both ends, relay and client: a dead connection is cut within two. */
export const DEFAULT_HEARTBEAT_MS = 15_000

export interface WebSocketTransportOptions {
  /**
   * Every this many ms, a WebSocket ping goes to the peer; once nothing at all (a frame, bytes
   * of one arriving, a ping or a pong) came through two whole intervals, the connection is cut
   * (close code CLOSE_PEER_TIMEOUT). A peer gone without a word (a laptop asleep, a network changed, a host
   * lost) is thus noticed within about two intervals instead of when TCP gives up, hours later.
   * A peer busy sending is not cut, nor one whose pong waits behind this side's data while its
   * own pings come; one that blocks its event loop for two intervals is. 0 turns the heartbeat off.
   */
  readonly heartbeatMs?: number
}

export class WebSocketTransport implements Transport {
  private heartbeat: NodeJS.Timeout | undefined
  private heard = false
  private lastHeardAt = 0
  private bytesAtLastHeard = 0
  private timedOut = false
  private readonly heartbeatMs: number
  private lastBeatAt = 0

  constructor(private readonly socket: WebSocket, options: WebSocketTransportOptions = {}) {
    socket.binaryType = 'nodebuffer'
    const intervalMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS
    this.heartbeatMs = intervalMs
    if (intervalMs > 0) {
      const heard = (): void => {
        this.heard = true
      }
      // ws answers pings itself (autoPong): a live peer's pong, or any frame, is an answer.
      socket.on('message', heard)
      socket.on('pong', heard)
      socket.on('ping', heard)
      socket.once('close', () => clearInterval(this.heartbeat))
      this.lastBeatAt = Date.now()
      this.lastHeardAt = this.lastBeatAt
      this.heartbeat = setInterval(() => this.beat(), intervalMs)
      this.heartbeat.unref()
    }
  }

  private beat(): void {
    // Still connecting: the handshake has a timeout of its own.
    if (this.socket.readyState !== 1) {
      if (this.socket.readyState > 1) clearInterval(this.heartbeat)
      return
    }
    // A beat this late means this side's event loop was blocked (or the machine slept): no
    // verdict this time, the silence is counted from now.
    const now = Date.now()
    const late = now - this.lastBeatAt > this.heartbeatMs * 1.5
    this.lastBeatAt = now
    this.socket.ping()
    // The verdict waits for the poll phase: what arrived while this side's loop was blocked (a
    // timer runs before the I/O that waited) is read before it.
    setImmediate(() => {
      if (this.socket.readyState !== 1) return
      const read = this.bytesRead()
      if (late || this.heard || read !== this.bytesAtLastHeard) {
        this.heard = false
        this.bytesAtLastHeard = read
        this.lastHeardAt = now
        return
      }
      // Silent for two whole intervals: the peer's own pings (which travel the direction this
      // side is not filling) come once an interval, so one late one does not cut it.
      if (now - this.lastHeardAt < 2 * this.heartbeatMs) return
      this.timedOut = true
      clearInterval(this.heartbeat)
      this.socket.terminate()
    })
  }

  /**
   * Bytes read off the TCP connection so far: a frame still arriving (a big one over a slow link
   * takes longer than an interval, and the peer's pong queues behind it) shows the peer is there.
   * ws keeps its net.Socket as `_socket` (not a documented field, stable across ws versions); if
   * it were gone, bytes would not count and frames, pings and pongs still would.
   */
  private bytesRead(): number {
    return (this.socket as unknown as { _socket?: { bytesRead?: number } })._socket?.bytesRead ?? 0
  }

  get bufferedAmount(): number {
    return this.socket.bufferedAmount
  }

  get isOpen(): boolean {
    return this.socket.readyState === 1
  }

  send(data: Uint8Array): Promise<void> {
    return new Promise((resolve, reject) => {
      if (!this.isOpen) {
        reject(new Error('socket is closed'))
        return
      }
      this.socket.send(data, { binary: true }, (error) => (error ? reject(error) : resolve()))
    })
  }

  onMessage(listener: (data: Uint8Array) => void): void {
    this.socket.on('message', (data, isBinary) => {
      if (!isBinary) {
        listener(new Uint8Array(0))
        return
      }
      const buffer = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data as ArrayBuffer)
      listener(new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength))
    })
  }

  onClose(listener: (code: number, reason: string) => void): void {
    this.socket.on('close', (code, reason) => (this.timedOut ? listener(CLOSE_PEER_TIMEOUT, 'PEER_TIMEOUT') : listener(code, reason.toString())))
    this.socket.on('error', () => undefined)
  }

  close(code = CLOSE_NORMAL, reason = ''): void {
    clearInterval(this.heartbeat)
    if (this.socket.readyState === 0 || this.socket.readyState === 1) this.socket.close(code, reason.slice(0, 120))
  }
}

/** Running totals of the bytes a set of transports received and sent. */
export interface TrafficCounter {
  bytesIn: number
  bytesOut: number
}

/** A transport that adds the size of every frame it receives or sends to `counter`. */
export class CountingTransport implements Transport {
  constructor(private readonly inner: Transport, private readonly counter: TrafficCounter) {}

  get bufferedAmount(): number {
    return this.inner.bufferedAmount
  }

  get isOpen(): boolean {
    return this.inner.isOpen
  }

  send(data: Uint8Array): Promise<void> {
    this.counter.bytesOut += data.byteLength
    return this.inner.send(data)
  }

  onMessage(listener: (data: Uint8Array) => void): void {
    this.inner.onMessage((data) => {
      this.counter.bytesIn += data.byteLength
      listener(data)
    })
  }

  onClose(listener: (code: number, reason: string) => void): void {
    this.inner.onClose(listener)
  }

  close(code?: number, reason?: string): void {
    this.inner.close(code, reason)
  }
}

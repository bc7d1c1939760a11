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
 * the peer stayed silent through a heartbeat: no frame and no pong for a whole interval after a
 * ping.
 */
export const CLOSE_PEER_TIMEOUT = 4008

/** Heartbeat interval of both ends, relay and client: a dead connection is cut within two. */
export const DEFAULT_HEARTBEAT_MS = 15_000

export interface WebSocketTransportOptions {
  /**
   * Every this many ms, a WebSocket ping goes to the peer unless one is still unanswered and
   * nothing at all came since it was sent: then the connection is cut (close code
   * CLOSE_PEER_TIMEOUT). A peer gone without a word (a laptop asleep, a network changed, a host
   * lost) is thus noticed within two intervals instead of when TCP gives up, hours later. Any
   * frame counts as an answer, so a peer busy sending is never cut; one that blocks its event
   * loop for a whole interval is. 0 turns the heartbeat off.
   */
  readonly heartbeatMs?: number
}

export class WebSocketTransport implements Transport {
  private heartbeat: NodeJS.Timeout | undefined
  private heard = false
  private pinged = false
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
    // A beat this late means this side's event loop was blocked: the timer runs before the I/O
    // that waited meanwhile (the pong may be in it), so no verdict this time.
    const now = Date.now()
    const late = now - this.lastBeatAt > this.heartbeatMs * 1.5
    this.lastBeatAt = now
    if (this.pinged && !this.heard && !late) {
      this.timedOut = true
      clearInterval(this.heartbeat)
      this.socket.terminate()
      return
    }
    this.heard = false
    this.pinged = true
    this.socket.ping()
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

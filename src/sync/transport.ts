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

export class WebSocketTransport implements Transport {
  constructor(private readonly socket: WebSocket) {
    socket.binaryType = 'nodebuffer'
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
    this.socket.on('close', (code, reason) => listener(code, reason.toString()))
    this.socket.on('error', () => undefined)
  }

  close(code = CLOSE_NORMAL, reason = ''): void {
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

/**
 * A replica's connection to a relay: handshake (prove the relay's key, then ours), then a sync
 * session; reconnects with exponential backoff and jitter when the connection drops, and resumes
 * from the version vectors, so nothing is lost or applied twice. Refusals that retrying cannot
 * fix (a bad token, a forged proof, an unknown space) end it with status `error`.
 *
 * Status: connecting → catching-up → live (or closed, once caught up, when `live` is false:
 * after the `finishing` event, once what the catch-up appended here is acknowledged); `error`
 * after a fatal refusal; `closed` after close().
 */
import WebSocket from 'ws'
import { assertBoolean, assertInteger, assertNonEmptyString, assertOptions } from '../assert.js'
import { decodeToken, hasPermission } from '../auth/index.js'
import { AuthError, CairnError, InputError, ProtocolError, VerifyError } from '../errors.js'
import { canonicalJson, type JsonValue } from '../log/index.js'
import { Listeners } from '../log/listeners.js'
import type { Memory } from '../memory/index.js'
import { checkProof, newNonce, proveKey } from './handshake.js'
import { FrameBudget } from './frame-budget.js'
import { MemoryEndpoint } from './memory-endpoint.js'
import { decodeMessage, encodeMessage, MAX_FRAME_BYTES, PROTOCOL_VERSIONS, type Message, type WithheldEvent } from './messages.js'
import { SyncSession } from './sync-session.js'
import { CLOSE_NORMAL, CLOSE_PEER_TIMEOUT, CLOSE_TOO_BIG, DEFAULT_HEARTBEAT_MS, WebSocketTransport, type Transport } from './transport.js'

export type SyncStatus = 'connecting' | 'catching-up' | 'live' | 'error' | 'closed'

export interface SyncOptions {
  /** A capability token for this replica's key (not needed by the owner or admins). */
  readonly token?: string
  /** Keep pushing and receiving new events (default); false: stop once both sides are caught up. */
  readonly live?: boolean
  /** The relay's key, when known: a relay proving another key is refused. */
  readonly relayKey?: string
  readonly initialDelayMs?: number
  readonly maxDelayMs?: number
  /**
   * How long a connection may take from opening the socket to the relay's `ready` (default
   * 15 s); past it the connection is dropped and tried again after the backoff.
   */
  readonly handshakeTimeoutMs?: number
  /**
   * With `live: false`: how long a sync caught up both ways waits for what that appended (an
   * admin's named deletions) to be acknowledged before it closes anyway (default 30 s); the
   * next sync sends what is left.
   */
  readonly finishTimeoutMs?: number
  /**
   * The connection's heartbeat (default DEFAULT_HEARTBEAT_MS, 15 s; 0: none): a relay silent
   * through two whole intervals is taken for gone, and the client connects again after the
   * backoff (error PEER_TIMEOUT). See WebSocketTransportOptions.
   */
  readonly heartbeatMs?: number
}

const DEFAULT_HANDSHAKE_TIMEOUT_MS = 15_000
const DEFAULT_FINISH_TIMEOUT_MS = 30_000
const DEFAULT_INITIAL_DELAY_MS = 100
const DEFAULT_MAX_DELAY_MS = 10_000
/** The longest delay a timer takes (2^31 - 1 ms, about 24.8 days); longer ones fire at once. */
const MAX_DELAY_MS = 2 ** 31 - 1

/**
 * Sync options from a caller, checked: a delay that is not a whole number of milliseconds in
 * range (a timer would fire at once, or never as meant) is refused, naming the option.
 * @throws InputError UNKNOWN_FIELD, WRONG_TYPE, OUT_OF_RANGE
 */
export function readSyncOptions(value: unknown): SyncOptions {
  const raw = assertOptions(value, ['token', 'live', 'relayKey', 'initialDelayMs', 'maxDelayMs', 'handshakeTimeoutMs', 'finishTimeoutMs', 'heartbeatMs'], 'options')
  const delay = (name: 'initialDelayMs' | 'maxDelayMs' | 'handshakeTimeoutMs' | 'finishTimeoutMs' | 'heartbeatMs', min: number): { [key: string]: number } =>
    raw[name] === undefined ? {} : { [name]: assertInteger(raw[name], `options.${name}`, min, MAX_DELAY_MS) }
  const options: SyncOptions = {
    ...(raw.token !== undefined ? { token: assertNonEmptyString(raw.token, 'options.token') } : {}),
    ...(raw.live !== undefined ? { live: assertBoolean(raw.live, 'options.live') } : {}),
    ...(raw.relayKey !== undefined ? { relayKey: assertNonEmptyString(raw.relayKey, 'options.relayKey') } : {}),
    // The backoff doubles from the first delay: 0 would retry at once, for ever.
    ...delay('initialDelayMs', 1),
    ...delay('maxDelayMs', 1),
    ...delay('handshakeTimeoutMs', 1),
    ...delay('finishTimeoutMs', 1),
    // 0: no heartbeat.
    ...delay('heartbeatMs', 0),
  }
  // A first delay above the longest would be cut to it without a word.
  const { initialDelayMs, maxDelayMs = DEFAULT_MAX_DELAY_MS } = options
  if (initialDelayMs !== undefined && initialDelayMs > maxDelayMs) {
    throw new InputError('OUT_OF_RANGE', `initialDelayMs ${initialDelayMs} is above maxDelayMs ${maxDelayMs}${options.maxDelayMs === undefined ? ' (the default)' : ''}`, { field: 'options.initialDelayMs' })
  }
  return options
}

export interface SyncClientEvents {
  status: SyncStatus
  error: CairnError
  received: { readonly events: number }
  /** Records the relay withdrew (they left this replica's scope) and this replica dropped. */
  withdrawn: { readonly records: number }
  /**
   * Events of this replica's the relay kept as headers only, its token not allowing them (a write
   * outside its scope, say): their content stays here, and later events still go through.
   */
  withheld: { readonly events: readonly WithheldEvent[] }
  sent: { readonly events: number }
  /**
   * A one-shot sync (`live: false`) is caught up both ways; it now sends what that set off here
   * (an admin naming the deletions it inferred) and closes once the relay has acknowledged it.
   */
  finishing: undefined
  [name: string]: unknown
}

/** The local setting naming the access this replica last synced through (SyncClient.accessKey). */
const SYNCED_ACCESS_SETTING = 'sync.access'
/** Recorded while a sync through a new access is unfinished: equal to no access, so the next sync rescopes. */
const UNFINISHED_ACCESS = 'unfinished'

/** Errors that retrying cannot fix. */
function isFatal(error: CairnError): boolean {
  return error instanceof AuthError || error instanceof VerifyError ||
    ['UNSUPPORTED_VERSION', 'UNKNOWN_SPACE', 'BAD_FRAME', 'UNEXPECTED_FRAME', 'LIMIT', 'FRAME_TOO_LARGE'].includes(error.code) ||
    /TOKEN|AUDIENCE|PERMISSION|PROOF|NOT_AUTHORIZED|REVOKED|EQUIVOCATION/.test(error.code)
}

export class SyncClient {
  private readonly listeners = new Listeners<SyncClientEvents>()
  private current: SyncStatus = 'connecting'
  private transport: Transport | undefined
  private session: SyncSession | undefined
  private attempt = 0
  private stopped = false
  private timer: NodeJS.Timeout | undefined
  private waiters: { resolve: () => void; reject: (error: CairnError) => void }[] = []
  private lastError: CairnError | undefined
  private verifiedRelay: string | undefined
  /** Frame sizes learned from SLOW_FRAME refusals, kept across reconnects. */
  private readonly frames = new FrameBudget()

  constructor(private readonly memory: Memory, readonly url: string, private readonly options: SyncOptions = {}) {}

  get status(): SyncStatus {
    return this.current
  }

  on<Name extends keyof SyncClientEvents>(name: Name, listener: (payload: SyncClientEvents[Name]) => void): () => void {
    return this.listeners.on(name, listener)
  }

  /** Starts connecting; returns this client. */
  start(): this {
    this.connect()
    return this
  }

  /** The relay's key, once the relay proved it holds it (pin it later with `relayKey`). */
  get relayKey(): string | undefined {
    return this.verifiedRelay
  }

  /**
   * Resolves once caught up both ways (live, or closed in one-shot mode); rejects on a fatal
   * error (at once if one already ended the client) or when closed before catching up.
   */
  synced(): Promise<void> {
    if (this.current === 'live' || (this.current === 'closed' && this.session?.synced)) return Promise.resolve()
    if (this.current === 'error') return Promise.reject(this.lastError ?? new ProtocolError('SYNC_FAILED', 'the sync ended with an error'))
    if (this.current === 'closed') return Promise.reject(new ProtocolError('SYNC_CLOSED', 'the sync was closed before it caught up'))
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }))
  }

  /** Stops syncing; resolves once frames already received are stored and the connection is closed. */
  async close(): Promise<void> {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    const session = this.session
    const transport = this.transport
    if (session) await session.drain().catch(() => undefined)
    session?.close()
    if (transport?.isOpen) {
      const closed = new Promise<void>((resolve) => transport.onClose(() => resolve()))
      transport.close(CLOSE_NORMAL, 'closed')
      await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 1000).unref())])
    } else {
      // Still connecting: abandon the attempt (the socket is closed if it opens anyway).
      transport?.close(CLOSE_NORMAL, 'closed')
    }
    this.setStatus('closed')
    // Waiters still here were not resolved by catching up: they never will be.
    for (const waiter of this.waiters.splice(0)) waiter.reject(new ProtocolError('SYNC_CLOSED', 'the sync was closed before it caught up'))
  }

  private setStatus(status: SyncStatus): void {
    if (this.current === status) return
    this.current = status
    this.listeners.emit('status', status)
    if (status === 'live' || (status === 'closed' && this.session?.synced)) {
      for (const waiter of this.waiters.splice(0)) waiter.resolve()
    }
  }

  private fatal(error: CairnError): void {
    this.stopped = true
    this.lastError = error
    this.listeners.emit('error', error)
    this.setStatus('error')
    for (const waiter of this.waiters.splice(0)) waiter.reject(error)
    this.transport?.close(CLOSE_NORMAL, error.code)
  }

  private connect(): void {
    if (this.stopped) return
    this.setStatus('connecting')
    const socket = new WebSocket(this.url, { maxPayload: MAX_FRAME_BYTES })
    const heartbeatMs = this.options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS
    const transport = new WebSocketTransport(socket, { heartbeatMs })
    this.transport = transport
    this.session = undefined
    const nonce = newNonce(this.memory.crypto)
    let relay: string | undefined
    let failure: CairnError | undefined
    let handling: Promise<void> = Promise.resolve()
    // This connection's session: a late close of an earlier connection must not end a later one's.
    let session: SyncSession | undefined
    /** Ready came but no session started (the connection went meanwhile): later frames are moot. */
    let isAbandoned = false
    const timeoutMs = this.options.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS
    const handshakeTimer = setTimeout(() => {
      failure ??= new ProtocolError('HANDSHAKE_TIMEOUT', `the relay did not complete the handshake within ${timeoutMs} ms`)
      transport.close(CLOSE_NORMAL, 'handshake timeout')
    }, timeoutMs)
    handshakeTimer.unref()
    socket.on('open', () => {
      // Closed while connecting: the socket opened anyway.
      if (this.stopped || this.transport !== transport) {
        transport.close(CLOSE_NORMAL, 'closed')
        return
      }
      void this.hello(transport, nonce).catch((error: unknown) => this.dropped(error))
    })
    socket.on('error', (error) => {
      failure ??= new ProtocolError('CONNECTION_FAILED', error.message)
    })
    transport.onClose((code) => {
      clearTimeout(handshakeTimer)
      session?.close()
      if (this.transport !== transport) return
      // The relay refused a frame as too big: sending it again would fail again.
      if (code === CLOSE_TOO_BIG) failure ??= new ProtocolError('FRAME_TOO_LARGE', 'the relay refused a frame over its size limit')
      if (code === CLOSE_PEER_TIMEOUT) failure ??= new ProtocolError('PEER_TIMEOUT', `nothing came from the relay for ${2 * heartbeatMs} ms (two heartbeats): the connection was cut`)
      if (!this.stopped) this.dropped(failure ?? new ProtocolError('CONNECTION_CLOSED', 'the connection closed'))
    })
    transport.onMessage((data) => {
      if (session) {
        session.receive(data)
        return
      }
      handling = handling.then(async () => {
        if (session) return session.receive(data)
        if (this.stopped) return
        const message = decodeMessage(data)
        if (message.type === 'error') {
          failure = message.code === 'UNKNOWN_SPACE' || /TOKEN|AUDIENCE|PROOF|AUTHORIZED|REVOKED|SPACE/.test(message.code)
            ? new AuthError(message.code, `relay refused: ${message.message}`, { frame: 'error' })
            : new ProtocolError(message.code, `relay refused: ${message.message}`, { frame: 'error' })
          return
        }
        // After an abandoned start only the relay's error still says something (why it closed).
        if (isAbandoned) return
        if (!relay) {
          if (message.type !== 'welcome') throw new ProtocolError('UNEXPECTED_FRAME', 'expected welcome', { frame: message.type })
          relay = await this.answer(transport, message, nonce)
          return
        }
        if (message.type !== 'ready') throw new ProtocolError('UNEXPECTED_FRAME', 'expected ready', { frame: message.type })
        // Withdrawals are accepted only by a client that asked for scoped access: a relay cannot
        // make a full-access replica drop what it holds by claiming it is scoped.
        session = await this.run(transport, this.options.token !== undefined && !message.full, message.full)
        // No session: the connection closed (or was replaced) while it started. The frames the
        // relay sent after ready (its want) belong to that session: ignored, not a protocol error
        // that would end the sync for good (a relay restarting right after ready did that).
        if (!session) isAbandoned = true
        if (session) clearTimeout(handshakeTimer)
        // The genesis went in `hello`, outside any frame: counted once the relay says it took it.
        if (session && message.genesis) this.listeners.emit('sent', { events: 1 })
      }).catch((error: unknown) => {
        failure = error instanceof CairnError ? error : new ProtocolError('INTERNAL', (error as Error).message)
        transport.close(4000, failure.code)
      })
    })
  }

  private async hello(transport: Transport, nonce: Uint8Array): Promise<void> {
    const genesis = await this.memory.log.envelope(this.memory.space)
    const hello: Message = {
      type: 'hello',
      versions: PROTOCOL_VERSIONS,
      space: this.memory.space,
      peer: this.memory.author,
      nonce,
      ...(this.options.token !== undefined ? { token: this.options.token } : {}),
      ...(genesis ? { genesis: { header: genesis.header, ...(genesis.body ? { body: genesis.body } : {}), ...(genesis.signature ? { signature: genesis.signature } : {}) } } : {}),
    }
    await transport.send(encodeMessage(hello))
  }

  private async answer(transport: Transport, welcome: Extract<Message, { type: 'welcome' }>, nonce: Uint8Array): Promise<string> {
    const crypto = this.memory.crypto
    if (!PROTOCOL_VERSIONS.includes(welcome.version)) {
      throw new ProtocolError('UNSUPPORTED_VERSION', `the relay chose protocol version ${welcome.version}; this client speaks ${PROTOCOL_VERSIONS.join(', ')}`, { frame: 'welcome' })
    }
    if (this.options.relayKey !== undefined && welcome.relay !== this.options.relayKey) {
      throw new AuthError('RELAY_KEY_MISMATCH', `the relay proved key ${welcome.relay}, not the expected one`)
    }
    if (!checkProof(crypto, welcome.proof, 'relay', nonce, this.memory.space, welcome.relay, this.memory.author)) {
      throw new AuthError('BAD_PROOF', 'the relay did not prove it holds its key')
    }
    const proof = proveKey(this.memory.identity, 'client', welcome.nonce, this.memory.space, welcome.relay)
    await transport.send(encodeMessage({ type: 'proof', proof }))
    this.verifiedRelay = welcome.relay
    return welcome.relay
  }

  /**
   * What this replica syncs through: `full` (the relay said so: an owner or admin has full access
   * whatever token it shows), or the scope and read permission of its token. When it differs from
   * the last sync's, the session asks for everything again (`rescope`).
   */
  private accessKey(full: boolean): string {
    if (full || this.options.token === undefined) return 'full'
    const token = decodeToken(this.options.token, this.memory.crypto)
    return canonicalJson({ scope: token.scope as unknown as JsonValue, read: hasPermission(token, 'read') })
  }

  /**
   * Starts the session once the handshake is done; frames that arrive meanwhile wait for it (the
   * caller's queue). Until the session is synced, the recorded access says "unfinished": what the
   * replica holds may then mix two accesses, so whatever comes next asks for everything again.
   */
  private async run(transport: Transport, scoped: boolean, full: boolean): Promise<SyncSession | undefined> {
    const log = this.memory.log
    const last = await log.localSetting(SYNCED_ACCESS_SETTING)
    if (this.stopped || this.transport !== transport || !transport.isOpen) return undefined
    const access = this.accessKey(full)
    // A replica that never recorded its access (new, or from before this was kept) is not resent everything.
    const rescope = last !== undefined && last !== access
    if (last !== access) await log.setLocalSetting(SYNCED_ACCESS_SETTING, UNFINISHED_ACCESS)
    if (this.stopped || this.transport !== transport || !transport.isOpen) return undefined
    return this.startSession(transport, scoped, access, rescope)
  }

  private startSession(transport: Transport, scoped: boolean, access: string, rescope: boolean): SyncSession {
    const session = new SyncSession(transport, new MemoryEndpoint(this.memory, { scoped, relay: this.url }), this.memory.crypto, this.frames, { rescope })
    this.session = session
    this.setStatus('catching-up')
    session.on('received', (payload) => this.listeners.emit('received', payload))
    session.on('withdrawn', (payload) => {
      if (payload.records > 0) this.listeners.emit('withdrawn', payload)
    })
    session.on('sent', (payload) => this.listeners.emit('sent', payload))
    session.on('withheld', (payload) => this.listeners.emit('withheld', payload))
    let finishing = false
    const finish = (): void => {
      if (this.stopped) return
      this.stopped = true
      this.setStatus('closed')
      transport.close(CLOSE_NORMAL, 'done')
    }
    session.on('synced', () => {
      this.attempt = 0
      // What this replica holds now matches this access; a later sync with another asks again.
      void this.memory.log.setLocalSetting(SYNCED_ACCESS_SETTING, access).catch(() => undefined)
      if (this.options.live === false) {
        // What the catch-up set off may append events (an admin names the deletions it
        // inferred): they go out, and are acknowledged, before the connection closes.
        finishing = true
        this.listeners.emit('finishing', undefined)
        // A relay that never acknowledges (stalled, half-open) must not keep a caught-up sync open.
        let timer: NodeJS.Timeout | undefined
        const deadline = new Promise<void>((resolve) => { timer = setTimeout(resolve, this.options.finishTimeoutMs ?? DEFAULT_FINISH_TIMEOUT_MS).unref() })
        void Promise.race([session.finish(), deadline]).then(() => {
          clearTimeout(timer)
          finish()
        })
      } else this.setStatus('live')
    })
    session.on('closed', ({ error }) => {
      // Synced already: a drop while finishing ends the sync instead of starting it again, and
      // what was left to send goes with the next one.
      if (finishing) {
        // A refusal retrying cannot fix (what was appended was refused) is reported as such.
        if (error && !this.stopped && isFatal(error)) this.fatal(error)
        else {
          if (error && !this.stopped) this.listeners.emit('error', error)
          finish()
        }
      } else if (error && !this.stopped) this.dropped(error)
    })
    void session.start().catch((error: unknown) => this.dropped(error))
    return session
  }

  /** The connection ended: give up on a fatal error, otherwise try again after a backoff. */
  private dropped(error: unknown): void {
    if (this.stopped) return
    const failure = error instanceof CairnError ? error : new ProtocolError('CONNECTION_FAILED', (error as Error)?.message ?? String(error))
    // Frames shrink after each SLOW_FRAME; once a one-event frame is too slow, retrying is futile.
    // AWAITING_AUTHOR: the relay waits for another author's event from its author. A live sync
    // keeps trying until it has it; a one-time sync stops and says so, as it cannot tell when.
    if (isFatal(failure) || (failure.code === 'SLOW_FRAME' && this.frames.exhausted) || (failure.code === 'AWAITING_AUTHOR' && this.options.live === false)) {
      this.fatal(failure)
      return
    }
    this.listeners.emit('error', failure)
    this.transport?.close(CLOSE_NORMAL, 'retry')
    if (this.timer) return
    this.setStatus('connecting')
    const initial = this.options.initialDelayMs ?? DEFAULT_INITIAL_DELAY_MS
    const max = this.options.maxDelayMs ?? DEFAULT_MAX_DELAY_MS
    const delay = Math.min(max, initial * 2 ** this.attempt++) * (0.5 + Math.random() / 2)
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.connect()
    }, delay)
  }
}

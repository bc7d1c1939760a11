/**
 * The relay: a WebSocket server on the same engine, hosting many spaces in one store. A peer
 * says hello (protocol versions, space, its key, a nonce, maybe a token, maybe the space's
 * genesis), the relay answers with its key and a proof over the peer's nonce, the peer proves
 * its key over the relay's nonce, and only then does the relay decide access: full for the
 * space's owner and admins (by key), otherwise what a valid capability token for that key
 * allows. Then a sync session runs (sync-session.ts) until either side closes.
 *
 * Invariants: nothing is served before the peer proved its key; a bad frame or a failed check
 * ends that peer's session only; a session whose token is revoked or expires is closed; stopping
 * closes every session and flushes the stores. A start that fails removes what it created on
 * disk (a new directory, or a new key and store in an existing one), never what was there.
 */
import { promises as fs } from 'node:fs'
import { createServer, type Server as HttpServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { WebSocketServer } from 'ws'
import { assertInteger } from '../assert.js'
import { CLOCK_SKEW_MS, verifyToken } from '../auth/index.js'
import { AuthError, CairnError, InputError, ProtocolError } from '../errors.js'
import {
  Identity, LogStore, readIdentityFile, SystemClock, writeIdentityFile,
  type Clock, type CryptoProvider, type EventId, type VersionVector,
} from '../log/index.js'
import { ensureDirectory } from '../log/home-directory.js'
import { Listeners } from '../log/listeners.js'
import { Memory } from '../memory/index.js'
import { checkProof, newNonce, proveKey } from './handshake.js'
import { decodeMessage, encodeMessage, MAX_FRAME_BYTES, PROTOCOL_VERSIONS, WITHHOLDING_VERSION, type Message, type WithheldEvent } from './messages.js'
import { RelayEndpoint, type PeerAccess } from './relay-endpoint.js'
import { SyncSession, wireMessage } from './sync-session.js'
import { CLOSE_PEER_TIMEOUT, CLOSE_POLICY, CLOSE_PROTOCOL, CountingTransport, DEFAULT_HEARTBEAT_MS, WebSocketTransport, type TrafficCounter, type Transport } from './transport.js'

export const HANDSHAKE_TIMEOUT_MS = 10_000
/**
 * A relay's heartbeat, four times a client's (DEFAULT_HEARTBEAT_MS): a client notices a lost
 * relay quickly and reconnects, while the relay only cleans up. A client that does not ping (an
 * earlier version, or `heartbeatMs: 0`) answers with pongs alone, which wait behind the relay's
 * data: the longer interval lets a 4 MiB frame cross a link of ~35 KB/s before the relay cuts it.
 */
export const RELAY_HEARTBEAT_MS = 4 * DEFAULT_HEARTBEAT_MS

export interface RelayOptions {
  /** A directory for the relay's key and store; without one, everything is in memory. */
  readonly path?: string
  readonly port?: number
  readonly host?: string
  readonly identity?: Identity
  readonly clock?: Clock
  readonly crypto?: CryptoProvider
  /** How long a connection may take to finish its handshake (default HANDSHAKE_TIMEOUT_MS). */
  readonly handshakeTimeoutMs?: number
  /**
   * Each connection's heartbeat (default RELAY_HEARTBEAT_MS, 60 s; 0: none): a peer silent
   * through two whole intervals is cut off and its session ends (PEER_TIMEOUT), so sessions of
   * peers gone without a word do not pile up. See WebSocketTransportOptions.
   */
  readonly heartbeatMs?: number
}

/** A peer that proved its key and got a session, as the relay's events report it. */
export interface PeerInfo {
  readonly key: string
  readonly space: string
  /** The capability token's id; absent for full access (owner or admin). */
  readonly token?: string
}

/** A space the relay has open: what it holds and who is syncing it. */
export interface RelaySpaceStats {
  readonly space: string
  /** The highest seq held per author. */
  readonly versionVector: VersionVector
  /** Events held (the sum of the vector). */
  readonly events: number
  /** Peers in a session on this space now. */
  readonly peers: number
  /**
   * Events applied to the relay's records. Records are projected on demand (a token peer's
   * scope, a deletion), so this stays behind `events` while only full-access peers sync.
   */
  readonly projected: number
}

/** What a running relay serves, for monitoring (`cairn serve`) and benchmarks. */
export interface RelayStats {
  readonly peers: number
  /** Bytes of frames received from and sent to peers since the relay started, handshakes included. */
  readonly bytesIn: number
  readonly bytesOut: number
  /** Spaces opened since the relay started (by a peer's hello), in the order they were opened. */
  readonly spaces: readonly RelaySpaceStats[]
}

export interface RelayEvents {
  'peer-open': PeerInfo
  'peer-close': PeerInfo & { readonly error?: CairnError }
  /** A token peer's frame had events its token does not allow: they were kept as headers only. */
  'peer-withheld': PeerInfo & { readonly events: readonly WithheldEvent[] }
  [name: string]: unknown
}

interface Peer {
  readonly transport: Transport
  readonly access: PeerAccess
  readonly space: string
  readonly session: SyncSession
}

/** How long `stop` waits for peers to answer its close before cutting their connections. */
const STOP_GRACE_MS = 2_000

/** The longest delay a Node timer takes. */
const MAX_TIMER_MS = 2 ** 31 - 1

export class Relay {
  private readonly spaces = new Map<string, Promise<Memory>>()
  private readonly peers = new Set<Peer>()
  /** Every connection accepted and not yet closed, peers or still in their handshake. */
  private readonly connections = new Set<Transport>()
  private readonly watching = new Set<string>()
  private readonly listeners = new Listeners<RelayEvents>()
  /** Spaces whose Memory has opened, by id, for `stats` (which must not wait). */
  private readonly opened = new Map<string, Memory>()
  private readonly traffic: TrafficCounter = { bytesIn: 0, bytesOut: 0 }
  private stopping = false

  private constructor(
    private readonly http: HttpServer,
    private readonly server: WebSocketServer,
    private readonly store: LogStore,
    readonly identity: Identity,
    private readonly clock: Clock,
    private readonly handshakeTimeoutMs: number,
    private readonly heartbeatMs: number,
  ) {
    server.on('connection', (socket) => this.accept(new CountingTransport(new WebSocketTransport(socket, { heartbeatMs }), this.traffic)))
  }

  /** Starts a relay listening on `port` (0: any free port) and `host` (default 127.0.0.1). */
  static async start(options: RelayOptions = {}): Promise<Relay> {
    const handshakeTimeoutMs = options.handshakeTimeoutMs === undefined
      ? HANDSHAKE_TIMEOUT_MS
      : assertInteger(options.handshakeTimeoutMs, 'options.handshakeTimeoutMs', 1)
    const heartbeatMs = options.heartbeatMs === undefined
      ? RELAY_HEARTBEAT_MS
      : assertInteger(options.heartbeatMs, 'options.heartbeatMs', 0, MAX_TIMER_MS)
    let identity = options.identity
    let store: LogStore
    // What this start created on disk: removed again if it cannot listen (the port taken), so
    // a relay that never ran leaves no key and store behind. Only then: by that point this start
    // held the store's lock, while a failure to open may be another start on the same new path,
    // whose key and store these would be.
    const created: string[] = []
    if (options.path !== undefined) {
      const dir = options.path
      const newRoot = await topmostMissing(dir)
      await ensureDirectory(dir)
      if (newRoot !== undefined) created.push(newRoot)
      const keyFile = path.join(dir, 'relay-identity.json')
      identity ??= await readIdentityFile(keyFile, options.crypto).catch(async (error: unknown) => {
        if ((error as CairnError).code !== 'KEY_FILE_MISSING') throw error
        const fresh = Identity.generate(options.crypto)
        if (newRoot === undefined) created.push(keyFile)
        await writeIdentityFile(keyFile, fresh)
        return fresh
      })
      const storeDir = path.join(dir, 'store')
      if (newRoot === undefined && await topmostMissing(storeDir) !== undefined) created.push(storeDir)
      store = await LogStore.open({ path: storeDir, ...(options.crypto ? { crypto: options.crypto } : {}), ...(options.clock ? { clock: options.clock } : {}) })
    } else {
      identity ??= Identity.generate(options.crypto)
      store = await LogStore.open({ ...(options.crypto ? { crypto: options.crypto } : {}), ...(options.clock ? { clock: options.clock } : {}) })
    }
    const host = options.host ?? '127.0.0.1'
    const port = options.port ?? 0
    try {
      // The HTTP server is the relay's own, not one ws makes, so that stop can end connections
      // that never upgraded (a silent or half-sent request), which ws cannot reach.
      const http = createServer((_request, response) => {
        response.writeHead(426, { 'content-type': 'text/plain', connection: 'close' }).end('a Cairn relay speaks WebSocket\n')
      })
      const server = new WebSocketServer({ server: http, maxPayload: MAX_FRAME_BYTES })
      try {
        await new Promise<void>((resolve, reject) => {
          http.once('listening', resolve)
          // ws passes the HTTP server's errors on as its own (unhandled, they would throw).
          server.once('error', reject)
          http.listen(port, host)
        })
      } catch (error) {
        server.close()
        throw error
      }
      return new Relay(http, server, store, identity, options.clock ?? new SystemClock(), handshakeTimeoutMs, heartbeatMs)
    } catch (error) {
      // Nothing stays open (or locked) when the relay cannot listen, nor on disk if it is new.
      await store.close()
      await removeAll(created)
      throw listenError(error, host, port)
    }
  }

  /** `peer-open` when a proven peer's session starts, `peer-close` when it ends (with the error, if any). */
  on<Name extends keyof RelayEvents>(name: Name, listener: (payload: RelayEvents[Name]) => void): () => void {
    return this.listeners.on(name, listener)
  }

  /** ws://host:port, where peers connect. */
  get url(): string {
    const address = this.server.address() as AddressInfo
    return `ws://${address.address.includes(':') ? `[${address.address}]` : address.address}:${address.port}`
  }

  get peerCount(): number {
    return this.peers.size
  }

  /** Peers, traffic and, for every space opened so far, what it holds. */
  stats(): RelayStats {
    const spaces = [...this.opened].map(([space, memory]): RelaySpaceStats => {
      const versionVector = memory.versionVector()
      let peers = 0
      for (const peer of this.peers) if (peer.space === space) peers++
      return { space, versionVector, events: Object.values(versionVector).reduce((sum, seq) => sum + seq, 0), peers, projected: memory.projectedCount }
    })
    return { peers: this.peers.size, bytesIn: this.traffic.bytesIn, bytesOut: this.traffic.bytesOut, spaces }
  }

  /**
   * Resolves once the relay's projection of every open space has caught up with its log. Events
   * are acknowledged when durable; the records they carry are applied on demand (a token peer's
   * scope check, a deletion, or this call).
   */
  async settled(): Promise<void> {
    for (const memory of this.opened.values()) await memory.settled()
  }

  /**
   * Closes every session and connection, stops listening and flushes the stores to disk. A
   * connection still in its handshake is closed too: left open, it would finish the handshake
   * and start a session after this call, and the server would wait on it for ever. A peer that
   * does not answer the close within STOP_GRACE_MS is cut off, and so is a connection that never
   * finished its HTTP request.
   */
  async stop(): Promise<void> {
    if (this.stopping) return
    this.stopping = true
    for (const peer of this.peers) {
      peer.session.close()
      peer.transport.close(1001, 'relay stopping')
    }
    for (const transport of this.connections) transport.close(1001, 'relay stopping')
    this.server.close()
    const cutOff = setTimeout(() => {
      for (const socket of this.server.clients) socket.terminate()
      this.http.closeAllConnections()
    }, STOP_GRACE_MS)
    // Resolves once every connection has ended: upgraded ones closed above, idle HTTP ones now,
    // and whatever is left (a request never finished) at the cut-off.
    const closed = new Promise<void>((resolve) => this.http.close(() => resolve()))
    this.http.closeIdleConnections()
    await closed
    clearTimeout(cutOff)
    for (const memory of this.spaces.values()) await (await memory.catch(() => undefined))?.close()
    await this.store.close()
  }

  private memoryOf(space: string): Promise<Memory> {
    let memory = this.spaces.get(space)
    if (!memory) {
      // A relay evaluates scopes and applies deletions; it serves no searches or as-of reads.
      // Full-access peers are served from the log, so records are projected only when a token
      // peer's scope needs them or a deletion arrives.
      memory = Memory.attach(this.store, space, this.identity, { fullText: false, asOf: false, onDemand: true })
      memory.then((opened) => this.opened.set(space, opened), () => this.spaces.delete(space))
      this.spaces.set(space, memory)
    }
    return memory
  }

  private accept(transport: Transport): void {
    if (this.stopping) {
      transport.close(1001, 'relay stopping')
      return
    }
    this.connections.add(transport)
    const nonce = newNonce(this.store.crypto)
    let hello: Extract<Message, { type: 'hello' }> | undefined
    let session: SyncSession | undefined
    const timeout = setTimeout(() => refuse(new ProtocolError('HANDSHAKE_TIMEOUT', `no handshake within ${this.handshakeTimeoutMs} ms`)), this.handshakeTimeoutMs)
    const refuse = (error: CairnError): void => {
      clearTimeout(timeout)
      transport.send(encodeMessage({ type: 'error', code: error.code, message: wireMessage(error) }))
        .catch(() => undefined)
        .finally(() => transport.close(error instanceof AuthError ? CLOSE_POLICY : CLOSE_PROTOCOL, error.code))
    }
    let handshaking: Promise<void> = Promise.resolve()
    let isClosed = false
    transport.onClose((code) => {
      this.connections.delete(transport)
      isClosed = true
      clearTimeout(timeout)
      session?.close(code === CLOSE_PEER_TIMEOUT ? new ProtocolError('PEER_TIMEOUT', `nothing came from the peer for ${2 * this.heartbeatMs} ms (two heartbeats): the connection was cut`) : undefined)
    })
    transport.onMessage((data) => {
      if (session) {
        session.receive(data)
        return
      }
      handshaking = handshaking.then(async () => {
        if (session) return session.receive(data)
        const message = decodeMessage(data)
        if (!hello) {
          if (message.type !== 'hello') throw new ProtocolError('UNEXPECTED_FRAME', 'the first frame must be hello', { frame: message.type })
          hello = message
          await this.welcome(transport, hello, nonce)
          return
        }
        if (message.type !== 'proof') throw new ProtocolError('UNEXPECTED_FRAME', 'expected proof', { frame: message.type })
        if (!checkProof(this.store.crypto, message.proof, 'client', nonce, hello.space, hello.peer, this.identity.author)) {
          throw new AuthError('BAD_PROOF', 'the peer did not prove it holds its key', { author: hello.peer })
        }
        clearTimeout(timeout)
        session = await this.open(transport, hello)
        // A peer that left while its session opened: its close found no session to end.
        if (isClosed) session.close()
      }).catch((error: unknown) => refuse(error instanceof CairnError ? error : new ProtocolError('INTERNAL', (error as Error).message)))
    })
  }

  private async welcome(transport: Transport, hello: Extract<Message, { type: 'hello' }>, nonce: Uint8Array): Promise<void> {
    const version = negotiatedVersion(hello.versions)
    // Checked before a space is opened: hellos for spaces the relay does not hold, from anyone,
    // must not leave an open space behind each.
    if (!hello.genesis && !(await this.store.hasSpace(hello.space))) {
      throw new AuthError('UNKNOWN_SPACE', 'this relay does not hold the space; its owner must bring the genesis', { space: hello.space })
    }
    // A genesis is taken only once the peer has proved its key (open): a hello alone opens nothing.
    const proof = proveKey(this.identity, 'relay', hello.nonce, hello.space, hello.peer)
    await transport.send(encodeMessage({ type: 'welcome', version, relay: this.identity.author, nonce, proof }))
  }

  /** Decides the proven peer's access, then runs its session. */
  private async open(transport: Transport, hello: Extract<Message, { type: 'hello' }>): Promise<SyncSession> {
    const memory = await this.memoryOf(hello.space)
    // A space the store does not hold came with its genesis (checked at welcome).
    let tookGenesis = false
    if (!memory.log.hasGenesis && hello.genesis) {
      const id = this.store.crypto.sha256Hex(hello.genesis.header) as EventId
      tookGenesis = (await memory.ingestDeferred([{ id, header: hello.genesis.header, ...(hello.genesis.body ? { body: hello.genesis.body } : {}), ...(hello.genesis.signature ? { signature: hello.genesis.signature } : {}) }])).applied.length > 0
    }
    const access = this.accessOf(memory, hello.peer, hello.token)
    const info: PeerInfo = { key: hello.peer, space: hello.space, ...(access.token ? { token: access.token.id } : {}) }
    const endpoint = new RelayEndpoint(memory, access, {
      withholds: negotiatedVersion(hello.versions) >= WITHHOLDING_VERSION,
      onWithheld: (events) => this.listeners.emit('peer-withheld', { ...info, events }),
    })
    const session = new SyncSession(transport, endpoint, this.store.crypto)
    const peer: Peer = { transport, access, space: hello.space, session }
    this.peers.add(peer)
    session.on('closed', ({ error }) => {
      this.peers.delete(peer)
      this.listeners.emit('peer-close', { ...info, ...(error ? { error } : {}) })
    })
    this.listeners.emit('peer-open', info)
    this.watchRevocations(hello.space, memory)
    if (access.token) {
      // The same skew the token check tolerates: a token served at all is served that long.
      const expiresAt = access.token.expiresAt + CLOCK_SKEW_MS
      let timer: NodeJS.Timeout | undefined
      const arm = (): void => {
        const remaining = expiresAt - this.clock.nowMs()
        // Timers take at most 2^31 - 1 ms (24.8 days): a longer wait is taken in steps.
        timer = remaining > MAX_TIMER_MS
          ? setTimeout(arm, MAX_TIMER_MS)
          : setTimeout(() => session.fail(new AuthError('TOKEN_EXPIRED', 'the token expired during the session')), Math.max(0, remaining))
        timer.unref()
      }
      arm()
      session.on('closed', () => clearTimeout(timer))
    }
    try {
      await transport.send(encodeMessage({
        type: 'ready', permissions: access.token ? [...access.token.permissions] : ['*'], full: !access.token, ...(tookGenesis ? { genesis: true } : {}),
      }))
      await session.start()
    } catch (error) {
      // The peer is registered: a session that cannot start ends here, so it is let go.
      session.close(error instanceof CairnError ? error : undefined)
      throw error
    }
    return session
  }

  /** @throws AuthError when the key has no full access and no valid token */
  private accessOf(memory: Memory, key: string, token: string | undefined): PeerAccess {
    const log = memory.log
    if (log.owner === key || log.rightsOf(key).includes('admin')) return { key }
    if (token === undefined) throw new AuthError('TOKEN_REQUIRED', 'this key needs a capability token for the space', { author: key })
    return {
      key,
      token: verifyToken(token, {
        space: memory.space,
        audience: key,
        nowMs: this.clock.nowMs(),
        crypto: this.store.crypto,
        isRevoked: (id) => log.isTokenRevoked(id),
        canIssue: (issuer) => log.owner === issuer || log.rightsOf(issuer).includes('admin'),
      }),
    }
  }

  /** When grants or tokens are revoked, sessions that relied on them end. */
  private watchRevocations(space: string, memory: Memory): void {
    if (this.watching.has(space)) return
    this.watching.add(space)
    memory.log.on('events-applied', (events) => {
      if (!events.some((event) => event.header.kind === 'control')) return
      for (const peer of this.peers) {
        const reason = peer.space === space ? this.accessLost(memory, peer.access) : undefined
        if (reason) peer.session.fail(reason)
      }
    })
  }

  /** Why an open session's access no longer holds, if it does not. */
  private accessLost(memory: Memory, access: PeerAccess): AuthError | undefined {
    const log = memory.log
    const isAdmin = (key: string) => log.owner === key || log.rightsOf(key).includes('admin')
    if (!access.token) return isAdmin(access.key) ? undefined : new AuthError('ACCESS_REVOKED', 'the key lost its admin right', { author: access.key })
    if (log.isTokenRevoked(access.token.id)) return new AuthError('TOKEN_REVOKED', 'the token was revoked', { author: access.key })
    if (!isAdmin(access.token.issuer)) return new AuthError('ISSUER_NOT_AUTHORIZED', 'the token\'s issuer lost its admin right', { author: access.key })
    return undefined
  }
}

/** The outermost folder of `target` (or `target` itself) that does not exist yet; undefined when it exists. */
async function topmostMissing(target: string): Promise<string | undefined> {
  const exists = (file: string): Promise<boolean> => fs.lstat(file).then(() => true, () => false)
  let missing: string | undefined
  for (let current = path.resolve(target); missing !== current && !(await exists(current)); current = path.dirname(current)) missing = current
  return missing
}

/** Removes what a failed start created; best effort, so the failure it follows is the one reported. */
async function removeAll(paths: readonly string[]): Promise<void> {
  for (const target of paths) await fs.rm(target, { recursive: true, force: true }).catch(() => undefined)
}

/** Node's listen errors as Cairn errors naming the address; the original is the cause. */
function listenError(error: unknown, host: string, port: number): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code
  if (code === 'EADDRINUSE') return new InputError('PORT_IN_USE', `${host}:${port} is already in use`, { key: `${host}:${port}` }, { cause: error })
  if (code === 'EACCES') return new InputError('PORT_DENIED', `not allowed to listen on ${host}:${port}`, { key: `${host}:${port}` }, { cause: error })
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') return new InputError('BAD_HOST', `cannot listen on host "${host}" (${code})`, { key: host }, { cause: error })
  return error
}

/**
 * The highest protocol version both sides speak.
 * @throws ProtocolError UNSUPPORTED_VERSION when there is none
 */
function negotiatedVersion(offered: readonly number[]): number {
  const version = Math.max(...offered.filter((v) => PROTOCOL_VERSIONS.includes(v)))
  if (!Number.isFinite(version)) {
    throw new ProtocolError('UNSUPPORTED_VERSION', `this relay speaks versions ${PROTOCOL_VERSIONS.join(', ')}`, { frame: 'hello' })
  }
  return version
}

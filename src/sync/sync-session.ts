/**
 * One sync session after the handshake, the same on both ends. Each side sends `want` with its
 * version vector; each then streams what the other lacks, in frames of whole signed segments,
 * and keeps streaming new events as they are applied (live push). Frames are acknowledged after
 * the receiver has stored them durably; at most WINDOW frames are unacknowledged, and sending
 * pauses while the socket's buffer is above HIGH_WATER_BYTES (backpressure).
 *
 * Invariants: frames from the peer are processed one at a time, in order; an event the peer
 * already has is never sent again in this session (the peer's vector advances with everything
 * exchanged); a bad frame closes the session with an error frame, never the process.
 */
import { CairnError, ProtocolError } from '../errors.js'
import { defaultCrypto, joinVectors, type CryptoProvider, type EventEnvelope, type EventId, type VersionVector } from '../log/index.js'
import { Listeners } from '../log/listeners.js'
import { FrameBudget } from './frame-budget.js'
import { continuationOf, cutFills, cutFrames, vectorOfEvents } from './frames.js'
import { decodeMessage, encodeMessage, MAX_FRAME_EVENTS, MAX_WITHDRAW_RECORDS, type Message, type WireEvent, type WithheldEvent } from './messages.js'
import { CLOSE_PROTOCOL, type Transport } from './transport.js'

export const WINDOW = 4
export const HIGH_WATER_BYTES = 8 * 1024 * 1024
/** Events applied during a send that are kept for the next one; beyond this the log is read again. */
export const MAX_QUEUED_EVENTS = MAX_FRAME_EVENTS

/** A frame whose events take longer than this to check and store is refused, nothing of it stored. */
export const MAX_FRAME_APPLY_MS = 30_000

/**
 * What to send a peer, in this order: the records it must drop (they left its scope), bodies of
 * events it holds header-only (records that came into its scope), then the events it lacks.
 */
export interface Outgoing {
  readonly withdraw?: readonly string[]
  readonly fills?: readonly EventEnvelope[]
  readonly events: readonly EventEnvelope[]
  /**
   * More events after `events`, read as the session asks for them (a catch-up streamed from the
   * log, catch-up-order.ts): each batch ends at a signed boundary. The session pulls the next
   * batch only once the last one's frames are sent, so at most one batch is held.
   */
  readonly more?: AsyncIterable<readonly EventEnvelope[]>
}

/** The local side of a session: one space, on a replica or a relay. */
export interface SyncEndpoint {
  readonly space: string
  versionVector(): VersionVector
  /**
   * What the peer lacks beyond its vector, deletions first (catch-up-order.ts), with every stored
   * signature. With `rescope` (the peer's access changed), everything the peer may see, whatever
   * its vector, and withdrawals for what it may no longer hold.
   */
  envelopesFor(peerVector: VersionVector, options?: { rescope?: boolean }): Promise<Outgoing>
  /** What the peer at `peerVector` may see of events just applied here (as `envelopesFor` would give them). */
  visible(envelopes: readonly EventEnvelope[], peerVector: VersionVector): Promise<Outgoing>
  /** Drops records the peer says left this side's scope (returns how many it held); only a replica syncing through a token accepts it. */
  withdraw?(records: readonly string[]): Promise<number>
  /**
   * Work this side owes before it can check a frame from the peer (a relay's records, for a
   * token peer's scope). Not counted in the frame's apply time: the peer did not cause it.
   */
  prepare(): Promise<void>
  /**
   * Verifies and stores events from the peer; resolves once they are durable. Past `deadline`
   * (wall-clock ms) it stores nothing and throws SLOW_FRAME. `more`: the peer's catch-up is not
   * finished, so more frames follow (a replica may put off applying them to its records).
   * @returns the events it stored as headers only, the peer's access not allowing them (a relay
   *   withholding a token holder's writes, protocol version 2); they go back in the `ack`
   */
  ingest(envelopes: EventEnvelope[], deadline?: number, more?: boolean): Promise<readonly WithheldEvent[] | void>
  /**
   * Keeps what the peer (a relay) said of events it withheld, each one the acknowledged frame
   * carried (the session checks that first). A failure here is a storage failure and ends the
   * session; the `withheld` event has been emitted by then.
   */
  noteWithheld?(events: readonly WithheldEvent[]): Promise<void>
  /**
   * Apply what `ingest` put off (`more`): the peer's catch-up is complete, or the session closed.
   * May return a promise (never rejecting) of the work that follows and may append events for
   * the peer, such as an admin replica naming the deletions it inferred: a one-shot session
   * waits for it (`finish`).
   */
  applyHeld?(): Promise<void> | void
  /** Calls back with the events whenever some are applied locally, whatever their origin. */
  onApplied(listener: (envelopes: readonly EventEnvelope[]) => void): () => void
}

export interface SessionEvents {
  'caught-up': undefined
  /** Both sides have sent everything they had and every frame sent was acknowledged. */
  'synced': undefined
  'received': { readonly events: number }
  'sent': { readonly events: number }
  /** The peer withdrew records (they left this side's scope): how many this side dropped. */
  'withdrawn': { readonly records: number }
  /** The peer (a relay) stored these events of ours as headers only: our token does not allow them. */
  'withheld': { readonly events: readonly WithheldEvent[] }
  'closed': { readonly error?: CairnError }
  [name: string]: unknown
}

export class SyncSession {
  private readonly listeners = new Listeners<SessionEvents>()
  private peerVector: VersionVector | undefined
  private sendSeq = 0
  private inFlight = 0
  /** Frames sent and not acknowledged yet, by seq: an ack's `withheld` may name only their events. */
  private readonly framesInFlight = new Map<number, readonly WireEvent[]>()
  private pumping = false
  private pumpAgain = false
  /** Events applied while a send ran, in apply order: sent after it. */
  private appliedMeanwhile: EventEnvelope[] = []
  private sentCaughtUp = false
  private peerCaughtUp = false
  private isSynced = false
  private closed = false
  private inbox: Promise<void> = Promise.resolve()
  private windowOpen: (() => void) | undefined
  /** What applying the peer's catch-up set off here (`SyncEndpoint.applyHeld`). */
  private heldApplied: Promise<void> | void = undefined
  /** Waiting for nothing to be left to send or acknowledge, or for the close (`whenIdle`). */
  private idleWaiters: (() => void)[] = []
  /** Waiting for the close. */
  private closeWaiters: (() => void)[] = []
  private readonly stopApplied: () => void

  /** The most events per frame the peer asked for (`want.maxFrameEvents`). */
  private peerFrameLimit = MAX_FRAME_EVENTS
  /** The most events in a frame sent this session: what a SLOW_FRAME from the peer was about. */
  private largestSent = 0

  /** The peer asked for everything again (`want.rescope`): the next full pump resends it. */
  private rescopePending = false

  /**
   * @param budget frame sizes learned from SLOW_FRAME refusals; a client keeps one across reconnects
   * @param options.rescope this side's access changed since it last synced: ask for everything again
   */
  constructor(
    private readonly transport: Transport,
    private readonly endpoint: SyncEndpoint,
    private readonly crypto: CryptoProvider = defaultCrypto(),
    private readonly budget: FrameBudget = new FrameBudget(),
    private readonly options: { readonly rescope?: boolean } = {},
  ) {
    this.stopApplied = endpoint.onApplied((envelopes) => this.pushApplied(envelopes))
  }

  on<Name extends keyof SessionEvents>(name: Name, listener: (payload: SessionEvents[Name]) => void): () => void {
    return this.listeners.on(name, listener)
  }

  /** Starts the exchange: tells the peer what this side has. */
  async start(): Promise<void> {
    const limit = this.budget.receive
    await this.send({
      type: 'want', vector: this.endpoint.versionVector(),
      ...(limit !== undefined ? { maxFrameEvents: limit } : {}), ...(this.options.rescope ? { rescope: true } : {}),
    })
  }

  /** Feeds one raw frame from the transport; frames are handled strictly in order. */
  receive(data: Uint8Array): void {
    this.inbox = this.inbox.then(() => (this.closed ? undefined : this.handle(data))).catch((error: unknown) => this.fail(error))
  }

  /** Resolves once every frame received so far is handled (stored and acknowledged). */
  drain(): Promise<void> {
    return this.inbox
  }

  close(error?: CairnError): void {
    if (this.closed) return
    this.closed = true
    this.stopApplied()
    this.endpoint.applyHeld?.()
    this.windowOpen?.()
    this.checkIdle()
    for (const resolve of this.closeWaiters.splice(0)) resolve()
    this.listeners.emit('closed', error ? { error } : {})
  }

  /** Sends an error frame naming what went wrong, then closes. */
  fail(error: unknown): void {
    if (this.closed) return
    const failure = error instanceof CairnError ? error : new ProtocolError('INTERNAL', (error as Error)?.message ?? String(error))
    const frame = encodeMessage({ type: 'error', code: failure.code, message: wireMessage(failure) })
    this.transport.send(frame).catch(() => undefined).finally(() => this.transport.close(CLOSE_PROTOCOL, failure.code))
    this.close(failure)
  }

  private async handle(data: Uint8Array): Promise<void> {
    const message = decodeMessage(data)
    switch (message.type) {
      case 'want':
        this.peerVector = joinVectors(this.peerVector ?? {}, message.vector)
        if (message.maxFrameEvents !== undefined) this.peerFrameLimit = message.maxFrameEvents
        if (message.rescope) this.rescopePending = true
        this.schedulePump()
        return
      case 'events':
        await this.receiveEvents(message.seq, message.events)
        return
      case 'ack': {
        const frame = this.framesInFlight.get(message.seq)
        // An ack of nothing in flight acknowledges nothing: it neither opens the window nor says
        // anything of events this side did not send in that frame.
        if (frame === undefined) return
        this.framesInFlight.delete(message.seq)
        if (message.withheld) {
          const events = this.withheldOfFrame(frame, message.withheld)
          if (events.length > 0) {
            // Noted first, so a listener reading the notes finds these; reported even if noting
            // fails (a storage failure, which then ends the session).
            try {
              await this.endpoint.noteWithheld?.(events)
            } finally {
              this.listeners.emit('withheld', { events })
            }
            if (this.closed) return
          }
        }
        if (this.inFlight > 0) this.inFlight--
        this.windowOpen?.()
        this.checkSynced()
        this.checkIdle()
        return
      }
      case 'withdraw':
        if (!this.endpoint.withdraw) throw new ProtocolError('UNEXPECTED_FRAME', 'only a relay withdraws records, from a scoped reader', { frame: 'withdraw' })
        this.listeners.emit('withdrawn', { records: await this.endpoint.withdraw(message.records) })
        return
      case 'caught-up':
        this.peerCaughtUp = true
        this.heldApplied = this.endpoint.applyHeld?.()
        this.listeners.emit('caught-up', undefined)
        this.checkSynced()
        return
      case 'error':
        // The peer could not apply a frame of ours in time: send smaller ones from now on.
        if (message.code === 'SLOW_FRAME') this.budget.shrinkSend(this.largestSent)
        this.transport.close(CLOSE_PROTOCOL, message.code)
        this.close(new ProtocolError(message.code, `peer reported: ${message.message}`, { frame: 'error' }))
        return
      default:
        throw new ProtocolError('UNEXPECTED_FRAME', `${message.type} is not expected after the handshake`, { frame: message.type })
    }
  }

  private async receiveEvents(seq: number, events: readonly WireEvent[]): Promise<void> {
    const envelopes: EventEnvelope[] = events.map((event) => ({
      id: this.crypto.sha256Hex(event.header) as EventId,
      header: event.header,
      ...(event.body ? { body: event.body } : {}),
      ...(event.signature ? { signature: event.signature } : {}),
    }))
    // The peer holds what it sends: never send it back. Moved before ingesting, because applying
    // wakes the pump, which must not see these events as new for the peer.
    this.peerVector = joinVectors(this.peerVector ?? {}, vectorOfEvents(envelopes))
    await this.endpoint.prepare()
    const started = Date.now()
    const slow = (): ProtocolError => {
      // Ask for smaller frames next time (a client keeps its budget across reconnects).
      this.budget.shrinkReceive(envelopes.length)
      return new ProtocolError('SLOW_FRAME', `a frame of ${envelopes.length} events took over ${MAX_FRAME_APPLY_MS} ms to apply`, { frame: 'events' })
    }
    let withheld: readonly WithheldEvent[] | void
    try {
      withheld = await this.endpoint.ingest(envelopes, started + MAX_FRAME_APPLY_MS, !this.peerCaughtUp)
    } catch (error) {
      throw error instanceof CairnError && error.code === 'SLOW_FRAME' ? slow() : error
    }
    if (Date.now() - started > MAX_FRAME_APPLY_MS) throw slow()
    await this.send({ type: 'ack', seq, ...(withheld && withheld.length > 0 ? { withheld } : {}) })
    this.listeners.emit('received', { events: envelopes.length })
  }

  /**
   * Live push. Events just applied that continue what the peer has go out as they are; anything
   * else (a gap, an unsigned tail, catch-up not finished) falls back to reading the log. Skipping
   * the read matters: on a journaled store a range read waits until every pending write is in
   * LevelDB, which was most of a live change's latency at each hop. Events applied while a send
   * runs are queued and go out together after it (one frame for many, under load).
   */
  private pushApplied(applied: readonly EventEnvelope[]): void {
    if (this.closed || this.peerVector === undefined) return
    if (!this.sentCaughtUp) this.schedulePump()
    else if (this.pumping) {
      // A full pump already owed covers these; otherwise they wait for the send in progress,
      // unless a slow peer lets them pile up: then the log is read again afterwards instead.
      if (this.pumpAgain) return
      if (this.appliedMeanwhile.length + applied.length > MAX_QUEUED_EVENTS) {
        this.appliedMeanwhile = []
        this.pumpAgain = true
      } else this.appliedMeanwhile.push(...applied)
    } else this.sendApplied(applied)
  }

  private sendApplied(applied: readonly EventEnvelope[]): void {
    const fresh = continuationOf(applied, this.peerVector ?? {})
    if (!fresh) this.schedulePump()
    else if (fresh.length > 0) this.runPump(async () => this.sendAll(await this.endpoint.visible(fresh, this.peerVector ?? {})))
  }

  private schedulePump(): void {
    if (this.closed || this.peerVector === undefined) return
    this.runPump(() => this.pump())
  }

  /**
   * Runs one send at a time. A full pump requested during a run happens once after it (and
   * covers whatever was applied meanwhile); otherwise what was applied meanwhile is sent.
   */
  private runPump(task: () => Promise<void>): void {
    if (this.pumping) {
      this.pumpAgain = true
      return
    }
    this.pumping = true
    void task().catch((error: unknown) => this.fail(error)).finally(() => {
      this.pumping = false
      const meanwhile = this.appliedMeanwhile
      this.appliedMeanwhile = []
      if (this.closed) return
      if (this.pumpAgain) {
        this.pumpAgain = false
        this.schedulePump()
      } else if (meanwhile.length > 0) this.sendApplied(meanwhile)
      this.checkIdle()
    })
  }

  private async pump(): Promise<void> {
    const rescope = this.rescopePending
    this.rescopePending = false
    await this.sendAll(await this.endpoint.envelopesFor(this.peerVector ?? {}, rescope ? { rescope } : {}))
  }

  /**
   * Sends withdrawals, then fills and events in frames within the window, then counts the
   * events as the peer's. Frames are handled in order, so the peer has dropped or filled in a
   * record before it stores the event that moved the record out of or into its scope.
   */
  private async sendAll(outgoing: Outgoing): Promise<void> {
    const withdraw = outgoing.withdraw ?? []
    for (let start = 0; start < withdraw.length; start += MAX_WITHDRAW_RECORDS) {
      await this.send({ type: 'withdraw', records: withdraw.slice(start, start + MAX_WITHDRAW_RECORDS) })
    }
    const envelopes = outgoing.events
    const limit = Math.min(this.peerFrameLimit, this.budget.send)
    if (!await this.sendFrames([...cutFills(outgoing.fills ?? [], limit), ...cutFrames(envelopes, limit)])) return
    // Everything handed over moves the peer's vector: a later pump sends only what is new.
    this.peerVector = joinVectors(this.peerVector ?? {}, vectorOfEvents(envelopes))
    if (outgoing.more) {
      for await (const batch of outgoing.more) {
        if (!await this.sendFrames(cutFrames(batch, Math.min(this.peerFrameLimit, this.budget.send)))) return
        this.peerVector = joinVectors(this.peerVector ?? {}, vectorOfEvents(batch))
      }
    }
    if (!this.sentCaughtUp) {
      this.sentCaughtUp = true
      await this.send({ type: 'caught-up' })
    }
    this.checkSynced()
  }

  /** Sends frames within the window; false once the session closed (the rest is not sent). */
  private async sendFrames(frames: readonly (readonly WireEvent[])[]): Promise<boolean> {
    for (const frame of frames) {
      await this.waitForWindow()
      if (this.closed) return false
      this.inFlight++
      this.largestSent = Math.max(this.largestSent, frame.length)
      const seq = ++this.sendSeq
      this.framesInFlight.set(seq, frame)
      await this.send({ type: 'events', seq, events: frame })
      this.listeners.emit('sent', { events: frame.length })
    }
    return !this.closed
  }

  /** The reported events that the acknowledged frame carried, each once, in the report's order. */
  private withheldOfFrame(frame: readonly WireEvent[], reported: readonly WithheldEvent[]): WithheldEvent[] {
    const sent = new Set(frame.map((event) => this.crypto.sha256Hex(event.header)))
    const out: WithheldEvent[] = []
    for (const event of reported) {
      if (!sent.delete(event.event)) continue
      out.push(event)
    }
    return out
  }

  get synced(): boolean {
    return this.isSynced
  }

  /**
   * For a one-shot sync, once synced: resolves when the work the peer's catch-up set off here is
   * done (an admin replica naming the deletions it inferred appends events) and everything that
   * appended has been sent and acknowledged, or as soon as the session closes. Never rejects.
   * Events the peer pushes after its catch-up are not waited for.
   */
  async finish(): Promise<void> {
    const closed = new Promise<void>((resolve) => {
      if (this.closed) resolve()
      else this.closeWaiters.push(resolve)
    })
    await Promise.race([Promise.resolve(this.heldApplied).catch(() => undefined), closed])
    await this.whenIdle()
  }

  /** Resolves once nothing waits to be sent and every frame sent is acknowledged, or the session closed. */
  private whenIdle(): Promise<void> {
    return new Promise((resolve) => {
      this.idleWaiters.push(resolve)
      this.checkIdle()
    })
  }

  private checkIdle(): void {
    if (this.idleWaiters.length === 0) return
    if (!this.closed && (this.pumping || this.pumpAgain || this.appliedMeanwhile.length > 0 || this.inFlight > 0)) return
    for (const resolve of this.idleWaiters.splice(0)) resolve()
  }

  private checkSynced(): void {
    if (this.isSynced || !this.sentCaughtUp || !this.peerCaughtUp || this.inFlight > 0) return
    this.isSynced = true
    this.listeners.emit('synced', undefined)
  }

  private async waitForWindow(): Promise<void> {
    while (!this.closed && (this.inFlight >= WINDOW || this.transport.bufferedAmount > HIGH_WATER_BYTES)) {
      await new Promise<void>((resolve) => {
        this.windowOpen = resolve
        // The buffer drains without an event: poll it while waiting for acknowledgements.
        setTimeout(resolve, 20)
      })
      this.windowOpen = undefined
    }
  }

  private async send(message: Message): Promise<void> {
    if (this.closed || !this.transport.isOpen) return
    await this.transport.send(encodeMessage(message))
  }
}

/** An error frame's message: the error's text without its leading code (the frame carries that). */
export function wireMessage(error: CairnError): string {
  const text = error.message.startsWith(`${error.code}: `) ? error.message.slice(error.code.length + 2) : error.message
  return text.slice(0, 1000)
}

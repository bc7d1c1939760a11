/**
 * The sync endpoint of one peer's session on a relay: the space's memory, seen through the
 * peer's access. A peer with full access (the owner, or an admin by its key) reads and writes
 * everything. A token holder reads the records in its scope with their bodies and everything
 * else as headers only (so it can still verify chains), and writes only within its scope and
 * permissions: its own event that is not is kept as a header only and named in the `ack`
 * (protocol version 2; version 1 refuses the frame). Control events always travel with their
 * bodies: every replica checks grants. A deletion or redaction travels with its body to a peer
 * that may hold content it reaches (a record in the token's scope, read or written there), which
 * must erase it; to others as a header, since its body carries the deletion's reason (and a
 * redaction's the record's skeleton).
 *
 * A token holder's frame must apply at once (CausalGate) and is judged event by event, each on
 * the records as the frame's earlier events leave them (docs/protocol.md, "Writing"): an id
 * nobody created can only be created, with an id of its own kind; a change may not move a
 * record out of scope; a redaction's skeleton must be what a redaction keeps; a record outside
 * the scope answers as an absent one would.
 *
 * With a tag scope, a record can come into scope or leave it (its tags change) after the peer
 * got some of its events. A record that came in gets the bodies of the events the peer holds
 * header-only; one that left is withdrawn: the peer drops what it holds of it. Scope is judged on
 * the record as it is now, so what the peer ends up with is the records now in scope.
 */
import { hasPermission, scopeAllows, type CapabilityToken, type ScopedRecord } from '../auth/index.js'
import { AuthError, CairnError, ProtocolError } from '../errors.js'
import { canonicalJson, parseJson, type EventEnvelope, type JsonValue, type VersionVector } from '../log/index.js'
import { redactionSkeleton, type Memory } from '../memory/index.js'
import { isRecordKind, kindSpec, MEMORY_OPS, readRecordId, recordIdFor, tagsOf, type RecordKind, type RecordView } from '../projection/index.js'
import { catchUpBatches, deletionsFirst } from './catch-up-order.js'
import { authorAndSeq } from './frames.js'
import type { WithheldEvent } from './messages.js'
import { wireMessage, type Outgoing, type SyncEndpoint } from './sync-session.js'

export interface PeerAccess {
  readonly key: string
  /** Undefined for full access. */
  readonly token?: CapabilityToken
}

interface BodyFacts {
  readonly op: string
  readonly kind?: string
  readonly id?: string
  readonly data: Record<string, unknown>
}

const decoder = new TextDecoder()
const TOMBSTONE_OPS: readonly string[] = [MEMORY_OPS.delete, MEMORY_OPS.redact]

function isControl(header: Uint8Array): boolean {
  return Buffer.from(header.buffer, header.byteOffset, header.byteLength).includes('"kind":"control"')
}

function factsOf(body: Uint8Array): BodyFacts | undefined {
  try {
    const parsed = parseJson(decoder.decode(body)) as { op?: unknown; data?: unknown }
    if (typeof parsed.op !== 'string' || typeof parsed.data !== 'object' || parsed.data === null) return undefined
    const data = parsed.data as Record<string, unknown>
    return {
      op: parsed.op,
      data,
      ...(typeof data.kind === 'string' ? { kind: data.kind } : {}),
      ...(typeof data.id === 'string' ? { id: data.id } : {}),
    }
  } catch {
    return undefined
  }
}

/** The records a deletion names as derived from its target (`data.derived`: `{ kind, id }`). */
function derivedOf(data: Record<string, unknown>): { id: string; kind: string }[] {
  if (!Array.isArray(data.derived)) return []
  return data.derived.flatMap((item: unknown) => {
    const { id, kind } = (typeof item === 'object' && item !== null ? item : {}) as { id?: unknown; kind?: unknown }
    return typeof id === 'string' && typeof kind === 'string' ? [{ id, kind }] : []
  })
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : []
}

/** An operation's record as its own body describes it: its kind, and a create's tags (none otherwise). */
function operationRecord(facts: BodyFacts): ScopedRecord | undefined {
  if (facts.id === undefined || facts.kind === undefined) return undefined
  const fields = (facts.data.fields ?? {}) as Record<string, unknown>
  const tags = facts.op === MEMORY_OPS.create ? [...strings(fields.tags), ...(facts.kind === 'episode' ? strings(fields.categories) : [])] : []
  return { id: facts.id, kind: facts.kind, tags }
}

/**
 * Whether a deleted record may have been in scope. Its tags went with its content, so a tag
 * predicate cannot be judged any more: a record of a kind the scope reads may have matched it.
 */
function mayHaveBeenInScope(scope: CapabilityToken['scope'], record: { id: string; kind: string }): boolean {
  if (scope.all || scope.ids?.includes(record.id)) return true
  if (scope.kinds?.length) return scope.kinds.includes(record.kind as RecordKind)
  return Boolean(scope.tags?.any?.length || scope.tags?.all?.length || scope.tags?.none?.length)
}

/** The event without its body: what travels of it, or is kept, where its content may not go. */
function headerOnly({ body: _body, ...header }: EventEnvelope): EventEnvelope {
  return header
}

/**
 * What a token holder's frame leaves of the records it touches, while the relay judges it event
 * by event: the records as earlier accepted events of the frame leave them. An event's changes
 * are staged and kept only if all of it is allowed, so a withheld event leaves nothing behind.
 */
class FrameRecords {
  private readonly accepted = new Map<string, KnownRecord>()
  private readonly staged = new Map<string, KnownRecord>()

  get(id: string): KnownRecord | undefined {
    return this.staged.get(id) ?? this.accepted.get(id)
  }

  set(id: string, record: KnownRecord): void {
    this.staged.set(id, record)
  }

  /** The event is allowed: its changes stand for the rest of the frame. */
  keep(): void {
    for (const [id, record] of this.staged) this.accepted.set(id, record)
    this.staged.clear()
  }

  /** The event is withheld: the relay never applies it, so nothing of it stands. */
  drop(): void {
    this.staged.clear()
  }
}

/**
 * A token holder's frame must apply at once, event by event: each event's dependencies (its
 * deps and the author's previous event) applied here already, or earlier in the frame. The relay
 * judges each event on the records as the events before it leave them, which holds only for
 * events the log applies then: one it held (a dependency missing; the log holds a whole signed
 * segment with it) would count as done while it is not (a held deletion makes its record look
 * deleted, and a deleted record lets a redaction through unjudged), and when a later frame
 * released it, it would apply unjudged on the records as they are then (review findings). A
 * real client sends its events in causal order from the relay's vector, so only another
 * author's event the relay lacks can be missing, and that is for its author to bring.
 */
class CausalGate {
  private readonly inFrame = new Set<string>()

  constructor(private readonly memory: Memory) {}

  /** @throws ProtocolError AWAITING_AUTHOR when a dependency is neither applied here nor earlier in the frame */
  async pass(envelope: EventEnvelope): Promise<void> {
    for (const dependency of dependenciesOf(envelope)) {
      if (this.inFrame.has(dependency) || await this.memory.log.get(dependency)) continue
      throw new ProtocolError('AWAITING_AUTHOR', `event ${envelope.id} depends on event ${dependency}, which the relay does not hold: the relay takes it from its author or a full-access peer; try again once they have synced`, { event: envelope.id })
    }
  }

  /** The event is taken (whole, or as a header): the events after it may depend on it. */
  taken(envelope: EventEnvelope): void {
    this.inFrame.add(envelope.id)
  }
}

/** The events an event's header names as its causal past: `deps` and `prev`. */
function dependenciesOf(envelope: EventEnvelope): string[] {
  const header = decoder.decode(envelope.header)
  const deps = /"deps":\[([^\]]*)\]/.exec(header)?.[1] ?? ''
  const out = deps.length > 0 ? deps.split(',').map((item) => item.slice(1, -1)) : []
  const prev = /"prev":"([0-9a-f]{64})"/.exec(header)?.[1]
  if (prev) out.push(prev)
  return out
}

export interface RelayEndpointOptions {
  /**
   * Keep a token holder's event its token does not allow as a header only and report it in the
   * `ack` (protocol version 2), instead of refusing the frame and ending the session (version 1).
   */
  readonly withholds?: boolean
  /** Told of the events each frame had withheld (for the relay's operator). */
  readonly onWithheld?: (events: readonly WithheldEvent[]) => void
}

/**
 * Whether a deleted record was surely in scope: the scope names its id, or its kind with no tag
 * predicate (its tags went with its content). A token holder may write to a deleted record only
 * then (a second deletion, say, which changes nothing here). Otherwise it answers as an absent
 * record would: under a tag scope every deleted record "may have been" in scope, and accepting
 * writes to them would tell a deleted id from an absent one, and forward a redaction, skeleton
 * of the holder's choosing, to replicas the deletion has not reached yet (review finding).
 */
function surelyWasInScope(scope: CapabilityToken['scope'], record: { id: string; kind: string }): boolean {
  if (scope.all || scope.ids?.includes(record.id)) return true
  const tags = scope.tags
  const tagged = Boolean(tags?.any?.length || tags?.all?.length || tags?.none?.length)
  return !tagged && Boolean(scope.kinds?.includes(record.kind as RecordKind))
}

/**
 * Whether a token holder may write to (or name in a deletion's derived list) a record the relay
 * holds deleted. An id of its kind's own random form (`fact_…`, `ep_…`) cannot be guessed, so
 * the scope it may have had is enough: a holder's deletion that names a fact the owner deleted
 * meanwhile still goes through under a tag scope (review finding: withholding it left the
 * episode on every other replica). An id that derives from a key or a name (a preference's, a
 * core block's) can be guessed, so there the scope must surely have reached it.
 */
function mayWriteDeleted(scope: CapabilityToken['scope'], record: { id: string; kind: string }): boolean {
  const randomForm = isRecordKind(record.kind) && isOwnFormKind(record.kind) && record.id.startsWith(kindSpec(record.kind).idPrefix as string)
  return randomForm ? mayHaveBeenInScope(scope, record) : surelyWasInScope(scope, record)
}

export class RelayEndpoint implements SyncEndpoint {
  private readonly withholds: boolean
  private readonly onWithheld: ((events: readonly WithheldEvent[]) => void) | undefined

  constructor(private readonly memory: Memory, readonly access: PeerAccess, options: RelayEndpointOptions = {}) {
    this.withholds = options.withholds ?? false
    this.onWithheld = options.onWithheld
  }

  get space(): string {
    return this.memory.space
  }

  versionVector(): VersionVector {
    return this.memory.versionVector()
  }

  onApplied(listener: (envelopes: readonly EventEnvelope[]) => void): () => void {
    return this.memory.log.on('envelopes-applied', listener)
  }

  /**
   * The record an operation touches, as the scope sees it (its current tags, or a create's).
   * `views` keeps what one batch of events read (null: no view), so that every event of a record
   * in the batch is judged on the same view. Events other peers bring are applied here while a
   * batch is judged, and may change a record between two of its events: it then came into scope
   * mid-batch, and its fills (the peer's vector) missed the batch's events already sent
   * header-only, which the peer then held so for good (the sync property's tag reader showed the
   * losing create of a fact it held the winning one of header-only). The event that changed the
   * record goes to the peer after the batch, and moves the record then.
   */
  private async recordOf(facts: BodyFacts, views: Map<string, ScopedRecord | null>): Promise<ScopedRecord | undefined> {
    if (facts.id === undefined || facts.kind === undefined) return undefined
    let record = views.get(facts.id)
    if (record === undefined) {
      const view = await this.memory.get(facts.id)
      record = view ? { id: view.id, kind: view.kind, tags: tagsOf(view) } : null
      views.set(facts.id, record)
    }
    return record ?? operationRecord(facts)
  }

  async envelopesFor(peerVector: VersionVector, options: { rescope?: boolean } = {}): Promise<Outgoing> {
    const log = this.memory.log
    // A peer whose access changed gets everything it may see again: its header-only copies of
    // what it may now read are filled in, and what it may no longer hold is withdrawn (tell).
    const since = options.rescope ? {} : peerVector
    // The catch-up is streamed from the log (catchUpBatches) to a peer that may see everything
    // (full access, or a token reading all), and judged batch by batch for a token whose scope
    // names no tags: a record's kind and id never change, so each event is judged alone, with
    // nothing to fill in or withdraw. A tag scope or a rescope is judged over the whole set.
    const token = this.access.token
    if (!options.rescope && (!token || (hasPermission(token, 'read') && token.scope.all))) return { events: [], more: catchUpBatches(log, since) }
    if (!options.rescope && token && token.scope.tags === undefined) return { events: [], more: this.judged(catchUpBatches(log, since), peerVector) }
    if (options.rescope) this.rescoping = true
    try {
      return await this.visible(await deletionsFirst(await log.envelopesSince(since, { signatures: 'stored' }), (id) => log.causalVector(id)), peerVector)
    } finally {
      this.rescoping = false
    }
  }

  /** What a peer whose scope names no tags may see of each batch (`visible`: no fills or withdrawals come of it). */
  private async *judged(batches: AsyncIterable<EventEnvelope[]>, peerVector: VersionVector): AsyncGenerator<EventEnvelope[]> {
    for await (const batch of batches) yield [...(await this.visible(batch, peerVector)).events]
  }

  /** Set while a rescope's events are filtered: every record's place is told, with no fills (the events carry the bodies). */
  private rescoping = false

  /**
   * The peer's view of these events: bodies outside its scope removed (headers still travel),
   * with the fills and withdrawals that records moving in or out of its scope call for.
   */
  async visible(envelopes: readonly EventEnvelope[], peerVector: VersionVector): Promise<Outgoing> {
    const token = this.access.token
    if (!token) return { events: envelopes }
    const reads = hasPermission(token, 'read')
    // Everything is in scope, records and lines of unknown kinds (which no narrower scope names) alike.
    if (reads && token.scope.all) return { events: envelopes }
    // Kinds and ids never change: only a tag scope gains and loses records (or any scope, for a
    // peer whose token changed).
    const membershipChanges = reads && (this.rescoping || (token.scope.tags !== undefined && !token.scope.all))
    const events: EventEnvelope[] = []
    const fills: EventEnvelope[] = []
    const withdraw: string[] = []
    const views = new Map<string, ScopedRecord | null>()
    for (const envelope of envelopes) {
      // Grants and revocations: every replica checks authorization with them.
      if (!envelope.body || isControl(envelope.header)) {
        events.push(envelope)
        continue
      }
      const facts = factsOf(envelope.body)
      const tombstone = facts?.op === MEMORY_OPS.delete || facts?.op === MEMORY_OPS.redact
      if (tombstone) {
        // A peer whose access changed may hold content its new scope does not reach. A redacted
        // record is withdrawn if so (below); a deleted one cannot be (nothing of it is left to
        // tell its place), so its deletion comes whole.
        const heldBefore = this.rescoping && facts?.op === MEMORY_OPS.delete && Object.keys(peerVector).length > 0
        events.push(facts && (heldBefore || (await this.showsTombstone(facts, token, views))) ? envelope : headerOnly(envelope))
        if (membershipChanges && facts.op === MEMORY_OPS.redact && facts.id !== undefined) {
          const record = await this.recordOf(facts, views)
          if (record) await this.tell(record.id, scopeAllows(token.scope, record), peerVector, fills, withdraw)
        }
        continue
      }
      if (!reads) {
        events.push(headerOnly(envelope))
        continue
      }
      const record = facts ? await this.recordOf(facts, views) : undefined
      const inScope = record !== undefined && scopeAllows(token.scope, record)
      // An operation of another kind than the record's (one id created as two kinds,
      // memory-model §1.3) is judged as a record of its own kind: judged as the record, it would
      // hand a reader of that kind alone content its scope does not reach, and keep from a
      // reader of both kinds what it needs should the other kind win after all.
      const other = record !== undefined && facts !== undefined && facts.kind !== record.kind ? operationRecord(facts) : undefined
      const sendsBody = other !== undefined ? scopeAllows(token.scope, other) : inScope
      events.push(sendsBody ? envelope : headerOnly(envelope))
      if (membershipChanges && record !== undefined) await this.tell(record.id, inScope, peerVector, fills, withdraw)
    }
    // A peer whose token no longer reads drops whatever content an earlier one let it hold.
    if (!reads && this.rescoping && Object.keys(peerVector).length > 0) withdraw.push(...this.recordsOf(envelopes))
    return { events, ...(fills.length > 0 ? { fills } : {}), ...(withdraw.length > 0 ? { withdraw } : {}) }
  }

  /**
   * Whether a deletion or redaction travels to this peer with its body: to a peer that may hold
   * content of a record it reaches, so that the peer erases it. That is a record in the token's
   * scope: a reader's, and a write-only holder's too, as it keeps what it wrote (the relay cannot
   * tell who wrote a deleted record: deleting it drops its history). Other peers get the header:
   * a deletion's body carries its reason, a redaction's the record's skeleton.
   */
  private async showsTombstone(facts: BodyFacts, token: CapabilityToken, views: Map<string, ScopedRecord | null>): Promise<boolean> {
    if (facts.id === undefined || facts.kind === undefined) return false
    if (facts.op === MEMORY_OPS.redact) {
      // A redacted record keeps its skeleton, tags included: judged as any record.
      const record = await this.recordOf(facts, views)
      return record !== undefined && scopeAllows(token.scope, record)
    }
    return [{ id: facts.id, kind: facts.kind }, ...derivedOf(facts.data)].some((record) => mayHaveBeenInScope(token.scope, record))
  }

  /** The records these events touch (deletions aside: they name no content to withdraw). */
  private recordsOf(envelopes: readonly EventEnvelope[]): string[] {
    const ids = new Set<string>()
    for (const envelope of envelopes) {
      if (!envelope.body || isControl(envelope.header)) continue
      const facts = factsOf(envelope.body)
      if (facts?.id !== undefined && facts.op !== MEMORY_OPS.delete) ids.add(facts.id)
    }
    return [...ids]
  }

  /** Per record, whether this session last told the peer it is in scope. */
  private readonly told = new Map<string, boolean>()

  /**
   * Tells the peer where a record stands, the first time this session sends one of its events or
   * when that changed. The peer holds the record's earlier events (those within its vector), with
   * their bodies if the record was in scope when they were sent, without if not. So a record in
   * scope gets those bodies (one the peer holds already costs it a hash check), and one out of
   * scope is withdrawn. Withdrawn whatever this relay still holds of it: a redaction or an erasure
   * here leaves no body to show what the peer may hold, and a peer that holds nothing of the
   * record ignores the withdrawal.
   */
  private async tell(id: string, inScope: boolean, peerVector: VersionVector, fills: EventEnvelope[], withdraw: string[]): Promise<void> {
    if (this.told.get(id) === inScope) return
    this.told.set(id, inScope)
    if (Object.keys(peerVector).length === 0) return // a new reader holds nothing yet
    if (!inScope) withdraw.push(id)
    else if (!this.rescoping) fills.push(...await this.heldByPeer(id, peerVector))
  }

  /** The record's content events within the peer's vector, with the bodies this relay holds. */
  private async heldByPeer(id: string, peerVector: VersionVector): Promise<EventEnvelope[]> {
    const out: EventEnvelope[] = []
    for (const item of await this.memory.history(id)) {
      if (item.type !== 'content' || item.bodyState !== 'present') continue
      const envelope = await this.memory.log.envelope(item.event)
      if (!envelope?.body) continue
      const { author, seq } = authorAndSeq(envelope)
      if (seq <= (peerVector[author] ?? 0)) out.push(envelope)
    }
    return out
  }

  /** A token peer's frames are checked against the records: bring them up to date first. */
  async prepare(): Promise<void> {
    if (this.access.token) await this.memory.settled()
  }

  /**
   * Stores a frame from the peer. A full-access peer's events go to the log as they are. A token
   * holder's are judged one by one (`checkWrite`), and in protocol version 1 one its token does
   * not allow refuses the frame. In version 2:
   * - the holder's own event its token does not allow is kept as a header only and returned (the
   *   `ack` names it). A header carries no content and applies nothing here or at any other
   *   replica, yet keeps the writer's chain whole, so its later events still go through;
   * - another author's event it does not allow (one the holder got elsewhere, a log snapshot
   *   say), or sent without its body, is left to its author: nothing of the frame is stored and
   *   the session ends with AWAITING_AUTHOR, which a live client retries. Once the author (or a
   *   full-access peer) has brought the event whole, the relay holds it and the holder's next
   *   try goes through. Kept as a header, it would have been covered by the relay's vector and
   *   nobody would ever have sent its body again; skipped, the holder's later events would have
   *   depended on an event the relay lacks;
   * - nothing is filled in: the body of an event the relay holds as a header (a withheld write,
   *   say) is never taken from a token holder, whatever its access now.
   * @throws AuthError PERMISSION_DENIED naming the event (version 1; in version 2 for the
   *   holder's own grant or revocation, which every replica needs whole); ProtocolError
   *   AWAITING_AUTHOR (version 2) as above
   */
  async ingest(envelopes: EventEnvelope[], deadline?: number): Promise<WithheldEvent[]> {
    const token = this.access.token
    const options = deadline === undefined ? {} : { deadline }
    if (!token) {
      await this.memory.ingestDeferred(envelopes, options)
      return []
    }
    if (!this.withholds) {
      await this.ingestRefusing(envelopes, token, options)
      return []
    }
    const fresh = await this.notStored(envelopes)
    const withheld: WithheldEvent[] = []
    const stored: EventEnvelope[] = []
    const writes = hasPermission(token, 'write') || hasPermission(token, 'derive')
    const frame = new FrameRecords()
    const gate = new CausalGate(this.memory)
    const awaitAuthor = (envelope: EventEnvelope, why: string): never => {
      throw new ProtocolError('AWAITING_AUTHOR', `event ${envelope.id} is another author's, and ${why}: the relay takes it from its author or a full-access peer; try again once they have synced`, { event: envelope.id })
    }
    for (const envelope of fresh) {
      const own = authorAndSeq(envelope).author === this.access.key
      if (!own && !envelope.body) awaitAuthor(envelope, 'came without its body')
      await gate.pass(envelope)
      try {
        // A header alone (a body its writer erased) carries nothing to allow.
        if (!writes && envelope.body && !isControl(envelope.header)) throw new AuthError('PERMISSION_DENIED', 'this token does not allow writing', { author: this.access.key })
        await this.checkWrite(envelope, token, frame)
        frame.keep()
        stored.push(envelope)
      } catch (error) {
        frame.drop()
        if (!(error instanceof AuthError) || error.code !== 'PERMISSION_DENIED' || (own && isControl(envelope.header))) throw error
        if (!own) awaitAuthor(envelope, `this token does not allow it (${error.reason})`)
        withheld.push({ event: envelope.id, code: error.code, message: wireMessage(error) })
        stored.push(headerOnly(envelope))
      }
      gate.taken(envelope)
    }
    if (stored.length > 0) await this.memory.ingestDeferred(stored, options)
    if (withheld.length > 0) this.onWithheld?.(withheld)
    return withheld
  }

  /**
   * Version 1: the frame is stored whole, or refused whole at the first event the token does not
   * allow. What the relay already holds is skipped (it changes nothing, so it needs no
   * permission), bodies included, as in version 2.
   */
  private async ingestRefusing(envelopes: EventEnvelope[], token: CapabilityToken, options: { deadline?: number }): Promise<void> {
    const fresh = await this.notStored(envelopes)
    if (fresh.length === 0) return
    if (!hasPermission(token, 'write') && !hasPermission(token, 'derive')) {
      throw new AuthError('PERMISSION_DENIED', 'this token does not allow writing', { author: this.access.key })
    }
    // Each event is judged on the records as the frame's earlier events leave them, and must apply at once.
    const frame = new FrameRecords()
    const gate = new CausalGate(this.memory)
    for (const envelope of fresh) {
      await gate.pass(envelope)
      await this.checkWrite(envelope, token, frame)
      frame.keep()
      gate.taken(envelope)
    }
    await this.memory.ingestDeferred(fresh, options)
  }

  /**
   * Events the relay does not store or hold yet, each once (a frame may repeat one: the first copy with
   * a body stands for all, so what is judged is what the log keeps), each author's in seq order
   * (the order the log applies them in; an author's events keep the places its events had).
   */
  private async notStored(envelopes: readonly EventEnvelope[]): Promise<EventEnvelope[]> {
    const unique = new Map<string, EventEnvelope>()
    for (const envelope of envelopes) {
      const first = unique.get(envelope.id)
      if (!first || (!first.body && envelope.body)) unique.set(envelope.id, envelope)
    }
    const out: EventEnvelope[] = []
    const log = this.memory.log
    // Held (waiting for dependencies) counts as stored: it was judged when it came.
    for (const envelope of unique.values()) if (!log.isHeld(envelope.id) && !(await log.get(envelope.id))) out.push(envelope)
    return inSeqOrderPerAuthor(out)
  }

  /** A record as this relay holds it, or as the frame's earlier events leave it. */
  private async known(id: string, frame: FrameRecords): Promise<KnownRecord> {
    const held = frame.get(id)
    if (held) return held
    const [found] = await this.memory.lookup([id])
    const { status, view, kind } = found as { status: KnownRecord['status']; view?: RecordView; kind?: RecordKind }
    return { id, status, ...(view ? { kind: view.kind, tags: tagsOf(view) } : { ...(kind !== undefined ? { kind } : {}), tags: [] }) }
  }

  private async checkWrite(envelope: EventEnvelope, token: CapabilityToken, frame: FrameRecords): Promise<void> {
    const where = { event: envelope.id }
    const refuse = (message: string): never => {
      throw new AuthError('PERMISSION_DENIED', message, where)
    }
    if (isControl(envelope.header)) refuse('only full-access peers send grants and revocations')
    if (!envelope.body) return
    const facts = factsOf(envelope.body)
    if (!facts || facts.id === undefined || facts.kind === undefined || !isRecordKind(facts.kind)) return refuse('event is not a memory operation a token may write')
    const { id, kind, op } = facts
    // Judged before the record is looked up, so that the answer cannot tell whether it exists: a
    // create's id must be the one its key derives (a preference's), whatever the relay holds.
    if (op === MEMORY_OPS.create) checkKeyDerivesId(kind, id, facts.data, refuse)
    const before = await this.known(id, frame)
    // One answer for a record the holder may not see and one that does not exist: refusals
    // (and version 2's withheld notices, many per frame) must not tell them apart, or the holder
    // could probe for records outside its scope (a preference's id derives from its key).
    const unseen = (): never => refuse(`record ${id} is outside the token's scope or does not exist here`)
    if (before.status === 'deleted') {
      // Its tombstone blocks any change here, but a second deletion still takes the records its
      // `derived` list names: the permissions hold as for any record, and so do those records' checks.
      // The scope too, as far as a deleted record shows it: a replica the deletion has not reached
      // yet would take the write (a redaction with a skeleton of the writer's choosing, say).
      if (!mayWriteDeleted(token.scope, { id, kind: before.kind ?? kind })) unseen()
      if (before.kind !== undefined && before.kind !== kind) refuse(`record ${id} is a ${before.kind}, not a ${kind}`)
      if (!hasPermission(token, 'write')) refuse('with derive and no write, a token only creates new records')
      if (TOMBSTONE_OPS.includes(op) && !hasPermission(token, 'redact')) refuse('deleting and redacting need the redact permission')
      // A redaction still carries only what a redaction keeps: replicas the deletion has not
      // reached yet would show its skeleton.
      if (op === MEMORY_OPS.redact) this.afterOperation(facts, before, refuse)
      frame.set(id, before)
      if (op === MEMORY_OPS.delete) await this.checkDerived(facts, token, frame, refuse)
      return
    }
    // A deletion or redaction of a record the relay does not hold answers every refusal as it
    // answers one of a record outside the scope: a refusal of its own (a permission, the
    // skeleton) would tell the holder that the record does not exist.
    const judge = before.status === 'absent' && op !== MEMORY_OPS.create ? (): never => unseen() : refuse
    if (before.status !== 'absent' && !scopeAllows(token.scope, { id, kind: before.kind ?? kind, tags: before.tags })) unseen()
    if (before.kind !== undefined && before.kind !== kind) refuse(`record ${id} is a ${before.kind}, not a ${kind}`)
    if (before.status === 'absent') {
      // A create brings a record into being, with an id of its own kind. A deletion of an id
      // nobody created blocks it for good (a bundle's tombstone does that): allowed for an id of
      // its kind's own random form only, never for ids other kinds derive or name (a preference's
      // from its key, a core block's), which it would claim. So is a redaction, which brings the
      // record into being as its skeleton (judged below as a create of it): a writer that
      // redacts what it created before syncing erased the create first, which then came as a
      // header only, and withheld, its skeleton would stay on its replica alone for good.
      // Nothing else applies to no record.
      if (TOMBSTONE_OPS.includes(op) && isOwnFormKind(kind)) {
        checkNewId(kind, id, facts.data, judge)
        if (op === MEMORY_OPS.delete && !scopeAllows(token.scope, { id, kind, tags: [] })) unseen()
      } else if (op !== MEMORY_OPS.create) unseen()
      else checkNewId(kind, id, facts.data, refuse)
    }
    // `derive` without `write`: new records from what the holder reads (a derived fact, say),
    // never a change to one that exists.
    if (!hasPermission(token, 'write') && (op !== MEMORY_OPS.create || before.status !== 'absent')) {
      judge('with derive and no write, a token only creates new records')
    }
    if (TOMBSTONE_OPS.includes(op) && !hasPermission(token, 'redact')) judge('deleting and redacting need the redact permission')
    const after = this.afterOperation(facts, before, judge)
    if (after.status !== 'deleted' && !scopeAllows(token.scope, { id, kind, tags: after.tags })) {
      if (before.status === 'absent') unseen()
      refuse(`the change would move record ${id} out of the token's scope`)
    }
    frame.set(id, after)
    if (op === MEMORY_OPS.delete) await this.checkDerived(facts, token, frame, judge)
  }

  /** What an operation leaves of a record's kind, tags and status (no other field matters to a scope). */
  private afterOperation(facts: BodyFacts, before: KnownRecord, refuse: (message: string) => never): KnownRecord {
    const { id, data, op } = facts
    const kind = facts.kind as RecordKind
    const tags = new Set(before.tags)
    switch (op) {
      case MEMORY_OPS.create: {
        // A create on a record that exists merges into it: its tags add to the record's.
        const fields = (typeof data.fields === 'object' && data.fields !== null ? data.fields : {}) as Record<string, unknown>
        for (const tag of [...strings(fields.tags), ...(kind === 'episode' ? strings(fields.categories) : [])]) tags.add(tag)
        return { id: id as string, kind, status: before.status === 'absent' ? 'visible' : before.status, tags: [...tags] }
      }
      case MEMORY_OPS.patch: {
        const add = (data.add ?? {}) as Record<string, unknown>
        const remove = (data.remove ?? {}) as Record<string, unknown>
        for (const tag of [...strings(add.tags), ...strings(add.categories)]) tags.add(tag)
        for (const tag of [...strings(remove.tags), ...strings(remove.categories)]) tags.delete(tag)
        return { ...before, kind, tags: [...tags] }
      }
      case MEMORY_OPS.delete:
        return { ...before, kind, status: 'deleted' }
      case MEMORY_OPS.redact: {
        // The skeleton becomes the record's view: it must be what a redaction keeps of a record
        // (text emptied, maps cleared, no unknown fields) and name this record.
        const skeleton = data.skeleton
        if (typeof skeleton !== 'object' || skeleton === null || Array.isArray(skeleton)) return refuse('a redaction carries the record\'s skeleton')
        const given = skeleton as Record<string, JsonValue>
        if (given.id !== undefined && given.id !== id) refuse(`the redaction's skeleton names another record than ${id}`)
        const kept = redactionSkeleton({ ...given, kind, id } as unknown as RecordView)
        if (canonicalJson({ ...kept, id } as JsonValue) !== canonicalJson({ ...given, id } as JsonValue)) {
          refuse(`the redaction's skeleton keeps more of record ${id} than a redaction keeps`)
        }
        return { ...before, kind, status: 'redacted', tags: tagsOf({ ...given, kind, id } as unknown as RecordView) }
      }
      default:
        return { ...before, kind }
    }
  }

  /**
   * A deletion takes the records it names as derived with it. Each must be held here and be in
   * scope, or truly derived only from the target as the relay sees it (what deleting it takes
   * along anyway); an id held nowhere would be claimed for good.
   */
  private async checkDerived(facts: BodyFacts, token: CapabilityToken, frame: FrameRecords, refuse: (message: string) => never): Promise<void> {
    const target = facts.id as string
    const reach = new Set((await this.memory.forgetReach(target)).map((derived) => derived.id))
    for (const derived of derivedOf(facts.data)) {
      if (reach.has(derived.id)) continue
      const record = await this.known(derived.id, frame)
      const unseen = `the deletion takes record ${derived.id} with it, which is outside the token's scope or does not exist here, and is not derived from ${target}`
      if (record.status === 'deleted') {
        // Deleted already: nothing to take, but what may have been out of scope answers as absent would.
        if (!mayWriteDeleted(token.scope, { id: derived.id, kind: record.kind ?? derived.kind })) refuse(unseen)
        continue
      }
      if (record.status === 'absent') {
        // Deleted in advance, as a direct deletion of it may be (checkWrite): an id of its kind's
        // own form, in scope without tags. A writer that forgets what it derived before syncing
        // erased the derived record's create first, which then came as a header only.
        const kind = derived.kind
        if (!isRecordKind(kind) || !isOwnFormKind(kind) || !scopeAllows(token.scope, { id: derived.id, kind, tags: [] })) refuse(unseen)
        // Absent and out of scope alike, as in checkWrite: no probing through derived lists.
        checkNewId(kind, derived.id, {}, () => refuse(unseen))
        frame.set(derived.id, { id: derived.id, kind, status: 'deleted', tags: [] })
        continue
      }
      if (!scopeAllows(token.scope, { id: derived.id, kind: record.kind ?? derived.kind, tags: record.tags })) refuse(unseen)
      if (record.kind !== derived.kind) refuse(`the deletion takes record ${derived.id} with it as a ${derived.kind}; it is a ${record.kind ?? 'record of unknown kind'}`)
      frame.set(derived.id, { ...record, status: 'deleted' })
    }
  }
}

/** The same events, each author's sorted by seq into the places that author's events hold. */
function inSeqOrderPerAuthor(envelopes: readonly EventEnvelope[]): EventEnvelope[] {
  const places = new Map<string, number[]>()
  const seqs = envelopes.map((envelope, index) => {
    const { author, seq } = authorAndSeq(envelope)
    const list = places.get(author)
    if (list) list.push(index)
    else places.set(author, [index])
    return seq
  })
  const out = [...envelopes]
  for (const indexes of places.values()) {
    const sorted = [...indexes].sort((a, b) => (seqs[a] as number) - (seqs[b] as number))
    indexes.forEach((place, i) => { out[place] = envelopes[sorted[i] as number] as EventEnvelope })
  }
  return out
}

/** What the relay knows of a record while it checks a frame. */
interface KnownRecord {
  readonly id: string
  readonly status: 'visible' | 'redacted' | 'deleted' | 'absent'
  readonly kind?: string
  readonly tags: readonly string[]
}

/**
 * A token holder creating a record nobody created: the id must be one of its own kind, so that
 * it cannot claim an id another kind will want (a preference's or category's id derives from its
 * key, a core block's is its name). Kinds with a prefix take ids with it; derived ids must derive
 * from the create's own key fields; a core block is created as a core block.
 */
/** Whether the kind's ids have a form of their own (a prefix), not one derived from a key or a name. */
function isOwnFormKind(kind: RecordKind): boolean {
  const spec = kindSpec(kind)
  return spec.idPrefix !== undefined && spec.keyFields === undefined
}

function checkNewId(kind: RecordKind, id: string, data: Record<string, unknown>, refuse: (message: string) => never): void {
  const spec = kindSpec(kind)
  try {
    // No other kind's prefix (a core block named pref_…), no tomb_, nothing empty or with control characters.
    readRecordId(kind, id)
  } catch (error) {
    refuse(`a new ${kind} cannot take the id ${id}: ${error instanceof CairnError ? error.reason : String(error)}`)
  }
  // Composite-key kinds: checkKeyDerivesId already held the id to what the key derives.
  if (isOwnFormKind(kind) && !id.startsWith(spec.idPrefix as string)) {
    refuse(`a new ${kind} created through a token takes an id starting ${spec.idPrefix}, not ${id}`)
  }
}

/** A create of a composite-key kind (a preference) must carry the id its key derives. */
function checkKeyDerivesId(kind: RecordKind, id: string, data: Record<string, unknown>, refuse: (message: string) => never): void {
  if (kindSpec(kind).keyFields === undefined) return
  let derived: string | undefined
  try {
    derived = recordIdFor(kind, (typeof data.fields === 'object' && data.fields !== null ? data.fields : {}) as Record<string, unknown>)
  } catch {
    derived = undefined
  }
  if (derived !== id) refuse(`a ${kind} takes the id its key derives, not ${id}`)
}

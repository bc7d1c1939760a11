/**
 * One space's log in a store: local appends, ingest of shipped events, reads, body erasure.
 *
 * Invariants: every write is one atomic storage batch, checked in full before it is written;
 * every stored event verified (id, chain, signature, clock, authorization) on the way in;
 * each author's stored chain ends at a signed event; an erased body is never stored again.
 */
import { assertArray, assertBoolean, assertInteger, assertKnownKeys, assertNonEmptyString, assertObject, assertOneOf, assertOptions, assertString } from '../assert.js'
import { AuthError, CairnError, InputError, StorageError } from '../errors.js'
import { ApplyBatch, NO_DEPS, type StagedEvent } from './apply-batch.js'
import { GRANT_OP, REVOKE_OP, REVOKE_TOKEN_OP, RIGHTS, type Right } from './authorization.js'
import { utf8Decode, utf8Encode } from './bytes.js'
import type { Equivocation } from './chain-authentication.js'
import type { JsonValue } from './canonical-json.js'
import type { Clock } from './clock.js'
import type { CryptoProvider } from './crypto/index.js'
import { decodeHeader, MAX_OP_LENGTH, type EventEnvelope, type EventKind } from './event.js'
import { buildEvent } from './event-builder.js'
import { nextHlc } from './hlc.js'
import { assertIdentity, type Identity } from './identity.js'
import { assertAuthorKey, assertEventId, type AuthorKey, type EventId, type SpaceId } from './ids.js'
import { ErasureCompactor } from './erasure-compactor.js'
import { decodeIngestInput, ingestDecoded, type IngestContext } from './ingest-run.js'
import { Listeners } from './listeners.js'
import { toEnvelope, toLogEvent, type LogEvent } from './log-event.js'
import { verifyLog, type VerifyReport } from './log-verifier.js'
import { Mutex } from './mutex.js'
import { encodePriorityStart, isPriorityBody } from './priority-index.js'
import { eventSignable } from './signable.js'
import type { SpaceState } from './space-state.js'
import type { LogStorage, StorageWrite } from './storage.js'
import { keys, parseSeqKey } from './store-keys.js'
import {
  decodeEventRecord, decodeIdRun, encodeEquivocation, encodeEventRecord,
  type EquivocationRecord, type EventRecord,
} from './store-records.js'
import { assertVersionVector, sortVector, type VersionVector } from './version-vector.js'

/**
 * An append batch is signed at least every this many events, so a signed segment never exceeds
 * it and sync can always cut frames at signatures (docs/protocol.md).
 */
export const MAX_SEGMENT_EVENTS = 1000

/**
 * …and at least every this many bytes of headers and bodies (a body is at most 1 MiB), so a
 * segment of large bodies also fits a sync frame (32 MiB).
 */
export const MAX_SEGMENT_BYTES = 8 * 1024 * 1024

export interface AppendEntry {
  readonly op: string
  readonly data?: JsonValue
}

export interface IngestResult {
  /** Newly applied events, in apply order (including held ones this ingest released). */
  readonly applied: LogEvent[]
  /** Events held until their dependencies arrive. */
  readonly held: EventId[]
  /** Events this store already had. */
  readonly duplicates: number
  /** Events whose missing body this ingest supplied. */
  readonly filled: EventId[]
  /** Held events released by this ingest that failed their checks and were dropped. */
  readonly rejected: { readonly id: EventId; readonly error: CairnError }[]
}

export interface SpaceLogEvents {
  'events-applied': readonly LogEvent[]
  /**
   * The same events as they travel (header and body bytes, the stored signature), for live
   * push without reading them back. Built only while someone listens.
   */
  'envelopes-applied': readonly EventEnvelope[]
  'bodies-erased': readonly EventId[]
  'equivocation': EquivocationRecord
  [name: string]: unknown
}

function validateEntry(entry: unknown, index: number): AppendEntry {
  const raw = assertObject(entry, `entries[${index}]`)
  assertKnownKeys(raw, ['op', 'data'], `entries[${index}]`)
  const op = assertString(raw.op, `entries[${index}].op`)
  if (op.length === 0 || op.length > MAX_OP_LENGTH) {
    throw new InputError('BAD_OP', `op must be 1..${MAX_OP_LENGTH} characters`, { field: `entries[${index}].op` })
  }
  if (op.startsWith('space.')) {
    throw new InputError('BAD_OP', `"${op}" is reserved for control events; use grant() or revoke()`, { field: `entries[${index}].op` })
  }
  return { op, data: raw.data === undefined ? null : (raw.data as JsonValue) }
}

const COMPACTION_OWED = new Uint8Array([1])

export class SpaceLog {
  private readonly listeners = new Listeners<SpaceLogEvents>()
  private readonly mutex = new Mutex()
  private readonly ingestContext: IngestContext
  private readonly compactor: ErasureCompactor

  constructor(
    private readonly storage: LogStorage,
    private readonly state: SpaceState,
    private readonly crypto: CryptoProvider,
    private readonly clock: Clock,
  ) {
    this.ingestContext = {
      storage, state, crypto, space: state.space, nowMs: () => clock.nowMs(),
      recordEquivocation: (equivocation) => this.recordEquivocation(equivocation),
    }
    this.compactor = new ErasureCompactor(storage, (outstanding) => this.mutex.run(async () => {
      if (!outstanding()) await this.storage.write([{ type: 'del', key: keys.compactionOwed(this.space) }])
    }))
  }

  get space(): SpaceId {
    return this.state.space
  }

  /** The owner's key, once the genesis is applied. */
  get owner(): AuthorKey | undefined {
    return this.state.owner
  }

  get hasGenesis(): boolean {
    return this.state.meta !== undefined
  }

  get heldCount(): number {
    return this.state.pending.size
  }

  /** Whether the event is held here until its dependencies arrive (stored, not applied yet). */
  isHeld(id: string): boolean {
    return this.state.pending.has(id as EventId)
  }

  on<Name extends keyof SpaceLogEvents>(name: Name, listener: (payload: SpaceLogEvents[Name]) => void): () => void {
    return this.listeners.on(name, listener)
  }

  /**
   * Appends one data event, signed on its own (the interactive path).
   * @throws InputError BAD_OP, NOT_JSON…; AuthError NOT_AUTHORIZED; LimitError BODY_TOO_LARGE
   */
  async append(identity: Identity, entry: AppendEntry): Promise<LogEvent> {
    return (await this.appendBatch(identity, [entry], { signEach: true }))[0] as LogEvent
  }

  /**
   * Appends events atomically: all are stored or none. One signature over the newest id covers
   * the batch through the hash chain, unless `signEach` is set.
   */
  async appendBatch(identity: Identity, entries: readonly AppendEntry[], options: { signEach?: boolean } = {}): Promise<LogEvent[]> {
    const writer = assertIdentity(identity)
    const list = assertArray(entries, 'entries').map(validateEntry)
    const raw = assertOptions(options, ['signEach'], 'options')
    const signEach = raw.signEach === undefined ? false : assertBoolean(raw.signEach, 'options.signEach')
    if (list.length === 0) return []
    return this.appendChecked(writer, list.map((entry) => ({ ...entry, kind: 'data' as EventKind })), signEach)
  }

  /** Gives `author` rights in this space (default: write). Needs the admin right. */
  async grant(identity: Identity, author: string, rights: readonly Right[] = ['write']): Promise<LogEvent> {
    const issuer = assertIdentity(identity)
    const target = assertAuthorKey(author, 'author')
    const list = assertArray(rights, 'rights').map((right, i) => assertOneOf(right, RIGHTS, `rights[${i}]`))
    if (list.length === 0) throw new InputError('EMPTY', 'a grant needs at least one right', { field: 'rights' })
    const [event] = await this.appendChecked(issuer, [{ op: GRANT_OP, data: { author: target, rights: [...list] }, kind: 'control' }], true)
    return event as LogEvent
  }

  /** Withdraws `author`'s rights. Events that have seen the revoke are refused from then on. */
  async revoke(identity: Identity, author: string): Promise<LogEvent> {
    const issuer = assertIdentity(identity)
    const target = assertAuthorKey(author, 'author')
    const [event] = await this.appendChecked(issuer, [{ op: REVOKE_OP, data: { author: target }, kind: 'control' }], true)
    return event as LogEvent
  }

  /** Revokes a capability token by id (hex), for every replica and relay the event reaches. Needs admin. */
  async revokeToken(identity: Identity, tokenId: string): Promise<LogEvent> {
    const issuer = assertIdentity(identity)
    const target = assertAuthorKey(tokenId, 'tokenId')
    const [event] = await this.appendChecked(issuer, [{ op: REVOKE_TOKEN_OP, data: { token: target }, kind: 'control' }], true)
    return event as LogEvent
  }

  /** Whether a token id has been revoked in what this store holds. */
  isTokenRevoked(tokenId: string): boolean {
    return this.state.authority?.isTokenRevoked(tokenId) ?? false
  }

  private appendChecked(
    identity: Identity,
    entries: readonly (AppendEntry & { kind: EventKind })[],
    signEach: boolean,
  ): Promise<LogEvent[]> {
    return this.mutex.run(async () => {
      if (!this.state.meta) {
        throw new AuthError('NO_GENESIS', 'this replica has not received the space genesis yet; ingest from a peer first', { space: this.space })
      }
      const author = identity.author
      const now = this.clock.nowMs()
      const batch = new ApplyBatch(this.state, now)
      const salts = this.crypto.randomBytes(16 * entries.length)
      const staged: StagedEvent[] = []
      for (let i = 0; i < entries.length; i++) {
        const entry = entries[i] as AppendEntry & { kind: EventKind }
        const tip = batch.tip(author)
        const deps: EventId[] = []
        const clocks = tip ? [tip.clock] : []
        if (i === 0) {
          for (const [other, otherTip] of batch.allTips()) {
            if (other !== author && otherTip.seq > (tip?.vector[other] ?? 0)) {
              deps.push(otherTip.id)
              clocks.push(otherTip.clock)
            }
          }
        }
        const event = buildEvent({
          space: this.space, author, seq: (tip?.seq ?? 0) + 1, ...(tip ? { prev: tip.id } : {}),
          deps, clock: nextHlc(now, clocks), kind: entry.kind, op: entry.op, data: entry.data ?? null,
        }, this.crypto, salts.subarray(16 * i, 16 * (i + 1)))
        staged.push(i === 0 ? await batch.apply(event) : batch.applyWith(event, NO_DEPS))
      }
      let segmentEvents = 0
      let segmentBytes = 0
      for (let i = 0; i < staged.length; i++) {
        const item = staged[i] as StagedEvent
        segmentEvents++
        segmentBytes += item.event.headerText.length + (item.event.bodyBytes?.length ?? 0)
        if (signEach || i === staged.length - 1 || segmentEvents >= MAX_SEGMENT_EVENTS || segmentBytes >= MAX_SEGMENT_BYTES) {
          item.signature = identity.sign(eventSignable(item.event.id))
          segmentEvents = 0
          segmentBytes = 0
        }
      }
      await this.storage.write(batch.writes())
      batch.commit()
      return this.announce(batch.applied)
    })
  }

  /**
   * Ingests events shipped from another replica: verifies ids, bodies, chains, signatures,
   * clocks and authorization; applies what it can in causal order; holds events whose
   * dependencies are missing until they arrive. All-or-nothing for the events passed in.
   * @param options.deadline a time (ms since the epoch, wall clock) by which the events must be
   *   stored; past it, ingest stops before writing anything (a sync frame's apply-time limit)
   * @throws VerifyError, AuthError (EQUIVOCATION names both ids), InputError, LimitError
   *   (SLOW_FRAME when the deadline passed)
   */
  async ingest(events: readonly EventEnvelope[] | readonly unknown[], options: { deadline?: number } = {}): Promise<IngestResult> {
    const raw = assertOptions(options, ['deadline'], 'options')
    const deadline = raw.deadline === undefined ? undefined : assertInteger(raw.deadline, 'options.deadline')
    const decoded = decodeIngestInput(events, this.space, this.crypto)
    return this.mutex.run(async () => {
      const outcome = await ingestDecoded(deadline === undefined ? this.ingestContext : { ...this.ingestContext, deadline }, decoded)
      return { ...outcome, applied: this.announce(outcome.applied) }
    })
  }

  /**
   * Erases the bodies of applied data events: the body bytes are deleted and compacted out of
   * the store's files (in the background, shortly after: `erasuresCompacted`), the header stays
   * (so chains and signatures still verify), and the event is marked so that a body re-sent
   * later is never stored again.
   * @returns the ids whose bodies were erased now
   * @throws InputError UNKNOWN_EVENT; AuthError NOT_ERASABLE for control events
   */
  async erase(ids: readonly string[]): Promise<EventId[]> {
    const erased = await this.removeBodies(ids, true)
    if (erased.length > 0) this.listeners.emit('bodies-erased', erased)
    return erased
  }

  /**
   * Removes the bodies of applied data events this replica may no longer keep (records that left
   * a scoped reader's scope), compacted out of the store's files like an erasure, but not marked:
   * a body sent again later (the record came back into scope) is stored again.
   * @returns the ids whose bodies were removed now
   * @throws InputError UNKNOWN_EVENT; AuthError NOT_ERASABLE for control events
   */
  withholdBodies(ids: readonly string[]): Promise<EventId[]> {
    return this.removeBodies(ids, false)
  }

  private removeBodies(ids: readonly string[], markErased: boolean): Promise<EventId[]> {
    const list = assertArray(ids, 'ids').map((id, i) => assertEventId(id, `ids[${i}]`))
    return this.mutex.run(async () => {
      const records = await this.storage.getMany(list.map((id) => keys.event(this.space, id)))
      const writes: StorageWrite[] = []
      const removed: EventId[] = []
      list.forEach((id, i) => {
        const bytes = records[i]
        if (bytes === undefined) throw new InputError('UNKNOWN_EVENT', 'no applied event has this id', { event: id })
        const record = decodeEventRecord(bytes, keys.event(this.space, id))
        if (decodeHeader(record.header, id).kind === 'control') {
          throw new AuthError('NOT_ERASABLE', 'control events keep their bodies so authorization stays checkable', { event: id })
        }
        if (record.erased || (!markErased && record.body === undefined)) return
        const { body: _body, ...rest } = record
        writes.push({ type: 'put', key: keys.event(this.space, id), value: encodeEventRecord(markErased ? { ...rest, erased: true } : rest) })
        removed.push(id)
      })
      if (removed.length === 0) return removed
      // The bytes leave the files with a compaction soon after; until then the marker says one is owed.
      writes.push({ type: 'put', key: keys.compactionOwed(this.space), value: COMPACTION_OWED })
      await this.storage.write(writes)
      const sorted = [...removed].sort()
      this.compactor.request({ start: keys.event(this.space, sorted[0] as string), end: keys.event(this.space, `${sorted[sorted.length - 1]}\uffff`) })
      return removed
    })
  }

  /**
   * Resolves once the erased and withheld bodies so far are compacted out of the store's files
   * (`erase` only writes; the compaction follows in the background, many erasures at a time).
   * `LogStore.close` waits for it. A failed compaction stays owed: the next erasure, or the
   * next open of the space, compacts its range again.
   * @throws StorageError STORAGE_FAILED while a failed compaction's range is still owed
   */
  async erasuresCompacted(): Promise<void> {
    try {
      await this.compactor.settled()
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error)
      throw new StorageError('STORAGE_FAILED', `erased bodies are not compacted out of the store's files yet (${detail}); the next erasure or the next open tries again`, { space: this.space }, { cause: error })
    }
  }

  /** After a crash before an owed compaction: compacts the space's events now (in the background). */
  async resumeErasureCompaction(): Promise<void> {
    if ((await this.storage.get(keys.compactionOwed(this.space))) === undefined) return
    const prefix = keys.eventPrefix(this.space)
    this.compactor.request({ start: prefix, end: keys.end(prefix) })
  }

  /** The background indexing of events stored before the priority index (startPriorityBackfill). */
  private backfill: Promise<void> | undefined
  private backfillStopped = false

  /**
   * Indexes, in the background, the deletions and redactions this store held before it kept the
   * priority index (priority-index.ts): once done, the index starts at the space's start and a
   * catch-up of the whole history is streamed (sync/catch-up-order.ts). Nothing to do for a space
   * begun under the index. Stopped by `stopPriorityBackfill` (a store closing): the next open
   * starts it again. A failure leaves the index as it was.
   */
  startPriorityBackfill(): void {
    this.backfill ??= this.backfillPriorityIndex().catch(() => undefined)
  }

  /** Stops a backfill under way at its next event and waits for it. */
  async stopPriorityBackfill(): Promise<void> {
    this.backfillStopped = true
    await this.backfill
  }

  /** Resolves once a backfill started here has ended (tests). */
  async priorityBackfilled(): Promise<void> {
    await this.backfill
  }

  private async backfillPriorityIndex(): Promise<void> {
    if (this.state.priorityStart === 0) return
    // What the index does not cover: up to its start, or everything applied if it has none yet.
    const through = this.state.priorityStart ?? this.appliedCount
    if (through === 0) return
    const writes: StorageWrite[] = []
    for await (const event of this.readApplied(0)) {
      if (this.backfillStopped) return
      if (event.local > through) break
      if (isPriorityBody(event.body)) writes.push({ type: 'put', key: keys.priority(this.space, event.local), value: utf8Encode(event.id) })
    }
    await this.mutex.run(async () => {
      // A batch applied meanwhile started the index right after `through`: the first batch under
      // it sets the position before its events, and no event is applied but through a batch.
      if (this.backfillStopped || (this.state.priorityStart !== undefined && this.state.priorityStart !== through)) return
      writes.push({ type: 'put', key: keys.priorityStart(this.space), value: encodePriorityStart(0) })
      await this.storage.write(writes)
      this.state.priorityStart = 0
    })
  }

  /** A setting of this replica (what it last synced through, say): stored beside its log, never synced. */
  async localSetting(name: string): Promise<string | undefined> {
    const bytes = await this.storage.get(keys.localSetting(this.space, assertNonEmptyString(name, 'name')))
    return bytes === undefined ? undefined : new TextDecoder().decode(bytes)
  }

  async setLocalSetting(name: string, value: string): Promise<void> {
    await this.storage.write([{ type: 'put', key: keys.localSetting(this.space, assertNonEmptyString(name, 'name')), value: new TextEncoder().encode(assertString(value, 'value')) }])
  }

  /**
   * Events whose bodies arrived after their headers were applied (`ingest` result `filled`) and
   * that the projection has not confirmed placing yet (`lateBodiesPlaced`): what a crash between
   * the two left to do.
   */
  async lateBodies(): Promise<EventId[]> {
    const prefix = keys.lateBodyPrefix(this.space)
    const out: EventId[] = []
    for await (const key of this.storage.keys({ gte: prefix, lt: keys.end(prefix) })) out.push(key.slice(prefix.length) as EventId)
    return out
  }

  /** The projection has placed these late bodies. */
  async lateBodiesPlaced(ids: readonly string[]): Promise<void> {
    if (ids.length > 0) await this.storage.write(ids.map((id) => ({ type: 'del' as const, key: keys.lateBody(this.space, id) })))
  }

  async get(id: string): Promise<LogEvent | undefined> {
    const eventId = assertEventId(id, 'id')
    const record = await this.state.readRecord(eventId)
    return record ? toLogEvent(eventId, record) : undefined
  }

  /** One event as shipped (its exact bytes), or undefined when not applied here. */
  async envelope(id: string): Promise<EventEnvelope | undefined> {
    const eventId = assertEventId(id, 'id')
    const record = await this.state.readRecord(eventId)
    return record ? toEnvelope(eventId, record, true, true) : undefined
  }

  async getBySeq(author: string, seq: number): Promise<LogEvent | undefined> {
    const key = assertAuthorKey(author, 'author')
    assertInteger(seq, 'seq', 1)
    const id = (await this.state.idsBySeq(key, seq, seq)).get(seq)
    return id === undefined ? undefined : this.get(id)
  }

  /**
   * Many events by (author, seq), in the order asked (undefined for one not applied here): the
   * ids come from one scan per cluster of near seqs of an author (seqs at most
   * SEQ_CLUSTER_GAP apart), the events from one batched read, instead of two scans and a read each.
   */
  async getManyBySeq(refs: readonly { readonly author: string; readonly seq: number }[]): Promise<(LogEvent | undefined)[]> {
    const byAuthor = new Map<AuthorKey, Set<number>>()
    refs.forEach((ref, i) => {
      const key = assertAuthorKey(ref.author, `refs[${i}].author`)
      assertInteger(ref.seq, `refs[${i}].seq`, 1)
      let seqs = byAuthor.get(key)
      if (seqs === undefined) byAuthor.set(key, (seqs = new Set()))
      seqs.add(ref.seq)
    })
    const idOf = new Map<string, EventId>()
    await Promise.all([...byAuthor].map(async ([author, wanted]) => {
      for (const [from, to] of seqClusters([...wanted].sort((a, b) => a - b))) {
        for (const [seq, id] of await this.state.idsBySeq(author, from, to)) if (wanted.has(seq)) idOf.set(`${author}:${seq}`, id)
      }
    }))
    const ids = [...new Set(idOf.values())]
    const events = new Map((await this.readMany(ids)).map((event) => [event.id, event]))
    return refs.map((ref) => {
      const id = idOf.get(`${ref.author}:${ref.seq}`)
      return id === undefined ? undefined : events.get(id)
    })
  }

  /** The author's events with seq in [fromSeq, toSeq], in seq order. */
  async *range(author: string, fromSeq = 1, toSeq = Number.MAX_SAFE_INTEGER): AsyncIterable<LogEvent> {
    const key = assertAuthorKey(author, 'author')
    assertInteger(fromSeq, 'fromSeq', 1)
    assertInteger(toSeq, 'toSeq', 1)
    const last = Math.min(toSeq, this.state.tips.get(key)?.seq ?? 0)
    const chunk = 1024
    for (let from = Math.max(1, fromSeq); from <= last; from += chunk) {
      const ids = await this.state.idsBySeq(key, from, Math.min(last, from + chunk - 1))
      const ordered = [...ids.entries()].sort((a, b) => a[0] - b[0]).map(([, id]) => id)
      for (const event of await this.readMany(ordered)) yield event
    }
  }

  /** Events in the order this store applied them (a causal order), after local position `after`. */
  async *readApplied(after = 0): AsyncIterable<LogEvent> {
    assertInteger(after, 'after', 0)
    const prefix = keys.orderPrefix(this.space)
    let start = keys.order(this.space, after + 1)
    for await (const [key] of this.storage.entries({ gte: prefix, lte: start, reverse: true, limit: 1 })) start = key
    for await (const [key, value] of this.storage.entries({ gte: start, lt: keys.end(prefix) })) {
      for (const event of await this.readMany(decodeIdRun(value, key))) if (event.local > after) yield event
    }
  }

  /**
   * Envelopes of every event beyond `since`, in apply order (causal), ready for another
   * replica's `ingest`. By default each author's run carries only the signature of its newest
   * event (one verification per author at the receiver); `signatures: 'stored'` ships every
   * stored signature, so the list can be split at those events into separately ingestible parts.
   * `withBody` decides per event whether its body travels (default: always, when stored).
   */
  async envelopesSince(
    since: VersionVector = {},
    options: { withBody?: (event: LogEvent) => boolean; signatures?: 'newest' | 'stored' } = {},
  ): Promise<EventEnvelope[]> {
    const vector = assertVersionVector(since, 'since')
    const raw = assertOptions(options, ['withBody', 'signatures'], 'options')
    if (raw.withBody !== undefined && typeof raw.withBody !== 'function') {
      throw new InputError('WRONG_TYPE', 'withBody must be a function', { field: 'options.withBody' })
    }
    if (raw.signatures !== undefined) assertOneOf(raw.signatures, ['newest', 'stored'], 'options.signatures')
    const rows: { id: EventId; record: EventRecord; author: AuthorKey }[] = []
    for (const [author, tip] of this.state.tips) {
      const from = (vector[author] ?? 0) + 1
      if (from > tip.seq) continue
      const ids = [...(await this.state.idsBySeq(author, from, tip.seq)).values()]
      const values = await this.storage.getMany(ids.map((id) => keys.event(this.space, id)))
      values.forEach((bytes, i) => {
        const id = ids[i] as EventId
        if (bytes) rows.push({ id, record: decodeEventRecord(bytes, keys.event(this.space, id)), author })
      })
    }
    rows.sort((a, b) => a.record.local - b.record.local)
    const lastOfAuthor = new Map<AuthorKey, EventId>()
    for (const row of rows) lastOfAuthor.set(row.author, row.id)
    return rows.map(({ id, record, author }) => {
      const withBody = options.withBody ? options.withBody(toLogEvent(id, record)) : true
      return toEnvelope(id, record, withBody, options.signatures === 'stored' || lastOfAuthor.get(author) === id)
    })
  }

  /**
   * The apply position of the first event beyond `since` (the lowest over the authors' first
   * events past it), or undefined when this store holds nothing beyond it. One read per author
   * that has more.
   */
  async positionAfter(since: VersionVector): Promise<number | undefined> {
    const vector = assertVersionVector(since, 'since')
    const ids: EventId[] = []
    for (const [author, tip] of this.state.tips) {
      const seq = (vector[author] ?? 0) + 1
      if (seq > tip.seq) continue
      const id = (await this.state.idsBySeq(author, seq, seq)).get(seq)
      if (id !== undefined) ids.push(id)
    }
    let first: number | undefined
    for (const event of await this.readMany(ids)) if (first === undefined || event.local < first) first = event.local
    return first
  }

  /**
   * The ids of the deletions and redactions this store applied from position `from` on, in
   * apply order (priority-index.ts), or undefined when its index does not reach back that far
   * (a store from before the index, for its older events). Their bodies may have been erased since.
   */
  async priorityEventsFrom(from: number): Promise<EventId[] | undefined> {
    assertInteger(from, 'from', 1)
    const start = this.state.priorityStart
    if (start === undefined || from <= start) return undefined
    const prefix = keys.priorityPrefix(this.space)
    const ids: EventId[] = []
    for await (const [, value] of this.storage.entries({ gte: keys.priority(this.space, from), lt: keys.end(prefix) })) {
      ids.push(utf8Decode(value) as EventId)
    }
    return ids
  }

  /**
   * The events applied here at positions `from` to `to` (default: the last applied when the
   * read starts), as envelopes with every stored signature, in apply order, about `batch` at a
   * time (a batch ends with a run of the order index). Each batch is read when asked for: a
   * reader that stops early reads no more, and one that pauses holds nothing but its batch.
   */
  async *envelopesFrom(from: number, options: { to?: number; batch?: number } = {}): AsyncIterable<EventEnvelope[]> {
    assertInteger(from, 'from', 1)
    const raw = assertOptions(options, ['to', 'batch'], 'options')
    const to = raw.to === undefined ? this.appliedCount : assertInteger(raw.to, 'options.to', 0)
    const batch = raw.batch === undefined ? 2000 : assertInteger(raw.batch, 'options.batch', 1)
    const prefix = keys.orderPrefix(this.space)
    let position = from
    while (position <= to) {
      // The run holding `position` starts at it or before it.
      let first = keys.order(this.space, position)
      for await (const [key] of this.storage.entries({ gte: prefix, lte: first, reverse: true, limit: 1 })) first = key
      const ids: EventId[] = []
      let next = position
      for await (const [key, value] of this.storage.entries({ gte: first, lt: keys.end(prefix) })) {
        const runStart = parseSeqKey(key.slice(prefix.length))
        const run = decodeIdRun(value, key)
        if (runStart > to) break
        const end = Math.min(run.length, to - runStart + 1)
        for (let i = Math.max(0, position - runStart); i < end; i++) ids.push(run[i] as EventId)
        next = Math.max(next, runStart + end)
        if (ids.length >= batch) break
      }
      if (ids.length === 0) return
      yield await this.readEnvelopes(ids)
      position = next
    }
  }

  /** Envelopes of these applied events (every stored signature), in the order given; ids not applied here are left out. */
  async envelopesOf(ids: readonly string[]): Promise<EventEnvelope[]> {
    return this.readEnvelopes(assertArray(ids, 'ids').map((id, i) => assertEventId(id, `ids[${i}]`)))
  }

  /** Envelopes of stored events with every stored signature, in the order given, missing ones left out. */
  private async readEnvelopes(ids: readonly EventId[]): Promise<EventEnvelope[]> {
    const values = await this.storage.getMany(ids.map((id) => keys.event(this.space, id)))
    const out: EventEnvelope[] = []
    values.forEach((bytes, i) => {
      const id = ids[i] as EventId
      if (bytes) out.push(toEnvelope(id, decodeEventRecord(bytes, keys.event(this.space, id)), true, true))
    })
    return out
  }

  /** The causal vectors of applied events (as `causalVector`), by id; ids not applied here are left out. */
  async causalVectors(ids: readonly string[]): Promise<Map<EventId, VersionVector>> {
    const eventIds = assertArray(ids, 'ids').map((id, i) => assertEventId(id, `ids[${i}]`))
    const out = new Map<EventId, VersionVector>()
    for (const [id, info] of await this.state.causalInfo(eventIds)) out.set(id, info.vector)
    return out
  }

  /** The causal vector of an applied event (each author's highest seq in its past, itself included). */
  async causalVector(id: string): Promise<VersionVector | undefined> {
    const eventId = assertEventId(id, 'id')
    return (await this.state.causalInfo([eventId])).get(eventId)?.vector
  }

  /** The local position of the newest applied event (0 when empty). */
  get appliedCount(): number {
    return this.state.nextLocal() - 1
  }

  /** Events no other stored event has in its causal past, sorted. */
  heads(): EventId[] {
    const heads: EventId[] = []
    for (const [author, tip] of this.state.tips) {
      let covered = false
      for (const [other, otherTip] of this.state.tips) {
        if (other !== author && (otherTip.vector[author] ?? 0) >= tip.seq) covered = true
      }
      if (!covered) heads.push(tip.id)
    }
    return heads.sort()
  }

  /**
   * The wall time (ms) an event appended now would carry: the physical time, or the largest wall
   * of the events held if a writer's clock ran ahead. What "now" is in the clock of this space's
   * events, which write times are read in.
   */
  clockWall(): number {
    return nextHlc(this.clock.nowMs(), [...this.state.tips.values()].map((tip) => tip.clock)).wall
  }

  /** For each author, the highest seq applied here. */
  versionVector(): VersionVector {
    const vector: Record<string, number> = {}
    for (const [author, tip] of this.state.tips) vector[author] = tip.seq
    return sortVector(vector)
  }

  authors(): AuthorKey[] {
    return [...this.state.tips.keys()].sort()
  }

  /** The rights an author holds as of everything this store has applied. */
  rightsOf(author: string): Right[] {
    const key = assertAuthorKey(author, 'author')
    if (!this.state.authority) return []
    const vector: Record<string, number> = {}
    for (const [other, tip] of this.state.tips) vector[other] = tip.seq
    return [...this.state.authority.rightsAt(key, vector)].sort()
  }

  equivocations(): EquivocationRecord[] {
    return [...this.state.equivocations.values()]
  }

  /** Re-checks every stored event: ids, chains, signatures, bodies, clocks, grants, indexes. */
  verify(options: { maxProblems?: number } = {}): Promise<VerifyReport> {
    return verifyLog(this.storage, this.space, this.crypto, options)
  }

  private async readMany(ids: readonly EventId[]): Promise<LogEvent[]> {
    const values = await this.storage.getMany(ids.map((id) => keys.event(this.space, id)))
    const events: LogEvent[] = []
    values.forEach((bytes, i) => {
      const id = ids[i] as EventId
      if (bytes) events.push(toLogEvent(id, decodeEventRecord(bytes, keys.event(this.space, id))))
    })
    return events
  }

  /** Flags the author (once, persistently) and returns the error to throw. */
  private async recordEquivocation(equivocation: Equivocation): Promise<AuthError> {
    const record: EquivocationRecord = { ...equivocation, detectedAt: this.clock.nowMs() }
    if (!this.state.equivocations.has(record.author)) {
      await this.storage.write([{ type: 'put', key: keys.flag(this.space, record.author), value: encodeEquivocation(record) }])
      this.state.equivocations.set(record.author, record)
      this.listeners.emit('equivocation', record)
    }
    const [first, second] = equivocation.ids
    return new AuthError('EQUIVOCATION', `author signed two different events at seq ${equivocation.seq}: ${first} and ${second}`, {
      author: equivocation.author, seq: equivocation.seq, event: second,
    })
  }

  private announce(applied: readonly StagedEvent[]): LogEvent[] {
    const events: LogEvent[] = applied.map((staged) => ({
      id: staged.event.id,
      header: staged.event.header,
      ...(staged.event.body ? { body: staged.event.body } : {}),
      bodyState: staged.event.body ? 'present' : 'absent',
      ...(staged.signature ? { signature: staged.signature } : {}),
      local: staged.local,
      recordedAt: staged.recordedAt,
    }))
    if (events.length === 0) return events
    this.listeners.emit('events-applied', events)
    if (this.listeners.has('envelopes-applied')) {
      this.listeners.emit('envelopes-applied', applied.map(({ event, signature }) => ({
        id: event.id,
        header: utf8Encode(event.headerText),
        ...(event.bodyBytes ? { body: event.bodyBytes } : {}),
        ...(signature ? { signature } : {}),
      })))
    }
    return events
  }
}

/** Seqs further apart than this are read by scans of their own (a scan reads every run between). */
const SEQ_CLUSTER_GAP = 64

/** Sorted seqs as [first, last] ranges in which no two neighbours are more than SEQ_CLUSTER_GAP apart. */
function seqClusters(sorted: readonly number[]): [number, number][] {
  const clusters: [number, number][] = []
  for (const seq of sorted) {
    const last = clusters[clusters.length - 1]
    if (last !== undefined && seq - last[1] <= SEQ_CLUSTER_GAP) last[1] = seq
    else clusters.push([seq, seq])
  }
  return clusters
}

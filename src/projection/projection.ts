/**
 * The persisted projection of one space: records, indexes, full-text index and history, kept in
 * the same store as the log and advanced by applying log events in the log's apply order (a
 * causal order) from a stored cursor. Reopening is instant (nothing is replayed unless the
 * process stopped between a log write and the projection write, in which case the gap is
 * applied on open). Projections never write events; when a deletion reaches a record, they ask
 * the log to erase the bodies that carried its content, and remember the request until done.
 */
import { isAuthoredBy } from '../crdt/index.js'
import type { EventId, LogEvent, SpaceLog } from '../log/index.js'
import type { LogStorage, StorageWrite } from '../log/storage.js'
import { Listeners } from '../log/listeners.js'
import { Mutex } from '../log/mutex.js'
import { awaitsNaming, FULL_FEATURES, keepsDeletedBodies, ProjectionBatch, teachesRedacted, type ProjectionFeatures, type RecordChange, type TaughtParents, type Teaching } from './projection-batch.js'
import { decodeJson, decodeMeta, decodeState, encodeJson, encodeMeta, PROJECTION_LAYOUT, type ProjectionMeta } from './projection-codec.js'
import { kindsDecided } from './kind-decision.js'
import { kindSpec, type RecordKind } from './kinds.js'
import { decodeForeignLines, decodeMemoryOperation, extNamesNativeField, foreignLinesSkippedSinceLayout6, isTombstoneBody, MEMORY_OPS, patchReadsDifferentlySinceLayout4, tombstoneSkippedSinceLayout6, type MemoryOperation } from './operations.js'
import { idFromKey, positionFromTimeKey, projectionKeys, unescapeKeyPart, type ProjectionKeys } from './projection-keys.js'
import { RecordCache, type CachedRecord } from './record-cache.js'
import { TextIndex } from './text-index.js'

/**
 * How a catch-up cuts the events it applies. It reads (or takes from those handed over) and
 * applies `chunk` events at a time, and stores its batch once that has applied `batchEvents`
 * events, holds `batchRecords` records or `batchNewRecords` records it did not find stored.
 * Up to then, a record the events touch many times is written once: its state, view, as-of
 * version, index and text entries (history entries stay one per event). What is stored does
 * not depend on the cut.
 *
 * Why these bounds: they bound the batch's memory, and its write. New records are bounded
 * apart because theirs is the largest (full-text postings, every index), and LevelDB replays
 * its last write-ahead log when a store is opened: one write of 10,000 new episodes made the
 * next open take ~0.8 s instead of ~0.2 s. Updates of many records (a merge, a catch-up after
 * a partition) write little per record and gain the most from a large batch.
 */
export interface CatchUpLimits {
  readonly chunk: number
  readonly batchEvents: number
  readonly batchRecords: number
  readonly batchNewRecords: number
  /**
   * Batches of at least this many writes skip the write journal (LogStorage.writeDerived): for
   * them the journal's copy costs more than waiting for LevelDB. Below it, the journal's
   * synchronous write keeps a live change fast (one remember writes tens of keys).
   */
  readonly derivedWrites: number
}

export const CATCH_UP_LIMITS: CatchUpLimits = { chunk: 2000, batchEvents: 50_000, batchRecords: 10_000, batchNewRecords: 2000, derivedWrites: 2000 }

export interface ProjectionEvents {
  'records-changed': { readonly changes: readonly RecordChange[]; readonly cursor: number }
  [name: string]: unknown
}

export class Projection {
  readonly keys: ProjectionKeys
  readonly textIndex: TextIndex
  private readonly listeners = new Listeners<ProjectionEvents>()
  private readonly mutex = new Mutex()
  private readonly cache = new RecordCache()
  private meta: ProjectionMeta = { cursor: 0, erasing: [], recordedAt: 0, runStart: 0 }
  /**
   * Events handed to `catchUp` that are not applied yet, by log position. When catch-ups queue
   * up behind a slow one (deferred ingest during a sync), the first to run takes the later ones'
   * events from here instead of reading and decoding them back from the log.
   */
  private readonly handedOver = new Map<number, LogEvent>()
  /** Tuning (tests shrink it to exercise many batches). */
  limits: CatchUpLimits = CATCH_UP_LIMITS
  /**
   * False once a reader found no q:u entry (deletions no event names) and no batch has stored
   * one since: lets admins skip reading for them after every ingest (deletion-naming.ts).
   */
  mayHoldUnnamed = true

  private constructor(readonly storage: LogStorage, readonly log: SpaceLog, readonly features: ProjectionFeatures) {
    this.keys = projectionKeys(log.space)
    this.textIndex = new TextIndex(storage, this.keys.textIndex)
  }

  /** Opens the projection of `log` and applies whatever the log holds beyond its cursor (unless on demand). */
  static async open(storage: LogStorage, log: SpaceLog, features: ProjectionFeatures = FULL_FEATURES): Promise<Projection> {
    const projection = new Projection(storage, log, features)
    projection.meta = decodeMeta(await storage.get(projection.keys.meta))
    // Written by an older version (what it stored is not what this one reads, PROJECTION_LAYOUT),
    // or a rebuild that did not finish.
    const layout = projection.meta.layout ?? 1
    if (layout < 2 || projection.meta.rebuilding !== undefined) await projection.rebuild()
    else {
      if (layout < 3) await projection.listUnnamedDeletions()
      if (layout < PROJECTION_LAYOUT) await projection.upgradeFromLog(layout)
    }
    if (!features.onDemand) {
      await projection.catchUp()
      await projection.resume()
    }
    return projection
  }

  /**
   * Layout 2 → 3: lists, from the stored states, the deletions found through a parent that no
   * event names (q:u, what admins name; memory/deletion-naming.ts). A crash part way leaves
   * layout 2, and the next open lists them again.
   */
  private async listUnnamedDeletions(): Promise<void> {
    let writes: StorageWrite[] = []
    const prefix = this.keys.statePrefix
    for await (const [key, value] of this.storage.entries({ gte: prefix, lt: this.keys.end(prefix) })) {
      const state = decodeState(value, key)
      if (awaitsNaming(state)) writes.push({ type: 'put', key: this.keys.unnamedDeletion(state.id), value: encodeJson(state.kind) })
      if (writes.length >= 10_000) {
        await this.storage.write(writes)
        writes = []
      }
    }
    this.meta = { ...this.meta, layout: 3 }
    writes.push({ type: 'put', key: this.keys.meta, value: encodeMeta(this.meta) })
    await this.storage.write(writes)
  }

  /**
   * Layout 3, 4 or 5 → 6: if the events applied so far hold one that this version reads
   * differently (from layout 4: patchReadsDifferentlySinceLayout4; from 5: operations of two
   * kinds on one id, a tombstone naming another kind than its record's, or an `ext` naming a
   * field of its kind; from 6: a second tombstone reaching a record, whose rank may now differ,
   * a text change that is not its author's, `__proto__` in an `ext`, and, now skipped, foreign
   * lines a `.mem` file cannot hold or a tombstone line that is no `.mem` tombstone line for its
   * op and record: foreignLinesSkippedSinceLayout6, tombstoneSkippedSinceLayout6), the store is rebuilt;
   * otherwise only the layout is recorded (one read of the log, no write). A crash part way
   * leaves the old layout, and the next open looks again.
   */
  private async upgradeFromLog(layout: number): Promise<void> {
    const kinds = new Map<string, RecordKind>()
    const twoKinds = (id: string, kind: RecordKind): boolean => {
      const held = kinds.get(id)
      if (held === undefined) kinds.set(id, kind)
      return held !== undefined && held !== kind
    }
    const tombstoned = new Set<string>()
    const reachedAgain = (decoded: MemoryOperation): boolean => {
      if (decoded.operation.type !== 'tombstone') return false
      let again = false
      for (const id of [decoded.id, ...(decoded.derived ?? []).map((record) => record.id)]) {
        if (tombstoned.has(id)) again = true
        tombstoned.add(id)
      }
      return again
    }
    const foreignText = (decoded: MemoryOperation, author: string): boolean => {
      const { operation } = decoded
      const changes = operation.type === 'text' ? operation.changes : operation.type === 'create' ? Object.values(operation.texts ?? {}).flat() : []
      return !changes.every((change) => isAuthoredBy(change, author))
    }
    for await (const event of this.log.readApplied(0)) {
      if (event.local > this.meta.cursor) break
      if (event.body === undefined) continue
      const decoded = decodeMemoryOperation(event.body)
      const readsDifferently = (layout < 4 && patchReadsDifferentlySinceLayout4(event.body)) || extNamesNativeField(event.body) || foreignLinesSkippedSinceLayout6(event.body) || tombstoneSkippedSinceLayout6(event.body) || (decoded !== undefined && (
        twoKinds(decoded.id, decoded.kind) ||
        (decoded.derived ?? []).some((record) => twoKinds(record.id, record.kind)) ||
        (decoded.operation.type === 'tombstone' && decoded.operation.record.targetKind !== decoded.kind) ||
        reachedAgain(decoded) || foreignText(decoded, event.header.author) ||
        (layout < 7 && decoded.operation.type === 'create' && Object.values(decoded.operation.fields).includes(null))))
      if (readsDifferently) {
        await this.rebuild()
        return
      }
    }
    this.meta = { ...this.meta, layout: PROJECTION_LAYOUT }
    await this.storage.write([{ type: 'put', key: this.keys.meta, value: encodeMeta(this.meta) }])
  }

  /**
   * Finishes what a crash interrupted between a log write and the projection write that follows
   * it: placing late bodies (the log keeps a marker until `bodiesFilled` is done), a
   * withdrawal (the projection's meta names it until its replay is stored), and the replay of
   * records whose kind changed (an on-demand projection does not catch up on open).
   */
  private async resume(): Promise<void> {
    const late = await this.log.lateBodies()
    if (late.length > 0) await this.bodiesFilled(late)
    const withdrawing = this.meta.withdrawing
    if (withdrawing) await this.withdrawRecords(withdrawing.ids, withdrawing.keep)
    if (this.meta.kindReplays !== undefined) await this.mutex.run(() => this.replayKindChanges())
  }

  /**
   * Replays the records whose kind another create won (ProjectionMeta.kindReplays) under the
   * kind their events decide. The mutex must be held. A replay never finds another such change.
   * Every catch-up ends with it, and opening a store resumes one a crash cut short. Until then
   * no deletion is inferred for those records (ProjectionBatch.waitsForKindReplay).
   */
  private async replayKindChanges(): Promise<RecordChange[]> {
    const ids = this.meta.kindReplays
    return ids === undefined ? [] : this.replayHeld(ids, [], false)
  }

  /** Whether the log holds events this projection has not applied. */
  get behind(): boolean {
    return this.meta.cursor < this.log.appliedCount
  }

  /**
   * A record as last stored, when the cache has it (a hit is exactly as good as a read). The
   * objects are the cache's own: for reads inside the engine, never handed to callers.
   */
  cachedRecord(id: string): CachedRecord | undefined {
    return this.cache.get(id)
  }

  /** How many events the log holds beyond what this projection has applied. */
  get lag(): number {
    return this.log.appliedCount - this.meta.cursor
  }

  /**
   * Keeps events just applied to the log for the next catch-up, which then need not read them
   * back (they must continue the log from the cursor, as `catchUp`'s `recent`).
   */
  handOver(events: readonly LogEvent[]): void {
    for (const event of events) if (event.local > this.meta.cursor) this.handedOver.set(event.local, event)
  }

  /** Whether any record of this space was ever deleted or redacted here (cached; a range read the first time). */
  private tombstoned: boolean | undefined

  /**
   * For an on-demand projection: whether these events must be applied now because applying
   * them erases something (a deletion or redaction, content for a record this projection holds
   * as deleted or redacted, a new or moved record under a deleted parent). Other events can
   * wait for a reader. Costs nothing while the space has no tombstone.
   */
  async mustApply(events: readonly LogEvent[]): Promise<boolean> {
    if (events.some((event) => isTombstoneBody(event.body))) return true
    this.tombstoned ??= await this.hasTombstoneKey()
    if (!this.tombstoned) return false
    const ids = new Set<string>()
    for (const event of events) {
      const decoded = event.body ? decodeMemoryOperation(event.body) : undefined
      if (!decoded) continue
      ids.add(decoded.id)
      const { operation } = decoded
      const fields = operation.type === 'create' ? operation.fields : operation.type === 'patch' ? operation.set : undefined
      if (!fields) continue
      for (const parent of kindSpec(decoded.kind).parents) {
        const value = fields[parent.field]
        if (typeof value === 'string') ids.add(value)
      }
    }
    const list = [...ids]
    const states = await this.storage.getMany(list.map((id) => this.keys.state(id)))
    return states.some((bytes, i) => bytes !== undefined && decodeState(bytes, this.keys.state(list[i] as string)).tombstone !== undefined)
  }

  private async hasTombstoneKey(): Promise<boolean> {
    for await (const _key of this.storage.keys({ gte: this.keys.tombstonePrefix, lt: this.keys.end(this.keys.tombstonePrefix), limit: 1 })) return true
    return false
  }

  /**
   * For an on-demand projection after a restart: finishes an erasure a crash interrupted, and
   * catches up when the events not yet applied hold something that `mustApply` (a deletion
   * acknowledged just before the crash, say). Reads the unapplied tail once.
   */
  async recover(): Promise<void> {
    await this.mutex.run(async () => {
      if (this.meta.erasing.length > 0) await this.finishErasure()
    })
    await this.resume()
    if (!this.behind) return
    let must = false
    let chunk: LogEvent[] = []
    for await (const event of this.log.readApplied(this.meta.cursor)) {
      chunk.push(event)
      if (chunk.length < this.limits.chunk) continue
      must = await this.mustApply(chunk)
      if (must) break
      chunk = []
    }
    if (!must && chunk.length > 0) must = await this.mustApply(chunk)
    if (must) await this.catchUp()
  }

  /**
   * How many views are stored: kept in the meta as batches add and remove them. A store from
   * before that counts its views once and keeps the count from then on.
   */
  viewCount(): Promise<number> {
    return this.mutex.run(async () => {
      if (this.meta.views !== undefined) return this.meta.views
      let views = 0
      for await (const _key of this.storage.keys({ gte: this.keys.viewPrefix, lt: this.keys.end(this.keys.viewPrefix) })) views++
      this.meta = { ...this.meta, views }
      await this.storage.write([{ type: 'put', key: this.keys.meta, value: encodeMeta(this.meta) }])
      return views
    })
  }

  /** The log position up to which events are applied. */
  get cursor(): number {
    return this.meta.cursor
  }

  on<Name extends keyof ProjectionEvents>(name: Name, listener: (payload: ProjectionEvents[Name]) => void): () => void {
    return this.listeners.on(name, listener)
  }

  /**
   * Applies every log event beyond the cursor. `recent` may hand over events just written (they
   * are used when they continue the cursor, sparing a read of the log).
   */
  catchUp(recent: readonly LogEvent[] = []): Promise<RecordChange[]> {
    this.handOver(recent)
    return this.mutex.run(async () => {
      // From the first event (a rebuild, or a check deriving from a copy): the stored teachings
      // (q:p) of bodies erased since, taught where their events fall.
      this.teachings = this.meta.cursor === 0 ? await this.readTeachings(this.keys.allTaughtParentsPrefix) : undefined
      try {
        return await this.catchUpRun()
      } finally {
        this.teachings = undefined
      }
    })
  }

  /** The body of catchUp (the mutex held, teachings loaded). */
  private async catchUpRun(): Promise<RecordChange[]> {
    const run = new CatchUpRun(this, this.limits)
    // The events handed over that continue the cursor, in order, including any handed over
    // while these apply; a gap is read from the log below.
    for (;;) {
      const next: LogEvent[] = []
      for (let local = run.position + 1; next.length < this.limits.chunk && this.handedOver.has(local); local++) {
        next.push(this.handedOver.get(local) as LogEvent)
      }
      if (next.length === 0) break
      await run.apply(next)
    }
    // Nothing beyond what is applied: skip the range read (on a journaled store it would wait
    // for every pending write to reach LevelDB).
    if (run.position < this.log.appliedCount) {
      let chunk: LogEvent[] = []
      for await (const event of this.log.readApplied(run.position)) {
        chunk.push(event)
        if (chunk.length >= this.limits.chunk) {
          await run.apply(chunk)
          chunk = []
        }
      }
      if (chunk.length > 0) await run.apply(chunk)
    }
    await run.store()
    this.teachings = undefined
    this.forgetApplied()
    if (this.meta.erasing.length > 0) await this.finishErasure()
    if (this.meta.kindReplays !== undefined) run.changes.push(...await this.replayKindChanges())
    return run.changes
  }

  /** What the events a catch-up from the first event applies again teach (q:p), while it runs. */
  private teachings: TaughtParents | undefined

  /** The stored teachings (q:p, projection-keys.ts) under `prefix`, by the event that teaches them. */
  private async readTeachings(prefix: string): Promise<TaughtParents | undefined> {
    const out = new Map<string, Teaching[]>()
    const root = this.keys.allTaughtParentsPrefix
    for await (const [key, value] of this.storage.entries({ gte: prefix, lt: this.keys.end(prefix) })) {
      const [id, event] = key.slice(root.length).split(':').map(unescapeKeyPart) as [string, string]
      const { kind, parents } = decodeJson(value) as { kind: RecordKind; parents: string[] }
      const list = out.get(event)
      if (list) list.push({ id, kind, parents })
      else out.set(event, [{ id, kind, parents }])
    }
    return out.size > 0 ? out : undefined
  }

  /** A batch over the stored projection (the mutex must be held). */
  newBatch(): ProjectionBatch {
    const batch = new ProjectionBatch(this.storage, this.keys, this.log, this.textIndex, this.meta, this.cache, this.features)
    batch.teachFrom(this.teachings)
    return batch
  }

  /** Drops handed-over events the cursor has passed. */
  private forgetApplied(): void {
    for (const local of this.handedOver.keys()) if (local <= this.meta.cursor) this.handedOver.delete(local)
  }

  /**
   * Bodies that arrived after their headers were applied (a header-only copy filled in by a peer
   * that had the body: a record that came into a scoped reader's scope, say). Content for a
   * deleted or redacted record is erased at once, as it would have been had it come first (one
   * for a record deleted through its parent is kept, as it would have been: replayed).
   * Anything else must take its place in the causal order of its record, so the records it
   * touches are replayed (replayRecords); a line of an unknown kind rebuilds the projection.
   * @returns the records replayed
   */
  async bodiesFilled(ids: readonly EventId[]): Promise<string[]> {
    if (ids.length === 0) return []
    const plan = await this.mutex.run(async () => {
      const erase: EventId[] = []
      const records = new Set<string>()
      let rebuild = false
      for (const id of ids) {
        const event = await this.log.get(id)
        const decoded = event?.body ? decodeMemoryOperation(event.body) : undefined
        if (!event || event.local > this.meta.cursor) continue // not applied yet: catch-up sees the body
        if (!decoded) {
          rebuild ||= event.body !== undefined && decodeForeignLines(event.body) !== undefined
          continue
        }
        const bytes = await this.storage.get(this.keys.state(decoded.id))
        const state = bytes === undefined ? undefined : decodeState(bytes, this.keys.state(decoded.id))
        // A deletion found through a parent keeps its bodies (keepsDeletedBodies): replayed, not erased.
        // Content for a redacted record naming a parent it does not know is replayed: the replay
        // erases it and teaches the record that parent where a delivery with the body would have
        // (ProjectionBatch, TaughtParents).
        const teaches = state !== undefined && decoded.operation.type !== 'tombstone' && teachesRedacted(state, decoded)
        if (state?.tombstone !== undefined && decoded.operation.type !== 'tombstone' && !keepsDeletedBodies(state) && !teaches) erase.push(id)
        else {
          records.add(decoded.id)
          for (const derived of decoded.derived ?? []) records.add(derived.id)
        }
      }
      if (erase.length > 0) await this.log.erase(erase)
      return { rebuild, records: [...records] }
    })
    if (plan.rebuild) await this.rebuild()
    else await this.replayRecords(plan.records, ids)
    await this.log.lateBodiesPlaced(ids)
    return plan.records
  }

  /**
   * Applies the events of some records again, from nothing and in log order: their history
   * entries plus `events` (bodies that just arrived). For these records the result is what a
   * rebuild from the log gives, as-of versions included (each event seals into its own run).
   * Used when bodies arrive late or are withdrawn (withdrawRecords), so nothing else is redone.
   */
  replayRecords(ids: readonly string[], events: readonly EventId[] = []): Promise<RecordChange[]> {
    return this.replay(ids, events, false)
  }

  /** `endsWithdrawal`: this is a withdrawal's replay, so its records leave the meta's `withdrawing`. */
  private replay(ids: readonly string[], events: readonly EventId[], endsWithdrawal: boolean): Promise<RecordChange[]> {
    if (ids.length === 0) return Promise.resolve([])
    return this.mutex.run(() => this.replayHeld(ids, events, endsWithdrawal))
  }

  /** `replay` with the mutex held. Every record it replays leaves the meta's `kindReplays`. */
  private async replayHeld(ids: readonly string[], events: readonly EventId[], endsWithdrawal: boolean): Promise<RecordChange[]> {
    const wanted = new Set(ids)
    // Records that reference them are replayed too: a deletion the replay applies changes their
    // views in the run where it falls, which their own versions must show.
    for (const id of ids) {
      const prefix = this.keys.referencePrefix(id)
      for await (const key of this.storage.keys({ gte: prefix, lt: this.keys.end(prefix) })) wanted.add(idFromKey(key))
    }
    const eventIds = new Set<string>(events)
    // What erased bodies taught these records (q:p): the events (bodies gone) are applied again for it.
    const teachings = new Map<string, Teaching[]>()
    for (const id of wanted) {
      const prefix = this.keys.historyPrefix(id)
      for await (const [, value] of this.storage.entries({ gte: prefix, lt: this.keys.end(prefix) })) eventIds.add((decodeJson(value) as string).slice(1))
      for (const [event, taught] of await this.readTeachings(this.keys.taughtParentsPrefix(id)) ?? []) {
        teachings.set(event, [...(teachings.get(event) ?? []), ...taught])
        eventIds.add(event)
      }
    }
    const replay: LogEvent[] = []
    for (const id of eventIds) {
      const event = await this.log.get(id)
      const decoded = event?.body ? decodeMemoryOperation(event.body) : undefined
      if (!event || event.local > this.meta.cursor) continue
      if (!decoded) {
        if (teachings.has(event.id)) replay.push(event)
        continue
      }
      if (wanted.has(decoded.id) || decoded.derived?.some((record) => wanted.has(record.id))) replay.push(event)
    }
    replay.sort((a, b) => a.local - b.local)
    const batch = new ProjectionBatch(this.storage, this.keys, this.log, this.textIndex, this.meta, this.cache, this.features)
    batch.replayIn(await this.runsOf(replay), wanted)
    batch.teachFrom(teachings.size > 0 ? teachings : undefined)
    await batch.restart([...wanted], kindsDecided(replay, wanted))
    await batch.applyEvents(replay)
    return this.store(batch, this.meta.cursor, { replayed: wanted, ...(endsWithdrawal ? { withdrawn: wanted } : {}) })
  }

  /**
   * The run of equal recorded time each event (in log order) was applied in, by log position: the
   * time index entry at or before it. Runs rise in both recorded time and position, so the entry
   * at or before the event's own (time, position) is its run, or an earlier one when the clock
   * went back; a step forward finds the right one. Consecutive events mostly share a run.
   */
  private async runsOf(events: readonly LogEvent[]): Promise<Map<number, number>> {
    const runs = new Map<number, number>()
    const prefix = this.keys.timePrefix
    let start = -1
    let next = -1
    for (const event of events) {
      // Events come in log order: a new lookup only once past the run found last.
      if (start < 0 || (next >= 0 && event.local >= next)) {
        start = -1
        next = -1
        let from: string | undefined
        for await (const key of this.storage.keys({ gte: prefix, lte: this.keys.time(event.recordedAt, event.local), reverse: true, limit: 1 })) from = key
        // None: the clock had gone back before the first run; walk from the first one.
        if (from !== undefined) start = positionFromTimeKey(from)
        for await (const key of this.storage.keys(from !== undefined ? { gt: from, lt: this.keys.end(prefix) } : { gte: prefix, lt: this.keys.end(prefix) })) {
          const position = positionFromTimeKey(key)
          if (position > event.local) {
            next = position
            break
          }
          start = position
        }
      }
      if (start >= 0) runs.set(event.local, start)
    }
    return runs
  }

  /**
   * Records this replica may no longer hold (they left the scope of the token it syncs with): the
   * bodies of the events that carried their content are removed from the log (they are stored
   * again if the records come back into scope) and the records replayed from what is left, so
   * they disappear. Events by `keep` (this replica's own author) keep their bodies: what a
   * replica wrote stays with it.
   */
  /** @returns how many of `ids` were held here (and are withdrawn) */
  async withdrawRecords(ids: readonly string[], keep?: string): Promise<number> {
    const plan = await this.mutex.run(async () => {
      // Only records held here (a relay withdraws what the reader may hold, not what it does).
      const candidates = [...new Set(ids)]
      const states = await this.storage.getMany(candidates.map((id) => this.keys.state(id)))
      const held = candidates.filter((_, i) => states[i] !== undefined)
      if (held.length === 0) return undefined
      // Named in the meta first: a crash before the replay is stored resumes it on open.
      const pending = this.meta.withdrawing?.ids ?? []
      this.meta = { ...this.meta, withdrawing: { ids: [...new Set([...pending, ...held])], ...(keep !== undefined ? { keep } : {}) } }
      await this.storage.write([{ type: 'put', key: this.keys.meta, value: encodeMeta(this.meta) }])
      const out: EventId[] = []
      for (const id of held) {
        const prefix = this.keys.historyPrefix(id)
        for await (const [, value] of this.storage.entries({ gte: prefix, lt: this.keys.end(prefix) })) {
          const entry = decodeJson(value) as string
          const event = await this.log.get(entry.slice(1))
          if (!event?.body || event.header.author === keep) continue
          // Content, and a redaction (its body keeps the record's skeleton); deletions stay (they name ids only).
          if (entry.startsWith('c') || entry.startsWith('k') || entry.startsWith('o') || event.body.op === MEMORY_OPS.redact) out.push(event.id)
        }
      }
      return { held, bodies: out }
    })
    if (plan === undefined) return 0
    if (plan.bodies.length > 0) await this.log.withholdBodies(plan.bodies)
    await this.replay(plan.held, [], true)
    return plan.held.length
  }

  /**
   * Drops the projection and applies the log again from its first event. Records deleted
   * through their parents with their bodies erased (q:z, projection-keys.ts) are kept and start
   * from their deletion: the log alone cannot show they are deleted. The meta names the rebuild
   * until it is done, so a crash part way is rebuilt again on the next open.
   */
  rebuild(): Promise<void> {
    return this.mutex.run(async () => {
      const end = this.keys.end(this.keys.root)
      const kept = this.keys.derivedDeletionPrefix
      let writes: StorageWrite[] = []
      const flush = async (): Promise<void> => {
        if (writes.length >= 10_000) {
          await this.storage.write(writes)
          writes = []
        }
      }
      // The meta names the rebuild until it is done, stored and in memory (store() carries it):
      // a crash or failure part way leaves a store the next open rebuilds again, never
      // half-dropped states it would apply the log on top of.
      const from = this.meta.rebuilding ?? this.meta.layout ?? 1
      this.meta = { ...this.meta, rebuilding: from }
      await this.storage.write([{ type: 'put', key: this.keys.meta, value: encodeMeta(this.meta) }])
      // Written before layout 2, a store erased the bodies of every deletion found through a
      // parent and holds those deletions in the states alone (or in q:z): keep them all.
      if (from < 2) {
        for await (const [key, value] of this.storage.entries({ gte: this.keys.statePrefix, lt: this.keys.end(this.keys.statePrefix) })) {
          if (decodeState(value, key).tombstone?.derivedFrom === undefined) continue
          const id = unescapeKeyPart(key.slice(this.keys.statePrefix.length))
          if ((await this.storage.get(this.keys.derivedDeletion(id))) === undefined) writes.push({ type: 'put', key: this.keys.derivedDeletion(id), value })
        }
        await this.storage.write(writes)
        writes = []
      }
      for await (const key of this.storage.keys({ gte: this.keys.root, lt: end })) {
        if (key.startsWith(kept) || key.startsWith(this.keys.allTaughtParentsPrefix) || key === this.keys.meta) continue
        writes.push({ type: 'del', key })
        await flush()
      }
      for await (const [key, value] of this.storage.entries({ gte: kept, lt: this.keys.end(kept) })) {
        writes.push({ type: 'put', key: this.keys.state(unescapeKeyPart(key.slice(kept.length))), value })
        await flush()
      }
      await this.storage.write(writes)
      this.cache.clear()
      this.handedOver.clear()
      // A withdrawal under way stays named: its own replay, still to come, ends it.
      const { withdrawing } = this.meta
      this.meta = { cursor: 0, erasing: [], recordedAt: 0, runStart: 0, views: 0, layout: PROJECTION_LAYOUT, ...(withdrawing ? { withdrawing } : {}) }
      await this.storage.write([{ type: 'put', key: this.keys.meta, value: encodeMeta(this.meta) }])
      // On demand (a relay) too: what erases content must be applied (mustApply reads states),
      // so an upgraded relay store applies its log once when it opens.
    }).then(() => this.catchUp().then(() => undefined))
  }

  /**
   * Stores a catch-up batch (CatchUpRun) up to log position `cursor`, then lets the store's
   * background flush run (and a caller's writes, whose reads may all be synchronous); a long
   * chain of promise continuations would otherwise keep every pending write in memory.
   * Subscribers have heard of the change already: a live change reaches them without waiting
   * this turn of the event loop.
   */
  async storeCaughtUp(batch: ProjectionBatch, cursor: number, tombstoned: boolean): Promise<RecordChange[]> {
    if (this.features.onDemand && tombstoned) this.tombstoned = true
    const changes = await this.store(batch, cursor)
    this.forgetApplied()
    await new Promise<void>((resolve) => setImmediate(resolve))
    return changes
  }

  /**
   * Stores a batch's writes with the new cursor, erases what it asks, tells subscribers. A
   * withdrawal's replay takes its records (`withdrawn`) off the meta's `withdrawing`.
   */
  private async store(batch: ProjectionBatch, cursor: number, replay: { readonly replayed?: ReadonlySet<string>; readonly withdrawn?: ReadonlySet<string> } = {}): Promise<RecordChange[]> {
    const { writes, erase, changes, viewDelta, unnamedAdded } = await batch.finish(this.meta)
    const { replayed, withdrawn } = replay
    const pending = this.meta.withdrawing
    const remaining = pending?.ids.filter((id) => !withdrawn?.has(id)) ?? []
    const withdrawing = pending && remaining.length > 0 ? { ...pending, ids: remaining } : undefined
    const kindReplays = [...new Set([...(this.meta.kindReplays ?? []).filter((id) => !replayed?.has(id)), ...batch.kindChanges])]
    const views = this.meta.views === undefined ? undefined : this.meta.views + viewDelta
    const meta: ProjectionMeta = {
      cursor, erasing: erase, ...batch.run, ...(views !== undefined ? { views } : {}), ...(withdrawing ? { withdrawing } : {}),
      ...(this.meta.layout !== undefined ? { layout: this.meta.layout } : {}), ...(this.meta.rebuilding !== undefined ? { rebuilding: this.meta.rebuilding } : {}),
      ...(kindReplays.length > 0 ? { kindReplays } : {}),
    }
    writes.push({ type: 'put', key: this.keys.meta, value: encodeMeta(meta) })
    // The cursor rides in the batch, so a crash that loses it leaves these events to apply
    // again: a large batch skips the journal. A small one (a live change, one remember) goes
    // through it, which returns at once instead of after LevelDB's round trips.
    if (writes.length >= this.limits.derivedWrites) await this.storage.writeDerived(writes)
    else await this.storage.write(writes)
    batch.cacheStoredRecords()
    this.meta = meta
    if (unnamedAdded) this.mayHoldUnnamed = true
    if (erase.length > 0) await this.finishErasure()
    if (changes.length > 0) this.listeners.emit('records-changed', { changes, cursor })
    return changes
  }

  /** Erases the bodies deletions asked for, then clears the request. */
  private async finishErasure(): Promise<void> {
    await this.log.erase(this.meta.erasing)
    this.meta = { ...this.meta, erasing: [] }
    await this.storage.write([{ type: 'put', key: this.keys.meta, value: encodeMeta(this.meta) }])
  }
}

/**
 * The events one catch-up applies, in log order, gathered into as few projection batches as the
 * bounds above allow.
 */
class CatchUpRun {
  readonly changes: RecordChange[] = []
  private batch: ProjectionBatch | undefined
  private batchEvents = 0
  private tombstoned = false
  /** The log position applied up to (stored or in the open batch). */
  position: number

  constructor(private readonly projection: Projection, private readonly limits: CatchUpLimits) {
    this.position = projection.cursor
  }

  async apply(events: readonly LogEvent[]): Promise<void> {
    const batch = (this.batch ??= this.projection.newBatch())
    await batch.applyEvents(events)
    this.batchEvents += events.length
    this.tombstoned ||= events.some((event) => isTombstoneBody(event.body))
    this.position = (events[events.length - 1] as LogEvent).local
    const { batchEvents, batchRecords, batchNewRecords } = this.limits
    if (this.batchEvents >= batchEvents || batch.recordCount >= batchRecords || batch.newRecordCount >= batchNewRecords) await this.store()
  }

  async store(): Promise<void> {
    const batch = this.batch
    if (!batch) return
    this.batch = undefined
    this.batchEvents = 0
    for (const change of await this.projection.storeCaughtUp(batch, this.position, this.tombstoned)) this.changes.push(change)
    this.tombstoned = false
  }
}

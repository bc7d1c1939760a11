/**
 * What every Memory operation stands on: the engine (store, log, identity), the projection and
 * its reader, and the discipline around them — writes wait for a pending background catch-up,
 * append then project before returning, and refuse records that were deleted or redacted.
 */
import { assertNonEmptyString } from '../assert.js'
import type { JsonValue } from '../log/index.js'
import { InputError, relocate, StorageError } from '../errors.js'
import type { RecordState } from '../crdt/index.js'
import { decodeState, kindSpec, Projection, ProjectionReader, type CachedRecord, type ProjectionFeatures, type RecordKind, type RecordView } from '../projection/index.js'
import type { Engine } from './memory-engine.js'

/** One event to append: an operation name and its body data. */
export interface Entry {
  readonly op: string
  readonly data: JsonValue
}

export class MemoryCore {
  /** A projection catch-up that reads must wait for (events stored by sync, not yet projected). */
  private pending: Promise<unknown> | undefined
  private closing = false
  /** Closed: reads and writes fail with CLOSED. */
  private closed = false

  private constructor(readonly engine: Engine, readonly projection: Projection, readonly reader: ProjectionReader) {}

  static async open(engine: Engine, features?: ProjectionFeatures): Promise<MemoryCore> {
    const projection = await Projection.open(engine.store.storage, engine.log, features)
    const reader = new ProjectionReader(engine.store.storage, projection.keys, projection.textIndex, () => projection.cursor)
    const core = new MemoryCore(engine, projection, reader)
    // On demand, opening applies nothing; what a crash may have left owed (an erasure, a deletion
    // not yet applied) is found in the background.
    if (projection.features.onDemand) core.track(projection.recover())
    return core
  }

  get author(): string {
    return this.engine.identity.author
  }

  now(): number {
    return this.engine.store.clock.nowMs()
  }

  /**
   * Now in the clock of this space's events (SpaceLog.clockWall): the physical time unless a
   * writer's clock ran ahead. What a collaborative text change is dated with, so that its time
   * compares with event walls and bundle times (WriteTimes) as a register's does.
   */
  eventNow(): number {
    return this.engine.log.clockWall()
  }

  randomHex(bytes: number): string {
    return Buffer.from(this.engine.store.crypto.randomBytes(bytes)).toString('hex')
  }

  /**
   * Resolves once the projection has applied the whole log, starting that when nothing else has
   * (a projection on demand, or events ingested with more to come: Memory.ingestDeferred).
   */
  async settled(): Promise<void> {
    this.refuseClosed()
    await this.idle()
    if (this.projection.behind && !this.closing) {
      this.catchUpInBackground()
      await this.idle()
    }
  }

  /**
   * Throws CLOSED once `close` has finished (reads), or once it has begun with `writing` (a
   * write started then would be cut off). For calls that reach storage without `settled` or
   * `write`, which would otherwise fail with the store's own STORAGE_FAILED.
   */
  refuseClosed(writing = false): void {
    if (this.closed || (writing && this.closing)) throw new StorageError('CLOSED', 'this memory is closed')
  }

  /** Tracks a projection catch-up, after whatever background work is already tracked. */
  catchUpInBackground(): void {
    if (this.closing || !this.projection.behind) return
    this.trackAfter(() => this.projection.catchUp())
  }

  /** Resolves once background work has finished, without starting any. */
  async idle(): Promise<void> {
    while (this.pending) await this.pending
  }

  /** Starts no more background work or writes, and waits for what runs (the store closes next). */
  async close(): Promise<void> {
    this.closing = true
    while (this.writing.size > 0) await Promise.allSettled([...this.writing])
    await this.idle()
    this.closed = true
  }

  /** Writes under way (`write`): close waits for them, so none is stored yet rejected. */
  private readonly writing = new Set<Promise<unknown>>()
  /** Writes started so far (`write`): `whileQuiet` tells its task whether another one began. */
  private writesStarted = 0

  /**
   * Runs a write (an append or an ingest, with its projection). Once close has begun, a new one is
   * refused with CLOSED and stores nothing; one under way finishes before the store closes.
   */
  write<T>(run: () => Promise<T>): Promise<T> {
    if (this.closing) return Promise.reject(new StorageError('CLOSED', 'this memory is closed'))
    this.writesStarted++
    const written = run()
    const tracked = written.finally(() => this.writing.delete(tracked))
    tracked.catch(() => undefined)
    this.writing.add(tracked)
    return written
  }

  /**
   * Runs `task` as a write once the writes under way have finished (close waits for it; once
   * close has begun it is refused with CLOSED). `othersStarted()` tells the task whether another
   * write has begun since it started: what it read may then mix two states.
   */
  async whileQuiet<T>(task: (othersStarted: () => boolean) => Promise<T>): Promise<T> {
    this.refuseClosed(true)
    while (this.writing.size > 0) await Promise.allSettled([...this.writing])
    // No await between the loop and `write`: no other write can begin in between.
    return this.write(() => {
      const started = this.writesStarted
      return task(() => this.writesStarted !== started)
    })
  }

  /** Lets a projection catch-up run in the background; reads and writes wait for it. */
  track(run: Promise<unknown>): void {
    if (this.closing) {
      run.catch(() => undefined)
      return
    }
    const tracked: Promise<unknown> = run.finally(() => {
      if (this.pending === tracked) this.pending = undefined
    })
    this.pending = tracked
    // A failure surfaces on the next read or write through settled().
    run.catch(() => undefined)
  }

  /**
   * Runs `task` in the background after the background work already tracked (so it sees its
   * result), and tracks it in turn. If that work failed, so does this (the failure surfaces).
   * Returns the run (already handled: ignoring it leaves no unhandled rejection).
   */
  trackAfter(task: () => Promise<unknown>): Promise<unknown> {
    const previous = this.pending
    const run = previous ? previous.then(task) : task()
    this.track(run)
    return run
  }

  /** Appends entries (one event, or one atomic signed batch) and projects them before returning. */
  append(entries: readonly Entry[]): Promise<void> {
    return this.write(async () => {
      await this.settled()
      const events = entries.length === 1
        ? [await this.engine.log.append(this.engine.identity, entries[0] as Entry)]
        : await this.engine.log.appendBatch(this.engine.identity, entries)
      await this.projection.catchUp(events)
    })
  }

  async state(id: string): Promise<RecordState | undefined> {
    await this.settled()
    const bytes = await this.engine.store.storage.get(this.projection.keys.state(id))
    return bytes ? decodeState(bytes, id) : undefined
  }

  /** Merge states of many records at once (undefined where a record has none); the projection's cache first. */
  states(ids: readonly string[]): Promise<(RecordState | undefined)[]> {
    return this.cachedFirst(ids, (cached) => cached.state, async (missing) => {
      const list = await this.engine.store.storage.getMany(missing.map((id) => this.projection.keys.state(id)))
      return list.map((bytes, j) => (bytes ? decodeState(bytes, missing[j] as string) : undefined))
    })
  }

  /**
   * Refuses creates whose parent (a fact's episode, an edge's entities, a chunk's resource, a
   * link's ends) is deleted: the record would be deleted here at once, its body erased before a
   * peer could see it, and the peer would show it (no resurrection, spec §7).
   * @param where the path of an entry in the caller's input (`records[3]`), or undefined
   * @throws InputError FORGOTTEN naming the parent field
   */
  async refuseDeletedParents(entries: readonly { readonly kind: RecordKind; readonly fields: Readonly<Record<string, JsonValue>> }[], where: (index: number) => string | undefined): Promise<void> {
    const named: { index: number; field: string; id: string }[] = []
    entries.forEach((entry, index) => {
      for (const parent of kindSpec(entry.kind).parents) {
        const id = entry.fields[parent.field]
        if (typeof id === 'string') named.push({ index, field: `${entry.kind}.${parent.field}`, id })
      }
    })
    if (named.length === 0) return
    const ids = [...new Set(named.map((item) => item.id))]
    const states = await this.states(ids)
    const deleted = new Set(ids.filter((_, i) => states[i]?.tombstone?.op === 'delete'))
    const found = named.find((item) => deleted.has(item.id))
    if (found === undefined) return
    const path = where(found.index)
    throw new InputError('FORGOTTEN', `${found.id} was deleted: nothing new may name it`, { field: path === undefined ? found.field : `${path}.${found.field}` })
  }

  /**
   * Current views of many records (undefined where none), the projection's cache first. For
   * checks inside the engine only: cached views are shared, never handed to callers.
   */
  currentViews(ids: readonly string[]): Promise<(RecordView | undefined)[]> {
    return this.cachedFirst(ids, (cached) => cached.view, (missing) => this.reader.getMany(missing))
  }

  /** Reads each id from the projection's record cache, and the rest from the store in one go. */
  private async cachedFirst<T>(ids: readonly string[], fromCache: (cached: CachedRecord) => T, fromStore: (missing: string[]) => Promise<T[]>): Promise<T[]> {
    await this.settled()
    const out: T[] = new Array(ids.length)
    const missing: number[] = []
    ids.forEach((id, i) => {
      const cached = this.projection.cachedRecord(id)
      if (cached) out[i] = fromCache(cached)
      else missing.push(i)
    })
    if (missing.length === 0) return out
    const stored = await fromStore(missing.map((i) => ids[i] as string))
    stored.forEach((value, j) => (out[missing[j] as number] = value))
    return out
  }

  /** A record that can still change: present, not deleted, not redacted. */
  async existing(id: unknown, label = 'id'): Promise<RecordView> {
    await this.settled()
    const recordId = assertNonEmptyString(id, label)
    const view = await this.reader.get(recordId)
    const tombstone = (await this.state(recordId))?.tombstone
    if (tombstone) refuseTombstoned(tombstone.op, label)
    if (!view) throw new InputError('UNKNOWN_RECORD', 'no such record', { field: label })
    return view
  }
}

export function refuseTombstoned(op: 'delete' | 'redact', label: string): never {
  if (op === 'redact') throw new InputError('REDACTED', 'the record was redacted; its content cannot change', { field: label })
  throw new InputError('FORGOTTEN', 'the record was deleted, and its id never returns', { field: label })
}

/**
 * Refuses a create whose id is already a record of another kind here: the projection keeps one
 * kind per id, so the create would be stored and never shown.
 */
export function refuseOtherKind(held: string | undefined, kind: RecordKind, label: string): void {
  if (held !== undefined && held !== kind) throw new InputError('ID_TAKEN', `the id is already a record of kind ${held}, not ${kind}`, { field: label })
}

/** Re-labels an InputError thrown for one item of a list with the item's path (`records[3]`). */
export function atIndex<T>(path: string, run: () => T): T {
  try {
    return run()
  } catch (error) {
    // One shape for every refusal of a list item: the item's path leads the field
    // (`records[1].episode.summary`), as the checks made on the whole list name it.
    if (error instanceof InputError) {
      const { field, ...rest } = error.where
      throw relocate(error, { ...rest, field: field === undefined ? path : `${path}.${field}` })
    }
    throw error
  }
}

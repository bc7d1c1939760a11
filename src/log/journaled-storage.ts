/**
 * A `LogStorage` that makes each write durable by appending it to a journal file (synchronous,
 * a few µs) and feeds the store behind it (LevelDB) in the background, merging the batches that
 * queue up meanwhile (up to flushChunkBytes per LevelDB write). Reads see every accepted write at
 * once: point reads through an overlay of not-yet-flushed values, range reads once the writes
 * accepted before them are in the inner store. Past maxUnflushedBytes a writer waits for the
 * next flush (backpressure). close() refuses writes from its call on.
 *
 * Invariants: a batch is in the journal before `write` resolves; a journal file is removed or
 * emptied only when every batch in it is in the inner store; batches reach the inner store in
 * the order they were written; after a crash, opening replays the journal's intact batches in
 * order. If the inner store fails, this storage refuses further work (reopening recovers from
 * the journal).
 */
import path from 'node:path'
import { StorageError } from '../errors.js'
import type { LogStorage, StorageRange, StorageWrite } from './storage.js'
import { WriteJournal } from './write-journal.js'

export const JOURNAL_FILE = 'cairn-journal.log'
/**
 * When more than this is accepted but not yet in LevelDB, the writer waits for LevelDB to take
 * some of it (one flush), bounding the overlay. The journal itself stays bounded by rotating.
 */
export const DEFAULT_MAX_UNFLUSHED_BYTES = 64 * 1024 * 1024

/**
 * At most this much goes to LevelDB in one write, so a writer held back waits for a bounded
 * write, not for the whole backlog.
 */
export const DEFAULT_FLUSH_CHUNK_BYTES = 8 * 1024 * 1024

export interface JournaledStorageOptions {
  readonly sync?: boolean
  /** See DEFAULT_MAX_UNFLUSHED_BYTES. */
  readonly maxUnflushedBytes?: number
  /** See DEFAULT_FLUSH_CHUNK_BYTES. */
  readonly flushChunkBytes?: number
  /** See write-journal.ts, DEFAULT_ROTATE_BYTES. */
  readonly rotateBytes?: number
}

/** A journaled batch on its way to the inner store, with its size for the backpressure. */
interface QueuedBatch {
  readonly writes: StorageWrite[]
  readonly bytes: number
}

export class JournaledStorage implements LogStorage {
  /** Values written but not yet in the inner store; null marks a delete. */
  private readonly overlay = new Map<string, Uint8Array | null>()
  private queue: QueuedBatch[] = []
  /** Bytes of the batches accepted and not yet in the inner store. */
  private unflushedBytes = 0
  private flushing: Promise<void> | undefined
  private failure: StorageError | undefined
  private closed = false
  /** Set by close(): writes are refused from then on. */
  private closing: Promise<void> | undefined
  /** writeDerived calls accepted and not yet settled (close waits for them). */
  private readonly derivedCalls = new Set<Promise<void>>()
  /** writeDerived batches on their way to the inner store. */
  private readonly direct = new Set<Promise<void>>()
  /** Journaled batches accepted, and how many of them are in the inner store (in order). */
  private accepted = 0
  private flushedBatches = 0
  private readonly flushWaiters: { upTo: number; resolve: () => void }[] = []
  /** The last failure to remove or empty flushed journal files, until a later attempt succeeds. */
  journalCleanupFailure: Error | undefined
  /** How many writeDerived batches had to take the journal (it was not empty): for tests and tuning. */
  derivedJournaled = 0

  private constructor(private readonly inner: LogStorage, private readonly journal: WriteJournal, private readonly limits: { readonly maxUnflushedBytes: number; readonly flushChunkBytes: number }) {}

  /** Wraps an open store, first replaying whatever its journal holds from a previous run. */
  static async open(inner: LogStorage, directory: string, options: JournaledStorageOptions = {}): Promise<JournaledStorage> {
    let opened: ReturnType<typeof WriteJournal.open>
    try {
      opened = WriteJournal.open(path.join(directory, JOURNAL_FILE), {
        sync: options.sync ?? false,
        ...(options.rotateBytes !== undefined ? { rotateBytes: options.rotateBytes } : {}),
      })
    } catch (error) {
      await inner.close()
      throw new StorageError('STORE_UNAVAILABLE', `the journal cannot be opened: ${(error as Error).message}`, { file: directory }, { cause: error })
    }
    try {
      for (const batch of opened.batches) await inner.write(batch)
    } catch (error) {
      // Nothing is lost (the journal replays again next time); the files and LevelDB's lock are let go.
      opened.journal.close()
      await inner.close()
      throw new StorageError('STORE_UNAVAILABLE', `the journal cannot be replayed: ${(error as Error).message}`, { file: directory }, { cause: error })
    }
    const storage = new JournaledStorage(inner, opened.journal, {
      maxUnflushedBytes: options.maxUnflushedBytes ?? DEFAULT_MAX_UNFLUSHED_BYTES,
      flushChunkBytes: options.flushChunkBytes ?? DEFAULT_FLUSH_CHUNK_BYTES,
    })
    try {
      opened.journal.reset()
    } catch (error) {
      // LevelDB holds everything replayed: files that cannot go yet stay, in order, and the first
      // flush tries again (release), as after a failed cleanup while open.
      storage.journalCleanupFailure = error as Error
    }
    return storage
  }

  /** Bytes the journal's files hold now: 0 once LevelDB has everything (for tests). */
  get journalBytes(): number {
    return this.journal.size
  }

  get location(): string {
    return this.inner.location
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    this.checkUsable()
    const pending = this.overlay.get(key)
    if (pending !== undefined) return pending === null ? undefined : Uint8Array.from(pending)
    return this.inner.get(key)
  }

  async getMany(keys: readonly string[]): Promise<(Uint8Array | undefined)[]> {
    this.checkUsable()
    if (this.overlay.size === 0) return this.inner.getMany(keys)
    const out: (Uint8Array | undefined)[] = new Array(keys.length)
    const misses: string[] = []
    const missIndex: number[] = []
    keys.forEach((key, i) => {
      const pending = this.overlay.get(key)
      if (pending === undefined) {
        misses.push(key)
        missIndex.push(i)
      } else out[i] = pending === null ? undefined : Uint8Array.from(pending)
    })
    if (misses.length > 0) {
      const values = await this.inner.getMany(misses)
      values.forEach((value, j) => (out[missIndex[j] as number] = value))
    }
    return out
  }

  async write(writes: readonly StorageWrite[]): Promise<void> {
    this.checkWritable()
    return this.journaled(writes)
  }

  /** `write` past the closing check: a writeDerived accepted before close() may still journal. */
  private async journaled(writes: readonly StorageWrite[]): Promise<void> {
    this.checkUsable()
    if (writes.length === 0) return
    this.checkWrites(writes)
    let batch: StorageWrite[]
    const before = this.journal.size
    try {
      // The journal's copies of the values serve reads until the flush: the caller may reuse its arrays.
      batch = this.journal.append(writes)
    } catch (error) {
      throw new StorageError('STORAGE_FAILED', `the journal cannot be written: ${(error as Error).message}`, { file: this.location }, { cause: error })
    }
    for (const write of batch) this.overlay.set(write.key, write.type === 'put' ? write.value : null)
    const bytes = this.journal.size - before
    this.unflushedBytes += bytes
    this.queue.push({ writes: batch, bytes })
    this.accepted++
    // Flush on a later turn of the event loop: LevelDB's marshalling stays off the writer's path,
    // and what is written meanwhile goes to LevelDB together (in chunks of flushChunkBytes).
    this.flushing ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.flush())
    // Backpressure once the batch is in (so batches keep the order of the calls): wait for one
    // flush at a time, not for the queue to drain, so LevelDB keeps working meanwhile.
    // The batch is durable now whatever happens next: a failing store ends the wait, not the write.
    while (this.unflushedBytes > this.limits.maxUnflushedBytes && !this.failure) await this.untilFlushed(this.flushedBatches + 1)
    // A writer that never waits on I/O (a bulk ingest) would keep the flush from hearing that
    // LevelDB finished its last write: let the event loop turn once a backlog builds.
    if (this.unflushedBytes > this.limits.flushChunkBytes) await new Promise<void>((resolve) => setImmediate(resolve))
  }

  /**
   * Skips the journal when it can: the batch goes to the inner store once every write before it
   * is there. A large projection batch costs ~15% of its catch-up in the journal copy and the
   * overlay, and the journal buys it nothing: until the batch is stored, the projection's cursor
   * (in the batch) says those events are still to apply, so a crash loses no information.
   *
   * It can only while the journal is empty: replay after a crash writes every frame the journal
   * holds, flushed or not, so a frame older than this batch would be written over it. When later
   * writes keep the journal from emptying (an ingest running beside the projection), the batch
   * is journaled like any other.
   */
  async writeDerived(writes: readonly StorageWrite[]): Promise<void> {
    this.checkWritable()
    if (writes.length === 0) return
    this.checkWrites(writes)
    // Accepted now: close() waits for it, as for a journaled write.
    const call = this.writeDerivedNow(writes)
    this.derivedCalls.add(call)
    try {
      await call
    } finally {
      this.derivedCalls.delete(call)
    }
  }

  private async writeDerivedNow(writes: readonly StorageWrite[]): Promise<void> {
    // Only the writes accepted so far: under a steady stream of journaled writes the queue may
    // never be empty, and then this batch takes the journal too.
    await this.flushedThrough(this.accepted)
    while (this.direct.size > 0) await Promise.allSettled(this.direct)
    this.checkUsable()
    if (this.journal.size > 0 || this.queue.length > 0) {
      this.derivedJournaled++
      return this.journaled(writes)
    }
    // A failure reaches the caller alone: nothing it had accepted is lost.
    const written = this.inner.write(writes)
    this.direct.add(written)
    try {
      await written
    } finally {
      this.direct.delete(written)
    }
  }

  async *entries(range: StorageRange): AsyncIterable<[string, Uint8Array]> {
    await this.settled()
    yield* this.inner.entries(range)
  }

  async *keys(range: StorageRange): AsyncIterable<string> {
    await this.settled()
    yield* this.inner.keys(range)
  }

  async *valueBatches(range: StorageRange): AsyncIterable<readonly Uint8Array[]> {
    await this.settled()
    yield* this.inner.valueBatches(range)
  }

  async *entryBatches(range: StorageRange): AsyncIterable<readonly (readonly [string, Uint8Array])[]> {
    await this.settled()
    yield* this.inner.entryBatches(range)
  }

  async compact(start: string, end: string): Promise<void> {
    await this.settled()
    await this.inner.compact(start, end)
  }

  /**
   * Refuses writes from the call on, waits for the accepted ones to reach the inner store, then
   * closes. Calls after the first share its promise.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.allSettled([...this.derivedCalls])
      await this.settled().catch(() => undefined)
      this.closed = true
      try {
        // Files that cannot go now replay, in order, at the next open: LevelDB ends the same.
        if (!this.failure) this.journal.reset()
      } catch (error) {
        this.journalCleanupFailure = error as Error
      } finally {
        this.journal.close()
        await this.inner.close()
      }
    })()
    return this.closing
  }

  /**
   * Resolves when every write accepted before the call is in the inner store. Writes accepted
   * after it are not waited for, so a writer that never pauses cannot postpone it (range reads,
   * compaction and close wait on it).
   */
  async settled(): Promise<void> {
    const direct = [...this.direct]
    await this.untilFlushed(this.accepted)
    await Promise.allSettled(direct)
    this.checkUsable()
  }

  private async flush(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batches = this.takeChunk()
        const merged = batches.length === 1 ? (batches[0] as QueuedBatch).writes : batches.flatMap((batch) => batch.writes)
        await this.inner.write(merged)
        this.flushedBatches += batches.length
        for (const batch of batches) this.unflushedBytes -= batch.bytes
        for (const write of merged) {
          // A later write to the same key keeps its newer overlay entry.
          if (this.overlay.get(write.key) === (write.type === 'put' ? write.value : null)) this.overlay.delete(write.key)
        }
        this.releaseJournal()
        this.wakeFlushWaiters()
      }
    } catch (error) {
      this.failure = new StorageError('STORAGE_FAILED', `writing to the store failed; reopen it to recover from the journal: ${(error as Error).message}`, { file: this.location }, { cause: error })
    } finally {
      this.flushing = undefined
      // On failure nothing more will flush: waiters wake and find the storage unusable.
      if (this.failure) this.wakeFlushWaiters(true)
    }
  }

  /**
   * Lets the journal drop what LevelDB now holds. A file that cannot be removed or emptied (the
   * disk refusing an unlink, say) is not a store failure: nothing is lost, the journal keeps it
   * and every later file (so a replay stays in order) and tries again after the next flush, or
   * at close. `journalCleanupFailure` tells what went wrong meanwhile.
   */
  private releaseJournal(): void {
    try {
      this.journal.release(this.flushedBatches)
      this.journalCleanupFailure = undefined
    } catch (error) {
      this.journalCleanupFailure = error as Error
    }
  }

  /** The oldest queued batches, up to flushChunkBytes (at least one): one LevelDB write. */
  private takeChunk(): QueuedBatch[] {
    let count = 0
    let bytes = 0
    while (count < this.queue.length && (count === 0 || bytes + (this.queue[count] as QueuedBatch).bytes <= this.limits.flushChunkBytes)) {
      bytes += (this.queue[count] as QueuedBatch).bytes
      count++
    }
    return this.queue.splice(0, count)
  }

  private wakeFlushWaiters(all = false): void {
    for (let i = this.flushWaiters.length - 1; i >= 0; i--) {
      const waiter = this.flushWaiters[i] as { upTo: number; resolve: () => void }
      if (all || waiter.upTo <= this.flushedBatches) {
        this.flushWaiters.splice(i, 1)
        waiter.resolve()
      }
    }
  }

  /** Resolves once the first `upTo` journaled batches are in the inner store (not waiting for later ones). */
  private async flushedThrough(upTo: number): Promise<void> {
    await this.untilFlushed(upTo)
    this.checkUsable()
  }

  /** Resolves once the first `upTo` journaled batches are in the inner store or it failed. */
  private async untilFlushed(upTo: number): Promise<void> {
    if (this.flushedBatches < upTo && !this.failure) await new Promise<void>((resolve) => this.flushWaiters.push({ upTo, resolve }))
  }

  private checkWrites(writes: readonly StorageWrite[]): void {
    for (const write of writes) {
      if (typeof write?.key !== 'string' || (write.type !== 'del' && !(write.type === 'put' && write.value instanceof Uint8Array))) {
        throw new StorageError('STORAGE_FAILED', 'a write must be a put of bytes or a del, with a string key', { file: this.location })
      }
    }
  }

  private checkWritable(): void {
    this.checkUsable()
    if (this.closing) throw new StorageError('STORAGE_FAILED', 'the store is closing', { file: this.location })
  }

  private checkUsable(): void {
    if (this.failure) throw this.failure
    if (this.closed) throw new StorageError('STORAGE_FAILED', 'the store is closed', { file: this.location })
  }
}

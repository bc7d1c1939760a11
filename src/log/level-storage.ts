/**
 * `LogStorage` on the `level` family: classic-level (LevelDB) on disk, memory-level in memory.
 * LevelDB applies a batch atomically through its write-ahead log, so a process killed at any
 * moment reopens with each batch wholly present or wholly absent.
 */
import { realpathSync } from 'node:fs'
import path from 'node:path'
import { Level } from 'level'
import { MemoryLevel } from 'memory-level'
import { StorageError } from '../errors.js'
import type { LogStorage, StorageRange, StorageWrite } from './storage.js'

/** The slice of the abstract-level API this adapter uses, so both backends type-check alike. */
interface LevelLike {
  open(): Promise<void>
  close(): Promise<void>
  get(key: string): Promise<Uint8Array | undefined>
  getSync(key: string): Uint8Array | undefined
  getMany(keys: string[]): Promise<(Uint8Array | undefined)[]>
  batch(operations: Array<{ type: 'put'; key: string; value: Uint8Array } | { type: 'del'; key: string }>, options?: { sync?: boolean }): Promise<void>
  batch(): LevelChainedBatch
  iterator(options: StorageRange & { keys?: boolean; values?: boolean; highWaterMarkBytes?: number }): AsyncIterable<[string, Uint8Array]> & { nextv(size: number): Promise<[string, Uint8Array][]>; close(): Promise<void> }
  keys(options: StorageRange): AsyncIterable<string>
  values(options: StorageRange & { highWaterMarkBytes?: number }): { nextv(size: number): Promise<Uint8Array[]>; close(): Promise<void> }
}

/** abstract-level's chained batch: operations go into LevelDB's write batch as they are added. */
interface LevelChainedBatch {
  put(key: string, value: Uint8Array): LevelChainedBatch
  del(key: string): LevelChainedBatch
  write(options?: { sync?: boolean }): Promise<void>
  close(): Promise<void>
}

const SYNC_WRITE = Object.freeze({ sync: true })

/**
 * Reads of up to this many keys run synchronously (`getSync`): a lookup in LevelDB's memtable
 * or block cache takes microseconds, while the thread-pool round trip of an async read took
 * 0.1-0.5 ms, several times over on a live change's path (projection, text index, relay).
 * Larger reads stay async so the pool overlaps them.
 */
const SYNC_READ_KEYS = 8
/**
 * A value batch holds up to this many values, read ahead up to this many bytes per trip into
 * LevelDB (classic-level's default read-ahead is 16 KiB, ~27 views): a whole-index scan of 100k
 * views took ~0.5 s as single entries through async generators and ~0.25 s this way.
 */
const BATCH_VALUES = 1000
const BATCH_READ_AHEAD_BYTES = 1 << 20
/** A key range below every key Cairn stores (they start with a hex space id or a letter). */
const EMPTY_RANGE = '\u0000'

/**
 * The store directories this process has open. LevelDB's lock is per process: a second open
 * of a store this process holds fails as locked, and on its way out LevelDB drops the lock the
 * first open holds, so another process (a `cairn` command) could then open the store and both
 * would write to it. A second open is therefore refused here, before LevelDB sees it.
 */
const openInThisProcess = new Set<string>()

/**
 * A directory's name in `openInThisProcess`: absolute, through symbolic links. Folders not
 * created yet are named from their nearest existing ancestor, as they will be once they exist.
 */
function heldName(directory: string): string {
  let existing = path.resolve(directory)
  const missing: string[] = []
  for (;;) {
    try {
      return path.join(realpathSync(existing), ...missing)
    } catch {
      const parent = path.dirname(existing)
      if (parent === existing) return path.resolve(directory)
      missing.unshift(path.basename(existing))
      existing = parent
    }
  }
}

/** The most specific level error code in an error's cause chain. */
function errorCode(error: unknown): string | undefined {
  let current: unknown = error
  let found: string | undefined
  while (typeof current === 'object' && current !== null) {
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string' && code !== 'LEVEL_DATABASE_NOT_OPEN') return code
    if (typeof code === 'string') found = code
    current = (current as { cause?: unknown }).cause
  }
  return found
}

/**
 * LevelDB's in-memory write buffer (its memtable) before it is written out as a sorted file.
 * LevelDB's 4 MiB default flushes and compacts often under bulk appends; 16 MiB gave bulk append
 * and ingest 6-9% more (bench/README.md, "a 16 MiB LevelDB write buffer"), for up to twice that in memory while a
 * full buffer is written out, and up to that much journal replayed on an open after a crash.
 */
export const DEFAULT_WRITE_BUFFER_BYTES = 16 * 1024 * 1024
/** LevelDB clamps a write buffer to this range; a size outside it is refused rather than changed. */
export const WRITE_BUFFER_BYTES_RANGE = [64 * 1024, 1024 * 1024 * 1024] as const

export class LevelLogStorage implements LogStorage {
  private constructor(
    readonly location: string,
    private readonly db: LevelLike,
    private readonly compactRange: ((start: string, end: string) => Promise<void>) | undefined,
    private readonly sync: boolean,
    /** memory-level keeps and returns the caller's arrays; copy so nobody can alter stored bytes. */
    private readonly copyValues: boolean,
    /** The directory's entry in `openInThisProcess` (on disk only). */
    private readonly held?: string,
  ) {}

  /**
   * Opens (creating if needed) a LevelDB store in `directory`.
   * @param sync when true every batch is fsynced, surviving power loss as well as process crashes
   * @param createIfMissing false to refuse a directory that holds no store (a lost store must
   *   not silently reopen as a new, empty one)
   * @param writeBufferBytes LevelDB's write buffer (DEFAULT_WRITE_BUFFER_BYTES), within
   *   WRITE_BUFFER_BYTES_RANGE (checked by LogStore.open)
   * @throws StorageError STORE_LOCKED when another process has it open, STORE_MISSING,
   *   CORRUPT_STORE when LevelDB reports corruption, STORE_UNAVAILABLE otherwise
   */
  static async openDisk(directory: string, options: { sync?: boolean; createIfMissing?: boolean; writeBufferBytes?: number } = {}): Promise<LevelLogStorage> {
    const held = heldName(directory)
    if (openInThisProcess.has(held)) {
      throw new StorageError('STORE_LOCKED', 'the store is already open in this process: close it before opening it again', { file: directory })
    }
    // Claimed before the open, so two concurrent opens here cannot both reach LevelDB.
    openInThisProcess.add(held)
    const db = new Level<string, Uint8Array>(directory, {
      keyEncoding: 'utf8',
      valueEncoding: 'view',
      createIfMissing: options.createIfMissing ?? true,
      writeBufferSize: options.writeBufferBytes ?? DEFAULT_WRITE_BUFFER_BYTES,
    })
    try {
      await db.open()
    } catch (error) {
      openInThisProcess.delete(held)
      const code = errorCode(error)
      if (code === 'LEVEL_LOCKED') {
        throw new StorageError('STORE_LOCKED', 'the store is in use by another process', { file: directory }, { cause: error })
      }
      const detail = error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error)
      if (code === 'LEVEL_CORRUPTION') {
        throw new StorageError('CORRUPT_STORE', `the store's files are damaged: ${detail}`, { file: directory }, { cause: error })
      }
      if (/does not exist/.test(detail)) {
        throw new StorageError('STORE_MISSING', 'no store in this directory', { file: directory }, { cause: error })
      }
      throw new StorageError('STORE_UNAVAILABLE', `the store cannot be opened: ${detail}`, { file: directory }, { cause: error })
    }
    // Level is classic-level in Node; its typings omit the LevelDB-only compactRange.
    const compact = (start: string, end: string) =>
      (db as unknown as { compactRange(start: string, end: string): Promise<void> }).compactRange(start, end)
    return new LevelLogStorage(directory, db as unknown as LevelLike, compact, options.sync ?? false, false, held)
  }

  static async openMemory(): Promise<LevelLogStorage> {
    const db = new MemoryLevel<string, Uint8Array>({ keyEncoding: 'utf8', valueEncoding: 'view' })
    await db.open()
    // memory-level keeps no old versions, so there is nothing to compact.
    return new LevelLogStorage('memory', db as unknown as LevelLike, undefined, false, true)
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    const value = await this.guard(async () => this.db.getSync(key))
    return this.copyValues && value !== undefined ? Uint8Array.from(value) : value
  }

  async getMany(keys: readonly string[]): Promise<(Uint8Array | undefined)[]> {
    const values = keys.length <= SYNC_READ_KEYS
      ? await this.guard(async () => keys.map((key) => this.db.getSync(key)))
      : await this.guard(() => this.db.getMany([...keys]))
    return this.copyValues ? values.map((value) => (value === undefined ? value : Uint8Array.from(value))) : values
  }

  /** Nothing to skip here: a plain write. */
  writeDerived(writes: readonly StorageWrite[]): Promise<void> {
    return this.write(writes)
  }

  write(writes: readonly StorageWrite[]): Promise<void> {
    if (writes.length === 0) return Promise.resolve()
    // memory-level keeps the caller's arrays: copies go in, as an array batch without options
    // (abstract-level spreads a non-empty options object into every operation of an array
    // batch, 2-4x slower per op; memory-level has nothing to fsync anyway).
    return this.guard(() => {
      if (this.copyValues) {
        const copied = writes.map((write) => (write.type === 'put' && write.value instanceof Uint8Array ? { ...write, value: Uint8Array.from(write.value) } : write))
        return this.db.batch(copied as StorageWrite[] as never)
      }
      return this.writeChained(writes)
    })
  }

  /**
   * classic-level's chained batch hands each operation to LevelDB's write batch as it is added;
   * an array batch first copies every operation into an object of its own and has the binding
   * read three properties of each. On the writer's thread a put of a 28,000-put batch (an
   * import's projection batch) costs ~0.5-0.65 µs instead of ~0.95-1.0 (`npm run bench --
   * level-batch`); LevelDB's own work is the same. Atomic all the same: LevelDB applies the
   * write batch whole.
   */
  private writeChained(writes: readonly StorageWrite[]): Promise<void> {
    const batch = this.db.batch()
    try {
      for (const write of writes) {
        if (write.type === 'put') batch.put(write.key, write.value)
        else if (write.type === 'del') batch.del(write.key)
        // As the array batch refuses it: an operation of no known type is not taken for a del.
        else throw new TypeError("A batch operation must have a type property that is 'put' or 'del'")
      }
    } catch (error) {
      batch.close().catch(() => undefined)
      throw error
    }
    return batch.write(this.sync ? SYNC_WRITE : undefined)
  }

  async *entries(range: StorageRange): AsyncIterable<[string, Uint8Array]> {
    const iterator = await this.guard(async () => this.db.iterator({ ...range })[Symbol.asyncIterator]())
    try {
      for (;;) {
        const step = await this.guard(() => iterator.next())
        if (step.done) return
        const [key, value] = step.value
        yield [key, this.copyValues ? Uint8Array.from(value) : value]
      }
    } finally {
      await iterator.return?.()
    }
  }

  async *valueBatches(range: StorageRange): AsyncIterable<readonly Uint8Array[]> {
    const iterator = await this.guard(async () => this.db.values({ ...range, highWaterMarkBytes: BATCH_READ_AHEAD_BYTES }))
    for await (const batch of this.readAhead(iterator)) yield this.copyValues ? batch.map((value) => Uint8Array.from(value)) : batch
  }

  async *entryBatches(range: StorageRange): AsyncIterable<readonly (readonly [string, Uint8Array])[]> {
    const iterator = await this.guard(async () => this.db.iterator({ ...range, highWaterMarkBytes: BATCH_READ_AHEAD_BYTES }))
    for await (const batch of this.readAhead(iterator)) yield this.copyValues ? batch.map(([key, value]) => [key, Uint8Array.from(value)] as const) : batch
  }

  /**
   * Reads the next batch while the caller works on this one: a whole-index scan (an export reads
   * every view) otherwise waits on LevelDB's thread between batches, ~10% of its time.
   */
  private async *readAhead<T>(iterator: { nextv(size: number): Promise<T[]>; close(): Promise<void> }): AsyncIterable<T[]> {
    const read = (): Promise<T[]> => {
      const next = this.guard(() => iterator.nextv(BATCH_VALUES))
      // Handled here so a failure while the caller works is not an unhandled rejection; it is
      // thrown where the batch is awaited.
      next.catch(() => undefined)
      return next
    }
    let pending = read()
    try {
      for (;;) {
        const batch = await pending
        if (batch.length === 0) return
        pending = read()
        yield batch
      }
    } finally {
      // An iterator closes only between reads.
      await pending.catch(() => undefined)
      await iterator.close()
    }
  }

  async *keys(range: StorageRange): AsyncIterable<string> {
    const iterator = await this.guard(async () => this.db.keys({ ...range })[Symbol.asyncIterator]())
    try {
      for (;;) {
        const step = await this.guard(() => iterator.next())
        if (step.done) return
        yield step.value
      }
    } finally {
      await iterator.return?.()
    }
  }

  async compact(start: string, end: string): Promise<void> {
    if (this.compactRange) await this.guard(() => (this.compactRange as (s: string, e: string) => Promise<void>)(start, end))
  }

  /**
   * Closes the store. On disk, LevelDB's write buffer is written out to a table first: LevelDB
   * does not do that on close, so the next open would replay its write-ahead log, which after a
   * large batch (a projection catch-up writes tens of MB at once) took ~0.8 s instead of ~0.1 s.
   * Compacting a range that holds no key does it (LevelDB compacts the memtable before any
   * range) and touches no table. Closes once: a second call gets the first one's outcome.
   */
  close(): Promise<void> {
    return (this.closing ??= this.closeOnce())
  }

  private closing: Promise<void> | undefined

  private async closeOnce(): Promise<void> {
    if (this.compactRange) await this.compactRange(EMPTY_RANGE, EMPTY_RANGE).catch(() => undefined)
    await this.guard(() => this.db.close())
    // Released once closed, and by this handle only once: another may hold the directory later.
    if (this.held !== undefined) openInThisProcess.delete(this.held)
  }

  private async guard<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation()
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error)
      throw new StorageError('STORAGE_FAILED', detail, { file: this.location }, { cause: error })
    }
  }
}

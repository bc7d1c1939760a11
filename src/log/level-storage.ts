/**
 * `LogStorage` on the `level` family: classic-level (LevelDB) on disk, memory-level in memory.
 * LevelDB applies a batch atomically through its write-ahead log, so a process killed at any
 * moment reopens with each batch wholly present or wholly absent.
 */
import { Level } from 'level'
import { MemoryLevel } from 'memory-level'
import { StorageError } from '../errors.js'
import type { LogStorage, StorageRange, StorageWrite } from './storage.js'

/** The slice of the abstract-level API this adapter uses, so both backends type-check alike. */
interface LevelLike {
  open(): Promise<void>
  close(): Promise<void>
  get(key: string): Promise<Uint8Array | undefined>
  getMany(keys: string[]): Promise<(Uint8Array | undefined)[]>
  batch(operations: Array<{ type: 'put'; key: string; value: Uint8Array } | { type: 'del'; key: string }>, options?: { sync?: boolean }): Promise<void>
  iterator(options: StorageRange & { keys?: boolean; values?: boolean }): AsyncIterable<[string, Uint8Array]>
  keys(options: StorageRange): AsyncIterable<string>
}

function errorCode(error: unknown): string | undefined {
  let current: unknown = error
  while (typeof current === 'object' && current !== null) {
    const code = (current as { code?: unknown }).code
    if (code === 'LEVEL_LOCKED') return code
    current = (current as { cause?: unknown }).cause
  }
  return (error as { code?: string } | null)?.code
}

export class LevelLogStorage implements LogStorage {
  private constructor(
    readonly location: string,
    private readonly db: LevelLike,
    private readonly compactRange: ((start: string, end: string) => Promise<void>) | undefined,
    private readonly sync: boolean,
  ) {}

  /**
   * Opens (creating if needed) a LevelDB store in `directory`.
   * @param sync when true every batch is fsynced, surviving power loss as well as process crashes
   * @throws StorageError STORE_LOCKED when another process has it open, STORE_UNAVAILABLE otherwise
   */
  static async openDisk(directory: string, options: { sync?: boolean; createIfMissing?: boolean } = {}): Promise<LevelLogStorage> {
    const db = new Level<string, Uint8Array>(directory, {
      keyEncoding: 'utf8',
      valueEncoding: 'view',
      createIfMissing: options.createIfMissing ?? true,
    })
    try {
      await db.open()
    } catch (error) {
      if (errorCode(error) === 'LEVEL_LOCKED') {
        throw new StorageError('STORE_LOCKED', 'the store is in use by another process', { file: directory }, { cause: error })
      }
      const detail = error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error)
      throw new StorageError('STORE_UNAVAILABLE', `the store cannot be opened: ${detail}`, { file: directory }, { cause: error })
    }
    // Level is classic-level in Node; its typings omit the LevelDB-only compactRange.
    const compact = (start: string, end: string) =>
      (db as unknown as { compactRange(start: string, end: string): Promise<void> }).compactRange(start, end)
    return new LevelLogStorage(directory, db as unknown as LevelLike, compact, options.sync ?? false)
  }

  static async openMemory(): Promise<LevelLogStorage> {
    const db = new MemoryLevel<string, Uint8Array>({ keyEncoding: 'utf8', valueEncoding: 'view' })
    await db.open()
    // memory-level keeps no old versions, so there is nothing to compact.
    return new LevelLogStorage('memory', db as unknown as LevelLike, undefined, false)
  }

  get(key: string): Promise<Uint8Array | undefined> {
    return this.guard(() => this.db.get(key))
  }

  getMany(keys: readonly string[]): Promise<(Uint8Array | undefined)[]> {
    return this.guard(() => this.db.getMany([...keys]))
  }

  write(writes: readonly StorageWrite[]): Promise<void> {
    if (writes.length === 0) return Promise.resolve()
    return this.guard(() => this.db.batch(writes as StorageWrite[] as never, { sync: this.sync }))
  }

  entries(range: StorageRange): AsyncIterable<[string, Uint8Array]> {
    return this.db.iterator({ ...range })
  }

  keys(range: StorageRange): AsyncIterable<string> {
    return this.db.keys({ ...range })
  }

  async compact(start: string, end: string): Promise<void> {
    if (this.compactRange) await this.guard(() => (this.compactRange as (s: string, e: string) => Promise<void>)(start, end))
  }

  close(): Promise<void> {
    return this.guard(() => this.db.close())
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

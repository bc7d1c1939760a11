/**
 * The key-value storage a log store sits on: string keys ordered by their UTF-8 bytes (so a
 * character past U+FFFF sorts after every BMP one, unlike JS string comparison), byte values,
 * atomic batches.
 * Kept small so other backends (IndexedDB through browser-level, say) drop in; every
 * implementation runs the shared suite in test/log/storage.suite.ts.
 */

export type StorageWrite =
  | { readonly type: 'put'; readonly key: string; readonly value: Uint8Array }
  | { readonly type: 'del'; readonly key: string }

export interface StorageRange {
  readonly gt?: string
  readonly gte?: string
  readonly lt?: string
  readonly lte?: string
  readonly reverse?: boolean
  readonly limit?: number
}

export interface LogStorage {
  /** Where the data lives, for messages: a directory, or "memory". */
  readonly location: string
  get(key: string): Promise<Uint8Array | undefined>
  getMany(keys: readonly string[]): Promise<(Uint8Array | undefined)[]>
  /** Applies every write or none: after a crash the storage holds the whole batch or nothing. */
  write(writes: readonly StorageWrite[]): Promise<void>
  /**
   * `write` for a batch that can be derived again from what is stored already (a projection's
   * catch-up, whose cursor rides in the batch): the storage may skip a durability step of its
   * own for it. It lands after every write accepted before it and, once this resolves, is as
   * durable as any other write; a crash before that may lose it (whole). The caller must not
   * change the values afterwards.
   */
  writeDerived(writes: readonly StorageWrite[]): Promise<void>
  entries(range: StorageRange): AsyncIterable<[string, Uint8Array]>
  keys(range: StorageRange): AsyncIterable<string>
  /**
   * The values of `range` in key order, many at a time: a scan over a whole index (an export
   * reads every view) then pays one read and one await per batch, not per value. Each batch is
   * non-empty; together they are exactly the values `entries(range)` yields.
   */
  valueBatches(range: StorageRange): AsyncIterable<readonly Uint8Array[]>
  /** `entries(range)` many at a time, as `valueBatches` (a comparison of two whole ranges). */
  entryBatches(range: StorageRange): AsyncIterable<readonly (readonly [string, Uint8Array])[]>
  /**
   * Rewrites the storage of a key range so that overwritten and deleted values no longer exist
   * in its files. Erasure depends on this: a deleted body must not linger in old data files.
   */
  compact(start: string, end: string): Promise<void>
  close(): Promise<void>
}

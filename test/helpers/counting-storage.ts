/**
 * A LogStorage wrapper for tests that count what reads cost: range reads opened, the items they
 * yield (entries and keys apart), and the most range reads open at once.
 */
import type { LogStorage, StorageRange } from '../../src/log/storage.js'

export interface CountingStorage {
  readonly storage: LogStorage
  /** Range reads opened (entries and keys). */
  readonly ranges: () => number
  /** Entries yielded by `entries` ranges. */
  readonly entriesRead: () => number
  /** Keys yielded by `keys` ranges. */
  readonly keysRead: () => number
  /** The most range reads open at once. */
  readonly mostOpen: () => number
}

export function countingStorage(inner: LogStorage): CountingStorage {
  let ranges = 0
  let open = 0
  let mostOpen = 0
  const yielded = { entries: 0, keys: 0 }
  async function* counted<T>(items: AsyncIterable<T>, kind: 'entries' | 'keys'): AsyncIterable<T> {
    mostOpen = Math.max(mostOpen, ++open)
    try {
      for await (const item of items) {
        yielded[kind]++
        yield item
      }
    } finally {
      open--
    }
  }
  const storage: LogStorage = {
    location: inner.location,
    get: (key) => inner.get(key),
    getMany: (keys) => inner.getMany(keys),
    write: (writes) => inner.write(writes),
    writeDerived: (writes) => inner.writeDerived(writes),
    entries: (range: StorageRange) => (ranges++, counted(inner.entries(range), 'entries')),
    keys: (range: StorageRange) => (ranges++, counted(inner.keys(range), 'keys')),
    valueBatches: (range) => inner.valueBatches(range),
    entryBatches: (range) => inner.entryBatches(range),
    compact: (start, end) => inner.compact(start, end),
    close: () => inner.close(),
  }
  return { storage, ranges: () => ranges, entriesRead: () => yielded.entries, keysRead: () => yielded.keys, mostOpen: () => mostOpen }
}

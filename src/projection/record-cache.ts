/**
 * A bounded cache of recently used record states and views, shared by successive projection
 * batches so that repeated updates of the same records do not read them back from storage.
 *
 * Invariant: it only ever holds what is stored (entries are put after the batch that wrote them
 * was stored, and the projection is the only writer of its keyspace), including "stored as
 * absent", so a hit is exactly as good as a read.
 */
import type { RecordState } from '../crdt/index.js'
import type { RecordView } from './materialize.js'

/**
 * Enough for the working set of a busy replica. An entry costs ~4 KiB of heap (a 600-byte view
 * held as bytes and as an object, and its state with a register per field), so 10,000 is ~40
 * MB. At 50,000 a 100k-record import left 222 MB of heap behind (61 MB at 10,000), every later
 * full collection marked it, and an export right after the import ran ~30% slower; the merge
 * benchmark (10k records updated 50k times) applied no slower at 10,000 (bench/README.md).
 */
export const RECORD_CACHE_LIMIT = 10_000

export interface CachedRecord {
  readonly state: RecordState | undefined
  /** The view bytes stored under q:v (undefined: none) and their decoded form. */
  readonly viewBytes: Uint8Array | undefined
  readonly view: RecordView | undefined
}

export class RecordCache {
  private readonly entries = new Map<string, CachedRecord>()

  constructor(private readonly limit = RECORD_CACHE_LIMIT) {}

  get(id: string): CachedRecord | undefined {
    const entry = this.entries.get(id)
    if (entry) {
      // Move to the young end (Map keeps insertion order).
      this.entries.delete(id)
      this.entries.set(id, entry)
    }
    return entry
  }

  set(id: string, entry: CachedRecord): void {
    this.entries.delete(id)
    this.entries.set(id, entry)
    if (this.entries.size > this.limit) {
      const oldest = this.entries.keys().next().value
      if (oldest !== undefined) this.entries.delete(oldest)
    }
  }

  clear(): void {
    this.entries.clear()
  }
}

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

/** Enough for the working set of a busy replica; roughly 1 KiB a record. */
export const RECORD_CACHE_LIMIT = 50_000

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

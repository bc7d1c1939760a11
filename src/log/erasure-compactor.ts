/**
 * Compacts erased bodies out of a store's files in the background, many erasures at a time.
 *
 * Why: LevelDB keeps an overwritten value in older files until a compaction rewrites them, so an
 * erasure is only physical once the key range is compacted. Compacting inside every erasure cost
 * 30-70 ms per `forget` (LevelDB flushes its write buffer and rewrites every file overlapping the
 * range), and a burst of forgets paid it once each. Here an erasure only asks: the range waits
 * for the end of the current turn of the event loop, so a burst shares one compaction, and while
 * one runs the next requests merge into the one after it.
 *
 * Invariants: the erasure that asks has already written, in its own atomic batch, a marker that
 * a compaction is owed (`markerKey`); the marker is removed only when no request is outstanding,
 * under the caller's write lock (`clearMarker`), so a crash before the compaction leaves it and
 * the next open compacts again (`SpaceLog.resumeErasureCompaction`). `settled()` resolves once
 * everything asked so far is compacted or the attempt failed (the marker then stays).
 */
import type { LogStorage } from './storage.js'

export interface KeyRange {
  readonly start: string
  readonly end: string
}

export class ErasureCompactor {
  private pending: KeyRange | undefined
  private running: Promise<void> | undefined
  /** The last compaction's failure, if it failed (its marker stays for the next open). */
  failure: unknown

  constructor(
    private readonly storage: LogStorage,
    /** Removes the marker unless `outstanding()` says another request came in meanwhile. */
    private readonly clearMarker: (outstanding: () => boolean) => Promise<void>,
  ) {}

  /** Asks for `range` to be compacted soon; never waits. */
  request(range: KeyRange): void {
    const pending = this.pending
    this.pending = pending === undefined ? range : {
      start: range.start < pending.start ? range.start : pending.start,
      end: range.end > pending.end ? range.end : pending.end,
    }
    this.running ??= this.run()
  }

  /** Resolves once every range asked for so far is compacted, or a compaction failed. */
  async settled(): Promise<void> {
    while (this.running) await this.running
  }

  private async run(): Promise<void> {
    // Erasures in the same turn of the event loop share this compaction.
    await new Promise<void>((resolve) => setImmediate(resolve))
    try {
      while (this.pending !== undefined) {
        const range = this.pending
        this.pending = undefined
        await this.storage.compact(range.start, range.end)
      }
      await this.clearMarker(() => this.pending !== undefined)
      this.failure = undefined
    } catch (error) {
      this.failure = error
      this.pending = undefined
    } finally {
      this.running = undefined
      // A request that came in while the marker was being cleared starts the next round.
      if (this.pending !== undefined) this.running = this.run()
    }
  }
}

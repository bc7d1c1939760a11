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
 * the next open compacts again (`SpaceLog.resumeErasureCompaction`). A range whose compaction
 * failed stays owed: the next request compacts it too, and the marker stays until it has been.
 * `settled()` resolves once everything asked so far is compacted, and rejects while a range is owed.
 */
import type { LogStorage } from './storage.js'

export interface KeyRange {
  readonly start: string
  readonly end: string
}

export class ErasureCompactor {
  private pending: KeyRange | undefined
  /** Ranges a failed compaction left: compacted with the next request, or on the next open. */
  private owed: KeyRange | undefined
  private running: Promise<void> | undefined
  /** Why the last compaction failed, while its range is still owed. */
  private failure: unknown

  constructor(
    private readonly storage: LogStorage,
    /** Removes the marker unless `outstanding()` says another request came in meanwhile. */
    private readonly clearMarker: (outstanding: () => boolean) => Promise<void>,
  ) {}

  /** Asks for `range` to be compacted soon (with whatever a failure left owed); never waits. */
  request(range: KeyRange): void {
    this.pending = union(union(this.pending, this.owed), range)
    this.owed = undefined
    this.running ??= this.run()
  }

  /** Resolves once every range asked for so far is compacted; rejects if one is still owed. */
  async settled(): Promise<void> {
    while (this.running) await this.running
    if (this.owed !== undefined) throw this.failure
  }

  private async run(): Promise<void> {
    // Erasures in the same turn of the event loop share this compaction.
    await new Promise<void>((resolve) => setImmediate(resolve))
    let range: KeyRange | undefined
    try {
      while (this.pending !== undefined) {
        range = this.pending
        this.pending = undefined
        await this.storage.compact(range.start, range.end)
        range = undefined
      }
      await this.clearMarker(() => this.pending !== undefined || this.owed !== undefined)
      this.failure = undefined
    } catch (error) {
      // Not retried at once (a failing store keeps failing): the next request takes it along,
      // and the marker, still stored, has the next open compact the space.
      this.failure = error
      this.owed = union(union(this.owed, range), this.pending)
      this.pending = undefined
    } finally {
      this.running = undefined
      // A request that came in while the marker was being cleared starts the next round.
      if (this.pending !== undefined) this.running = this.run()
    }
  }
}

function union(a: KeyRange | undefined, b: KeyRange | undefined): KeyRange | undefined {
  if (a === undefined) return b
  if (b === undefined) return a
  return { start: a.start < b.start ? a.start : b.start, end: a.end > b.end ? a.end : b.end }
}

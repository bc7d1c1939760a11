/**
 * Reads for a known sequence of ids started a window ahead of their use. Each range read of a
 * LevelDB store is a round trip to its threads (~0.2-0.4 ms, mostly waiting); a loop that awaits
 * one read per id pays them one after another, while reads started ahead overlap.
 *
 * Invariant: the storage read is not written meanwhile (a projection batch writes only when it
 * is stored), so a read started early returns what a read made at use would. A read started and
 * never taken cannot end in an unhandled rejection.
 */
export class ReadAhead<T> {
  private readonly started = new Map<string, Promise<T>>()
  private readonly position = new Map<string, number>()
  private startedUpTo = 0

  constructor(private readonly ids: readonly string[], private readonly read: (id: string) => Promise<T>, private readonly window: number) {
    ids.forEach((id, index) => this.position.set(id, index))
    this.startThrough(window)
  }

  /** The read of `id`, started now if it was not; undefined if `id` is not in the sequence. */
  take(id: string): Promise<T> | undefined {
    const index = this.position.get(id)
    if (index === undefined) return undefined
    this.startThrough(index + 1 + this.window)
    const pending = this.started.get(id) ?? this.start(id)
    this.started.delete(id)
    this.position.delete(id)
    return pending
  }

  private startThrough(end: number): void {
    for (; this.startedUpTo < Math.min(end, this.ids.length); this.startedUpTo++) {
      const id = this.ids[this.startedUpTo] as string
      if (this.position.has(id) && !this.started.has(id)) this.start(id)
    }
  }

  private start(id: string): Promise<T> {
    const pending = this.read(id)
    pending.catch(() => undefined)
    this.started.set(id, pending)
    return pending
  }
}

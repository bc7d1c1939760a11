/**
 * The physical time source, as a small interface so tests can drive time by hand.
 */

export interface Clock {
  /** Milliseconds since the Unix epoch. */
  nowMs(): number
}

export class SystemClock implements Clock {
  nowMs(): number {
    return Date.now()
  }
}

/** A clock that moves only when told to; for tests and deterministic demos. */
export class ManualClock implements Clock {
  constructor(private currentMs = 0) {}

  nowMs(): number {
    return this.currentMs
  }

  set(ms: number): void {
    this.currentMs = ms
  }

  advance(ms: number): void {
    this.currentMs += ms
  }
}

/**
 * Hybrid logical clocks (Kulkarni et al., 2014). An event's clock is strictly greater than the
 * clock of every event in its causal past (its `prev` and `deps`), while staying close to
 * physical time, so (clock, author) orders events for last-writer-wins in a way that never
 * contradicts causality.
 */

export interface Hlc {
  /** Milliseconds since the Unix epoch: the largest physical time seen. */
  readonly wall: number
  /** Breaks ties among events with the same `wall`. */
  readonly logical: number
}

export const ZERO_HLC: Hlc = { wall: 0, logical: 0 }

export function compareHlc(a: Hlc, b: Hlc): number {
  return a.wall !== b.wall ? a.wall - b.wall : a.logical - b.logical
}

/**
 * The clock for a new event: the smallest HLC above every clock in `after` that keeps `wall`
 * at or above the physical time `nowMs`.
 */
export function nextHlc(nowMs: number, after: Iterable<Hlc>): Hlc {
  let wall = nowMs
  for (const clock of after) if (clock.wall > wall) wall = clock.wall
  let logical = -1
  for (const clock of after) if (clock.wall === wall && clock.logical > logical) logical = clock.logical
  return { wall, logical: logical + 1 }
}

/**
 * A stamp orders writes for last-writer-wins: (hybrid logical clock, author). Each author's
 * clocks strictly increase along its chain, so no two events share a stamp, and because an
 * event's clock exceeds everything in its causal past, a later write by causality always wins.
 */

export interface Stamp {
  readonly wall: number
  readonly logical: number
  readonly author: string
  readonly seq: number
}

export function compareStamps(a: Stamp, b: Stamp): number {
  if (a.wall !== b.wall) return a.wall - b.wall
  if (a.logical !== b.logical) return a.logical - b.logical
  return a.author < b.author ? -1 : a.author > b.author ? 1 : a.seq - b.seq
}

/** True when the event behind `stamp` is in the causal past described by `vector`. */
export function stampSeenBy(stamp: Stamp, vector: Readonly<Record<string, number>>): boolean {
  return (vector[stamp.author] ?? 0) >= stamp.seq
}

/**
 * Version vectors: for each author, the highest `seq` of theirs that is included. Because each
 * author's events form a linear hash chain, a vector names a causally closed set of events
 * exactly, which is what catch-up sync and causal-past checks need.
 */
import { assertInteger, assertObject } from '../assert.js'
import { assertAuthorKey, type AuthorKey } from './ids.js'

export type VersionVector = Readonly<Record<string, number>>

export function vectorSeq(vector: VersionVector, author: AuthorKey | string): number {
  return vector[author] ?? 0
}

/** True when the vector includes the event `seq` of `author`. */
export function vectorIncludes(vector: VersionVector, author: AuthorKey | string, seq: number): boolean {
  return (vector[author] ?? 0) >= seq
}

/** The pointwise maximum. */
export function joinVectors(...vectors: VersionVector[]): Record<string, number> {
  const out: Record<string, number> = {}
  for (const vector of vectors) {
    for (const author in vector) {
      const seq = vector[author] as number
      if (seq > (out[author] ?? 0)) out[author] = seq
    }
  }
  return out
}

/** True when `a` includes everything `b` does. */
export function vectorDominates(a: VersionVector, b: VersionVector): boolean {
  for (const author in b) if ((a[author] ?? 0) < (b[author] as number)) return false
  return true
}

/** Same content, keys sorted: a stable form for storage and display. */
export function sortVector(vector: VersionVector): Record<string, number> {
  const out: Record<string, number> = {}
  for (const author of Object.keys(vector).sort()) {
    const seq = vector[author] as number
    if (seq > 0) out[author] = seq
  }
  return out
}

/**
 * Validates a vector from outside (an API caller or a peer).
 * @throws InputError WRONG_TYPE, BAD_HEX, WRONG_LENGTH, OUT_OF_RANGE naming the entry
 */
export function assertVersionVector(value: unknown, label: string): VersionVector {
  const raw = assertObject(value, label)
  const out: Record<string, number> = {}
  for (const [author, seq] of Object.entries(raw)) {
    const key = assertAuthorKey(author, `${label} key`)
    out[key] = assertInteger(seq, `${label}.${key}`, 0)
  }
  return out
}

/**
 * Supersession of facts and edges: an update closes the old row (tValidTo) and points it at its
 * successor (supersededBy) rather than overwriting it. A supersede that saw an earlier one
 * replaces it; supersedes that did not see each other are concurrent, all kept, and reported as
 * a conflict, with one winner chosen by a rule that depends only on the supersedes themselves
 * (so every replica picks the same one, whatever order they arrive in):
 *
 *  1. recency: keep candidates whose validFrom is within RECENCY_WINDOW_MS of the latest;
 *  2. confidence: keep those whose confidence is at least the highest divided by 1.5
 *     (after LCS-004 §6: a memory wins on confidence when it exceeds the other by half again);
 *  3. source: keep those of the strongest claim class (asserted > observed > merged > imported
 *     > inferred, after Portable Memory RFC-0003);
 *  4. the latest stamp (clock, then author).
 * Filtering the whole candidate set step by step keeps the rule independent of order.
 */
import { compareStamps, stampSeenBy, type Stamp } from './stamp.js'

export const RECENCY_WINDOW_MS = 60_000
export const CONFIDENCE_MARGIN = 1.5
export const CLAIM_CLASSES = ['asserted', 'observed', 'merged', 'imported', 'inferred'] as const
export type ClaimClass = (typeof CLAIM_CLASSES)[number]

export interface Supersession {
  /** The successor record. */
  readonly by: string
  /** tValidTo of the old record: when the successor took over. */
  readonly at: string
  /** The successor's tValidFrom, its confidence and claim class when the supersede was made. */
  readonly validFrom: string
  readonly confidence: number
  readonly source: ClaimClass
  readonly stamp: Stamp
  /** Causal vector of the supersede event: which earlier supersedes it saw. */
  readonly vector: Readonly<Record<string, number>>
}

export interface SupersessionOutcome {
  readonly winner: Supersession
  /** Concurrent supersedes (more than one means a conflict), winner first. */
  readonly candidates: readonly Supersession[]
  readonly reason: 'only' | 'recency' | 'confidence' | 'source' | 'clock'
}

/** The supersedes no other supersede has seen. */
export function concurrentSupersessions(all: readonly Supersession[]): Supersession[] {
  return all.filter((candidate) => !all.some((other) => other !== candidate && stampSeenBy(candidate.stamp, other.vector)))
}

export function resolveSupersessions(all: readonly Supersession[]): SupersessionOutcome | undefined {
  const maximal = concurrentSupersessions(all)
  if (maximal.length === 0) return undefined
  const byStamp = (a: Supersession, b: Supersession): number => compareStamps(b.stamp, a.stamp)
  if (maximal.length === 1) return { winner: maximal[0] as Supersession, candidates: maximal, reason: 'only' }
  let pool = maximal
  let reason: SupersessionOutcome['reason'] = 'clock'
  // A rule that would keep no candidate decides nothing: a signer's body can carry a validFrom
  // that is no timestamp (NaN wins no comparison) or confidences all below 0 (none within the
  // margin of the best), and an empty pool had no winner, which threw in the projection.
  const latest = Math.max(...pool.map((s) => Date.parse(s.validFrom)))
  const recent = pool.filter((s) => latest - Date.parse(s.validFrom) <= RECENCY_WINDOW_MS)
  if (recent.length === 1) reason = 'recency'
  if (recent.length > 0) pool = recent
  if (pool.length > 1) {
    const best = Math.max(...pool.map((s) => s.confidence))
    const confident = pool.filter((s) => s.confidence * CONFIDENCE_MARGIN >= best)
    if (confident.length === 1) reason = 'confidence'
    if (confident.length > 0) pool = confident
  }
  if (pool.length > 1) {
    const rank = Math.min(...pool.map((s) => CLAIM_CLASSES.indexOf(s.source)))
    const strongest = pool.filter((s) => CLAIM_CLASSES.indexOf(s.source) === rank)
    if (strongest.length === 1) reason = 'source'
    pool = strongest
  }
  const winner = [...pool].sort(byStamp)[0] as Supersession
  return { winner, candidates: [winner, ...maximal.filter((s) => s !== winner).sort(byStamp)], reason }
}

/**
 * Top-k BM25 search over the persisted index (layout in text-index-layout.ts) that reads only as
 * much of each posting list as the top k needs: a threshold algorithm over impact-ordered runs,
 * in two phases.
 *
 * Runs. The postings of one term with one tf bucket are contiguous in key order and sorted by
 * length bucket, so their weights can only fall as a run is read; its bound, the weight at the
 * run's largest tf and the current posting's smallest possible length, is exact or close. Each
 * run is read through one live storage iterator (a LevelDB iterator fetches up to 1,000 entries
 * per call), so a query costs a few storage round trips, not one per group.
 *
 * Phase 1 (scan): read postings from the run with the highest bound, adding each weight to its
 * document's partial score (a lower bound of its full score). The k best partial scores (of
 * documents the filter accepts) give a threshold; scanning stops when the sum of the terms'
 * bounds (the best any unread posting can add) falls below it, since a document never met
 * cannot reach the k-th score.
 *
 * Per-document bounds. A posting carries its document's length, and every run is read in
 * length order, so for a document met once the best it can still get from another term is
 * known tightly: only that term's runs that have not yet passed its length bucket can hold its
 * posting, and with tf at most the run's largest (`unreadBound`). A document met for the first
 * time whose weight plus these cannot reach the threshold is dropped for good.
 *
 * Phase 2 (refine): in decreasing order of their upper bound (weights read plus per-document
 * bounds of the terms not read for them), documents get their exact score: from the weights
 * already read when no term is left open, otherwise from their `d:<id>` entry (read in
 * batches), until the next bound is below the k-th exact score. Scanning on instead of reading
 * those entries was tried and measured slower: a batched entry read costs about 4 scanned
 * postings, and most open terms are common ones whose long runs would have to be read far.
 *
 * Invariant: the result equals ranking every document by full BM25 (bm25.ts, terms summed in
 * query order), score descending then id ascending, keeping those the filter accepts, cut to
 * `limit`. Bounds are compared with a relative margin of 1e-9, so float rounding can only make
 * the search read more, never stop early. The filter is asked only about documents that would
 * enter the current top k (by partial or by exact score), each at most once.
 *
 * Cost (bench/text-index.bench.ts, 100k records): a one-term query or one with a rare term reads
 * a few hundred postings; 3–4 common terms (each in 20–50% of records) can read 25k postings,
 * about 100 ms, since many records hold all of them at similar weights.
 */
import type { LogStorage } from '../log/storage.js'
import { BestScores, type ScoredId } from './best-scores.js'
import { inverseDocumentFrequency, termWeight } from './bm25.js'
import {
  bucketCeiling, bucketFloor, bucketOf, decodeDocument, decodeHistogram, decodePosting, decodeStats,
  documentLength, type TextIndexKeys,
} from './text-index-layout.js'

export type SearchHit = ScoredId

export type SearchFilter = (id: string) => boolean | Promise<boolean>

/** Bounds are inflated by this factor before comparing with scores (float rounding). */
const BOUND_MARGIN = 1 + 1e-9
const FIRST_REFINE_BATCH = 32
/** The 4 hex digits of the group and the ':' between a term's prefix and the document id. */
const GROUP_KEY_LENGTH = 5

interface QueryTerm {
  readonly term: string
  readonly idf: number
  /** Position in query order: where its weight goes in an accumulator. */
  readonly position: number
  readonly runs: Run[]
  /** The best weight any unread posting of the term can have: its best run's bound. */
  bound: number
}

interface Run {
  readonly queryTerm: QueryTerm
  readonly range: { readonly gte: string; readonly lt: string }
  readonly idOffset: number
  readonly tfCeiling: number
  /** The length bucket of the last posting read: every unread one is in this bucket or a later one. */
  lengthBucket: number
  bound: number
  iterator: AsyncIterator<[string, Uint8Array]> | undefined
  isDone: boolean
}

interface Accumulator {
  readonly length: number
  readonly lengthBucket: number
  /** Weight per query term, NaN until its posting is read. */
  readonly weights: number[]
  partial: number
}

/**
 * The most a document of known length can still get from a term whose posting for it is unread:
 * only runs that have not yet passed its length bucket can hold that posting, with tf at most
 * the run's largest and at most the length itself.
 */
function unreadBound(queryTerm: QueryTerm, length: number, lengthBucket: number, averageLength: number): number {
  let bound = 0
  for (const run of queryTerm.runs) {
    if (run.isDone || run.lengthBucket > lengthBucket) continue
    bound = Math.max(bound, queryTerm.idf * termWeight(Math.min(run.tfCeiling, length), length, averageLength))
  }
  return bound
}

/** A document's best possible score, and whether it is already exact (no term left unread for it). */
function documentBound(accumulator: Accumulator, queryTerms: readonly QueryTerm[], averageLength: number): { bound: number; isComplete: boolean } {
  let bound = 0
  let isComplete = true
  for (const queryTerm of queryTerms) {
    const weight = accumulator.weights[queryTerm.position] as number
    if (!Number.isNaN(weight)) {
      bound += weight
    } else {
      const unread = unreadBound(queryTerm, accumulator.length, accumulator.lengthBucket, averageLength)
      if (unread > 0) {
        bound += unread
        isComplete = false
      }
    }
  }
  return { bound, isComplete }
}

/**
 * The `limit` best documents for the distinct, non-empty `terms` (query order), see the header.
 * @throws StorageError CORRUPT_INDEX, UNKNOWN_INDEX_VERSION when stored entries are unreadable
 */
export async function searchIndex(
  storage: LogStorage,
  keys: TextIndexKeys,
  terms: readonly string[],
  limit: number,
  filter: SearchFilter | undefined,
): Promise<SearchHit[]> {
  const stored = await storage.getMany([keys.stats, ...terms.map((term) => keys.histogram(term))])
  const stats = decodeStats(stored[0], keys.stats)
  if (stats.documentCount === 0) return []
  const averageLength = stats.totalLength / stats.documentCount

  const queryTerms: QueryTerm[] = []
  const runs: Run[] = []
  terms.forEach((term, i) => {
    const histogram = decodeHistogram(stored[i + 1], keys.histogram(term))
    if (histogram.size === 0) return
    let frequency = 0
    const shortestByTf = new Map<number, number>() // tf bucket -> its smallest length bucket
    for (const [group, count] of histogram) {
      frequency += count
      const shortest = shortestByTf.get(group >> 8)
      if (shortest === undefined || (group & 0xff) < shortest) shortestByTf.set(group >> 8, group & 0xff)
    }
    const idf = inverseDocumentFrequency(stats.documentCount, frequency)
    const queryTerm: QueryTerm = { term, idf, position: queryTerms.length, runs: [], bound: 0 }
    for (const [tfBucket, lengthBucket] of shortestByTf) {
      const tfCeiling = bucketCeiling(tfBucket)
      const bound = idf * termWeight(tfCeiling, bucketFloor(lengthBucket), averageLength)
      const run: Run = {
        queryTerm, range: keys.runRange(term, tfBucket), idOffset: keys.termPrefix(term).length + GROUP_KEY_LENGTH,
        tfCeiling, lengthBucket, bound, iterator: undefined, isDone: false,
      }
      queryTerm.runs.push(run)
      runs.push(run)
      queryTerm.bound = Math.max(queryTerm.bound, bound)
    }
    queryTerms.push(queryTerm)
  })
  if (queryTerms.length === 0) return []

  const verdicts = new Map<string, boolean>()
  const isAccepted = async (id: string): Promise<boolean> => {
    if (filter === undefined) return true
    let verdict = verdicts.get(id)
    if (verdict === undefined) {
      const answer = filter(id)
      verdict = (typeof answer === 'boolean' ? answer : await answer) === true
      verdicts.set(id, verdict)
    }
    return verdict
  }

  const accumulators = new Map<string, Accumulator>()
  /** Documents that can never be hits: dropped by their bound or rejected by the filter. */
  const excluded = new Set<string>()
  const partials = new BestScores(limit)
  try {
    // Phase 1: scan the runs, best bound first, until nothing unread can reach the k-th partial.
    let remaining = queryTerms.reduce((sum, queryTerm) => sum + queryTerm.bound, 0)
    const isStopping = () => partials.isFull && remaining * BOUND_MARGIN < partials.threshold
    for (;;) {
      if (isStopping()) break
      let run: Run | undefined
      let runnerUp = 0
      for (const candidate of runs) {
        if (candidate.isDone) continue
        if (run === undefined || candidate.bound > run.bound) {
          if (run !== undefined) runnerUp = Math.max(runnerUp, run.bound)
          run = candidate
        } else {
          runnerUp = Math.max(runnerUp, candidate.bound)
        }
      }
      if (run === undefined) break
      const { queryTerm } = run
      const othersBound = remaining - queryTerm.bound
      const iterator = (run.iterator ??= storage.entries(run.range)[Symbol.asyncIterator]())
      const othersUnreadByLength = new Map<number, number>()
      // Read from this run while it stays the best one (no other run's bound changes meanwhile).
      do {
        const step = await iterator.next()
        if (step.done === true) {
          run.isDone = true
          run.bound = 0
          run.iterator = undefined
        } else {
          const [key, value] = step.value
          const posting = decodePosting(value, key)
          const lengthBucket = bucketOf(posting.documentLength)
          run.lengthBucket = lengthBucket
          run.bound = queryTerm.idf * termWeight(run.tfCeiling, bucketFloor(lengthBucket), averageLength)
          const id = key.slice(run.idOffset)
          if (!excluded.has(id)) {
            const weight = queryTerm.idf * termWeight(posting.termFrequency, posting.documentLength, averageLength)
            let accumulator = accumulators.get(id)
            if (accumulator === undefined && partials.isFull) {
              // First sight: its best case is this weight plus what the other terms can still add.
              // (The other terms' runs do not move during this burst, so this is cached by length.)
              let othersUnread = othersUnreadByLength.get(posting.documentLength)
              if (othersUnread === undefined) {
                othersUnread = 0
                for (const other of queryTerms) if (other !== queryTerm) othersUnread += unreadBound(other, posting.documentLength, lengthBucket, averageLength)
                othersUnreadByLength.set(posting.documentLength, othersUnread)
              }
              if ((weight + othersUnread) * BOUND_MARGIN < partials.threshold) excluded.add(id)
            }
            if (!excluded.has(id)) {
              if (accumulator === undefined) {
                accumulator = { length: posting.documentLength, lengthBucket, weights: new Array<number>(queryTerms.length).fill(Number.NaN), partial: 0 }
                accumulators.set(id, accumulator)
              }
              accumulator.weights[queryTerm.position] = weight
              accumulator.partial += weight
              if (partials.admits(accumulator.partial, id)) {
                if (await isAccepted(id)) {
                  partials.offer(id, accumulator.partial)
                } else {
                  excluded.add(id)
                  accumulators.delete(id)
                }
              }
            }
          }
        }
        queryTerm.bound = 0
        for (const sibling of queryTerm.runs) if (!sibling.isDone) queryTerm.bound = Math.max(queryTerm.bound, sibling.bound)
        remaining = othersBound + queryTerm.bound
      } while (!run.isDone && run.bound >= runnerUp && !isStopping())
    }

    // Phase 2: exact scores, best upper bound first, until no bound can reach the k-th score.
    const candidates: { id: string; accumulator: Accumulator; bound: number; isComplete: boolean }[] = []
    for (const [id, accumulator] of accumulators) {
      const { bound, isComplete } = documentBound(accumulator, queryTerms, averageLength)
      if (partials.isFull && bound * BOUND_MARGIN < partials.threshold) continue
      candidates.push({ id, accumulator, bound, isComplete })
    }
    candidates.sort((a, b) => b.bound - a.bound || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))

    const top = new BestScores(limit)
    const isBeyond = (bound: number) => top.isFull && bound * BOUND_MARGIN < top.threshold
    let batch = Math.max(FIRST_REFINE_BATCH, limit)
    refine: for (let start = 0; start < candidates.length; start += batch, batch *= 2) {
      const slice = candidates.slice(start, start + batch)
      const fetched = slice.filter((candidate) => !candidate.isComplete && !isBeyond(candidate.bound))
      const documents = fetched.length === 0 ? [] : await storage.getMany(fetched.map((candidate) => keys.document(candidate.id)))
      const documentOf = new Map(fetched.map((candidate, i) => [candidate.id, documents[i]]))
      for (const candidate of slice) {
        if (isBeyond(candidate.bound)) break refine
        let score = 0
        if (candidate.isComplete) {
          for (const weight of candidate.accumulator.weights) if (!Number.isNaN(weight)) score += weight
        } else {
          const bytes = documentOf.get(candidate.id)
          if (bytes === undefined) continue // removed while we searched: no longer a hit
          const counts = decodeDocument(bytes, keys.document(candidate.id))
          const length = documentLength(counts)
          for (const queryTerm of queryTerms) {
            const frequency = counts.get(queryTerm.term)
            if (frequency !== undefined) score += queryTerm.idf * termWeight(frequency, length, averageLength)
          }
        }
        if (top.admits(score, candidate.id) && (await isAccepted(candidate.id))) top.offer(candidate.id, score)
      }
    }
    return top.hits
  } finally {
    for (const run of runs) await run.iterator?.return?.()
  }
}

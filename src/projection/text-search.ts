/**
 * Top-k BM25 search over the persisted index (layout in text-index-layout.ts), without reading
 * whole posting lists: Fagin's Threshold Algorithm over impact-ordered lists.
 *
 * Each query term's postings are visited group by group in decreasing order of the group's
 * bound (its best possible weight). Every step reads a chunk from the term whose next bound is
 * highest. A document seen for the first time is scored exactly: from the posting itself for a
 * one-term query, otherwise from its `d:<id>` entry (one batched read per chunk), which holds all
 * its term frequencies. Before that read it is skipped outright when even its best case (its
 * weight for this term plus the current bounds of the other terms) cannot enter the top k; it
 * cannot have been met in another term's list already, or it would have been seen. The search
 * stops when the sum of the terms' current bounds cannot reach the k-th score.
 *
 * Invariant: the result equals ranking every document by full BM25 (bm25.ts, terms summed in
 * query order), sorted by score descending then id ascending, restricted to those the filter
 * accepts, cut to `limit`. Bounds are compared with a relative margin of 1e-9, so float rounding
 * can only make the search read more, never stop early. The filter is asked only about
 * documents whose exact score would enter the current top k, in visiting order.
 *
 * Cost: a one-term query reads the best groups until their bound falls below the k-th score;
 * for a common term (tens of thousands of postings) that is typically a few hundred postings.
 * A query whose rare terms come first reads their short lists, after which the common terms'
 * bounds (low IDF) fall under the threshold. Worst case (a filter that rejects everything) is
 * every posting of every query term.
 */
import type { LogStorage } from '../log/storage.js'
import { inverseDocumentFrequency, termWeight } from './bm25.js'
import {
  decodeDocument, decodeHistogram, decodePosting, decodeStats, documentLength, groupBestCase,
  type TextIndexKeys,
} from './text-index-layout.js'

export interface SearchHit {
  readonly id: string
  readonly score: number
}

export type SearchFilter = (id: string) => boolean | Promise<boolean>

/** Bounds are inflated by this factor before comparing with exact scores (float rounding). */
const BOUND_MARGIN = 1 + 1e-9
const FIRST_CHUNK = 32
const LARGEST_CHUNK = 1024

interface TermCursor {
  readonly term: string
  readonly idf: number
  /** Groups still to read, best bound first, and their bounds (idf included). */
  readonly groups: readonly { readonly group: number; readonly bound: number }[]
  groupIndex: number
  /** The last key read in the current group, to resume after it. */
  lastKey: string | undefined
  chunk: number
}

function currentBound(cursor: TermCursor): number {
  return cursor.groups[cursor.groupIndex]?.bound ?? 0
}

/** The k best hits so far, best first (score descending, then id ascending). */
class TopHits {
  readonly hits: SearchHit[] = []

  constructor(private readonly limit: number) {}

  get isFull(): boolean {
    return this.hits.length >= this.limit
  }

  /** The k-th score, or -Infinity while there are fewer than k hits. */
  get threshold(): number {
    return this.isFull ? (this.hits[this.hits.length - 1] as SearchHit).score : Number.NEGATIVE_INFINITY
  }

  admits(score: number, id: string): boolean {
    if (!this.isFull) return true
    const worst = this.hits[this.hits.length - 1] as SearchHit
    return score > worst.score || (score === worst.score && id < worst.id)
  }

  insert(hit: SearchHit): void {
    let low = 0
    let high = this.hits.length
    while (low < high) {
      const middle = (low + high) >> 1
      const other = this.hits[middle] as SearchHit
      if (other.score > hit.score || (other.score === hit.score && other.id < hit.id)) low = middle + 1
      else high = middle
    }
    this.hits.splice(low, 0, hit)
    if (this.hits.length > this.limit) this.hits.pop()
  }
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

  const cursors: TermCursor[] = []
  terms.forEach((term, i) => {
    const histogram = decodeHistogram(stored[i + 1], keys.histogram(term))
    if (histogram.size === 0) return
    let frequency = 0
    for (const count of histogram.values()) frequency += count
    const idf = inverseDocumentFrequency(stats.documentCount, frequency)
    const groups = [...histogram.keys()].map((group) => {
      const best = groupBestCase(group)
      return { group, bound: idf * termWeight(best.termFrequency, best.documentLength, averageLength) }
    })
    groups.sort((a, b) => b.bound - a.bound || a.group - b.group)
    cursors.push({ term, idf, groups, groupIndex: 0, lastKey: undefined, chunk: FIRST_CHUNK })
  })
  if (cursors.length === 0) return []

  /** A document's exact score from its term counts, summed in query order. */
  const scoreOf = (counts: Map<string, number>): number => {
    const length = documentLength(counts)
    let score = 0
    for (const cursor of cursors) {
      const frequency = counts.get(cursor.term)
      if (frequency !== undefined) score += cursor.idf * termWeight(frequency, length, averageLength)
    }
    return score
  }

  const top = new TopHits(limit)
  const seen = new Set<string>()
  for (;;) {
    let next: TermCursor | undefined
    let remaining = 0
    for (const cursor of cursors) {
      const bound = currentBound(cursor)
      remaining += bound
      if (cursor.groupIndex < cursor.groups.length && (next === undefined || bound > currentBound(next))) next = cursor
    }
    if (next === undefined || remaining * BOUND_MARGIN < top.threshold) break
    const othersBound = remaining - currentBound(next)

    // Read the next chunk of the cursor's current group.
    const { group } = next.groups[next.groupIndex] as { group: number }
    const groupPrefix = keys.groupPrefix(next.term, group)
    const range = { lt: `${groupPrefix.slice(0, -1)};`, limit: next.chunk }
    const entries: [string, Uint8Array][] = []
    for await (const entry of storage.entries(next.lastKey === undefined ? { ...range, gte: groupPrefix } : { ...range, gt: next.lastKey })) entries.push(entry)
    if (entries.length < next.chunk) {
      next.groupIndex++
      next.lastKey = undefined
    } else {
      next.lastKey = (entries[entries.length - 1] as [string, Uint8Array])[0]
    }
    next.chunk = Math.min(next.chunk * 2, LARGEST_CHUNK)

    // Candidates: unseen documents whose best case can still enter the top k.
    const candidates: { id: string; score: number }[] = []
    for (const [key, value] of entries) {
      const id = key.slice(groupPrefix.length)
      if (seen.has(id)) continue
      seen.add(id)
      const posting = decodePosting(value, key)
      const weight = next.idf * termWeight(posting.termFrequency, posting.documentLength, averageLength)
      if ((weight + othersBound) * BOUND_MARGIN < top.threshold) continue
      candidates.push({ id, score: weight })
    }
    if (candidates.length === 0) continue
    if (cursors.length > 1) {
      const documents = await storage.getMany(candidates.map((candidate) => keys.document(candidate.id)))
      candidates.forEach((candidate, i) => {
        const bytes = documents[i]
        // A missing entry means the document went away under us: it is no longer a hit.
        candidate.score = bytes === undefined ? Number.NaN : scoreOf(decodeDocument(bytes, keys.document(candidate.id)))
      })
    }
    for (const candidate of candidates) {
      if (Number.isNaN(candidate.score) || !top.admits(candidate.score, candidate.id)) continue
      if (filter !== undefined) {
        const verdict = filter(candidate.id)
        if (!(typeof verdict === 'boolean' ? verdict : await verdict)) continue
      }
      top.insert({ id: candidate.id, score: candidate.score })
    }
  }
  return top.hits
}

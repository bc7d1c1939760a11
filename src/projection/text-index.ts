/**
 * A persisted, incrementally updated full-text index over the records of one space, ranked by
 * Okapi BM25 (bm25.ts), stored in the log's key-value storage under one key prefix. The layout
 * (postings grouped by tf and length so queries can stop early, per-document term lists, term
 * histograms, global stats) is described in text-index-layout.ts, the query algorithm in
 * text-search.ts, the tokenizer in tokenize.ts.
 *
 * Invariants:
 * - The index keeps none of its state in memory: every plan and every search reads storage, so
 *   opening is free, two TextIndex objects over one storage agree, and results are exact with
 *   respect to what is stored (no rebuild on open, no cache to go stale).
 * - Planning never writes. `planUpdate(s)` return the writes; the caller stores them in its own
 *   atomic batch with its other projection writes. Callers serialize: plan, store, plan again.
 * - What is removed comes from the stored `d:<id>` entry, not from the caller's `previous` text,
 *   so a caller whose copy of the old text is stale cannot corrupt postings or statistics.
 *   (`previous` is part of the projection layer's contract and is accepted but not needed.)
 * - A document whose text has no terms (empty, only stopwords) is not indexed: it counts in
 *   neither N nor the average length, as in Lucene.
 *
 * Cost, at 100k memory-like records on disk (bench/text-index.bench.ts, 2-vCPU VM, Node 20):
 * search p50 5–6 ms, p99 50–150 ms depending on machine load (queries of 2–4 terms that are
 * each in a fifth or more of the records are the slow ones); bulk indexing ≈ 4k records/s in
 * batches of 1,000 (half planning, half LevelDB writing ~30 postings per record); one
 * interactive update ≈ 1.2 ms; reopen is LevelDB's own open, ≈ 0.1 s, as nothing is loaded.
 */
import { assertArray, assertInteger, assertKnownKeys, assertNonEmptyString, assertObject, assertOptions, assertString, describeType } from '../assert.js'
import { InputError, StorageError } from '../errors.js'
import type { LogStorage, StorageWrite } from '../log/storage.js'
import {
  TextIndexKeys, decodeDocument, decodeHistogram, decodeStats, documentLength, encodeDocument,
  encodeHistogram, encodePosting, encodeStats, groupOf, type TermCounts,
} from './text-index-layout.js'
import { searchIndex, type SearchFilter, type SearchHit } from './text-search.js'
import { tokenize } from './tokenize.js'

export { MAX_SCANNED_CHARS, MAX_TOKEN_LENGTH, MAX_TOKENS_PER_DOCUMENT, tokenize } from './tokenize.js'
export type { SearchFilter, SearchHit } from './text-search.js'

export const DEFAULT_SEARCH_LIMIT = 10
export const MAX_SEARCH_LIMIT = 1000
/** A query uses its first 32 distinct terms; the rest of a pasted paragraph is ignored. */
export const MAX_QUERY_TERMS = 32

const CHANGE_FIELDS = ['id', 'previous', 'next'] as const

export interface TextChange {
  readonly id: string
  readonly previous?: string | undefined
  readonly next?: string | undefined
}

export interface SearchOptions {
  /** How many hits at most: 1…MAX_SEARCH_LIMIT, default DEFAULT_SEARCH_LIMIT. */
  readonly limit?: number
  /** Only ids it accepts are returned; asked only about documents that would make the top k. */
  readonly filter?: SearchFilter
}

/** What one plan gathers: the writes, the histogram deltas per term and group, the new stats. */
interface Plan {
  readonly writes: StorageWrite[]
  readonly deltas: Map<string, Map<number, number>>
  readonly postingValues: Map<number, Uint8Array>
  documentCount: number
  totalLength: number
}

function addDelta(plan: Plan, term: string, group: number, delta: number): void {
  let perGroup = plan.deltas.get(term)
  if (perGroup === undefined) plan.deltas.set(term, (perGroup = new Map()))
  perGroup.set(group, (perGroup.get(group) ?? 0) + delta)
}

function countTerms(text: string): TermCounts | undefined {
  const counts: TermCounts = new Map()
  for (const term of tokenize(text)) counts.set(term, (counts.get(term) ?? 0) + 1)
  return counts.size === 0 ? undefined : counts
}

function optionalString(value: unknown, label: string): string | undefined {
  return value === undefined ? undefined : assertString(value, label)
}

export class TextIndex {
  private readonly keys: TextIndexKeys

  /**
   * @param prefix every key of the index starts with it, e.g. `<space>:x:`; the index owns every
   *   key under it, so no other data (or other index) may live under a longer prefix of it
   * @throws InputError WRONG_TYPE for a prefix that is not a string
   */
  constructor(private readonly storage: LogStorage, prefix: string) {
    this.keys = new TextIndexKeys(assertString(prefix, 'prefix'))
  }

  /**
   * The writes that (re)index one record: `next` is its new text, undefined to remove it.
   * @throws InputError WRONG_TYPE, EMPTY for a bad id or text
   * @throws StorageError CORRUPT_INDEX, UNKNOWN_INDEX_VERSION, STORAGE_FAILED
   */
  planUpdate(id: string, previous: string | undefined, next: string | undefined): Promise<StorageWrite[]> {
    return this.planUpdates([{ id, previous, next }])
  }

  /**
   * The writes for many records at once: reads every touched entry in two batched reads and
   * writes each term histogram and the stats once, however many records touch them. Several
   * changes to one id apply in order (the last one wins).
   * @throws InputError WRONG_TYPE, EMPTY, UNKNOWN_FIELD for a bad change
   * @throws StorageError CORRUPT_INDEX, UNKNOWN_INDEX_VERSION, STORAGE_FAILED
   */
  async planUpdates(changes: readonly TextChange[]): Promise<StorageWrite[]> {
    const finalText = new Map<string, string | undefined>()
    assertArray(changes, 'changes').forEach((value, i) => {
      const change = assertObject(value, `changes[${i}]`)
      assertKnownKeys(change, CHANGE_FIELDS, `changes[${i}]`)
      const id = assertNonEmptyString(change.id, `changes[${i}].id`)
      optionalString(change.previous, `changes[${i}].previous`)
      finalText.set(id, optionalString(change.next, `changes[${i}].next`))
    })
    if (finalText.size === 0) return []

    const ids = [...finalText.keys()]
    const stored = await this.storage.getMany([this.keys.stats, ...ids.map((id) => this.keys.document(id))])
    const stats = decodeStats(stored[0], this.keys.stats)
    const plan: Plan = { writes: [], deltas: new Map(), postingValues: new Map(), ...stats }
    ids.forEach((id, i) => {
      const bytes = stored[i + 1]
      const text = finalText.get(id)
      const before = bytes === undefined ? undefined : decodeDocument(bytes, this.keys.document(id))
      this.planDocument(plan, id, before, text === undefined ? undefined : countTerms(text))
    })
    const { writes, deltas } = plan

    // Term histograms: one read and one write per term whose counts changed.
    const terms = [...deltas.keys()].filter((term) => [...(deltas.get(term) as Map<number, number>).values()].some((delta) => delta !== 0))
    const histograms = await this.storage.getMany(terms.map((term) => this.keys.histogram(term)))
    terms.forEach((term, i) => {
      const key = this.keys.histogram(term)
      const histogram = decodeHistogram(histograms[i], key)
      for (const [group, delta] of deltas.get(term) as Map<number, number>) {
        const count = (histogram.get(group) ?? 0) + delta
        if (count < 0) throw new StorageError('CORRUPT_INDEX', 'the text index counts fewer postings than it holds', { key })
        if (count === 0) histogram.delete(group)
        else histogram.set(group, count)
      }
      writes.push(histogram.size === 0 ? { type: 'del', key } : { type: 'put', key, value: encodeHistogram(histogram) })
    })
    const { documentCount, totalLength } = plan
    if (documentCount === 0) {
      // An emptied index holds no keys at all, as one that was never written.
      if (stats.documentCount !== 0) writes.push({ type: 'del', key: this.keys.stats })
    } else if (documentCount !== stats.documentCount || totalLength !== stats.totalLength) {
      writes.push({ type: 'put', key: this.keys.stats, value: encodeStats({ documentCount, totalLength }) })
    }
    return writes
  }

  /**
   * Adds the writes that turn one document's stored entry (`before`) into `after`. A posting
   * whose key stays the same is overwritten, not deleted and put; one whose (tf, length) stays
   * the same is not touched at all.
   */
  private planDocument(plan: Plan, id: string, before: TermCounts | undefined, after: TermCounts | undefined): void {
    const lengthBefore = before === undefined ? 0 : documentLength(before)
    const lengthAfter = after === undefined ? 0 : documentLength(after)
    let isChanged = lengthBefore !== lengthAfter || (before === undefined) !== (after === undefined)
    for (const [term, frequency] of before ?? []) {
      const frequencyAfter = after?.get(term)
      if (frequencyAfter === frequency && lengthAfter === lengthBefore) continue
      isChanged = true
      const group = groupOf(frequency, lengthBefore)
      if (frequencyAfter !== undefined && groupOf(frequencyAfter, lengthAfter) === group) continue // overwritten below
      plan.writes.push({ type: 'del', key: this.keys.posting(term, group, id) })
      addDelta(plan, term, group, -1)
    }
    for (const [term, frequency] of after ?? []) {
      const frequencyBefore = before?.get(term)
      if (frequencyBefore === frequency && lengthAfter === lengthBefore) continue
      isChanged = true
      const group = groupOf(frequency, lengthAfter)
      // Equal (tf, length) pairs share one encoded value: a batch copies what it stores.
      const valueKey = frequency * 65_536 + lengthAfter
      let value = plan.postingValues.get(valueKey)
      if (value === undefined) plan.postingValues.set(valueKey, (value = encodePosting(frequency, lengthAfter)))
      plan.writes.push({ type: 'put', key: this.keys.posting(term, group, id), value })
      if (frequencyBefore === undefined || groupOf(frequencyBefore, lengthBefore) !== group) addDelta(plan, term, group, +1)
    }
    if (!isChanged) return
    const documentKey = this.keys.document(id)
    if (before !== undefined) {
      plan.documentCount--
      plan.totalLength -= lengthBefore
    }
    if (after !== undefined) {
      plan.documentCount++
      plan.totalLength += lengthAfter
      plan.writes.push({ type: 'put', key: documentKey, value: encodeDocument(after) })
    } else {
      plan.writes.push({ type: 'del', key: documentKey })
    }
  }

  /**
   * The best `limit` records for `query` by BM25, best first, ties by id ascending. An empty or
   * stopword-only query finds nothing.
   * @throws InputError WRONG_TYPE for a query that is not a string or a filter that is not a
   *   function, OUT_OF_RANGE for a limit outside 1…MAX_SEARCH_LIMIT, UNKNOWN_FIELD for an unknown option
   * @throws StorageError CORRUPT_INDEX, UNKNOWN_INDEX_VERSION, STORAGE_FAILED
   */
  async search(query: string, options?: SearchOptions): Promise<SearchHit[]> {
    assertString(query, 'query')
    const checked = assertOptions(options, ['limit', 'filter'], 'options')
    const limit = checked.limit === undefined ? DEFAULT_SEARCH_LIMIT : assertInteger(checked.limit, 'options.limit', 1, MAX_SEARCH_LIMIT)
    const filter = checked.filter
    if (filter !== undefined && typeof filter !== 'function') {
      throw new InputError('WRONG_TYPE', `expected a function, got ${describeType(filter)}`, { field: 'options.filter' })
    }
    const terms = [...new Set(tokenize(query))].slice(0, MAX_QUERY_TERMS)
    if (terms.length === 0) return []
    return searchIndex(this.storage, this.keys, terms, limit, filter as SearchFilter | undefined)
  }
}

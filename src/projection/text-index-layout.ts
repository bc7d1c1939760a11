/**
 * The storage layout of the full-text index (text-index.ts) and the encodings of its values.
 * P is the index's key prefix (for example `<space>:x:`). Terms never contain ':' (tokenize.ts,
 * step 5), so `p:<term>:` ranges hold exactly one term's postings.
 *
 *   P s                   stats: format version, document count N, total length L (varints)
 *   P d:<id>              document: its distinct terms with their frequencies, UTF-8 of
 *                         "term\0tf\0term\0tf…" (terms sorted, tf in base 36); its length is Σ tf
 *   P f:<term>            term histogram: one (group, count) pair of varints per posting group
 *                         that holds postings of the term; document frequency n(t) = Σ count
 *   P p:<term>:<g>:<id>   posting: (tf, document length) varints, so scoring needs no other read
 *
 * Posting groups. A posting's BM25 weight depends only on its (tf, length) and on the global
 * average length, and it rises with tf and falls with length whatever that average is (bm25.ts).
 * So the postings of a term are grouped by a bucket of tf and a bucket of length, <g> = 4 hex
 * digits (tf bucket * 256 + length bucket): at query time, the best weight any posting of a group
 * can have is the weight at (the bucket's largest tf, the bucket's smallest length), computed with
 * the current average. Visiting groups in decreasing order of that bound lets a query stop once
 * the bounds of what is left cannot reach the k-th score (text-search.ts), and the bounds stay
 * exact under updates because nothing stored depends on the average. Buckets are exact for values
 * up to 64 (typical memories: every group is one (tf, length) pair, its bound its exact weight),
 * then grow by 1/8 per bucket up to MAX_TOKENS_PER_DOCUMENT, so a term has at most a few thousand
 * groups and typically tens.
 *
 * Invariant: the stored bytes are a function of the set of indexed documents only (no order, no
 * clock), so a rebuild from the same records yields the same bytes.
 */
import { StorageError } from '../errors.js'
import { MAX_TOKENS_PER_DOCUMENT } from './tokenize.js'

/** Bumped when any encoding above changes; an index with another version is refused, not misread. */
export const TEXT_INDEX_FORMAT_VERSION = 1

const EXACT_BUCKETS = 64
const BUCKET_GROWTH = 1.125

/** The smallest value of each bucket: 1…64, then ×1.125 (rounded up) past MAX_TOKENS_PER_DOCUMENT. */
const BUCKET_FLOORS: readonly number[] = (() => {
  const floors: number[] = []
  for (let value = 1; value <= EXACT_BUCKETS; value++) floors.push(value)
  let value = EXACT_BUCKETS
  while (value <= MAX_TOKENS_PER_DOCUMENT) {
    value = Math.ceil(value * BUCKET_GROWTH)
    floors.push(value)
  }
  return floors
})()

function bucketOf(value: number): number {
  if (value <= EXACT_BUCKETS) return Math.max(0, value - 1)
  let low = EXACT_BUCKETS - 1
  let high = BUCKET_FLOORS.length - 1
  while (low < high) {
    const middle = (low + high + 1) >> 1
    if ((BUCKET_FLOORS[middle] as number) <= value) low = middle
    else high = middle - 1
  }
  return low
}

/** The posting group of a (tf, length) pair. */
export function groupOf(termFrequency: number, documentLength: number): number {
  return bucketOf(termFrequency) * 256 + bucketOf(documentLength)
}

/** The largest tf and the smallest length of a group's postings: where its best weight lies. */
export function groupBestCase(group: number): { termFrequency: number; documentLength: number } {
  const tfBucket = group >> 8
  const next = BUCKET_FLOORS[tfBucket + 1]
  return {
    termFrequency: next === undefined ? Number.MAX_SAFE_INTEGER : next - 1,
    documentLength: BUCKET_FLOORS[group & 0xff] as number,
  }
}

/** The keys of one index. */
export class TextIndexKeys {
  readonly stats: string

  constructor(readonly prefix: string) {
    this.stats = `${prefix}s`
  }

  document(id: string): string {
    return `${this.prefix}d:${id}`
  }

  histogram(term: string): string {
    return `${this.prefix}f:${term}`
  }

  posting(term: string, group: number, id: string): string {
    return `${this.groupPrefix(term, group)}${id}`
  }

  /** Every key of a group starts with this; the group's range ends before the same text with ';'. */
  groupPrefix(term: string, group: number): string {
    return `${this.prefix}p:${term}:${group.toString(16).padStart(4, '0')}:`
  }
}

function corrupt(key: string, what: string): never {
  throw new StorageError('CORRUPT_INDEX', `the text index entry is damaged: ${what}`, { key })
}

function writeVarint(out: number[], value: number): void {
  let rest = value
  while (rest >= 0x80) {
    out.push((rest % 0x80) | 0x80)
    rest = Math.floor(rest / 0x80)
  }
  out.push(rest)
}

/** Reads unsigned LEB128 varints up to 2^53 (arithmetic, not bit operations, past 2^31). */
class VarintReader {
  private offset = 0

  constructor(private readonly bytes: Uint8Array, private readonly key: string) {}

  get isDone(): boolean {
    return this.offset >= this.bytes.length
  }

  read(): number {
    let value = 0
    let scale = 1
    for (;;) {
      const byte = this.bytes[this.offset++]
      if (byte === undefined || scale > 2 ** 49) corrupt(this.key, 'truncated or oversized number')
      value += (byte & 0x7f) * scale
      if (byte < 0x80) return value
      scale *= 0x80
    }
  }
}

export interface IndexStats {
  readonly documentCount: number
  readonly totalLength: number
}

export function encodeStats(stats: IndexStats): Uint8Array {
  const out: number[] = []
  writeVarint(out, TEXT_INDEX_FORMAT_VERSION)
  writeVarint(out, stats.documentCount)
  writeVarint(out, stats.totalLength)
  return Uint8Array.from(out)
}

/** @throws StorageError UNKNOWN_INDEX_VERSION for another format, CORRUPT_INDEX for bad bytes */
export function decodeStats(bytes: Uint8Array | undefined, key: string): IndexStats {
  if (bytes === undefined) return { documentCount: 0, totalLength: 0 }
  const reader = new VarintReader(bytes, key)
  const version = reader.read()
  if (version !== TEXT_INDEX_FORMAT_VERSION) {
    throw new StorageError('UNKNOWN_INDEX_VERSION', `text index format ${version} is not supported (this build reads ${TEXT_INDEX_FORMAT_VERSION})`, { key })
  }
  const stats = { documentCount: reader.read(), totalLength: reader.read() }
  if (!reader.isDone) corrupt(key, 'trailing bytes')
  return stats
}

/** Posting counts per group, ascending by group. */
export type Histogram = Map<number, number>

export function encodeHistogram(histogram: Histogram): Uint8Array {
  const out: number[] = []
  for (const group of [...histogram.keys()].sort((a, b) => a - b)) {
    writeVarint(out, group)
    writeVarint(out, histogram.get(group) as number)
  }
  return Uint8Array.from(out)
}

export function decodeHistogram(bytes: Uint8Array | undefined, key: string): Histogram {
  const histogram: Histogram = new Map()
  if (bytes === undefined) return histogram
  const reader = new VarintReader(bytes, key)
  while (!reader.isDone) {
    const group = reader.read()
    const count = reader.read()
    if (count === 0) corrupt(key, 'empty group')
    histogram.set(group, count)
  }
  return histogram
}

export function encodePosting(termFrequency: number, documentLength: number): Uint8Array {
  const out: number[] = []
  writeVarint(out, termFrequency)
  writeVarint(out, documentLength)
  return Uint8Array.from(out)
}

export function decodePosting(bytes: Uint8Array, key: string): { termFrequency: number; documentLength: number } {
  const reader = new VarintReader(bytes, key)
  const posting = { termFrequency: reader.read(), documentLength: reader.read() }
  if (!reader.isDone) corrupt(key, 'trailing bytes')
  return posting
}

/** A document's distinct terms and their frequencies. */
export type TermCounts = Map<string, number>

const utf8Encoder = new TextEncoder()
const utf8Decoder = new TextDecoder('utf-8', { fatal: true })

export function encodeDocument(counts: TermCounts): Uint8Array {
  const parts: string[] = []
  for (const term of [...counts.keys()].sort()) parts.push(term, (counts.get(term) as number).toString(36))
  return utf8Encoder.encode(parts.join('\0'))
}

export function decodeDocument(bytes: Uint8Array, key: string): TermCounts {
  let text: string
  try {
    text = utf8Decoder.decode(bytes)
  } catch {
    corrupt(key, 'not UTF-8')
  }
  const parts = text.split('\0')
  if (parts.length % 2 !== 0) corrupt(key, 'odd number of fields')
  const counts: TermCounts = new Map()
  for (let i = 0; i < parts.length; i += 2) {
    const frequency = Number.parseInt(parts[i + 1] as string, 36)
    if (!(frequency > 0)) corrupt(key, 'bad term frequency')
    counts.set(parts[i] as string, frequency)
  }
  return counts
}

/** A document's length: the sum of its term frequencies. */
export function documentLength(counts: TermCounts): number {
  let length = 0
  for (const frequency of counts.values()) length += frequency
  return length
}

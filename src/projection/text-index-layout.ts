/**
 * The storage layout of the full-text index (text-index.ts) and the encodings of its values.
 * P is the index's key prefix (for example `<space>:x:`). Terms never contain ':' (tokenize.ts,
 * step 5), so `p:<term>:` ranges hold exactly one term's postings.
 *
 *   P s                   stats: format version, document count N, total length L (varints)
 *   P d:<id>              document: its distinct terms with their frequencies, UTF-8 of
 *                         "term\0tf\0term\0tf…" (terms sorted, tf in base 36); its length
 *                         is Σ tf
 *   P f:<term>            term histogram: one (group, count) pair of varints per posting group
 *                         that holds postings of the term; document frequency n(t) = Σ count
 *   P p:<term>:<g>:<id>   posting: (tf, document length) varints, so scoring needs no other read
 *
 * Posting groups. A posting's BM25 weight depends only on its (tf, length) and on the global
 * average length, and it rises with tf and falls with length whatever that average is (bm25.ts).
 * So a posting's key carries its group <g>: 4 hex digits, the tf bucket then the length bucket.
 * The postings of a term with one tf bucket (a "run") are thus contiguous and in ascending
 * length buckets, i.e. in descending order of their best possible weight, which is computed at
 * query time with the current average: nothing stored depends on it, so updates never reorder
 * anything. Buckets are exact up to 63 (typical memories: a group is one (tf, length) pair) and
 * then grow by 1/8 per bucket up to MAX_TOKENS_PER_DOCUMENT, so a term has at most a few
 * thousand groups, typically tens, and a few runs. The histogram gives each run's start and the
 * document frequency in one read. text-search.ts reads runs best-first and stops early.
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

/** The bucket of a tf or a length: exact below 64, geometric above. */
export function bucketOf(value: number): number {
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

/** The smallest value in a bucket. */
export function bucketFloor(bucket: number): number {
  return BUCKET_FLOORS[bucket] as number
}

/** The largest value in a bucket. */
export function bucketCeiling(bucket: number): number {
  const next = BUCKET_FLOORS[bucket + 1]
  return next === undefined ? Number.MAX_SAFE_INTEGER : next - 1
}

/** The posting group of a (tf, length) pair: tf bucket in the high byte, length bucket in the low. */
export function groupOf(termFrequency: number, documentLength: number): number {
  return bucketOf(termFrequency) * 256 + bucketOf(documentLength)
}

const groupHexCache: string[] = []

/** A group as the 4 hex digits of its keys (cached: a plan builds one key per posting). */
function groupHex(group: number): string {
  return (groupHexCache[group] ??= group.toString(16).padStart(4, '0'))
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

  /** Every key of a group starts with this. */
  groupPrefix(term: string, group: number): string {
    return `${this.prefix}p:${term}:${groupHex(group)}:`
  }

  /** Every posting key of a term starts with this; then come 4 hex digits of group, ':' and the id. */
  termPrefix(term: string): string {
    return `${this.prefix}p:${term}:`
  }

  /**
   * The keys of the postings of one term in one tf bucket (a "run"): in key order their length
   * buckets ascend, so their bounds descend. 'g' sorts after every hex digit.
   */
  runRange(term: string, tfBucket: number): { gte: string; lt: string } {
    const start = `${this.termPrefix(term)}${tfBucket.toString(16).padStart(2, '0')}`
    return { gte: start, lt: `${start}g` }
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
  if (termFrequency < 0x80 && documentLength < 0x80) return Uint8Array.of(termFrequency, documentLength)
  const out: number[] = []
  writeVarint(out, termFrequency)
  writeVarint(out, documentLength)
  return Uint8Array.from(out)
}

export function decodePosting(bytes: Uint8Array, key: string): { termFrequency: number; documentLength: number } {
  // The common case, both below 128, without the reader (this runs for every posting a query scans).
  if (bytes.length === 2 && (bytes[0] as number) < 0x80 && (bytes[1] as number) < 0x80) {
    return { termFrequency: bytes[0] as number, documentLength: bytes[1] as number }
  }
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
  // Sorted: the entry must not depend on word order, which an update that only reorders words
  // leaves stored as it was (a rebuild must give the same bytes).
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

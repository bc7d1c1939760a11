/**
 * Reads what is stored under many key prefixes of one family (`<base><part>:`: a record's
 * history, versions or referrers) with few iterators instead of one each. A range read of a
 * LevelDB store costs ~30 µs of the main thread (iterator, thread-pool trips, close) while a key
 * read inside a scan costs ~2 µs: a seal purging 4,000 records spent ~0.4 s opening 12,000
 * iterators. The prefixes are taken in storage order, in runs; one iterator runs on from one to
 * the next over whatever lies between them. A run where more than MAX_GAP keys in a row belong
 * to none is sparse: the rest of it is read one range per prefix, all at once, as before.
 *
 * Invariant: each prefix gets exactly the entries a range read of it alone would give, in key
 * order (the prefixes end with ':' and their parts hold none, so no prefix is another's prefix
 * and their ranges are disjoint).
 */
import type { LogStorage } from '../log/storage.js'
import { KEY_RANGE_END } from './projection-keys.js'

/** Keys of no wanted prefix read in a row before a run falls back to one range read per prefix. */
const MAX_GAP = 16
/**
 * Fewer prefixes than this are read one range each, at once: a scan across a few records far
 * apart in key order only finds its run sparse and falls back, an iterator later (a local
 * forget purges two or three records a batch).
 */
const MIN_SCANNED = 8
/**
 * Range reads of single prefixes (sparse runs, small sets) open at once at most, over all runs:
 * thousands of open iterators cost more than they overlap (a scattered catch-up on 100k
 * records went from ~0.2 to ~0.4 s with one per record at once).
 */
const MAX_SINGLE_READS = 64
/** Prefixes one iterator covers at least, and how many iterators run at once at most. */
const MIN_CHUNK = 16
const MAX_CHUNKS = 32

/**
 * Storage order: keys compare as their UTF-8 bytes. UTF-16 code units order the same, except that
 * a surrogate (half of a code point past U+FFFF) sorts after every other unit in UTF-8. Strings
 * with a lone surrogate (stored as U+FFFD) are compared as their bytes.
 */
export function compareBytes(a: string, b: string): number {
  const length = Math.min(a.length, b.length)
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x === y) continue
    const xs = x >= 0xd800 && x <= 0xdfff
    const ys = y >= 0xd800 && y <= 0xdfff
    if (!xs && !ys) return x - y
    if (LONE_SURROGATE.test(a) || LONE_SURROGATE.test(b)) return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'))
    return xs && ys ? x - y : xs ? 1 : -1
  }
  return a.length - b.length
}

const LONE_SURROGATE = /\p{Surrogate}/u

type Found<T> = Map<string, T[]>

export interface ScanOptions {
  /**
   * The prefixes are a small share of the family (fewer than a third of the records, ids being
   * random): no scan is tried; each prefix is one range read, MAX_SINGLE_READS at a time, each
   * window whole before the next. Measured on 100k records of 3 keys (compacted store, quiet
   * machine, medians of 8): a scan costs 1.45x this at 4% of the records and 1.5x at 20% (it
   * reads through the other records between), and is 1.3x faster at 50% and 3x at 100%.
   */
  readonly sparse?: boolean
}

/** One range read per prefix, MAX_SINGLE_READS at a time (ScanOptions.sparse). */
async function readEachInWindows<T>(prefixes: readonly string[], baseLength: number, read: (range: { gte: string; lt: string }) => AsyncIterable<T>): Promise<Found<T>> {
  const found: Found<T> = new Map()
  for (let i = 0; i < prefixes.length; i += MAX_SINGLE_READS) {
    await Promise.all(prefixes.slice(i, i + MAX_SINGLE_READS).map(async (prefix) => {
      for await (const item of read({ gte: prefix, lt: `${prefix}${KEY_RANGE_END}` })) add(found, prefix.slice(baseLength, -1), item)
    }))
  }
  return found
}

/**
 * The keys (`values` false) or entries stored under `${base}${part}:` for each part (an escaped
 * id), by part; parts with nothing stored are absent.
 */
export async function scanPrefixes(storage: LogStorage, base: string, parts: Iterable<string>, values: false, options?: ScanOptions): Promise<Found<string>>
export async function scanPrefixes(storage: LogStorage, base: string, parts: Iterable<string>, values: true, options?: ScanOptions): Promise<Found<[string, Uint8Array]>>
export async function scanPrefixes(storage: LogStorage, base: string, parts: Iterable<string>, values: boolean, options: ScanOptions = {}): Promise<Found<string> | Found<[string, Uint8Array]>> {
  const prefixes = [...new Set(parts)].map((part) => `${base}${part}:`).sort(compareBytes)
  if (options.sparse) {
    return values ? readEachInWindows(prefixes, base.length, (range) => storage.entries(range)) : readEachInWindows(prefixes, base.length, (range) => storage.keys(range))
  }
  const single = slots(MAX_SINGLE_READS)
  const chunk = Math.max(MIN_CHUNK, Math.ceil(prefixes.length / MAX_CHUNKS))
  const runs: string[][] = []
  for (let i = 0; i < prefixes.length; i += chunk) runs.push(prefixes.slice(i, i + chunk))
  if (values) {
    const found: Found<[string, Uint8Array]> = new Map()
    await Promise.all(runs.map((run) => scanRun(run, base.length, (range) => storage.entries(range), (entry) => entry[0], (part, entry) => add(found, part, entry), single)))
    return found
  }
  const found: Found<string> = new Map()
  await Promise.all(runs.map((run) => scanRun(run, base.length, (range) => storage.keys(range), (key) => key, (part, key) => add(found, part, key), single)))
  return found
}

function add<T>(found: Found<T>, part: string, item: T): void {
  const list = found.get(part)
  if (list) list.push(item)
  else found.set(part, [item])
}

/** One run of sorted prefixes, as few iterators as the gaps between them allow. */
async function scanRun<T>(
  prefixes: readonly string[],
  baseLength: number,
  read: (range: { gte: string; lt: string }) => AsyncIterable<T>,
  keyOf: (item: T) => string,
  onItem: (part: string, item: T) => void,
  single: Slots,
): Promise<void> {
  const readEach = (rest: readonly string[]): Promise<unknown> => Promise.all(rest.map((prefix) => single(async () => {
    for await (const item of read({ gte: prefix, lt: `${prefix}${KEY_RANGE_END}` })) onItem(prefix.slice(baseLength, -1), item)
  })))
  if (prefixes.length < MIN_SCANNED) {
    await readEach(prefixes)
    return
  }
  const end = `${prefixes[prefixes.length - 1] as string}${KEY_RANGE_END}`
  let i = 0
  let gap = 0
  for await (const item of read({ gte: prefixes[0] as string, lt: end })) {
    const key = keyOf(item)
    // Prefixes sorting wholly before the key hold nothing more (a key above a prefix it does
    // not start with is above every key that does).
    while (i < prefixes.length && !key.startsWith(prefixes[i] as string) && compareBytes(prefixes[i] as string, key) < 0) i++
    const prefix = prefixes[i]
    if (prefix !== undefined && key.startsWith(prefix)) {
      gap = 0
      onItem(prefix.slice(baseLength, -1), item)
    } else if (++gap > MAX_GAP) break
  }
  if (gap <= MAX_GAP) return
  // A sparse run (the key is below prefixes[i]): the rest one range read each, all at once, as
  // sequential restarts would wait on LevelDB's threads one after another.
  await readEach(prefixes.slice(i))
}

/** Runs tasks with at most `max` of them started and not yet settled. */
type Slots = (task: () => Promise<void>) => Promise<void>

function slots(max: number): Slots {
  let active = 0
  const waiting: (() => void)[] = []
  return async (task) => {
    // A slot is handed from a finishing task to a waiting one, so `active` never passes `max`.
    if (active < max) active++
    else await new Promise<void>((resolve) => waiting.push(resolve))
    try {
      await task()
    } finally {
      const next = waiting.shift()
      if (next) next()
      else active--
    }
  }
}

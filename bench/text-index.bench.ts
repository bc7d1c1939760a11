/**
 * The full-text index benchmark (issue 3, "Performance": search p50 <= 10 ms at 100k records,
 * reopen <= 1 s). On a LevelDB store in a fresh temp directory it:
 *
 *   1. indexes 100k synthetic memory-like records through `planUpdates` in batches of 1,000,
 *      each batch stored in one atomic write (timed: tokenizing, planning and writing);
 *   2. closes the store and times reopening it and the first search after reopening;
 *   3. on the reopened store, runs 200 queries of 1–4 terms mixing common, mid-frequency and rare
 *      words, after 20 warm-up queries, and reports p50/p99/max latency, overall and by kind;
 *   4. runs the same queries with an async filter that accepts about 10% of the records;
 *   5. times 500 interactive single-record updates (plan + write).
 *
 * Records: 20–60 words, about a quarter English stopwords, the rest drawn from a vocabulary of
 * 4,000 pronounceable pseudo-words with Zipf frequencies (exponent 1), with the odd number,
 * capital and punctuation mark. Everything is seeded, so runs differ only by the machine.
 * Results go to stdout and `bench/results/text-index.json`.
 */
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { LevelLogStorage } from '../src/log/level-storage.js'
import { TextIndex } from '../src/projection/text-index.js'

const RECORDS = 100_000
const BATCH = 1_000
const VOCABULARY_SIZE = 4_000
const QUERIES = 200
const WARM_UP_QUERIES = 20
const INTERACTIVE_UPDATES = 500
const PREFIX = 'bench-space:x:'
const TARGETS = { searchP50Ms: 10, reopenMs: 1000 }

const resultsFile = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'text-index.json')

/** mulberry32: a small seeded generator of floats in [0, 1). */
function seeded(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const STOPWORDS = ['the', 'a', 'of', 'to', 'and', 'in', 'is', 'for', 'with', 'on', 'that', 'it', 'was', 'at', 'user', 'they']
const ONSETS = ['b', 'c', 'd', 'f', 'g', 'h', 'j', 'k', 'l', 'm', 'n', 'p', 'r', 's', 't', 'v', 'w', 'z', 'br', 'ch', 'st', 'tr', 'pl', 'gr']
const NUCLEI = ['a', 'e', 'i', 'o', 'u', 'ai', 'ou', 'ea']
const CODAS = ['', '', 'n', 'r', 'l', 's', 't', 'm', 'nd', 'rk']

function vocabulary(random: () => number): string[] {
  const words = new Set<string>()
  while (words.size < VOCABULARY_SIZE) {
    const syllables = 1 + Math.floor(random() * 3)
    let word = ''
    for (let i = 0; i < syllables; i++) {
      word += ONSETS[Math.floor(random() * ONSETS.length)]! + NUCLEI[Math.floor(random() * NUCLEI.length)]! + CODAS[Math.floor(random() * CODAS.length)]!
    }
    if (word.length >= 3) words.add(word)
  }
  return [...words]
}

/** Draws ranks 0…n-1 with probability proportional to 1/(rank+1). */
function zipf(n: number, random: () => number): () => number {
  const cumulative: number[] = []
  let total = 0
  for (let rank = 0; rank < n; rank++) cumulative.push((total += 1 / (rank + 1)))
  return () => {
    const target = random() * total
    let low = 0
    let high = n - 1
    while (low < high) {
      const middle = (low + high) >> 1
      if ((cumulative[middle] as number) < target) low = middle + 1
      else high = middle
    }
    return low
  }
}

function recordText(words: string[], rank: () => number, random: () => number): string {
  const length = 20 + Math.floor(random() * 41)
  const parts: string[] = []
  for (let i = 0; i < length; i++) {
    const roll = random()
    let word = roll < 0.25 ? STOPWORDS[Math.floor(random() * STOPWORDS.length)]! : roll < 0.27 ? String(Math.floor(random() * 3000)) : words[rank()]!
    if (i === 0 || random() < 0.03) word = word.charAt(0).toUpperCase() + word.slice(1)
    if (random() < 0.06) word += random() < 0.5 ? ',' : '.'
    parts.push(word)
  }
  return parts.join(' ')
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number
}

function summary(samples: number[]): { p50: number; p99: number; max: number; mean: number } {
  const sorted = [...samples].sort((a, b) => a - b)
  const round = (x: number) => Math.round(x * 1000) / 1000
  return { p50: round(percentile(sorted, 50)), p99: round(percentile(sorted, 99)), max: round(sorted.at(-1) as number), mean: round(samples.reduce((a, b) => a + b, 0) / samples.length) }
}

async function directoryBytes(directory: string): Promise<number> {
  let total = 0
  for (const name of await readdir(directory)) total += (await stat(path.join(directory, name))).size
  return total
}

interface Query {
  readonly text: string
  readonly kind: string
}

function queries(words: string[], random: () => number, count: number): Query[] {
  const bands = [
    { name: 'common', from: 0, to: 50 },
    { name: 'mid', from: 50, to: 1000 },
    { name: 'rare', from: 1000, to: VOCABULARY_SIZE },
  ]
  return Array.from({ length: count }, () => {
    const size = 1 + Math.floor(random() * 4)
    const picked = Array.from({ length: size }, () => bands[Math.floor(random() * bands.length)]!)
    const terms = picked.map((band) => words[band.from + Math.floor(random() * (band.to - band.from))]!)
    const kinds = new Set(picked.map((band) => band.name))
    return { text: terms.join(' '), kind: `${size} term${size > 1 ? 's' : ''}, ${kinds.size === 1 ? `all ${[...kinds][0]}` : 'mixed'}` }
  })
}

export async function run(): Promise<void> {
  const random = seeded(42)
  const words = vocabulary(random)
  const rank = zipf(words.length, random)
  const directory = await mkdtemp(path.join(os.tmpdir(), 'cairn-bench-text-'))
  const loadBefore = os.loadavg()[0] as number
  try {
    // 1. Build.
    let storage = await LevelLogStorage.openDisk(directory)
    let index = new TextIndex(storage, PREFIX)
    let planMs = 0
    let writeMs = 0
    let writeCount = 0
    const buildStart = performance.now()
    for (let start = 0; start < RECORDS; start += BATCH) {
      const changes = Array.from({ length: BATCH }, (_, i) => ({ id: `rec-${(start + i).toString(36).padStart(6, '0')}`, next: recordText(words, rank, random) }))
      const planStart = performance.now()
      const writes = await index.planUpdates(changes)
      const writeStart = performance.now()
      await storage.write(writes)
      planMs += writeStart - planStart
      writeMs += performance.now() - writeStart
      writeCount += writes.length
    }
    const buildMs = performance.now() - buildStart

    // 2. Reopen: nothing is loaded at open, so this is LevelDB's own open.
    await storage.close()
    const sizeBytes = await directoryBytes(directory)
    const reopenStart = performance.now()
    storage = await LevelLogStorage.openDisk(directory)
    index = new TextIndex(storage, PREFIX)
    const reopenMs = performance.now() - reopenStart
    const measured = queries(words, seeded(99), QUERIES)
    const firstStart = performance.now()
    await index.search((measured[0] as Query).text)
    const firstSearchMs = performance.now() - firstStart

    // 3. Search.
    for (const query of queries(words, seeded(7), WARM_UP_QUERIES)) await index.search(query.text)
    const latencies: number[] = []
    const byKind = new Map<string, number[]>()
    let hitCount = 0
    for (const query of measured) {
      const start = performance.now()
      const hits = await index.search(query.text)
      const elapsed = performance.now() - start
      latencies.push(elapsed)
      hitCount += hits.length
      const kind = query.kind.startsWith('1 term') ? query.kind : query.kind.endsWith('all common') ? '2-4 terms, all common' : '2-4 terms, other'
      byKind.set(kind, [...(byKind.get(kind) ?? []), elapsed])
    }

    // 4. Filtered search (async filter, ~10% of records accepted).
    const filterAccepts = (id: string) => Number.parseInt(id.slice(4), 36) % 10 === 0
    const filtered: number[] = []
    for (const query of measured) {
      const start = performance.now()
      await index.search(query.text, { filter: async (id) => filterAccepts(id) })
      filtered.push(performance.now() - start)
    }

    // 5. Interactive updates.
    const updates: number[] = []
    for (let i = 0; i < INTERACTIVE_UPDATES; i++) {
      const id = `rec-${Math.floor(random() * RECORDS).toString(36).padStart(6, '0')}`
      const start = performance.now()
      await storage.write(await index.planUpdate(id, undefined, recordText(words, rank, random)))
      updates.push(performance.now() - start)
    }
    await storage.close()

    const search = summary(latencies)
    const results = {
      suite: 'text-index',
      date: new Date().toISOString(),
      machine: { node: process.version, cpu: os.cpus()[0]?.model ?? 'unknown', cores: os.cpus().length, loadAverage: [loadBefore, os.loadavg()[0]] },
      workload: { records: RECORDS, batch: BATCH, vocabulary: VOCABULARY_SIZE, queries: QUERIES, meanHitsPerQuery: hitCount / QUERIES },
      build: {
        seconds: Math.round(buildMs) / 1000,
        recordsPerSecond: Math.round(RECORDS / (buildMs / 1000)),
        planSeconds: Math.round(planMs) / 1000,
        writeSeconds: Math.round(writeMs) / 1000,
        writes: writeCount,
        storeBytes: sizeBytes,
      },
      searchMs: search,
      searchByKindMs: Object.fromEntries([...byKind].sort().map(([kind, samples]) => [kind, { count: samples.length, ...summary(samples) }])),
      filteredSearchMs: summary(filtered),
      interactiveUpdateMs: summary(updates),
      reopenMs: Math.round(reopenMs * 10) / 10,
      firstSearchAfterReopenMs: Math.round(firstSearchMs * 10) / 10,
      targets: { ...TARGETS, searchP50Met: search.p50 <= TARGETS.searchP50Ms, reopenMet: reopenMs <= TARGETS.reopenMs },
    }
    console.log(`node ${process.version}, ${results.machine.cpu}, ${results.machine.cores} cores, load ${results.machine.loadAverage.map((x) => x?.toFixed(1)).join(' -> ')}`)
    console.log(`build: ${RECORDS.toLocaleString('en-US')} records in ${results.build.seconds} s (${results.build.recordsPerSecond.toLocaleString('en-US')}/s; plan ${results.build.planSeconds} s, write ${results.build.writeSeconds} s), ${writeCount.toLocaleString('en-US')} writes, store ${(sizeBytes / 1e6).toFixed(1)} MB`)
    console.log(`search (${QUERIES} queries): p50 ${search.p50} ms, p99 ${search.p99} ms, max ${search.max} ms, mean ${search.mean} ms  [target p50 <= ${TARGETS.searchP50Ms} ms: ${results.targets.searchP50Met ? 'met' : 'MISSED'}]`)
    for (const [kind, figures] of Object.entries(results.searchByKindMs)) console.log(`  ${kind.padEnd(24)} n=${String(figures.count).padStart(3)}  p50 ${figures.p50} ms  p99 ${figures.p99} ms  max ${figures.max} ms`)
    console.log(`filtered search (async filter, 10% accepted): p50 ${results.filteredSearchMs.p50} ms, p99 ${results.filteredSearchMs.p99} ms`)
    console.log(`interactive update (plan + write): p50 ${results.interactiveUpdateMs.p50} ms, p99 ${results.interactiveUpdateMs.p99} ms`)
    console.log(`reopen: ${results.reopenMs} ms, first search after reopen ${results.firstSearchAfterReopenMs} ms  [target <= ${TARGETS.reopenMs} ms: ${results.targets.reopenMet ? 'met' : 'MISSED'}]`)
    await mkdir(path.dirname(resultsFile), { recursive: true })
    await writeFile(resultsFile, `${JSON.stringify(results, null, 2)}\n`)
    console.log(`wrote ${path.relative(process.cwd(), resultsFile)}`)
  } finally {
    await rm(directory, { recursive: true, force: true })
  }
}

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
import { queries, recordText, seeded, vocabulary, zipf, VOCABULARY_SIZE, type Query } from './corpus.js'

const RECORDS = 100_000
const BATCH = 1_000
const QUERIES = 200
const WARM_UP_QUERIES = 20
const INTERACTIVE_UPDATES = 500
const PREFIX = 'bench-space:x:'
const TARGETS = { searchP50Ms: 10, reopenMs: 1000 }

const resultsFile = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'text-index.json')

/** mulberry32: a small seeded generator of floats in [0, 1). */
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

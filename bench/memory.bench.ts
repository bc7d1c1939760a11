/**
 * Memory engine benchmark (issue 3), in one run on one machine:
 *  1. 100k records on disk: bulk write rate (rememberMany), apply rate of the same events
 *     ingested by a fresh replica (verify + log + projection), get / filtered query / search
 *     latency p50 and p99, and reopen time;
 *  2. the merge workload of bench/peers (10k records, 50k field writes on each of two replicas,
 *     batches of 1000, then exchange both ways) on Cairn, Automerge and Yjs, with ratios.
 * Writes bench/results/memory.json.
 */
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { Memory } from '../src/index.js'
import { DEFAULT_MERGE_WORKLOAD, WARMUP_MERGE_WORKLOAD, generateInitialRecords, generateWrites, toBatches, type MergeWorkload } from './peers/merge-workload.js'
import { runAutomergeMerge } from './peers/automerge-merge.js'
import { runYjsMerge } from './peers/yjs-merge.js'
import { queries, recordText, seeded, vocabulary, zipf } from './corpus.js'

const RECORDS = Number(process.env.CAIRN_BENCH_RECORDS ?? 100_000)
const TAGS = ['work', 'family', 'health', 'travel', 'finance', 'hobby', 'home', 'study', 'friends']
const random = seeded(0xc41a)
const words = vocabulary(random)
const rank = zipf(words.length, random)

/** A memory-like episode: details of 20-60 Zipf-distributed words, a tag, a context, a confidence. */
function episode(i: number) {
  const details = recordText(words, rank, random)
  return {
    kind: 'episode' as const,
    details,
    tags: [TAGS[i % TAGS.length] as string],
    contextID: `ctx_${i % 50}`,
    confidence: (i % 10) / 10,
  }
}

function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number
}

async function latency(run: (i: number) => Promise<unknown>, count = 300): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < 20; i++) await run(i)
  const samples: number[] = []
  for (let i = 0; i < count; i++) {
    const start = performance.now()
    await run(i)
    samples.push(performance.now() - start)
  }
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) }
}

async function recordsSuite(root: string) {
  const source = await Memory.open({ path: path.join(root, 'source') })
  let start = performance.now()
  for (let i = 0; i < RECORDS; i += 1000) await source.rememberMany(Array.from({ length: Math.min(1000, RECORDS - i) }, (_, j) => episode(i + j)))
  const writeMs = performance.now() - start
  const events = await source.events({})
  const replicaPath = path.join(root, 'replica')
  const replica = await Memory.open({ path: replicaPath, space: source.space })
  start = performance.now()
  await replica.ingest(events)
  const applyMs = performance.now() - start
  const converged = (await replica.digest()) === (await source.digest())
  await source.close()
  const ids = (await replica.query({ kind: 'episode', limit: 1000 })).records.map((record) => record.id)
  const get = await latency((i) => replica.get(ids[(i * 37) % ids.length] as string))
  const query = await latency((i) => replica.query({ context: `ctx_${i % 50}`, tags: [TAGS[i % TAGS.length] as string], minConfidence: 0.3, limit: 20 }))
  const searches = queries(words, random, 300)
  const search = await latency((i) => replica.search((searches[i % searches.length] as { text: string }).text, { limit: 10 }))
  await replica.close()
  start = performance.now()
  const reopened = await Memory.open({ path: replicaPath })
  const firstGet = await reopened.get(ids[0] as string)
  const reopenMs = performance.now() - start
  await reopened.close()
  return {
    records: RECORDS, events: events.length, converged, reopenedReadsRecord: firstGet?.id === ids[0],
    writeRecordsPerSecond: RECORDS / (writeMs / 1000), applyEventsPerSecond: events.length / (applyMs / 1000),
    getMs: get, queryMs: query, searchMs: search, reopenMs,
  }
}

async function cairnMerge(root: string, workload: MergeWorkload) {
  const a = await Memory.open({ path: path.join(root, 'merge-a') })
  const b = await Memory.open({ path: path.join(root, 'merge-b'), space: a.space })
  await a.grant(b.author)
  const initial = Object.entries(generateInitialRecords(workload)).map(([id, fields]) => ({ kind: 'episode' as const, id, ...(fields as object) }))
  for (let i = 0; i < initial.length; i += 1000) await a.rememberMany(initial.slice(i, i + 1000) as never)
  await b.ingest(await a.events({}))
  const shared = a.versionVector()
  const writeMs: Record<string, number> = {}
  for (const [memory, name] of [[a, 'a'], [b, 'b']] as const) {
    const start = performance.now()
    for (const batch of toBatches(generateWrites(workload, name), workload.batchSize)) {
      await memory.updateMany(batch.map((write) => ({ id: write.recordId, changes: { set: { [write.field]: write.value } } })))
    }
    writeMs[name] = performance.now() - start
  }
  const start = performance.now()
  const fromB = await b.events(shared)
  const fromA = await a.events(shared)
  await a.ingest(fromB)
  await b.ingest(fromA)
  const mergeMs = performance.now() - start
  const bytesExchanged = [...fromA, ...fromB].reduce((sum, e) => sum + e.header.length + (e.body?.length ?? 0) + (e.signature?.length ?? 0), 0)
  const converged = (await a.digest()) === (await b.digest())
  await a.close()
  await b.close()
  return { system: 'cairn (disk, verified)', writeMs, mergeMs, bytesExchanged, converged }
}

export async function run(): Promise<void> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'cairn-bench-memory-'))
  try {
    console.log(`node ${process.version}, ${os.cpus()[0]?.model}, ${os.cpus().length} cores, load ${os.loadavg()[0]?.toFixed(1)}`)
    const records = await recordsSuite(root)
    console.log(`${records.records} records: write ${Math.round(records.writeRecordsPerSecond)}/s, ingest+apply ${Math.round(records.applyEventsPerSecond)} events/s, converged ${records.converged}`)
    console.log(`get p50 ${records.getMs.p50.toFixed(2)} ms p99 ${records.getMs.p99.toFixed(2)} | query p50 ${records.queryMs.p50.toFixed(2)} p99 ${records.queryMs.p99.toFixed(2)} | search p50 ${records.searchMs.p50.toFixed(2)} p99 ${records.searchMs.p99.toFixed(2)} | reopen ${records.reopenMs.toFixed(0)} ms`)
    await runAutomergeMerge(WARMUP_MERGE_WORKLOAD)
    await runYjsMerge(WARMUP_MERGE_WORKLOAD)
    const workload = DEFAULT_MERGE_WORKLOAD
    const cairn = await cairnMerge(root, workload)
    const automerge = await runAutomergeMerge(workload)
    const yjs = await runYjsMerge(workload)
    const rows = [
      { system: cairn.system, mergeMs: cairn.mergeMs, writeMs: cairn.writeMs, bytesExchanged: cairn.bytesExchanged, converged: cairn.converged },
      { system: 'automerge (in memory)', mergeMs: automerge.mergeMs, writeMs: automerge.writeMs, bytesExchanged: automerge.bytesExchanged, converged: automerge.converged },
      { system: 'yjs (in memory)', mergeMs: yjs.mergeMs, writeMs: yjs.writeMs, bytesExchanged: yjs.bytesExchanged, converged: yjs.converged },
    ]
    console.log(`merge of two ${workload.writesPerReplica}-write replicas (${workload.records} records, batches of ${workload.batchSize}):`)
    for (const row of rows) {
      console.log(`  ${row.system.padEnd(24)} merge ${row.mergeMs.toFixed(0).padStart(6)} ms  (${(row.mergeMs / automerge.mergeMs).toFixed(2)}x automerge)  writes a ${row.writeMs.a?.toFixed(0)} ms b ${row.writeMs.b?.toFixed(0)} ms  ${(row.bytesExchanged / 1e6).toFixed(2)} MB  converged ${row.converged}`)
    }
    const targets = {
      queryP50Under5ms: records.queryMs.p50 <= 5, searchP50Under10ms: records.searchMs.p50 <= 10,
      reopenUnder1s: records.reopenMs <= 1000, mergeFasterThanAutomerge: cairn.mergeMs < automerge.mergeMs,
    }
    console.log('targets', targets)
    await mkdir(path.join(path.dirname(new URL(import.meta.url).pathname), 'results'), { recursive: true })
    await writeFile(new URL('./results/memory.json', import.meta.url), `${JSON.stringify({
      date: new Date().toISOString(), node: process.version, cpu: os.cpus()[0]?.model, cores: os.cpus().length, loadAverage: os.loadavg(),
      records, merge: { workload, rows }, targets,
    }, null, 2)}\n`)
    console.log('wrote bench/results/memory.json')
  } finally {
    await rm(root, { recursive: true, force: true })
  }
}

/**
 * Deletion benchmark: what forgetting and redacting cost, locally and on a replica catching up,
 * and what a peer system's delete leaves behind. In one run, on one machine:
 *  1. An on-disk replica A holds N episodes, each with a fact derived from it (2N records). It
 *     redacts the first D/2 facts, then forgets the first D episodes (each forget reaches the
 *     episode's fact: the redacted ones are deleted through their parent in the same stretch of
 *     recorded time, the path that closes deletions early). The calls run one after another;
 *     each one's latency is recorded.
 *  2. A fresh on-disk replica catches up on the creations (bodies and all), then on the
 *     deletions, which must erase what it holds: each timed, per event.
 *  3. The replica that caught up must match A's digest, find no forgotten or redacted record's
 *     marker word by search, hold no body of a forgotten record's creation, and still find a
 *     kept record by its marker.
 *  4. Automerge (records of the same shape as maps in one document, one change per call) removes
 *     the D/2 facts' content fields, then the D episodes with their facts, and a second replica
 *     applies those changes; timed, and checked for what an earlier version of the document
 *     still shows of a deleted record.
 * Writes bench/results/deletion.json.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import * as Automerge from '@automerge/automerge'
import { Memory } from '../src/index.js'
import { recordText, seeded, vocabulary, zipf } from './corpus.js'
import { packageVersion } from './peers/merge-workload.js'

const PARENTS = Number(process.env.CAIRN_BENCH_DELETION_PARENTS ?? 5_000)
const DELETIONS = Number(process.env.CAIRN_BENCH_DELETIONS ?? 2_000)
const random = seeded(0xde1e7e)
const words = vocabulary(random)
const rank = zipf(words.length, random)

const episodeId = (i: number): string => `ep_${String(i).padStart(6, '0')}`
const factId = (i: number): string => `fact_${String(i).padStart(6, '0')}`
/** A word found in exactly one record: search for it tells whether that record's text is indexed. */
const marker = (kind: 'e' | 'f', i: number): string => `marker${kind}${i}`

function episode(i: number) {
  return { kind: 'episode' as const, id: episodeId(i), summary: `episode ${i}`, details: `${recordText(words, rank, random)} ${marker('e', i)}` }
}

function fact(i: number) {
  return { kind: 'fact' as const, id: factId(i), episodeID: episodeId(i), subject: `user ${marker('f', i)}`, predicate: 'prefers', object: recordText(words, rank, random).slice(0, 40) }
}

function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number
}

async function timed<T>(task: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = performance.now()
  const value = await task()
  return { ms: performance.now() - start, value }
}

async function cairn(root: string) {
  const a = await Memory.open({ path: path.join(root, 'a') })
  for (let i = 0; i < PARENTS; i += 1000) {
    const end = Math.min(PARENTS, i + 1000)
    await a.rememberMany(Array.from({ length: end - i }, (_, j) => episode(i + j)))
    await a.rememberMany(Array.from({ length: end - i }, (_, j) => fact(i + j)))
  }
  const creations = await a.events({})
  const creationEvents = creations.length

  const redactMs: number[] = []
  const forgetMs: number[] = []
  for (let i = 0; i < DELETIONS / 2; i++) redactMs.push((await timed(() => a.redact(factId(i)))).ms)
  for (let i = 0; i < DELETIONS; i++) forgetMs.push((await timed(() => a.forget(episodeId(i)))).ms)
  const everything = await a.events({})
  const deletionEvents = everything.length - creationEvents

  // The replica first holds every creation with its body, so the deletions must erase them.
  const replica = await Memory.open({ path: path.join(root, 'replica'), space: a.space })
  const createsApply = await timed(() => replica.ingest(creations))
  const deletionsApply = await timed(() => replica.ingest(everything.slice(creationEvents)))

  // What both must show afterwards.
  const problems: string[] = []
  if ((await replica.digest()) !== (await a.digest())) problems.push('digests differ')
  const gone = [marker('e', 0), marker('f', 0), marker('f', DELETIONS / 2), marker('e', DELETIONS - 1)]
  for (const word of gone) if ((await replica.search(word)).length > 0) problems.push(`search still finds ${word}`)
  if ((await replica.search(marker('e', DELETIONS))).length !== 1) problems.push('a kept episode is not found by its marker')
  const forgottenCreation = creations.find((event) => Buffer.from(event.body ?? []).includes(marker('e', 0)))
  if (!forgottenCreation) problems.push('no creation event carries the first marker')
  else {
    for (const [name, memory] of [['A', a], ['the replica', replica]] as const) {
      const state = (await memory.log.get(forgottenCreation.id))?.bodyState
      if (state !== 'erased') problems.push(`the body of a forgotten creation is ${state} in ${name}`)
    }
  }
  await replica.close()
  await a.close()

  const createPerEventUs = (createsApply.ms * 1000) / creationEvents
  const deletionPerEventUs = (deletionsApply.ms * 1000) / deletionEvents
  return {
    parents: PARENTS, records: 2 * PARENTS, redactions: DELETIONS / 2, forgets: DELETIONS, creationEvents, deletionEvents,
    local: {
      redactP50Ms: percentile(redactMs, 50), redactP99Ms: percentile(redactMs, 99),
      forgetP50Ms: percentile(forgetMs, 50), forgetP99Ms: percentile(forgetMs, 99),
      callsPerSecond: (redactMs.length + forgetMs.length) / ((redactMs.reduce((s, v) => s + v, 0) + forgetMs.reduce((s, v) => s + v, 0)) / 1000),
    },
    catchUp: {
      creationsMs: createsApply.ms, deletionsMs: deletionsApply.ms,
      createPerEventUs, deletionPerEventUs, deletionVsCreate: deletionPerEventUs / createPerEventUs,
    },
    problems,
  }
}

type Doc = { records: Record<string, Record<string, string | Automerge.ImmutableString>> }

function automerge() {
  const text = (value: string): Automerge.ImmutableString => new Automerge.ImmutableString(value)
  let source = Automerge.from<Doc>({ records: {} }, { actor: 'aa'.repeat(16) })
  const random2 = seeded(0xde1e7e)
  const words2 = vocabulary(random2)
  const rank2 = zipf(words2.length, random2)
  for (let i = 0; i < PARENTS; i += 1000) {
    source = Automerge.change(source, (doc) => {
      for (let j = i; j < Math.min(PARENTS, i + 1000); j++) {
        doc.records[episodeId(j)] = { kind: text('episode'), summary: text(`episode ${j}`), details: text(`${recordText(words2, rank2, random2)} ${marker('e', j)}`) }
        doc.records[factId(j)] = { kind: text('fact'), episodeID: text(episodeId(j)), subject: text(`user ${marker('f', j)}`), predicate: text('prefers'), object: text(recordText(words2, rank2, random2).slice(0, 40)) }
      }
    })
  }
  let replica = Automerge.clone(source, { actor: 'bb'.repeat(16) })
  const heads = Automerge.getHeads(source)
  // Redact: the fact's content fields go; forget: the episode and its fact go. One change each.
  const local = timedSync(() => {
    for (let i = 0; i < DELETIONS / 2; i++) {
      source = Automerge.change(source, (doc) => {
        const record = doc.records[factId(i)] as Record<string, unknown>
        delete record.subject
        delete record.object
      })
    }
    for (let i = 0; i < DELETIONS; i++) {
      source = Automerge.change(source, (doc) => {
        delete doc.records[episodeId(i)]
        delete doc.records[factId(i)]
      })
    }
  })
  const changes = Automerge.getChanges(Automerge.view(source, heads), source)
  const merge = timedSync(() => {
    replica = Automerge.applyChanges(replica, changes)[0]
  })
  const before = Automerge.view(replica, heads) as Doc
  const stillReadable = String(before.records[episodeId(0)]?.details ?? '').includes(marker('e', 0))
  return {
    system: `automerge ${packageVersion('@automerge/automerge')} (in memory)`,
    localMs: local, callsPerSecond: (DELETIONS * 1.5) / (local / 1000), mergeMs: merge,
    deletedContentReadableInHistory: stillReadable,
  }
}

function timedSync(task: () => void): number {
  const start = performance.now()
  task()
  return performance.now() - start
}

export async function run(): Promise<void> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'cairn-bench-deletion-'))
  try {
    console.log(`node ${process.version}, ${os.cpus()[0]?.model}, ${os.cpus().length} cores, load ${os.loadavg()[0]?.toFixed(1)}`)
    const ours = await cairn(root)
    const peer = automerge()
    console.log(`${ours.records} records (${ours.parents} episodes, each with a fact); ${ours.redactions} fact redactions, then ${ours.forgets} episode forgets (each reaching its fact)`)
    console.log(`local, one call at a time: redact p50 ${ours.local.redactP50Ms.toFixed(2)} ms p99 ${ours.local.redactP99Ms.toFixed(2)} | forget p50 ${ours.local.forgetP50Ms.toFixed(2)} ms p99 ${ours.local.forgetP99Ms.toFixed(2)} | ${Math.round(ours.local.callsPerSecond)} calls/s (automerge ${Math.round(peer.callsPerSecond)}/s)`)
    console.log(`catch-up of a fresh replica: creations ${ours.catchUp.createPerEventUs.toFixed(0)} µs/event; deletions ${ours.catchUp.deletionPerEventUs.toFixed(0)} µs/event (${ours.catchUp.deletionVsCreate.toFixed(2)}x a creation) | automerge merge of the deletions ${peer.mergeMs.toFixed(0)} ms`)
    console.log(`after catch-up: ${ours.problems.length === 0 ? 'content gone everywhere it should be, digests equal' : `PROBLEMS: ${ours.problems.join('; ')}`}; automerge: deleted content ${peer.deletedContentReadableInHistory ? 'still readable in the history' : 'not readable'}`)
    await mkdir(new URL('./results/', import.meta.url), { recursive: true })
    await writeFile(new URL('./results/deletion.json', import.meta.url), `${JSON.stringify({
      date: new Date().toISOString(), node: process.version, cpu: os.cpus()[0]?.model, cores: os.cpus().length, loadAverage: os.loadavg(),
      cairn: ours, automerge: peer,
    }, null, 2)}\n`)
    console.log('wrote bench/results/deletion.json')
    if (ours.problems.length > 0) process.exitCode = 1
  } finally {
    await rm(root, { recursive: true, force: true })
  }
}

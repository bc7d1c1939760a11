/**
 * The shared workload and result shape of the peer sync benchmark (issue 4, "Performance"):
 * cold sync of a memory's mutations through a relay, live propagation latency of one new
 * record, and one relay serving many concurrent peers. Every system (automerge-repo,
 * y-websocket, Cairn) runs exactly the mutations this file generates and returns a
 * `SyncResult`, so the rows compare like with like.
 *
 * The mutations reuse the merge benchmark's generator (`bench/peers/merge-workload.ts`):
 * `records` record creations (`ep_0` … `ep_<n-1>`, 8 episode fields each), then `writes` field
 * writes by a single writer (replica `a` of the merge workload), each one mutation.
 *
 * Invariant: everything here is a pure function of the `SyncWorkload`; nothing is timed here.
 */
import { canonicalRecordsJson, digestCanonicalJson } from '../peers/merge-outcome.js'
import {
  generateInitialRecords,
  generateWrites,
  type FieldValue,
  type MergeWorkload,
  type RecordsSnapshot,
  type Write,
} from '../peers/merge-workload.js'

/** The shape of one run. `workloadFromEnvironment` documents the defaults. */
export interface SyncWorkload {
  /** Record creations, each one mutation (one change / transaction / event). */
  records: number
  /** Field writes after the creations, each one mutation. */
  writes: number
  /** Fields per record (8: the episode fields of `FIELD_NAMES`). */
  fields: number
  seed: number
  /** Single new records sent one at a time for the latency measurement. */
  liveChanges: number
  /** Pause after each live change is observed, before the next: see the README (throttles). */
  liveGapMs: number
  /** Peers connected to one relay at once, each making one change. */
  fanoutPeers: number
  /** Upper bound on any one phase; a phase that hits it reports what it reached. */
  phaseTimeoutMs: number
}

/** What every system's runner returns. Times are wall-clock milliseconds. */
export interface SyncResult {
  /** The system and its versions, e.g. `automerge-repo 2.5.6 (automerge 3.5.0)`. */
  system: string
  workload: SyncWorkload
  coldSync: ColdSyncResult
  live: LiveResult
  fanout: FanoutResult
  /** Free text a reader needs to trust the row: paths, options, anything reduced. */
  notes: string[]
}

export interface ColdSyncResult {
  /** `records + writes`: the mutations the source holds. */
  mutations: number
  /** Building the source's history in memory, untimed setup (reported so runs can be planned). */
  buildMs: number
  /** Opening the persisted source from its disk (before it connects; not in `uploadMs`). */
  sourceOpenMs: number
  /** Source connects → the relay holds everything and has written it to its storage. */
  uploadMs: number
  /** A fresh peer with empty storage connects → it holds the equal state, written to its disk. */
  downloadWarmMs: number
  /** The same, after the relay was stopped and started again (served from the relay's disk). */
  downloadColdMs: number
  /** Stopping the relay (flush) and starting it again on the same directory; untimed setup. */
  relayRestartMs: number
  /** Where each timed phase went, e.g. `downloadCold.held`, `downloadCold.persisted`. */
  phasesMs: Record<string, number>
  /** Bytes through the relay's WebSockets (both directions) during each phase, if counted. */
  uploadWireBytes?: number
  downloadWireBytes?: number
  /** The destination's records equal the model (digest), in memory and reopened from its disk. */
  verified: boolean
  verifiedOnDisk: boolean
  /** sha256 of the canonical records JSON; equal across systems (single writer, no conflicts). */
  digest: string
  /** The storage directories' sizes after the run. */
  relayDiskBytes?: number
  destinationDiskBytes?: number
}

export interface LiveResult {
  /** Changes measured (each one new record of ~200 bytes). */
  changes: number
  p50Ms: number
  p99Ms: number
  meanMs: number
  maxMs: number
  /** Every live record arrived with the fields it was written with. */
  verified: boolean
}

export interface FanoutResult {
  /** Peers asked for, and peers that connected and received every change in time. */
  peersRequested: number
  peers: number
  /** All peers connect and hold the (small) shared document. */
  connectMs: number
  /** First change made → every peer holds every peer's change. */
  allReceivedMs: number
  /** Relay process resident set: before the peers connect, with them idle, and the peak. */
  relayRssIdleMb: number
  relayRssConnectedMb: number
  relayRssPeakMb: number
  /** Bytes through the relay's WebSockets (both directions) during the change round, if counted. */
  wireBytes?: number
  verified: boolean
}

/** How a runner reports progress; results are only ever returned, never logged. */
export interface SyncRunOptions {
  /** Called with one line per step (default: nothing). */
  log?: (line: string) => void
}

/** 100k mutations: 10k record creations, then 90k field writes, as in the merge benchmark. */
export const DEFAULT_SYNC_WORKLOAD: Readonly<SyncWorkload> = Object.freeze({
  records: 10_000,
  writes: 90_000,
  fields: 8,
  seed: 0xca1e,
  liveChanges: 200,
  liveGapMs: 120,
  fanoutPeers: 200,
  phaseTimeoutMs: 120_000,
})

/**
 * The workload, from the defaults and the environment:
 * `SYNC_MUTATIONS` (total; a tenth are creations, the rest writes), `SYNC_LIVE_CHANGES`,
 * `SYNC_LIVE_GAP_MS`, `SYNC_FANOUT_PEERS`, `SYNC_PHASE_TIMEOUT_MS`.
 * @throws RangeError when a variable is not a non-negative integer (mutations: at least 10).
 */
export function workloadFromEnvironment(environment: NodeJS.ProcessEnv = process.env): SyncWorkload {
  const read = (name: string, fallback: number, minimum: number): number => {
    const text = environment[name]
    if (text === undefined || text === '') return fallback
    const value = Number(text.replaceAll('_', ''))
    if (!Number.isSafeInteger(value) || value < minimum) {
      throw new RangeError(`${name}: expected an integer >= ${minimum}, got ${JSON.stringify(text)}`)
    }
    return value
  }
  const base = DEFAULT_SYNC_WORKLOAD
  const mutations = read('SYNC_MUTATIONS', base.records + base.writes, 10)
  const records = Math.max(1, Math.round(mutations / 10))
  return {
    ...base,
    records,
    writes: mutations - records,
    liveChanges: read('SYNC_LIVE_CHANGES', base.liveChanges, 1),
    liveGapMs: read('SYNC_LIVE_GAP_MS', base.liveGapMs, 0),
    fanoutPeers: read('SYNC_FANOUT_PEERS', base.fanoutPeers, 1),
    phaseTimeoutMs: read('SYNC_PHASE_TIMEOUT_MS', base.phaseTimeoutMs, 1000),
  }
}

/** The merge workload whose initial records and replica-`a` writes are this workload's. */
function toMergeWorkload(workload: SyncWorkload): MergeWorkload {
  return {
    records: workload.records,
    writesPerReplica: Math.max(1, workload.writes),
    fields: workload.fields,
    batchSize: 1,
    seed: workload.seed,
  }
}

/** The source's mutations, in order: every creation, then every write. */
export interface SourceMutations {
  /** Creations in id order (`ep_0` first); each is one mutation. */
  creations: Array<{ recordId: string; fields: Record<string, FieldValue> }>
  writes: Write[]
}

export function generateSourceMutations(workload: SyncWorkload): SourceMutations {
  const merge = toMergeWorkload(workload)
  const initial = generateInitialRecords(merge)
  const creations = Object.entries(initial).map(([recordId, fields]) => ({ recordId, fields }))
  const writes = workload.writes === 0 ? [] : generateWrites(merge, 'a')
  return { creations, writes }
}

/** The records the source ends with, computed without any CRDT: creations, then writes. */
export function expectedRecords(mutations: SourceMutations): RecordsSnapshot {
  const records: RecordsSnapshot = {}
  for (const { recordId, fields } of mutations.creations) records[recordId] = { ...fields }
  for (const write of mutations.writes) {
    ;(records[write.recordId] as Record<string, FieldValue>)[write.field] = write.value
  }
  return records
}

/** sha256 (hex) of the records' canonical JSON (`bench/peers/merge-outcome.ts`). */
export function digestRecords(records: RecordsSnapshot): string {
  return digestCanonicalJson(canonicalRecordsJson(records))
}

/**
 * New records of the same shape (8 episode fields, ~200 bytes of canonical JSON), for the live
 * and fan-out phases: ids `<prefix>_0` … `<prefix>_<count-1>`, from their own seed stream.
 */
export function generateNewRecords(
  workload: SyncWorkload,
  prefix: string,
  count: number,
): Array<{ recordId: string; fields: Record<string, FieldValue> }> {
  const seed = (workload.seed ^ [...prefix].reduce((hash, char) => Math.imul(hash, 31) + char.charCodeAt(0), 7)) | 0
  const records = generateInitialRecords({ ...toMergeWorkload(workload), records: count, seed })
  return Object.values(records).map((fields, index) => ({ recordId: `${prefix}_${index}`, fields }))
}

/** Bytes of one record's canonical JSON (`{"ep_1":{…}}` without the outer braces' id). */
export function recordJsonBytes(fields: Record<string, FieldValue>): number {
  return Buffer.byteLength(canonicalRecordsJson({ r: fields }), 'utf8') - '{"r":}'.length
}

/** Nearest-rank percentile of `values` (not modified); `p` in [0, 100]. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((left, right) => left - right)
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)))
  return sorted[rank - 1] as number
}

export function mean(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : values.reduce((sum, value) => sum + value, 0) / values.length
}

/** Milliseconds since the Unix epoch with sub-millisecond resolution, comparable across processes. */
export function epochMs(): number {
  return performance.timeOrigin + performance.now()
}

export type { FieldValue, RecordsSnapshot }

/**
 * The system-independent parts of the peer sync phases: the cold-sync inputs and model, the
 * live-latency loop and the fan-out round. Each system plugs in small adapters (`LivePair`,
 * `FanoutPeer`) over its own documents, so every system is driven by the same loop with the same
 * records, the same pauses and the same completion checks.
 *
 * Invariant: a phase's clock covers the system's own work and the wire only; generating records,
 * digests and checks against the model happen outside it.
 */
import { join } from 'node:path'
import type { RelayProcess } from './relay-process.js'
import { directoryBytes, waitFor } from './sync-harness.js'
import {
  digestRecords,
  expectedRecords,
  generateNewRecords,
  generateSourceMutations,
  mean,
  percentile,
  type ColdSyncResult,
  type FanoutResult,
  type FieldValue,
  type LiveResult,
  type RecordsSnapshot,
  type SourceMutations,
  type SyncWorkload,
} from './sync-workload.js'

/** Live changes made and awaited before the measured ones (connection and code paths warm). */
export const LIVE_WARMUP_CHANGES = 5

/** Fan-out peers re-check on this poll as well as on their change events. */
const FANOUT_POLL_MS = 50

export interface ColdPhaseInputs {
  mutations: SourceMutations
  mutationCount: number
  /** The source's final records, from the mutations alone. */
  expected: RecordsSnapshot
  digest: string
}

export function prepareColdSync(workload: SyncWorkload): ColdPhaseInputs {
  const mutations = generateSourceMutations(workload)
  const expected = expectedRecords(mutations)
  return {
    mutations,
    mutationCount: mutations.creations.length + mutations.writes.length,
    expected,
    digest: digestRecords(expected),
  }
}

/** A writer and a reader, both caught up and connected through the relay. */
export interface LivePair {
  /** Adds one new record on the writer (its local change is inside the measured time). */
  write(recordId: string, fields: Record<string, FieldValue>): void
  /** Whether the reader holds the record. */
  hasRecord(recordId: string): boolean
  /** Calls `notify` on every change the reader applies; returns an unsubscribe function. */
  subscribe(notify: () => void): () => void
  /** The reader's records, for the untimed check at the end (Cairn's reads are async). */
  readRecords(): RecordsSnapshot | Promise<RecordsSnapshot>
}

/**
 * One new record at a time: the writer adds it, the clock stops when the reader holds it, then
 * the loop pauses `liveGapMs` before the next one. Returns the result and the records written.
 */
export async function runLive(
  workload: SyncWorkload,
  pair: LivePair,
): Promise<{ result: LiveResult; records: RecordsSnapshot }> {
  const records = generateNewRecords(workload, 'live', LIVE_WARMUP_CHANGES + workload.liveChanges)
  const latenciesMs: number[] = []
  for (const [index, { recordId, fields }] of records.entries()) {
    const startMs = performance.now()
    pair.write(recordId, fields)
    const seenAt = await waitFor(() => pair.hasRecord(recordId), {
      timeoutMs: workload.phaseTimeoutMs,
      label: `live record ${recordId} at the reader`,
      pollMs: 1,
      subscribe: (notify) => pair.subscribe(notify),
    })
    if (index >= LIVE_WARMUP_CHANGES) latenciesMs.push(seenAt - startMs)
    if (workload.liveGapMs > 0) await new Promise((resolve) => setTimeout(resolve, workload.liveGapMs))
  }
  const written: RecordsSnapshot = Object.fromEntries(records.map(({ recordId, fields }) => [recordId, fields]))
  const held = await pair.readRecords()
  const verified = records.every(
    ({ recordId }) => digestRecords({ r: held[recordId] ?? {} }) === digestRecords({ r: written[recordId] ?? {} }),
  )
  return {
    result: {
      changes: latenciesMs.length,
      p50Ms: percentile(latenciesMs, 50),
      p99Ms: percentile(latenciesMs, 99),
      meanMs: mean(latenciesMs),
      maxMs: Math.max(...latenciesMs),
      verified,
    },
    records: written,
  }
}

/** One of the fan-out peers, connected and holding the shared document when returned. */
export interface FanoutPeer {
  write(recordId: string, fields: Record<string, FieldValue>): void
  recordCount(): number
  subscribe(notify: () => void): () => void
  readRecords(): RecordsSnapshot | Promise<RecordsSnapshot>
  close(): Promise<void>
}

/**
 * Connects `fanoutPeers` peers (all at once) to `relay`, then has each add one record at once,
 * and waits until every peer holds every record. Peers that fail to connect in time are left
 * out and the result says how many took part.
 */
export async function runFanout(
  workload: SyncWorkload,
  relay: RelayProcess,
  openPeer: (index: number) => Promise<FanoutPeer>,
): Promise<FanoutResult> {
  const megabytes = (bytes: number) => bytes / (1024 * 1024)
  const idle = await relay.stats()
  const connectStart = performance.now()
  const opened = await Promise.allSettled(
    Array.from({ length: workload.fanoutPeers }, (_, index) =>
      withTimeout(openPeer(index), workload.phaseTimeoutMs, `fan-out peer ${index} to connect`),
    ),
  )
  const connectMs = performance.now() - connectStart
  const peers = opened.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []))
  const connected = await relay.stats()
  await relay.resetPeak()

  const records = generateNewRecords(workload, 'fan', peers.length)
  const changeStart = performance.now()
  for (const [index, peer] of peers.entries()) {
    const { recordId, fields } = records[index] as (typeof records)[number]
    peer.write(recordId, fields)
  }
  const arrivals = await Promise.allSettled(
    peers.map((peer, index) =>
      waitFor(() => peer.recordCount() >= peers.length, {
        timeoutMs: workload.phaseTimeoutMs,
        label: `fan-out peer ${index} to hold every record`,
        pollMs: FANOUT_POLL_MS,
        subscribe: (notify) => peer.subscribe(notify),
      }),
    ),
  )
  const arrivedAt = arrivals.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []))
  const after = await relay.stats()

  const expected = digestRecords(Object.fromEntries(records.map(({ recordId, fields }) => [recordId, fields])))
  const held = await Promise.all(peers.map((peer) => peer.readRecords()))
  const verified = arrivedAt.length === peers.length && held.every((records) => digestRecords(records) === expected)
  await Promise.allSettled(peers.map((peer) => peer.close()))
  const traffic = wireBytesBetween(connected, after)
  return {
    peersRequested: workload.fanoutPeers,
    peers: arrivedAt.length,
    connectMs,
    allReceivedMs: arrivedAt.length === 0 ? Number.NaN : Math.max(...arrivedAt) - changeStart,
    relayRssIdleMb: megabytes(idle.rssBytes),
    relayRssConnectedMb: megabytes(connected.rssBytes),
    relayRssPeakMb: megabytes(Math.max(after.peakRssBytes, connected.rssBytes)),
    ...(traffic === undefined ? {} : { wireBytes: traffic }),
    verified,
  }
}

/** A timed download: how long, where the time went, and the digest of what arrived. */
export interface TimedDownload {
  ms: number
  phasesMs: Record<string, number>
  digest: string
}

/** What each runner measured in its cold phases, before it is turned into a `ColdSyncResult`. */
export interface ColdSyncMeasured {
  inputs: ColdPhaseInputs
  buildMs: number
  sourceOpenMs: number
  uploadMs: number
  relayRestartMs: number
  uploadPhasesMs: Record<string, number>
  warm: TimedDownload
  cold: TimedDownload
  uploadWireBytes: number | undefined
  downloadWireBytes: number | undefined
  verifiedOnDisk: boolean
  /** The run's temp root: its `relay` and `destination-cold` directories are measured. */
  root: string
}

/** The cold-sync row, assembled the same way for every system. */
export async function coldSyncResult(measured: ColdSyncMeasured): Promise<ColdSyncResult> {
  const { inputs, warm, cold, uploadWireBytes, downloadWireBytes } = measured
  return {
    mutations: inputs.mutationCount,
    buildMs: measured.buildMs,
    sourceOpenMs: measured.sourceOpenMs,
    uploadMs: measured.uploadMs,
    downloadWarmMs: warm.ms,
    downloadColdMs: cold.ms,
    relayRestartMs: measured.relayRestartMs,
    phasesMs: { ...measured.uploadPhasesMs, ...warm.phasesMs, ...cold.phasesMs },
    ...(uploadWireBytes === undefined ? {} : { uploadWireBytes }),
    ...(downloadWireBytes === undefined ? {} : { downloadWireBytes }),
    verified: warm.digest === inputs.digest && cold.digest === inputs.digest,
    verifiedOnDisk: measured.verifiedOnDisk,
    digest: cold.digest,
    relayDiskBytes: await directoryBytes(join(measured.root, 'relay')),
    destinationDiskBytes: await directoryBytes(join(measured.root, 'destination-cold')),
  }
}

/** Bytes through the relay's WebSockets between two `stats()`, both directions; undefined if uncounted. */
export function wireBytesBetween(
  before: { receivedBytes?: number; sentBytes?: number },
  after: { receivedBytes?: number; sentBytes?: number },
): number | undefined {
  if (after.receivedBytes === undefined || after.sentBytes === undefined) return undefined
  return after.receivedBytes + after.sentBytes - (before.receivedBytes ?? 0) - (before.sentBytes ?? 0)
}

function withTimeout<T>(promise: Promise<T>, timeoutMs: number, label: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${label}`)), timeoutMs)
    promise.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (error: unknown) => {
        clearTimeout(timer)
        reject(error instanceof Error ? error : new Error(String(error)))
      },
    )
  })
}

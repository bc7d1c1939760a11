/**
 * Runs the peer sync workload (`sync-workload.ts`) on automerge-repo: `Repo`s with
 * `NodeFSStorageAdapter` and `WebSocketClientAdapter` in this process, the relay
 * (`automerge-repo-relay.ts`) in a child process, all on loopback, all storage in temp dirs.
 *
 * Phases (see the README for what is timed): cold sync (upload, then downloads from a warm and
 * from a restarted relay), live latency of one new record, and a relay with many peers.
 *
 * Invariant: every timed phase ends at a state the run then checks against the model (record
 * digests), and every repo and relay process it started is shut down, even on failure.
 */
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { AutomergeUrl, DocHandle, Repo } from '@automerge/automerge-repo'
import { sameHeads, type AutomergeRelayTarget } from './automerge-repo-relay.js'
import {
  buildSourceDocument,
  connectRepo,
  disconnectRepo,
  headsOf,
  onHeadsChanged,
  openRepo,
  shutdownRepo,
  snapshotRecords,
  toDocumentFields,
  type MemoryDoc,
} from './automerge-repo-peer.js'
import { RelayProcess } from './relay-process.js'
import { installedVersion, makeTempRoot, PhaseClock, removeTempRoot, waitFor } from './sync-harness.js'
import { coldSyncResult, prepareColdSync, runFanout, runLive, wireBytesBetween, type LivePair } from './sync-phases.js'
import {
  DEFAULT_SYNC_WORKLOAD,
  digestRecords,
  generateNewRecords,
  type ColdSyncResult,
  type SyncResult,
  type SyncRunOptions,
  type SyncWorkload,
} from './sync-workload.js'

const RELAY_MODULE = fileURLToPath(new URL('./automerge-repo-relay.ts', import.meta.url))
/** Records in the untimed warm-up round each relay serves before it is measured. */
const WARMUP_RECORDS = 200
/** The WebSocketClientAdapter's default retry interval, for the fan-out peers. */
const FANOUT_RETRY_MS = 5000

/** What the phases share: the workload, the temp root, and the things to clean up. */
interface Run {
  workload: SyncWorkload
  root: string
  log: (line: string) => void
  startRelay(dir: string): Promise<RelayProcess>
  track(repo: Repo): Repo
}

export async function runAutomergeRepoSync(
  workload: SyncWorkload = DEFAULT_SYNC_WORKLOAD,
  options: SyncRunOptions = {},
): Promise<SyncResult> {
  const root = await makeTempRoot('automerge-repo')
  const relays: RelayProcess[] = []
  const repos: Repo[] = []
  const run: Run = {
    workload,
    root,
    log: options.log ?? (() => {}),
    async startRelay(dir) {
      const relay = await RelayProcess.start(RELAY_MODULE, join(root, dir))
      relays.push(relay)
      return relay
    },
    track(repo) {
      repos.push(repo)
      return repo
    },
  }
  try {
    // The fan-out runs first, on a fresh process: after the 100k-change cold phases, a new
    // automerge-repo client once never saw the fan-out relay as a peer; same order everywhere.
    const fanout = await runAutomergeFanout(run)
    const { coldSync, live } = await runColdAndLive(run)
    return {
      system:
        `automerge-repo ${installedVersion('@automerge/automerge-repo')} ` +
        `(automerge ${installedVersion('@automerge/automerge')})`,
      workload: { ...workload },
      coldSync,
      live,
      fanout,
      notes: [
        'one Automerge change per mutation (the whole history, built through the low-level handle)',
        'relay: Repo + NodeFSStorageAdapter + WebSocketServerAdapter, sharePolicy false (as automerge-repo-sync-server)',
        'peers: Repo + NodeFSStorageAdapter + WebSocketClientAdapter; fan-out peers keep no storage',
        'strings as ImmutableString (LWW scalars, like Y.Map#set)',
      ],
    }
  } finally {
    await Promise.allSettled(repos.map((repo) => shutdownRepo(repo)))
    for (const relay of relays) relay.kill()
    await removeTempRoot(root)
  }
}

async function runColdAndLive(run: Run): Promise<{ coldSync: ColdSyncResult; live: SyncResult['live'] }> {
  const { workload, root, log } = run
  const timeoutMs = workload.phaseTimeoutMs
  const inputs = prepareColdSync(workload)

  // Untimed setup: the source's history, persisted by a repo that then shuts down.
  let mark = performance.now()
  const saved = buildSourceDocument(inputs.mutations)
  const buildMs = performance.now() - mark
  log(`built ${inputs.mutationCount} changes (${saved.byteLength} B saved) in ${Math.round(buildMs)} ms`)
  const seeding = openRepo(join(root, 'source'))
  const seeded = seeding.import<MemoryDoc>(saved)
  const url: AutomergeUrl = seeded.url
  const target: AutomergeRelayTarget = { documentId: seeded.documentId, heads: headsOf(seeded) }
  await shutdownRepo(seeding)

  let relay = await run.startRelay('relay')
  await warmUp(run, relay)
  mark = performance.now()
  const source = run.track(openRepo(join(root, 'source')))
  const sourceHandle = await source.find<MemoryDoc>(url)
  const sourceOpenMs = performance.now() - mark
  log(`source opened from disk in ${Math.round(sourceOpenMs)} ms`)

  // Upload: the source connects; the relay reports when it holds the heads and has flushed them.
  let before = await relay.stats()
  const holding = relay.holds(target, timeoutMs)
  const upload = new PhaseClock('upload')
  let sourceAdapter = connectRepo(source, relay.url)
  const report = await holding
  upload.markEpoch('held', report.heldAtEpochMs)
  const uploadMs = upload.markEpoch('persisted', report.persistedAtEpochMs)
  let after = await relay.stats()
  const uploadWireBytes = wireBytesBetween(before, after)
  disconnectRepo(source, sourceAdapter)
  log(`upload ${Math.round(uploadMs)} ms`)

  // Download from the warm relay (the document is still in its memory).
  const warm = await download(run, 'downloadWarm', 'destination-warm', relay, url, target.heads)
  await shutdownRepo(warm.repo)
  log(`download from the warm relay ${Math.round(warm.ms)} ms`)

  // Restart the relay on the same directory: the next download is served from its disk.
  mark = performance.now()
  await relay.stop()
  relay = await run.startRelay('relay')
  const relayRestartMs = performance.now() - mark
  await warmUp(run, relay)

  before = await relay.stats()
  const cold = await download(run, 'downloadCold', 'destination-cold', relay, url, target.heads)
  after = await relay.stats()
  log(`download from the restarted relay ${Math.round(cold.ms)} ms`)

  // Live: the source reconnects to the restarted relay; the cold destination is still connected.
  sourceAdapter = connectRepo(source, relay.url)
  await relay.holds(target, timeoutMs)
  const pair: LivePair = {
    write: (recordId, fields) =>
      sourceHandle.change((doc) => {
        doc.records[recordId] = toDocumentFields(fields)
      }),
    hasRecord: (recordId) => recordId in (cold.handle.doc().records ?? {}),
    subscribe: onHeadsChanged(cold.handle),
    readRecords: () => snapshotRecords(cold.handle.doc()),
  }
  const live = await runLive(workload, pair)
  disconnectRepo(source, sourceAdapter)
  log(`live p50 ${live.result.p50Ms.toFixed(1)} ms, p99 ${live.result.p99Ms.toFixed(1)} ms`)

  // Untimed checks: the cold destination's disk, reopened by a fresh repo.
  const expectedAfterLive = digestRecords({ ...inputs.expected, ...live.records })
  await shutdownRepo(cold.repo)
  await relay.stop()
  const reopened = run.track(openRepo(join(root, 'destination-cold')))
  const reopenedHandle = await reopened.find<MemoryDoc>(url)
  const verifiedOnDisk = digestRecords(snapshotRecords(reopenedHandle.doc())) === expectedAfterLive
  await shutdownRepo(reopened)

  return {
    coldSync: await coldSyncResult({
      inputs, buildMs, sourceOpenMs, uploadMs, relayRestartMs, uploadPhasesMs: upload.phasesMs, warm, cold,
      uploadWireBytes, downloadWireBytes: wireBytesBetween(before, after), verifiedOnDisk, root,
    }),
    live: live.result,
  }
}

/** A fresh repo on an empty directory connects and downloads until it holds `heads`, on disk. */
async function download(
  run: Run,
  label: string,
  dir: string,
  relay: RelayProcess,
  url: AutomergeUrl,
  heads: string[],
): Promise<{ ms: number; phasesMs: Record<string, number>; digest: string; repo: Repo; handle: DocHandle<MemoryDoc> }> {
  const clock = new PhaseClock(label)
  const repo = run.track(openRepo(join(run.root, dir)))
  connectRepo(repo, relay.url)
  const handle = await repo.find<MemoryDoc>(url)
  clock.mark('found')
  const heldAt = await waitFor(() => sameHeads(headsOf(handle), heads), {
    timeoutMs: run.workload.phaseTimeoutMs,
    label: `${label} to hold the source's heads`,
    subscribe: onHeadsChanged(handle),
  })
  clock.mark('held', heldAt)
  await repo.flush([handle.documentId])
  const ms = clock.mark('persisted')
  return { ms, phasesMs: clock.phasesMs, digest: digestRecords(snapshotRecords(handle.doc())), repo, handle }
}

/** Many in-memory repos on one relay (fresh directory and process), one new record each. */
async function runAutomergeFanout(run: Run): Promise<SyncResult['fanout']> {
  const relay = await run.startRelay('fanout-relay')
  // The shared document is created by a setup peer and reaches the relay before any peer joins.
  // The first change is made once connected: a document created before the connection was
  // sometimes never offered to the relay (seen under load), and a change while connected is.
  const creator = run.track(openRepo(undefined))
  const created = creator.create<MemoryDoc>()
  const adapter = connectRepo(creator, relay.url, FANOUT_RETRY_MS)
  await waitFor(() => creator.peers.length > 0, { timeoutMs: run.workload.phaseTimeoutMs, label: 'the fan-out creator to see the relay' })
  created.change((doc) => {
    doc.records = {}
  })
  await relay.holds({ documentId: created.documentId, heads: headsOf(created) } satisfies AutomergeRelayTarget, 30_000)
  disconnectRepo(creator, adapter)

  const result = await runFanout(run.workload, relay, async (index) => {
    const repo = run.track(openRepo(undefined, `fanout-${index}`))
    connectRepo(repo, relay.url, FANOUT_RETRY_MS)
    // find() gives up as "unavailable" when no peer answered within the adapter's 1 s grace
    // period, which 200 simultaneous connections exceed here: ask once the relay is a peer.
    await waitFor(() => repo.peers.length > 0, { timeoutMs: run.workload.phaseTimeoutMs, label: `fan-out peer ${index} to see the relay` })
    const handle = await repo.find<MemoryDoc>(created.url)
    return {
      write: (recordId, fields) =>
        handle.change((doc) => {
          doc.records[recordId] = toDocumentFields(fields)
        }),
      recordCount: () => Object.keys(handle.doc().records ?? {}).length,
      subscribe: onHeadsChanged(handle),
      readRecords: () => snapshotRecords(handle.doc()),
      close: () => shutdownRepo(repo),
    }
  })
  await relay.stop()
  run.log(`fan-out: ${result.peers}/${result.peersRequested} peers, all received in ${Math.round(result.allReceivedMs)} ms`)
  return result
}

/** An untimed round through a new relay (another document): JIT, wasm, lazy code paths, storage. */
async function warmUp(run: Run, relay: RelayProcess): Promise<void> {
  const writer = run.track(openRepo(undefined))
  const handle = writer.create<MemoryDoc>({ records: {} })
  for (const { recordId, fields } of generateNewRecords(run.workload, 'warm', WARMUP_RECORDS)) {
    handle.change((doc) => {
      doc.records[recordId] = toDocumentFields(fields)
    })
  }
  connectRepo(writer, relay.url)
  await relay.holds({ documentId: handle.documentId, heads: headsOf(handle) } satisfies AutomergeRelayTarget, 30_000)
  const reader = run.track(openRepo(undefined))
  connectRepo(reader, relay.url)
  const copy = await reader.find<MemoryDoc>(handle.url)
  await waitFor(() => sameHeads(headsOf(copy), headsOf(handle)), {
    timeoutMs: 30_000,
    label: 'the warm-up reader',
    subscribe: onHeadsChanged(copy),
  })
  await shutdownRepo(writer)
  await shutdownRepo(reader)
}

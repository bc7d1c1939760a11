/**
 * Runs the peer sync workload (`sync-workload.ts`) on Yjs: `Y.Doc`s persisted with `y-leveldb`
 * and connected with the `y-websocket` client in this process, the relay
 * (`y-websocket-relay.ts`: `@y/websocket-server` + `y-leveldb`) in a child process, all on
 * loopback, all storage in temp dirs. The phases are those of `automerge-repo-sync.ts`.
 *
 * Invariant: every timed phase ends at a state the run then checks against the model (record
 * digests), and every peer, provider and relay process it started is closed, even on failure.
 */
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { WebsocketProvider } from 'y-websocket'
import * as Y from 'yjs'
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
import {
  addRecord,
  buildSourceDocument,
  connectPeer,
  onUpdate,
  openPeer,
  persistDocument,
  recordsOf,
  snapshotRecords,
  whenSynced,
  type YPeer,
} from './y-websocket-peer.js'
import { coversStateVector, type YjsRelayTarget } from './y-websocket-relay.js'

const RELAY_MODULE = fileURLToPath(new URL('./y-websocket-relay.ts', import.meta.url))
const DOC_NAME = 'memory'
const FANOUT_DOC_NAME = 'fanout'
/** Records in the untimed warm-up round each relay serves before it is measured. */
const WARMUP_RECORDS = 200

/** What the phases share: the workload, the temp root, and the things to clean up. */
interface Run {
  workload: SyncWorkload
  root: string
  log: (line: string) => void
  startRelay(dir: string): Promise<RelayProcess>
  /** A peer on `dir` (in memory when undefined), closed at the end if not before. */
  open(dir: string | undefined, docName: string): Promise<YPeer>
  /** A provider for `peer`, destroyed at the end if not before. */
  connect(url: string, docName: string, peer: YPeer): WebsocketProvider
}

export async function runYWebsocketSync(
  workload: SyncWorkload = DEFAULT_SYNC_WORKLOAD,
  options: SyncRunOptions = {},
): Promise<SyncResult> {
  const root = await makeTempRoot('y-websocket')
  const relays: RelayProcess[] = []
  const cleanups: Array<() => Promise<void> | void> = []
  const run: Run = {
    workload,
    root,
    log: options.log ?? (() => {}),
    async startRelay(dir) {
      const relay = await RelayProcess.start(RELAY_MODULE, join(root, dir))
      relays.push(relay)
      return relay
    },
    async open(dir, docName) {
      const peer = await openPeer(dir === undefined ? undefined : join(root, dir), docName)
      let isClosed = false
      const close = async () => {
        if (isClosed) return
        isClosed = true
        await peer.close()
      }
      cleanups.push(close)
      return { ...peer, close }
    },
    connect(url, docName, peer) {
      const provider = connectPeer(url, docName, peer.doc)
      cleanups.push(() => provider.destroy())
      return provider
    },
  }
  // Every provider adds a process 'exit' listener (y-websocket clears awareness on exit).
  const maxListeners = process.getMaxListeners()
  process.setMaxListeners(Math.max(maxListeners, workload.fanoutPeers + 50))
  try {
    // The fan-out runs first, on a fresh process: after the 100k-change cold phases, a new
    // automerge-repo client once never saw the fan-out relay as a peer; same order everywhere.
    const fanout = await runYjsFanout(run)
    const { coldSync, live } = await runColdAndLive(run)
    return {
      system:
        `y-websocket ${installedVersion('y-websocket')} + @y/websocket-server ` +
        `${installedVersion('@y/websocket-server')} + y-leveldb ${installedVersion('y-leveldb')} ` +
        `(yjs ${installedVersion('yjs')})`,
      workload: { ...workload },
      coldSync,
      live,
      fanout,
      notes: [
        'one Yjs transaction per mutation; the source is stored as one compacted update',
        'relay: @y/websocket-server setupWSConnection + y-leveldb (the YPERSISTENCE binding), gc on',
        'peers: Y.Doc + y-leveldb storeUpdate per update + WebsocketProvider (BroadcastChannel and awareness off)',
        'no integrity check on receipt: Yjs updates carry no hashes or signatures',
      ],
    }
  } finally {
    for (const cleanup of cleanups.reverse()) await Promise.resolve().then(cleanup).catch(() => {})
    for (const relay of relays) relay.kill()
    process.setMaxListeners(maxListeners)
    await removeTempRoot(root)
  }
}

async function runColdAndLive(run: Run): Promise<{ coldSync: ColdSyncResult; live: SyncResult['live'] }> {
  const { workload, root, log } = run
  const timeoutMs = workload.phaseTimeoutMs
  const inputs = prepareColdSync(workload)

  // Untimed setup: the source's history, stored compacted (as y-leveldb leaves it on load).
  let mark = performance.now()
  const built = buildSourceDocument(inputs.mutations)
  const buildMs = performance.now() - mark
  const target: YjsRelayTarget = { docName: DOC_NAME, stateVector: Y.encodeStateVector(built) }
  await persistDocument(join(root, 'source'), DOC_NAME, built)
  built.destroy()
  log(`built ${inputs.mutationCount} transactions in ${Math.round(buildMs)} ms`)

  let relay = await run.startRelay('relay')
  await warmUp(run, relay)
  mark = performance.now()
  const source = await run.open('source', DOC_NAME)
  const sourceOpenMs = performance.now() - mark
  log(`source opened from disk in ${Math.round(sourceOpenMs)} ms`)

  // Upload: the source connects; the relay reports when it holds the state and has stored it.
  let before = await relay.stats()
  const holding = relay.holds(target, timeoutMs)
  const upload = new PhaseClock('upload')
  let sourceProvider = run.connect(relay.url, DOC_NAME, source)
  const report = await holding
  upload.markEpoch('held', report.heldAtEpochMs)
  const uploadMs = upload.markEpoch('persisted', report.persistedAtEpochMs)
  let after = await relay.stats()
  const uploadWireBytes = wireBytesBetween(before, after)
  sourceProvider.destroy()
  log(`upload ${Math.round(uploadMs)} ms`)

  // "Warm": the same relay process. y-websocket unloads a document once its last connection
  // closes, so the relay reloads it from LevelDB here too.
  const warm = await download(run, 'downloadWarm', 'destination-warm', relay, target)
  warm.provider.destroy()
  await warm.peer.close()
  log(`download from the same relay process ${Math.round(warm.ms)} ms`)

  mark = performance.now()
  await relay.stop()
  relay = await run.startRelay('relay')
  const relayRestartMs = performance.now() - mark
  await warmUp(run, relay)

  before = await relay.stats()
  const cold = await download(run, 'downloadCold', 'destination-cold', relay, target)
  after = await relay.stats()
  log(`download from the restarted relay ${Math.round(cold.ms)} ms`)

  // Live: the source reconnects to the restarted relay; the cold destination is still connected.
  sourceProvider = run.connect(relay.url, DOC_NAME, source)
  await whenSynced(sourceProvider)
  await relay.holds(target, timeoutMs)
  const pair: LivePair = {
    write: (recordId, fields) => addRecord(source.doc, recordId, fields),
    hasRecord: (recordId) => recordsOf(cold.peer.doc).has(recordId),
    subscribe: onUpdate(cold.peer.doc),
    readRecords: () => snapshotRecords(cold.peer.doc),
  }
  const live = await runLive(workload, pair)
  sourceProvider.destroy()
  log(`live p50 ${live.result.p50Ms.toFixed(1)} ms, p99 ${live.result.p99Ms.toFixed(1)} ms`)

  // Untimed checks: the cold destination's disk, reopened.
  const expectedAfterLive = digestRecords({ ...inputs.expected, ...live.records })
  cold.provider.destroy()
  await cold.peer.close()
  await relay.stop()
  const reopened = await run.open('destination-cold', DOC_NAME)
  const verifiedOnDisk = digestRecords(snapshotRecords(reopened.doc)) === expectedAfterLive
  await reopened.close()

  return {
    coldSync: await coldSyncResult({
      inputs, buildMs, sourceOpenMs, uploadMs, relayRestartMs, uploadPhasesMs: upload.phasesMs, warm, cold,
      uploadWireBytes, downloadWireBytes: wireBytesBetween(before, after), verifiedOnDisk, root,
    }),
    live: live.result,
  }
}

/** A fresh peer on an empty directory connects and downloads until it covers `target`, on disk. */
async function download(run: Run, label: string, dir: string, relay: RelayProcess, target: YjsRelayTarget) {
  const clock = new PhaseClock(label)
  const peer = await run.open(dir, target.docName)
  const provider = run.connect(relay.url, target.docName, peer)
  const heldAt = await waitFor(() => coversStateVector(Y.encodeStateVector(peer.doc), target.stateVector), {
    timeoutMs: run.workload.phaseTimeoutMs,
    label: `${label} to hold the source's state`,
    subscribe: onUpdate(peer.doc),
  })
  clock.mark('held', heldAt)
  await peer.flush()
  const ms = clock.mark('persisted')
  return { ms, phasesMs: clock.phasesMs, digest: digestRecords(snapshotRecords(peer.doc)), peer, provider }
}

/** Many in-memory docs on one relay (fresh directory and process), one new record each. */
async function runYjsFanout(run: Run): Promise<SyncResult['fanout']> {
  const relay = await run.startRelay('fanout-relay')
  const result = await runFanout(run.workload, relay, async () => {
    const peer = await run.open(undefined, FANOUT_DOC_NAME)
    const provider = run.connect(relay.url, FANOUT_DOC_NAME, peer)
    await whenSynced(provider)
    return {
      write: (recordId, fields) => addRecord(peer.doc, recordId, fields),
      recordCount: () => recordsOf(peer.doc).size,
      subscribe: onUpdate(peer.doc),
      readRecords: () => snapshotRecords(peer.doc),
      close: async () => {
        provider.destroy()
        await peer.close()
      },
    }
  })
  await relay.stop()
  run.log(`fan-out: ${result.peers}/${result.peersRequested} peers, all received in ${Math.round(result.allReceivedMs)} ms`)
  return result
}

/** An untimed round through a new relay (another room): JIT, lazy code paths, the store. */
async function warmUp(run: Run, relay: RelayProcess): Promise<void> {
  const docName = `warmup-${relay.pid}`
  const writer = await run.open(undefined, docName)
  for (const { recordId, fields } of generateNewRecords(run.workload, 'warm', WARMUP_RECORDS)) {
    addRecord(writer.doc, recordId, fields)
  }
  const writerProvider = run.connect(relay.url, docName, writer)
  await relay.holds({ docName, stateVector: Y.encodeStateVector(writer.doc) } satisfies YjsRelayTarget, 30_000)
  const reader = await run.open(undefined, docName)
  const readerProvider = run.connect(relay.url, docName, reader)
  await waitFor(() => recordsOf(reader.doc).size === WARMUP_RECORDS, {
    timeoutMs: 30_000,
    label: 'the warm-up reader',
    subscribe: onUpdate(reader.doc),
  })
  writerProvider.destroy()
  readerProvider.destroy()
  await writer.close()
  await reader.close()
}

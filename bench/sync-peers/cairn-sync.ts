/**
 * Runs the peer sync workload (`sync-workload.ts`) on Cairn: `Memory` homes on disk (classic-level
 * in temp dirs) syncing with `memory.sync(url)` in this process, the relay (`cairn-relay.ts`,
 * `Relay.start({ path })`) in a child process, all on loopback. The phases are those of
 * `automerge-repo-sync.ts`, so the rows compare like with like.
 *
 * Every event that moves is verified by its receiver (ids, body hashes, chains, the frame's
 * segment signature, authorization) before it is acknowledged; nothing is skipped for speed.
 *
 * Invariant: every timed phase ends at a state the run then checks against the model (record
 * digests and a full `log.verify()` from disk), and every memory, client and relay process it
 * started is closed, even on failure.
 */
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { cutFrames, Identity, Memory, type SyncClient } from '../../src/index.js'
import { ArrivalWatch, buildSource, episodeOf, snapshotRecords } from './cairn-peer.js'
import type { CairnRelayTarget } from './cairn-relay.js'
import { measureHashing, type HopFloorInputs } from './hop-floor.js'
import { RelayProcess } from './relay-process.js'
import { installedVersion, makeTempRoot, PhaseClock, removeTempRoot } from './sync-harness.js'
import { coldSyncResult, prepareColdSync, runFanout, runLive, wireBytesBetween, type LivePair } from './sync-phases.js'
import {
  DEFAULT_SYNC_WORKLOAD, digestRecords, generateNewRecords,
  type ColdSyncResult, type SyncResult, type SyncRunOptions, type SyncWorkload,
} from './sync-workload.js'

const RELAY_MODULE = fileURLToPath(new URL('./cairn-relay.ts', import.meta.url))
/** Records in the untimed warm-up round each relay serves before it is measured. */
const WARMUP_RECORDS = 200

/** Cairn's row, plus what the verification floor of one hop is computed from. */
export interface CairnSyncResult extends SyncResult {
  floor: HopFloorInputs
}

interface Run {
  workload: SyncWorkload
  root: string
  log: (line: string) => void
  startRelay(dir: string): Promise<RelayProcess>
  /** A memory closed at the end if not before. */
  open(options: Parameters<typeof Memory.open>[0]): Promise<Memory>
  /** A sync client closed at the end if not before. */
  sync(memory: Memory, url: string, live: boolean): Promise<SyncClient>
}

export async function runCairnSync(workload: SyncWorkload = DEFAULT_SYNC_WORKLOAD, options: SyncRunOptions = {}): Promise<CairnSyncResult> {
  const root = await makeTempRoot('cairn')
  const relays: RelayProcess[] = []
  const clients: SyncClient[] = []
  const memories: Memory[] = []
  const run: Run = {
    workload,
    root,
    log: options.log ?? (() => {}),
    async startRelay(dir) {
      const relay = await RelayProcess.start(RELAY_MODULE, join(root, dir))
      relays.push(relay)
      return relay
    },
    async open(memoryOptions) {
      const memory = await Memory.open(memoryOptions)
      memories.push(memory)
      return memory
    },
    async sync(memory, url, live) {
      const client = await memory.sync(url, { live, initialDelayMs: 50, maxDelayMs: 1000 })
      clients.push(client)
      return client
    },
  }
  try {
    // The fan-out runs first, on a fresh process: after the 100k-change cold phases, a new
    // automerge-repo client once never saw the fan-out relay as a peer; same order everywhere.
    const fanout = await runCairnFanout(run)
    const { coldSync, live, floor } = await runColdAndLive(run)
    return {
      system: `cairn ${installedVersion('cairn')} (classic-level ${installedVersion('classic-level')})`,
      workload: { ...workload },
      coldSync,
      live,
      fanout,
      floor,
      notes: [
        'one signed event per mutation: remember (memory.create) per creation, update (memory.patch) per write',
        `source written in signed batches of 1000 (rememberMany/updateMany); the wire keeps one signature per author per frame`,
        'relay: Relay.start({ path }) (cairn serve) in a child process; peers: Memory.open({ path }) + memory.sync(url)',
        'every hop verifies ids, body hashes, chains, segment signatures and grants before acknowledging',
        'the source also holds the genesis and 2 admin grants (the destinations), which sync too',
        'fan-out peers: in-memory replicas granted admin (full access, like the other systems\' peers)',
      ],
    }
  } finally {
    for (const client of clients.reverse()) await client.close().catch(() => undefined)
    for (const memory of memories.reverse()) await memory.close().catch(() => undefined)
    for (const relay of relays) relay.kill()
    await removeTempRoot(root)
  }
}

async function runColdAndLive(run: Run): Promise<{ coldSync: ColdSyncResult; live: SyncResult['live']; floor: HopFloorInputs }> {
  const { workload, root, log } = run
  const timeoutMs = workload.phaseTimeoutMs
  const inputs = prepareColdSync(workload)
  const warmIdentity = Identity.generate()
  const coldIdentity = Identity.generate()

  // Untimed setup: the source's history, on disk, then what one hop must verify.
  let mark = performance.now()
  const built = await buildSource(join(root, 'source'), inputs.mutations, [warmIdentity, coldIdentity])
  const buildMs = performance.now() - mark
  log(`built ${built.events} events in ${Math.round(buildMs)} ms`)
  const floor = await hopFloorInputs(join(root, 'source'))

  let relay = await run.startRelay('relay')
  await warmUp(run, relay)
  mark = performance.now()
  const source = await run.open({ path: join(root, 'source') })
  const sourceOpenMs = performance.now() - mark
  const target: CairnRelayTarget = { space: built.space, vector: source.versionVector() }

  // Upload: the source connects; the relay reports when its log covers the source's vector
  // (held and durable) and its projection has caught up (persisted).
  let before = await relay.stats()
  const holding = relay.holds(target, timeoutMs)
  const upload = new PhaseClock('upload')
  const uploadClient = await run.sync(source, relay.url, false)
  await uploadClient.synced()
  upload.mark('acked')
  const report = await holding
  upload.markEpoch('held', report.heldAtEpochMs)
  const uploadMs = Math.max(upload.markEpoch('persisted', report.persistedAtEpochMs), upload.phasesMs['upload.acked'] as number)
  let after = await relay.stats()
  const uploadWireBytes = wireBytesBetween(before, after)
  await uploadClient.close()
  log(`upload ${Math.round(uploadMs)} ms`)

  const warm = await download(run, 'downloadWarm', 'destination-warm', warmIdentity, built.space, relay, false)
  await warm.client.close()
  await warm.memory.close()
  log(`download from the warm relay ${Math.round(warm.ms)} ms`)

  mark = performance.now()
  await relay.stop()
  relay = await run.startRelay('relay')
  const relayRestartMs = performance.now() - mark
  await warmUp(run, relay)

  before = await relay.stats()
  const cold = await download(run, 'downloadCold', 'destination-cold', coldIdentity, built.space, relay, true)
  after = await relay.stats()
  log(`download from the restarted relay ${Math.round(cold.ms)} ms`)

  // Live: the source reconnects (live) to the restarted relay; the cold destination stays live.
  const liveClient = await run.sync(source, relay.url, true)
  await liveClient.synced()
  const watch = new ArrivalWatch(cold.memory)
  const failures: unknown[] = []
  const pair: LivePair = {
    write: (recordId, fields) => {
      source.remember(episodeOf(recordId, fields)).catch((error: unknown) => failures.push(error))
    },
    hasRecord: (recordId) => {
      if (failures.length > 0) throw failures[0]
      return watch.ids.has(recordId)
    },
    subscribe: (notify) => watch.subscribe(notify),
    readRecords: () => snapshotRecords(cold.memory, 'live_'),
  }
  const live = await runLive(workload, pair)
  watch.stop()
  await liveClient.close()
  log(`live p50 ${live.result.p50Ms.toFixed(1)} ms, p99 ${live.result.p99Ms.toFixed(1)} ms`)

  // Untimed checks: the cold destination's disk, reopened, and its whole log verified again.
  const expectedAfterLive = digestRecords({ ...inputs.expected, ...live.records })
  await cold.client.close()
  await cold.memory.close()
  await relay.stop()
  const reopened = await run.open({ path: join(root, 'destination-cold') })
  const report2 = await reopened.log.verify()
  const verifiedOnDisk = report2.ok && digestRecords(await snapshotRecords(reopened)) === expectedAfterLive
  if (!report2.ok) log(`destination log does not verify: ${JSON.stringify(report2.problems.slice(0, 3))}`)
  await reopened.close()

  return {
    floor,
    coldSync: await coldSyncResult({
      inputs, buildMs, sourceOpenMs, uploadMs, relayRestartMs, uploadPhasesMs: upload.phasesMs, warm, cold,
      uploadWireBytes, downloadWireBytes: wireBytesBetween(before, after), verifiedOnDisk, root,
    }),
    live: live.result,
  }
}

/** What a receiver of the source's whole history verifies on one hop (untimed). */
async function hopFloorInputs(dir: string): Promise<HopFloorInputs> {
  const source = await Memory.open({ path: dir })
  try {
    const envelopes = await source.log.envelopesSince({}, { signatures: 'stored' })
    const frames = cutFrames(envelopes)
    const signatures = frames.reduce((sum, frame) => sum + frame.filter((event) => event.signature !== undefined).length, 0)
    return { events: envelopes.length, frames: frames.length, signatures, ...measureHashing(envelopes) }
  } finally {
    await source.close()
  }
}

/**
 * A fresh home with `identity` (an admin of the space) connects and downloads everything.
 * `held`: the client is synced (every frame verified, stored durably and acknowledged);
 * `persisted`: the projection has applied it too, so reads see every record.
 */
async function download(run: Run, label: string, dir: string, identity: Identity, space: string, relay: RelayProcess, live: boolean) {
  const clock = new PhaseClock(label)
  const memory = await run.open({ path: join(run.root, dir), space, identity })
  clock.mark('opened')
  const client = await run.sync(memory, relay.url, live)
  await client.synced()
  clock.mark('held')
  await memory.status('bench-settled')
  const ms = clock.mark('persisted')
  const digest = digestRecords(await snapshotRecords(memory, 'ep_'))
  return { ms, phasesMs: clock.phasesMs, digest, memory, client }
}

/** Many in-memory replicas on one relay (fresh directory and process), one new record each. */
async function runCairnFanout(run: Run): Promise<SyncResult['fanout']> {
  const relay = await run.startRelay('fanout-relay')
  // The owner creates the space and grants every peer before any peer joins (untimed).
  const owner = await run.open({ name: 'fanout' })
  const identities = Array.from({ length: run.workload.fanoutPeers }, () => Identity.generate())
  for (const identity of identities) await owner.grant(identity.author, ['admin'])
  const ownerClient = await run.sync(owner, relay.url, false)
  await ownerClient.synced()

  const result = await runFanout(run.workload, relay, async (index) => {
    const memory = await run.open({ space: owner.space, identity: identities[index] as Identity })
    const watch = new ArrivalWatch(memory)
    const client = await run.sync(memory, relay.url, true)
    await client.synced()
    const failures: unknown[] = []
    const count = () => {
      if (failures.length > 0) throw failures[0]
      let fan = 0
      for (const id of watch.ids) if (id.startsWith('fan_')) fan++
      return fan
    }
    return {
      write: (recordId, fields) => {
        memory.remember(episodeOf(recordId, fields)).catch((error: unknown) => failures.push(error))
      },
      recordCount: count,
      subscribe: (notify) => watch.subscribe(notify),
      readRecords: () => snapshotRecords(memory, 'fan_'),
      close: async () => {
        watch.stop()
        await client.close()
        await memory.close()
      },
    }
  })
  await relay.stop()
  run.log(`fan-out: ${result.peers}/${result.peersRequested} peers, all received in ${Math.round(result.allReceivedMs)} ms`)
  return result
}

/** An untimed round through a new relay (another space): JIT, lazy code paths, the store. */
async function warmUp(run: Run, relay: RelayProcess): Promise<void> {
  const writer = await run.open({ name: 'warm-up' })
  const readerIdentity = Identity.generate()
  await writer.grant(readerIdentity.author, ['admin'])
  const records = generateNewRecords(run.workload, 'warm', WARMUP_RECORDS)
  await writer.rememberMany(records.slice(0, WARMUP_RECORDS / 2).map(({ recordId, fields }) => episodeOf(recordId, fields)))
  for (const { recordId, fields } of records.slice(WARMUP_RECORDS / 2)) await writer.remember(episodeOf(recordId, fields))
  const writerClient = await run.sync(writer, relay.url, false)
  await writerClient.synced()
  const reader = await run.open({ space: writer.space, identity: readerIdentity })
  const readerClient = await run.sync(reader, relay.url, false)
  await readerClient.synced()
  if ((await reader.digest()) !== (await writer.digest())) throw new Error('the warm-up reader did not converge')
  await writerClient.close()
  await readerClient.close()
  await writer.close()
  await reader.close()
}

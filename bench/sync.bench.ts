/**
 * The sync benchmark (issue 4, "Performance"). In one run on one machine, for Cairn,
 * automerge-repo (websocket adapter, nodefs storage) and y-websocket (+ y-leveldb), on the same
 * workload (`bench/sync-peers/sync-workload.ts`):
 *
 *  1. cold sync of 100k mutations A → relay → B, everything on disk: upload until the relay
 *     holds and has persisted it, then a fresh B downloads until it holds it on disk (from the
 *     relay as left, and again after a relay restart);
 *  2. live propagation latency (p50/p99) of one new record A → relay → B over open sessions;
 *  3. one relay (its own process) with 200 concurrent peers that each write one record, until
 *     every peer holds every record, with the relay's resident memory.
 *
 * Cairn is also put against its physical floor: SHA-256 of every header and body plus one raw
 * Ed25519 verify per signature on the wire, per verified hop. Relays run in child processes
 * (bench/sync-peers/relay-process.ts). Results go to stdout and `bench/results/sync.json`.
 *
 * `CAIRN_BENCH_SYNC_N` sets the mutations (default 100000); see `workloadFromEnvironment` for
 * the other knobs (SYNC_LIVE_CHANGES, SYNC_FANOUT_PEERS, …).
 */
import { mkdir, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { runAutomergeRepoSync } from './sync-peers/automerge-repo-sync.js'
import { runCairnSync } from './sync-peers/cairn-sync.js'
import { rawVerifyPerSecond } from './sync-peers/hop-floor.js'
import { installedVersion } from './sync-peers/sync-harness.js'
import { formatTable, SYNC_TARGETS, syncFigures } from './sync-peers/sync-report.js'
import { workloadFromEnvironment, type SyncResult } from './sync-peers/sync-workload.js'
import { runYWebsocketSync } from './sync-peers/y-websocket-sync.js'

const resultsFile = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'sync.json')

const PACKAGES = [
  'classic-level', 'ws', '@automerge/automerge', '@automerge/automerge-repo', '@automerge/automerge-repo-network-websocket',
  '@automerge/automerge-repo-storage-nodefs', 'yjs', 'y-websocket', '@y/websocket-server', 'y-leveldb',
]

const round = (value: number, digits = 2): number => Number(value.toFixed(digits))

/** Rounds every number in a JSON-like value (results stay readable). */
function rounded<T>(value: T): T {
  return JSON.parse(JSON.stringify(value, (_key, item: unknown) => (typeof item === 'number' ? round(item) : item))) as T
}

export async function run(): Promise<void> {
  const began = performance.now()
  const environment = { ...process.env }
  if (environment.CAIRN_BENCH_SYNC_N) environment.SYNC_MUTATIONS = environment.CAIRN_BENCH_SYNC_N
  const workload = workloadFromEnvironment(environment)
  const loadAverage = [os.loadavg()[0] as number]
  console.log(`node ${process.version}, ${os.cpus()[0]?.model ?? 'unknown cpu'}, ${os.cpus().length} cores, load ${loadAverage[0]?.toFixed(1)}; ` +
    `${workload.records + workload.writes} mutations, ${workload.liveChanges} live changes, ${workload.fanoutPeers} fan-out peers`)

  const verifyBefore = rawVerifyPerSecond()
  const log = (system: string) => (line: string) => console.log(`  [${system}] ${line}`)
  const cairn = await runCairnSync(workload, { log: log('cairn') })
  loadAverage.push(os.loadavg()[0] as number)
  const automerge = await runAutomergeRepoSync(workload, { log: log('automerge-repo') })
  loadAverage.push(os.loadavg()[0] as number)
  const yjs = await runYWebsocketSync(workload, { log: log('y-websocket') })
  // The raw rate again after the runs; the higher is used, so a busy moment during one raw
  // measurement cannot flatter the floor ratios.
  const verifyAfter = rawVerifyPerSecond()
  loadAverage.push(os.loadavg()[0] as number)
  const figures = syncFigures(cairn, automerge, yjs, Math.max(verifyBefore, verifyAfter))

  console.log(formatTable(figures))
  const { floor, ratios, targets } = figures
  console.log(`floor (2 verified hops: ${cairn.floor.events} x 2 SHA-256 + ${cairn.floor.signatures} verifies each): ${floor.coldSyncFloorMs.toFixed(0)} ms; ` +
    `cairn cold sync ${ratios.cairnColdSyncVsFloor.toFixed(1)}x floor, ${ratios.cairnColdSyncVsPerEventSignatureFloor.toFixed(2)}x per-event-signature floor (${floor.coldSyncPerEventSignatureFloorMs.toFixed(0)} ms)`)
  console.log(`fan-out verification floor (${cairn.fanout.peers} x ${cairn.fanout.peers - 1} verifies, every peer in this process): ${floor.fanoutVerifyFloorMs.toFixed(0)} ms`)
  console.log(`cairn up to the logs only (verified + durable, projections still catching up): ${figures.cairnColdSyncLogOnlyMs.toFixed(0)} ms, ${ratios.cairnColdSyncLogOnlyVsFloor.toFixed(1)}x floor`)
  console.log(`cairn / automerge-repo: cold ${ratios.cairnColdSyncVsAutomergeRepo.toFixed(2)}x, live p50 ${ratios.cairnLiveP50VsAutomergeRepo.toFixed(2)}x, fan-out ${ratios.cairnFanoutVsAutomergeRepo.toFixed(2)}x; ` +
    `cairn / y-websocket: cold ${ratios.cairnColdSyncVsYWebsocket.toFixed(2)}x, live p50 ${ratios.cairnLiveP50VsYWebsocket.toFixed(2)}x, fan-out ${ratios.cairnFanoutVsYWebsocket.toFixed(2)}x`)
  console.log('targets', targets)

  const packages = Object.fromEntries(PACKAGES.map((name) => [name, installedVersion(name)]))
  const results = {
    date: new Date().toISOString(),
    command: `${workload.records + workload.writes === 100_000 ? '' : `CAIRN_BENCH_SYNC_N=${workload.records + workload.writes} `}npm run bench -- sync`,
    machine: {
      node: process.version, cpu: os.cpus()[0]?.model ?? 'unknown', cores: os.cpus().length, platform: `${os.platform()} ${os.arch()}`,
      totalMemoryMb: round(os.totalmem() / 2 ** 20, 0), loadAverage1m: loadAverage.map((value) => round(value)),
    },
    packages: { cairn: installedVersion('cairn'), ...packages },
    workload,
    targets: SYNC_TARGETS,
    raw: { verifyPerSecond: [round(verifyBefore, 0), round(verifyAfter, 0)], floorInputs: cairn.floor },
    figures: rounded(figures),
    systems: rounded([cairn, automerge, yjs] as SyncResult[]),
    durationSeconds: round((performance.now() - began) / 1000, 1),
  }
  await mkdir(path.dirname(resultsFile), { recursive: true })
  await writeFile(resultsFile, `${JSON.stringify(results, null, 2)}\n`)
  console.log(`wrote ${path.relative(process.cwd(), resultsFile)} (${results.durationSeconds} s)`)
}

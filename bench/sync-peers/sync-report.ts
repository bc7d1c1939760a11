/**
 * Turns the three systems' `SyncResult`s and the measured floor into the figures the sync
 * benchmark reports: the end-to-end cold sync (upload to the relay + download by a fresh peer),
 * events per second, ratios to the verification floor and to the peer systems, the targets of
 * issue 4, and a plain-text table for the console.
 *
 * Invariant: every figure is computed from measured values in the same run; nothing is rounded
 * before the ratios are taken.
 */
import type { CairnSyncResult } from './cairn-sync.js'
import { hopFloor, type HopFloor } from './hop-floor.js'
import type { SyncResult } from './sync-workload.js'

/** Issue 4's targets. */
export const SYNC_TARGETS = { coldSyncMaxMs: 3000, liveP50MaxMs: 5 } as const

export interface SystemFigures {
  system: string
  /** Upload (A → relay, persisted) + download by a fresh peer from the relay as the upload left it. */
  coldSyncMs: number
  /** Upload + download after a relay restart (served from the relay's disk). */
  coldSyncRestartedMs: number
  uploadMs: number
  downloadWarmMs: number
  downloadColdMs: number
  mutationsPerSecond: number
  liveP50Ms: number
  liveP99Ms: number
  fanoutPeers: number
  fanoutAllReceivedMs: number
  fanoutRelayRssConnectedMb: number
  fanoutRelayRssPeakMb: number
  verified: boolean
}

export interface SyncFigures {
  rows: SystemFigures[]
  /**
   * Cairn's cold sync up to the logs only: the upload until every frame was acknowledged (the
   * relay verified and stored it) + the download until synced (the destination verified and
   * stored it), without the projections catching up (records not yet readable).
   */
  cairnColdSyncLogOnlyMs: number
  /** Cairn's floor of one hop; the cold sync is two verified hops (relay, then destination). */
  floor: HopFloor & {
    coldSyncFloorMs: number
    coldSyncPerEventSignatureFloorMs: number
    /**
     * The fan-out's verification floor in this bench, where every peer lives in one process:
     * each of P peers verifies the P - 1 others' signed events, P (P - 1) verifies in all.
     */
    fanoutVerifyFloorMs: number
    verifyPerSecond: number
  }
  ratios: {
    cairnColdSyncVsFloor: number
    cairnColdSyncVsPerEventSignatureFloor: number
    cairnColdSyncLogOnlyVsFloor: number
    cairnColdSyncVsAutomergeRepo: number
    cairnColdSyncVsYWebsocket: number
    cairnLiveP50VsAutomergeRepo: number
    cairnLiveP50VsYWebsocket: number
    cairnFanoutVsAutomergeRepo: number
    cairnFanoutVsYWebsocket: number
  }
  targets: {
    coldSyncWithin3s: boolean
    coldSyncFasterThanBoth: boolean
    liveP50Within5ms: boolean
  }
}

export function figuresOf(result: SyncResult): SystemFigures {
  const cold = result.coldSync
  const coldSyncMs = cold.uploadMs + cold.downloadWarmMs
  return {
    system: result.system,
    coldSyncMs,
    coldSyncRestartedMs: cold.uploadMs + cold.downloadColdMs,
    uploadMs: cold.uploadMs,
    downloadWarmMs: cold.downloadWarmMs,
    downloadColdMs: cold.downloadColdMs,
    mutationsPerSecond: cold.mutations / (coldSyncMs / 1000),
    liveP50Ms: result.live.p50Ms,
    liveP99Ms: result.live.p99Ms,
    fanoutPeers: result.fanout.peers,
    fanoutAllReceivedMs: result.fanout.allReceivedMs,
    fanoutRelayRssConnectedMb: result.fanout.relayRssConnectedMb,
    fanoutRelayRssPeakMb: result.fanout.relayRssPeakMb,
    verified: cold.verified && cold.verifiedOnDisk && result.live.verified && result.fanout.verified,
  }
}

export function syncFigures(cairn: CairnSyncResult, automerge: SyncResult, yjs: SyncResult, verifyPerSecond: number): SyncFigures {
  const [c, a, y] = [figuresOf(cairn), figuresOf(automerge), figuresOf(yjs)]
  const hop = hopFloor(cairn.floor, verifyPerSecond)
  const floor = {
    ...hop,
    coldSyncFloorMs: 2 * hop.floorMs,
    coldSyncPerEventSignatureFloorMs: 2 * hop.perEventSignatureFloorMs,
    fanoutVerifyFloorMs: ((cairn.fanout.peers * (cairn.fanout.peers - 1)) / verifyPerSecond) * 1000,
    verifyPerSecond,
  }
  const phase = (name: string): number => cairn.coldSync.phasesMs[name] ?? Number.NaN
  return {
    rows: [c, a, y],
    cairnColdSyncLogOnlyMs: phase('upload.acked') + phase('downloadWarm.held'),
    floor,
    ratios: {
      cairnColdSyncVsFloor: c.coldSyncMs / floor.coldSyncFloorMs,
      cairnColdSyncVsPerEventSignatureFloor: c.coldSyncMs / floor.coldSyncPerEventSignatureFloorMs,
      cairnColdSyncLogOnlyVsFloor: (phase('upload.acked') + phase('downloadWarm.held')) / floor.coldSyncFloorMs,
      cairnColdSyncVsAutomergeRepo: c.coldSyncMs / a.coldSyncMs,
      cairnColdSyncVsYWebsocket: c.coldSyncMs / y.coldSyncMs,
      cairnLiveP50VsAutomergeRepo: c.liveP50Ms / a.liveP50Ms,
      cairnLiveP50VsYWebsocket: c.liveP50Ms / y.liveP50Ms,
      cairnFanoutVsAutomergeRepo: c.fanoutAllReceivedMs / a.fanoutAllReceivedMs,
      cairnFanoutVsYWebsocket: c.fanoutAllReceivedMs / y.fanoutAllReceivedMs,
    },
    targets: {
      coldSyncWithin3s: c.coldSyncMs <= SYNC_TARGETS.coldSyncMaxMs,
      coldSyncFasterThanBoth: c.coldSyncMs < a.coldSyncMs && c.coldSyncMs < y.coldSyncMs,
      liveP50Within5ms: c.liveP50Ms <= SYNC_TARGETS.liveP50MaxMs,
    },
  }
}

/** The console table: one row per system. */
export function formatTable(figures: SyncFigures): string {
  const columns = ['system', 'cold sync ms', 'upload', 'down warm', 'down cold', 'mut/s', 'live p50', 'live p99', 'fan-out ms', 'relay MB', 'ok']
  const lines = [columns.join(' | ')]
  for (const row of figures.rows) {
    lines.push([
      row.system.split(' (')[0] as string,
      row.coldSyncMs.toFixed(0),
      row.uploadMs.toFixed(0),
      row.downloadWarmMs.toFixed(0),
      row.downloadColdMs.toFixed(0),
      Math.round(row.mutationsPerSecond).toLocaleString('en-US'),
      row.liveP50Ms.toFixed(2),
      row.liveP99Ms.toFixed(2),
      `${row.fanoutAllReceivedMs.toFixed(0)} (${row.fanoutPeers})`,
      `${row.fanoutRelayRssConnectedMb.toFixed(0)}/${row.fanoutRelayRssPeakMb.toFixed(0)}`,
      String(row.verified),
    ].join(' | '))
  }
  return lines.join('\n')
}

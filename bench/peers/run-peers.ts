/**
 * Runs the peer side of the memory merge benchmark on its own and prints a Markdown table:
 *
 *   npx tsx --expose-gc bench/peers/run-peers.ts      # suite `main` (~70 s on 2 vCPUs)
 *   npx tsx bench/peers/run-peers.ts variants         # other sync paths and options (~2 min)
 *   npx tsx bench/peers/run-peers.ts reopened         # replicas restarted before merging (~2 min)
 *   npx tsx bench/peers/run-peers.ts main --json out.json
 *
 * `--expose-gc` is optional: with it, each timed phase starts after a full collection.
 *
 * Invariant: every figure printed was measured in this process on the shared workload, except
 * rows marked "extrapolated", which say from what and by which factor.
 */
import { writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { runAutomergeMerge } from './automerge-merge.js'
import { formatMergePhases, formatMergeTable, type MergeRow } from './merge-table.js'
import {
  DEFAULT_MERGE_WORKLOAD,
  describeOverlap,
  WARMUP_MERGE_WORKLOAD,
  type MergeResult,
  type MergeWorkload,
} from './merge-workload.js'
import { runYjsMerge } from './yjs-merge.js'

/**
 * Automerge's interactive path (one change per write) costs ~7 ms a write at 10k records (the
 * immutable JS view copies the 10k-key `records` map on every change), so 50k writes a
 * replica would take ~12 minutes. It runs at this size instead and is scaled linearly.
 */
const AUTOMERGE_INTERACTIVE_WRITES = 2000

const bulk: MergeWorkload = { ...DEFAULT_MERGE_WORKLOAD }
const interactive: MergeWorkload = { ...DEFAULT_MERGE_WORKLOAD, batchSize: 1 }

type Measure = (label: string, run: () => Promise<MergeResult>) => Promise<MergeResult>

const SUITES: Record<string, (measure: Measure, rows: MergeRow[]) => Promise<void>> = {
  /** The comparison the issue asks for: bulk (batch 1000) and interactive (batch 1). */
  async main(measure, rows) {
    const interactiveSmall = { ...interactive, writesPerReplica: AUTOMERGE_INTERACTIVE_WRITES }
    await measure('automerge bulk', () => runAutomergeMerge(bulk))
    await measure('yjs bulk', () => runYjsMerge(bulk))
    const automerge = await measure('automerge interactive (reduced)', () => runAutomergeMerge(interactiveSmall))
    await measure('yjs interactive (reduced)', () => runYjsMerge(interactiveSmall))
    rows.push(extrapolate(automerge, interactive.writesPerReplica))
    await measure('yjs interactive', () => runYjsMerge(interactive))
  },
  /** The other supported paths and options, each against the default path on its workload. */
  async variants(measure) {
    await measure('automerge bulk', () => runAutomergeMerge(bulk))
    await measure('automerge save-since', () => runAutomergeMerge(bulk, { syncPath: 'save-since' }))
    await measure('automerge sync protocol', () => runAutomergeMerge(bulk, { syncPath: 'sync-protocol' }))
    await measure('yjs bulk', () => runYjsMerge(bulk))
    await measure('yjs v2', () => runYjsMerge(bulk, { encoding: 'v2' }))
    await measure('yjs gc off', () => runYjsMerge(bulk, { gc: false }))
    // Plain strings are collaborative text in Automerge 3: one op per character.
    const small: MergeWorkload = { ...bulk, records: 1000, writesPerReplica: 5000 }
    await measure('automerge (small)', () => runAutomergeMerge(small))
    await measure('automerge text strings (small)', () => runAutomergeMerge(small, { strings: 'text' }))
    await measure('yjs (small)', () => runYjsMerge(small))
  },
  /**
   * Both replicas saved and loaded again between their writes and the merge. Automerge runs
   * twice: first while this process's wasm memory is still small (as in an app that just
   * started), then again once an earlier run has grown it; see the README.
   */
  async reopened(measure) {
    const options = { reopenBeforeMerge: true }
    const first = await measure('automerge bulk, reopened (first)', () => runAutomergeMerge(bulk, options))
    first.system += ' — first in process'
    const again = await measure('automerge bulk, reopened (again)', () => runAutomergeMerge(bulk, options))
    again.system += ' — again'
    await measure('yjs bulk, reopened', () => runYjsMerge(bulk, options))
  },
}

function describeLoad(): string {
  return loadavg()
    .map((value) => value.toFixed(2))
    .join(' ')
}

/** A measured result scaled to a larger `writesPerReplica`, for a clearly marked table row. */
function extrapolate(result: MergeResult, writesPerReplica: number): MergeRow {
  const factor = writesPerReplica / result.workload.writesPerReplica
  return {
    result: {
      ...result,
      workload: { ...result.workload, writesPerReplica },
      writeMs: { a: result.writeMs.a * factor, b: result.writeMs.b * factor },
      mergeMs: result.mergeMs * factor,
      bytesExchanged: result.bytesExchanged * factor,
    },
    extrapolated: `extrapolated ×${factor} from ${result.workload.writesPerReplica.toLocaleString('en-US')} writes`,
  }
}

const args = process.argv.slice(2).filter((arg) => arg !== '--')
const jsonIndex = args.indexOf('--json')
const jsonPath = jsonIndex >= 0 ? args[jsonIndex + 1] : undefined
const suiteName = args.find((arg, index) => !arg.startsWith('--') && index !== jsonIndex + 1) ?? 'main'
const suite = SUITES[suiteName]
if (!suite || (jsonIndex >= 0 && !jsonPath)) {
  console.error(`usage: run-peers.ts [${Object.keys(SUITES).join('|')}] [--json FILE]`)
  process.exit(2)
}

const startLoad = describeLoad()
const startedAt = Date.now()
console.log(`suite ${suiteName}; node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}`)
const isGcExposed = typeof (globalThis as { gc?: unknown }).gc === 'function'
console.log(`load average at start: ${startLoad}; heap settled before timed phases: ${isGcExposed}`)
const overlap = describeOverlap(bulk)
const count = (value: number) => value.toLocaleString('en-US')
console.log(
  `workload: ${count(bulk.records)} records × ${bulk.fields} fields; cells written by A ` +
    `${count(overlap.cellsWrittenByA)}, by B ${count(overlap.cellsWrittenByB)}, by both ` +
    `${count(overlap.cellsWrittenByBoth)} (of ${count(overlap.cells)})`,
)

// Warm both systems up (JIT, wasm tier-up, allocators) before anything is timed.
await runAutomergeMerge(WARMUP_MERGE_WORKLOAD)
await runYjsMerge(WARMUP_MERGE_WORKLOAD)

const rows: MergeRow[] = []
await suite(async (label, run) => {
  process.stderr.write(`running ${label} … `)
  const result = await run()
  process.stderr.write(`${Math.round(result.mergeMs)} ms merge (load ${describeLoad()})\n`)
  rows.push({ result })
  return result
}, rows)

const endLoad = describeLoad()
console.log(`\n${formatMergeTable(rows)}\n`)
console.log(formatMergePhases(rows))
console.log(`\nload average at end: ${endLoad}; total ${((Date.now() - startedAt) / 1000).toFixed(0)} s`)
if (jsonPath) {
  const environment = {
    node: process.version,
    cpu: cpus()[0]?.model,
    cores: cpus().length,
    isGcExposed,
    startLoad,
    endLoad,
  }
  writeFileSync(jsonPath, `${JSON.stringify({ suite: suiteName, environment, overlap, rows }, null, 2)}\n`)
  console.log(`wrote ${jsonPath}`)
}

/**
 * Formats peer merge results (`MergeResult`) as a Markdown table, so `run-peers.ts` and the
 * memory benchmark print the same columns. Each row's ratio compares its merge time with the
 * Automerge row of the same workload (the first row whose system starts with `automerge`).
 *
 * Invariant: pure formatting; it never reruns or adjusts a measurement.
 */
import type { MergeResult, MergeWorkload } from './merge-workload.js'

/** A result row, optionally marked as extrapolated rather than measured. */
export interface MergeRow {
  result: MergeResult
  /** Shown in place of "measured", e.g. "extrapolated ×25 from 2,000 writes". */
  extrapolated?: string
}

const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 })
const decimal = new Intl.NumberFormat('en-US', { maximumFractionDigits: 1, minimumFractionDigits: 1 })

function sameWorkload(left: MergeWorkload, right: MergeWorkload): boolean {
  return (
    left.records === right.records &&
    left.writesPerReplica === right.writesPerReplica &&
    left.fields === right.fields &&
    left.batchSize === right.batchSize &&
    left.seed === right.seed
  )
}

/** Merge time of `row` as a multiple of Automerge's on the same workload ("3.2x faster"). */
export function mergeRatio(row: MergeResult, rows: readonly MergeRow[]): string {
  const automerge = rows.find(
    (other) => other.result.system.startsWith('automerge') && sameWorkload(other.result.workload, row.workload),
  )
  if (!automerge || automerge.result === row) return ''
  const ratio = automerge.result.mergeMs / row.mergeMs
  return ratio >= 1 ? `${decimal.format(ratio)}x faster` : `${decimal.format(1 / ratio)}x slower`
}

function describeCorrectness(result: MergeResult): string {
  if (!result.converged) return '**NO**'
  if (result.matchesModel === null) return 'yes (no model)'
  return result.matchesModel ? 'yes (= model)' : 'yes (**≠ model**)'
}

export function formatMergeTable(rows: readonly MergeRow[]): string {
  const lines = [
    '| system | batch | writes/replica | write A ms | write B ms | µs/write | merge ms | merge vs Automerge | bytes exchanged | converged | digest |',
    '|---|---:|---:|---:|---:|---:|---:|---|---:|---|---|',
  ]
  for (const row of rows) {
    const { result } = row
    const writes = result.workload.writesPerReplica
    const perWriteUs = ((result.writeMs.a + result.writeMs.b) / (2 * writes)) * 1000
    const label = row.extrapolated ? `${result.system} *(${row.extrapolated})*` : result.system
    lines.push(
      `| ${label} | ${integer.format(result.workload.batchSize)} | ${integer.format(writes)} | ` +
        `${integer.format(result.writeMs.a)} | ${integer.format(result.writeMs.b)} | ` +
        `${decimal.format(perWriteUs)} | ${integer.format(result.mergeMs)} | ` +
        `${mergeRatio(result, rows)} | ${integer.format(result.bytesExchanged)} | ` +
        (row.extrapolated
          ? '— | — |'
          : `${describeCorrectness(result)} | ${result.finalStateDigest.slice(0, 12)} |`),
    )
  }
  return lines.join('\n')
}

/** One line per row with where the merge time went, e.g. `encode 120 · applyAtB 2,700 …`. */
export function formatMergePhases(rows: readonly MergeRow[]): string {
  return rows
    .filter((row) => !row.extrapolated)
    .map(({ result }) => {
      const phases = Object.entries(result.mergePhasesMs)
        .map(([name, ms]) => `${name} ${integer.format(ms)}`)
        .join(' · ')
      return `- ${result.system}, batch ${result.workload.batchSize}, ` +
        `${integer.format(result.workload.writesPerReplica)} writes: ${phases} ms; ` +
        `final state ${integer.format(result.finalStateBytes)} B; ${result.notes}`
    })
    .join('\n')
}

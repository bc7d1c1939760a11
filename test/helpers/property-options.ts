/**
 * fast-check options for the long-running properties: `RUNS`, `SEED` and `FCPATH` from the
 * environment override the defaults (long runs, replays of one counterexample), and shrinking
 * stops at four fifths of the test's limit, so a failure whose shrinking is slow is still
 * reported with the smallest counterexample so far (with SEED=5, the bundle-merge shrink of a
 * 24-step history outlasted the limit and the test failed as a bare timeout).
 */
import type fc from 'fast-check'

export const runsOf = (defaultRuns: number): number => Number(process.env.RUNS ?? defaultRuns)

/** Vitest's limit for a property: 60 s, or `perRun` ms a run when RUNS asks for more. */
export const timeoutFor = (defaultRuns: number, perRun: number): number => Math.max(60_000, runsOf(defaultRuns) * perRun)

export function checkOptions(defaultRuns: number, perRun: number): fc.Parameters<unknown> {
  const seed = process.env.SEED
  return {
    numRuns: runsOf(defaultRuns),
    interruptAfterTimeLimit: Math.floor(timeoutFor(defaultRuns, perRun) * 0.8),
    markInterruptAsFailure: true,
    ...(seed !== undefined && seed !== '' ? { seed: Number(seed) } : {}),
    ...(process.env.FCPATH ? { path: process.env.FCPATH, endOnFailure: true } : {}),
  }
}

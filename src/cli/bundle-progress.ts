/**
 * What `cairn import`, `export` and `validate` tell the person watching a long run: the phase
 * and how far it has got (`import: writing 2000/5000 records (40%)`), on stderr, at most once
 * per interval, the way `cairn sync` reports a catch-up (sync-report.ts).
 *
 * Invariants: nothing is printed during the first interval (unless it is 0), so a quick run's stderr stays empty
 * (and a failing one's stays one line); a phase that printed a line also prints its completion,
 * so a long run never ends on a stale figure. Every report is a whole line, never a carriage-
 * return redraw, so a pipe or a log file reads it as well as a terminal does.
 */
import { SystemClock, type Clock } from '../index.js'
import type { CliContext, TextSink } from './command.js'
import { usageError } from './operand-args.js'

/** At most one line per phase change or per this many ms, as `cairn sync`. */
export const PROGRESS_INTERVAL_MS = 1000

/** The environment variable that sets the interval (0: a line at every step). */
export const PROGRESS_ENV = 'CAIRN_PROGRESS_MS'

/**
 * How often long commands report: CAIRN_PROGRESS_MS when set (whole ms, 0 for every step, as a
 * log that wants each batch or a script stopping a run at a known point does), else the default.
 * @throws InputError BAD_ENV (exit 2) naming the variable when it is not a whole number
 */
export function progressIntervalMs(context: CliContext): number {
  const given = context.env[PROGRESS_ENV]
  if (given === undefined || given === '') return PROGRESS_INTERVAL_MS
  if (!/^\d{1,9}$/.test(given)) throw usageError('BAD_ENV', `${PROGRESS_ENV} must be a whole number of milliseconds, got ${JSON.stringify(given.slice(0, 40))}`, { field: PROGRESS_ENV })
  return Number(given)
}

export type ProgressUnit = 'records' | 'events' | 'bytes'

/** A step of a long run, as the library's `onProgress` callbacks name it. */
export interface ProgressPhase {
  /** What is happening: "checking", "writing". */
  readonly label: string
  readonly unit: ProgressUnit
}

const MIB = 1024 * 1024

function amount(done: number, total: number, unit: ProgressUnit): string {
  if (unit !== 'bytes') return `${done}/${total} ${unit}`
  return total < MIB ? `${done}/${total} bytes` : `${(done / MIB).toFixed(1)}/${(total / MIB).toFixed(1)} MiB`
}

export class BundleProgress {
  private lastReportMs: number
  /** Per phase label: the `done` last printed. */
  private readonly printed = new Map<string, number>()

  /** @param command the command name that starts each line: "import" */
  constructor(
    private readonly command: string,
    private readonly sink: TextSink,
    private readonly clock: Clock,
    private readonly intervalMs = PROGRESS_INTERVAL_MS,
  ) {
    this.lastReportMs = clock.nowMs()
  }

  /** A reporter for `context`: its stderr, its clock (the system clock when it has none) and its interval (progressIntervalMs). */
  static for(command: string, context: CliContext): BundleProgress {
    return new BundleProgress(command, context.stderr, context.clock ?? new SystemClock(), progressIntervalMs(context))
  }

  /** Called from the library's `onProgress`: prints when an interval has passed, or to close a phase it reported. */
  update(phase: ProgressPhase, done: number, total: number): void {
    const last = this.printed.get(phase.label)
    const isComplete = done >= total
    const nowMs = this.clock.nowMs()
    const isDue = nowMs - this.lastReportMs >= this.intervalMs
    if (!(isDue || (isComplete && last !== undefined)) || last === done) return
    this.lastReportMs = nowMs
    this.printed.set(phase.label, done)
    const percent = total > 0 ? ` (${Math.floor((Math.min(done, total) / total) * 100)}%)` : ''
    void this.sink.write(`${this.command}: ${phase.label} ${amount(done, total, phase.unit)}${percent}\n`)
  }

  /** The library's `(done, total)` callback for one phase. */
  phase(phase: ProgressPhase): (done: number, total: number) => void {
    return (done, total) => this.update(phase, done, total)
  }
}

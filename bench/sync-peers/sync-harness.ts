/**
 * Small helpers the peer sync runners share: temp directories, directory sizes, waiting for a
 * condition with a deadline, and the timing of one measured phase.
 *
 * Invariant: `waitFor` checks its condition on every notification *and* on a short poll, so a
 * missed event can delay a measurement by at most `pollMs`, never hang it.
 */
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { packageVersion } from '../peers/merge-workload.js'

/** A fresh directory under the OS temp dir, e.g. `/tmp/cairn-sync-automerge-repo-XXXXXX`. */
export function makeTempRoot(label: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `cairn-sync-${label}-`))
}

export async function removeTempRoot(root: string): Promise<void> {
  await rm(root, { recursive: true, force: true })
}

/** Total size of the regular files under `dir` (0 when it does not exist). */
export async function directoryBytes(dir: string): Promise<number> {
  let total = 0
  let entries
  try {
    entries = await readdir(dir, { withFileTypes: true, recursive: true })
  } catch {
    return 0
  }
  for (const entry of entries) {
    if (!entry.isFile()) continue
    const path = join(entry.parentPath, entry.name)
    total += (await stat(path).catch(() => ({ size: 0 }))).size
  }
  return total
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

export interface WaitOptions {
  timeoutMs: number
  /** What is awaited, for the timeout message. */
  label: string
  /** Re-check at least this often, in case a notification is missed (default 5 ms). */
  pollMs?: number
  /** Subscribes the re-check to the system's events; returns an unsubscribe function. */
  subscribe?: (notify: () => void) => () => void
}

/**
 * Resolves with `performance.now()` at the first moment `check()` returned true.
 * @throws Error after `timeoutMs`.
 */
export function waitFor(check: () => boolean, options: WaitOptions): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    let isDone = false
    let unsubscribe: (() => void) | undefined
    const finish = (error?: Error) => {
      if (isDone) return
      isDone = true
      clearInterval(poll)
      clearTimeout(deadline)
      unsubscribe?.()
      if (error) reject(error)
      else resolve(performance.now())
    }
    const attempt = () => {
      if (isDone) return
      try {
        if (check()) finish()
      } catch (error) {
        finish(error instanceof Error ? error : new Error(String(error)))
      }
    }
    const poll = setInterval(attempt, options.pollMs ?? 5)
    const deadline = setTimeout(
      () => finish(new Error(`timed out after ${options.timeoutMs} ms waiting for ${options.label}`)),
      options.timeoutMs,
    )
    unsubscribe = options.subscribe?.(attempt)
    attempt()
  })
}

/** Marks phases of one measurement: `mark('held')` records ms since `start`. */
export class PhaseClock {
  readonly startMs = performance.now()
  readonly phasesMs: Record<string, number> = {}

  constructor(private readonly prefix: string) {}

  mark(name: string, atMs: number = performance.now()): number {
    const elapsed = atMs - this.startMs
    this.phasesMs[`${this.prefix}.${name}`] = elapsed
    return elapsed
  }

  /** A moment reported by another process (epoch ms) as ms since `start`. */
  markEpoch(name: string, epochMs: number): number {
    return this.mark(name, epochMs - performance.timeOrigin)
  }
}

/**
 * A dependency's installed version: from its exported `package.json` when it has one (some,
 * like `@y/websocket-server`, export no main entry to resolve), else as `packageVersion` finds it.
 */
export function installedVersion(name: string): string {
  try {
    return (createRequire(import.meta.url)(`${name}/package.json`) as { version: string }).version
  } catch {
    return packageVersion(name)
  }
}

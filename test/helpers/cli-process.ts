/**
 * Long-running CLI processes for tests (`cairn serve`, `cairn sync --live`): start one, wait
 * for a line of its output, send it a signal, collect its exit. Also `cairn` run in-process
 * (faster than spawning tsx) and a port nothing listens on.
 *
 * Every process started here is killed when the test file ends, whatever the tests did, so a
 * failing test never leaves a relay running.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'
import path from 'node:path'
import { afterAll } from 'vitest'
import { runCli as runInProcess } from '../../src/cli/index.js'
import { repoRoot, tsxLoader, type ProcessResult } from './run-cli.js'
import type { Clock } from '../../src/log/clock.js'

const running = new Set<ChildProcess>()

afterAll(() => {
  for (const child of running) child.kill('SIGKILL')
  running.clear()
})

export interface RunningCli {
  /** Everything written so far. */
  readonly output: { stdout: string; stderr: string }
  /** Resolves with the first match of `pattern` in stdout (or stderr), waiting up to `timeoutMs`. */
  waitFor(pattern: RegExp, stream?: 'stdout' | 'stderr', timeoutMs?: number): Promise<RegExpExecArray>
  /** Sends `signal` and resolves when the process has exited. */
  stop(signal?: NodeJS.Signals): Promise<ProcessResult>
  readonly exited: Promise<ProcessResult>
}

/** Starts `cairn ...args` as a child process. */
export function startCli(args: readonly string[], options: { cwd?: string; env?: Readonly<Record<string, string>> } = {}): RunningCli {
  const env: Record<string, string | undefined> = { ...process.env, ...options.env }
  if (options.env?.CAIRN_DEBUG === undefined) delete env.CAIRN_DEBUG
  const child = spawn(process.execPath, ['--import', tsxLoader, path.join(repoRoot, 'src/cli/main.ts'), ...args], {
    cwd: options.cwd ?? repoRoot,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  running.add(child)
  const output = { stdout: '', stderr: '' }
  const waiters = new Set<() => void>()
  const changed = (): void => {
    for (const waiter of waiters) waiter()
  }
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => { output.stdout += chunk; changed() })
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { output.stderr += chunk; changed() })
  const exited = new Promise<ProcessResult>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code) => {
      running.delete(child)
      changed()
      resolve({ code, ...output })
    })
  })
  return {
    output,
    exited,
    waitFor(pattern, stream = 'stdout', timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const match = pattern.exec(output[stream])
          if (match) {
            finish()
            resolve(match)
          } else if (child.exitCode !== null || child.signalCode !== null) {
            finish()
            reject(new Error(`cairn ${args.join(' ')} exited (${child.exitCode ?? child.signalCode}) before printing ${pattern}; stdout: ${output.stdout} stderr: ${output.stderr}`))
          }
        }
        const timer = setTimeout(() => {
          finish()
          reject(new Error(`cairn ${args.join(' ')} did not print ${pattern} within ${timeoutMs} ms; stdout: ${output.stdout} stderr: ${output.stderr}`))
        }, timeoutMs)
        const finish = (): void => {
          clearTimeout(timer)
          waiters.delete(check)
        }
        waiters.add(check)
        check()
      })
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      return exited
    },
  }
}

export interface InProcessOptions {
  readonly cwd?: string
  readonly env?: Readonly<Record<string, string>>
  readonly signal?: AbortSignal
  /** The CLI's clock (progress reports are due by it); the system clock when absent. */
  readonly clock?: Clock
  /** Sees each piece of text written to stderr, as it is written. */
  readonly onStderr?: (text: string) => void
}

/** Runs `cairn ...args` in this process (the whole entry point but the process adapter). */
export async function runCliInProcess(args: readonly string[], options: InProcessOptions = {}): Promise<ProcessResult> {
  let stdout = ''
  let stderr = ''
  const code = await runInProcess(args, {
    cwd: options.cwd ?? process.cwd(),
    env: options.env ?? {},
    stdout: { write: async (text) => { stdout += text } },
    stderr: { write: async (text) => { stderr += text; options.onStderr?.(text) } },
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  })
  return { code, stdout, stderr }
}

/** A loopback port nothing listens on (it was free a moment ago). */
export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  await new Promise<void>((resolve) => server.close(() => resolve()))
  if (address === null || typeof address === 'string') throw new Error('no port')
  return address.port
}

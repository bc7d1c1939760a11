/**
 * The parent's side of a relay child process (`relay-child.ts`): starts a system's relay module
 * in its own Node process (TypeScript through tsx, as the runner itself), and asks it whether
 * it holds a target, for its memory and traffic, and to stop.
 *
 * Invariant: every started child is either stopped (`stop`, which flushes its storage) or
 * killed (`kill`); a request never waits longer than its timeout.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { HoldsReport } from './relay-contract.js'
import type { RelayAnswer, RelayProcessStats, RelayRequest } from './relay-child.js'

const CHILD_PATH = fileURLToPath(new URL('./relay-child.ts', import.meta.url))
const START_TIMEOUT_MS = 60_000
const REQUEST_TIMEOUT_MS = 30_000

export class RelayProcess {
  private nextId = 1
  private readonly pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>()
  private exited = false

  private constructor(
    private readonly child: ChildProcess,
    /** `ws://127.0.0.1:<port>` */
    readonly url: string,
  ) {
    child.on('message', (message: RelayAnswer) => {
      if (message.type !== 'answer' && message.type !== 'failure') return
      const waiter = this.pending.get(message.id)
      if (!waiter) return
      this.pending.delete(message.id)
      if (message.type === 'answer') waiter.resolve(message.value)
      else waiter.reject(new Error(`relay: ${message.message}`))
    })
    child.on('exit', (code) => {
      this.exited = true
      for (const waiter of this.pending.values()) waiter.reject(new Error(`relay process exited (${code})`))
      this.pending.clear()
    })
  }

  /**
   * Starts `relayModule` (an absolute path to a module exporting `createRelay`) on `dataDir`.
   * @throws Error when the child fails to start or does not report ready in time.
   */
  static async start(relayModule: string, dataDir: string): Promise<RelayProcess> {
    const child = fork(CHILD_PATH, [relayModule, dataDir], {
      execArgv: ['--import', 'tsx', ...(process.env.SYNC_RELAY_NODE_ARGS ?? '').split(' ').filter(Boolean)],
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL')
        reject(new Error(`relay ${relayModule} did not start within ${START_TIMEOUT_MS} ms`))
      }, START_TIMEOUT_MS)
      const onMessage = (message: RelayAnswer) => {
        if (message.type === 'ready') {
          clearTimeout(timer)
          child.off('message', onMessage)
          resolve(message.url)
        } else if (message.type === 'startup-failure') {
          clearTimeout(timer)
          reject(new Error(`relay ${relayModule} failed to start: ${message.message}`))
        }
      }
      child.on('message', onMessage)
      child.once('exit', (code) => {
        clearTimeout(timer)
        reject(new Error(`relay ${relayModule} exited during startup (${code})`))
      })
    })
    return new RelayProcess(child, url)
  }

  get pid(): number | undefined {
    return this.child.pid
  }

  private request<T>(method: RelayRequest['method'], args: unknown[], timeoutMs = REQUEST_TIMEOUT_MS): Promise<T> {
    if (this.exited) return Promise.reject(new Error('relay process has exited'))
    const id = this.nextId++
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id)
        reject(new Error(`relay request ${method} timed out after ${timeoutMs} ms`))
      }, timeoutMs)
      this.pending.set(id, {
        resolve: (value) => {
          clearTimeout(timer)
          resolve(value as T)
        },
        reject: (error) => {
          clearTimeout(timer)
          reject(error)
        },
      })
      this.child.send({ id, method, args } satisfies RelayRequest)
    })
  }

  /** Resolves when the relay holds `target` and has persisted it (see `BenchRelay.holds`). */
  holds(target: unknown, timeoutMs: number): Promise<HoldsReport> {
    return this.request('holds', [target, timeoutMs], timeoutMs + 5_000)
  }

  stats(): Promise<RelayProcessStats> {
    return this.request('stats', [])
  }

  /** Starts a new peak-RSS window at the current resident set. */
  resetPeak(): Promise<number> {
    return this.request('reset-peak', [])
  }

  /** Flushes and stops the relay, then waits for the process to exit. */
  async stop(): Promise<void> {
    if (this.exited) return
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()))
    await this.request('stop', [], 60_000)
    await exited
  }

  /** Ends the child at once (cleanup after a failure). */
  kill(): void {
    if (!this.exited) this.child.kill('SIGKILL')
  }
}

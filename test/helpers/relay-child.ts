/**
 * Starts test/helpers/relay-process.ts as a child process (node --import tsx) on a directory and
 * port, and waits for the JSON line it prints: its URL and what its store held at start. The
 * caller kills it (SIGKILL, to crash it) or stops it (SIGTERM, clean); either way `exited`
 * resolves. Only the child started here is ever signalled, by its pid.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { SpaceReport } from './relay-process.js'

const SCRIPT = fileURLToPath(new URL('./relay-process.ts', import.meta.url))
const ROOT = path.resolve(path.dirname(SCRIPT), '..', '..')

export interface RelayChild {
  readonly url: string
  readonly port: number
  readonly spaces: Record<string, SpaceReport>
  readonly exited: Promise<number | null>
  kill(signal: 'SIGKILL' | 'SIGTERM'): Promise<number | null>
}

export function spawnRelay(dir: string, port: number, spaces: readonly string[] = [], timeoutMs = 20_000): Promise<RelayChild> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', SCRIPT, dir, String(port), ...spaces], {
    cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'],
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  return new Promise((resolve, reject) => {
    let stdout = ''
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`relay process did not start within ${timeoutMs} ms: ${stderr}`))
    }, timeoutMs)
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`relay process exited with ${code} before starting: ${stderr}`))
    })
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      const line = stdout.split('\n')[0]
      if (!stdout.includes('\n') || line === undefined) return
      clearTimeout(timer)
      const started = JSON.parse(line) as { url: string; spaces: Record<string, SpaceReport> }
      resolve({
        url: started.url,
        port: Number(new URL(started.url).port),
        spaces: started.spaces,
        exited,
        kill(signal) {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal)
          return exited
        },
      })
    })
  })
}

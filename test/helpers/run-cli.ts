/**
 * Runs a TypeScript entry point of this repo (the `cairn` CLI, the demo) as a real child
 * process, through tsx, and collects its exit code and output. The tsx loader is passed by
 * absolute URL so the child can run from any working directory (the CLI's default home is
 * relative to cwd). Each call waits for its child to exit, so nothing outlives a test.
 */
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
export const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href

export interface ProcessResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

export interface RunOptions {
  readonly cwd?: string
  readonly env?: Readonly<Record<string, string>>
}

/** Runs `node --import tsx <script> ...args` from `options.cwd` (default: the repo root). */
export function runScript(script: string, args: readonly string[], options: RunOptions = {}): Promise<ProcessResult> {
  const env: Record<string, string | undefined> = { ...process.env, ...options.env }
  // The parent may itself run with CAIRN_DEBUG; children start clean unless a test sets it.
  if (options.env?.CAIRN_DEBUG === undefined) delete env.CAIRN_DEBUG
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', tsxLoader, path.join(repoRoot, script), ...args], {
      cwd: options.cwd ?? repoRoot,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

/** Runs `cairn ...args`. */
export function runCli(args: readonly string[], options: RunOptions = {}): Promise<ProcessResult> {
  return runScript('src/cli/main.ts', args, options)
}

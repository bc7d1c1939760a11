/**
 * A stop (Ctrl-C, SIGTERM, or the context's AbortSignal) during a long `cairn import`: the
 * import ends between two written batches with one INTERRUPTED line saying how far it got and
 * exit 1, what was written stays, and running the same import again finishes it.
 *
 * The in-process run aborts when the first write-phase progress line is printed (a clock that
 * makes every report due), so where it stops never depends on the machine's speed; the real
 * executable, told to report every step (CAIRN_PROGRESS_MS=0), gets a SIGINT once its progress
 * shows it writing. With the default interval its first line came a second in, when a fast
 * machine had written 6,000 of the 7,000 records, and the import ended before the signal.
 */
import path from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { Memory, type Clock } from '../../src/index.js'
import { tempDir } from '../helpers/cli-home.js'
import { runCliInProcess, startCli, type InProcessOptions } from '../helpers/cli-process.js'
import type { ProcessResult } from '../helpers/run-cli.js'

/** Enough records for several write batches (MERGE_BATCH is 2000), and seconds of writing. */
const RECORDS = 7000
const INTERRUPTED = new RegExp(`^cairn: INTERRUPTED: import stopped after (\\d+) of ${RECORDS} records; what was written is kept, run the same import again to finish$`)

/** Runs `cairn <args>` in this process, by default with a clock that never makes a report due. */
function run(args: readonly string[], options: InProcessOptions = {}): Promise<ProcessResult> {
  const clock: Clock = options.clock ?? { nowMs: () => 0 }
  return runCliInProcess(args, { ...options, clock })
}

async function newHome(): Promise<string> {
  const dir = path.join(await tempDir(), 'home')
  expect((await run(['init', '--dir', dir])).code).toBe(0)
  return dir
}

/** Imports `bundle` again to the end; returns what that wrote and found held. */
async function finish(bundle: string, dir: string): Promise<{ imported: Record<string, number>; unchanged: number }> {
  const result = await run(['import', bundle, '--dir', dir, '--json'])
  expect(result.code).toBe(0)
  return JSON.parse(result.stdout) as { imported: Record<string, number>; unchanged: number }
}

let bundle: string
beforeAll(async () => {
  const memory = await Memory.open({ path: path.join(await tempDir(), 'source-home') })
  try {
    await memory.rememberMany(Array.from({ length: RECORDS }, (_, i) => ({ kind: 'episode', details: `generated note ${i}` })))
    bundle = path.join(await tempDir(), 'big.mem')
    await memory.export(bundle)
  } finally {
    await memory.close()
  }
})

describe('stopping a long import', () => {
  it('ends between batches with one INTERRUPTED line and exit 1; the same import again finishes it', async () => {
    const dir = await newHome()
    const controller = new AbortController()
    let nowMs = 0
    const result = await run(['import', bundle, '--dir', dir], {
      clock: { nowMs: () => (nowMs += 1000) },
      signal: controller.signal,
      onStderr: (text) => { if (text.startsWith('import: writing ')) controller.abort() },
    })
    expect(result.code).toBe(1)
    expect(result.stdout).toBe('')
    const lines = result.stderr.trimEnd().split('\n')
    // The abort came with the first report (before any write): the first batch is written whole.
    expect(lines.at(-1)).toMatch(INTERRUPTED)
    expect(INTERRUPTED.exec(lines.at(-1) as string)?.[1]).toBe('2000')
    expect(lines.filter((line) => line.startsWith('cairn: '))).toHaveLength(1)
    expect(await finish(bundle, dir)).toMatchObject({ imported: { episode: RECORDS - 2000 }, unchanged: 2000 })
  })

  it('reaches the process: Ctrl-C while writing exits 1 saying how far it got, not 130 in silence', async () => {
    const dir = await newHome()
    const child = startCli(['import', bundle, '--dir', dir], { env: { CAIRN_PROGRESS_MS: '0' } })
    await child.waitFor(/^import: writing /m, 'stderr')
    const result = await child.stop('SIGINT')
    expect(result.code).toBe(1)
    const last = result.stderr.trimEnd().split('\n').at(-1) as string
    expect(last).toMatch(INTERRUPTED)
    const kept = Number(INTERRUPTED.exec(last)?.[1])
    expect(kept).toBeGreaterThan(0)
    expect(kept).toBeLessThan(RECORDS)
    expect(await finish(bundle, dir)).toMatchObject({ imported: { episode: RECORDS - kept }, unchanged: kept })
  })

  it('CAIRN_PROGRESS_MS sets how often progress is reported; a value that is no whole number is refused (exit 2)', async () => {
    const dir = await newHome()
    const every = await run(['import', bundle, '--dir', dir], { env: { CAIRN_PROGRESS_MS: '0' } })
    expect(every.code).toBe(0)
    // One line per written batch and the start: 0, 2000, 4000, 6000, 7000.
    expect(every.stderr.split('\n').filter((line) => line.startsWith('import: writing '))).toHaveLength(5)
    for (const value of ['soon', '-5', '1.5']) {
      const refused = await run(['import', bundle, '--dir', dir], { env: { CAIRN_PROGRESS_MS: value } })
      expect(refused.code).toBe(2)
      expect(refused.stderr).toMatch(/^cairn: BAD_ENV: CAIRN_PROGRESS_MS must be a whole number of milliseconds/)
    }
    // A sync reads it before it connects: refused with a client running, the process never exited
    // (the client kept retrying); it must be gone well before a sync's 30 s timeout.
    const child = startCli(['sync', 'ws://127.0.0.1:9', '--dir', dir], { env: { CAIRN_PROGRESS_MS: 'soon' } })
    const sync = await Promise.race([child.exited, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 10_000))])
    if (sync === undefined) await child.stop('SIGKILL')
    expect(sync?.code).toBe(2)
    expect(sync?.stderr).toMatch(/^cairn: BAD_ENV: CAIRN_PROGRESS_MS/)
  })
})

/**
 * Crash safety of the projection: a child process (test/helpers/remember-loop.ts) writes
 * records to an on-disk Memory and is killed with SIGKILL at a random moment. The projection is
 * written after the log, so a crash can leave it behind its log (it catches up on open), never
 * torn: reopening must show every record the child saw acknowledged, readable and searchable,
 * and the projection must equal a rebuild from the log. The cycle repeats on the same directory.
 *
 * CAIRN_CRASH_SEED=<seed> replays the same kill points (counted in acknowledgements plus a
 * delay), though not the exact instruction the kill lands on.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { Memory } from '../../src/memory/index.js'
import { seededRandom, seedFromEnv } from '../helpers/seeded-random.js'

const REPO_ROOT = path.resolve(import.meta.dirname, '../..')
const CHILD = 'test/helpers/remember-loop.ts'
const CYCLES = 4
const SEED = seedFromEnv('CAIRN_CRASH_SEED')

const dirs: string[] = []
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true })
})

/** Runs the child until `killAfterAcks` acknowledgements, waits `killDelayMs`, kills it; returns the acknowledged ids. */
async function runAndKill(dir: string, childSeed: number, killAfterAcks: number, killDelayMs: number): Promise<string[]> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, dir, String(childSeed)], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
  let buffered = ''
  let stderr = ''
  let acks = 0
  let killed = false
  const ids: string[] = []
  let killTimer: NodeJS.Timeout | undefined
  const kill = (): void => {
    killed = true
    child.kill('SIGKILL')
  }
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (chunk: string) => {
    buffered += chunk
    let newline: number
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const entry = JSON.parse(buffered.slice(0, newline)) as { type: 'ready' } | { type: 'ack'; ids: string[] }
      buffered = buffered.slice(newline + 1)
      if (entry.type !== 'ack') continue
      ids.push(...entry.ids)
      if (++acks === killAfterAcks) killTimer = setTimeout(kill, killDelayMs)
    }
  })
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (chunk: string) => {
    stderr += chunk
  })
  const watchdog = setTimeout(kill, 30_000)
  const exit = await new Promise<{ signal: NodeJS.Signals | null; code: number | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })))
  clearTimeout(watchdog)
  clearTimeout(killTimer)
  if (!killed || exit.signal !== 'SIGKILL') throw new Error(`remember-loop ended on its own (code ${exit.code}; CAIRN_CRASH_SEED=${SEED}): ${stderr}`)
  return ids
}

it(`shows every acknowledged record after ${CYCLES} SIGKILLs, and equals a rebuild from the log`, async () => {
  const random = seededRandom(SEED)
  const dir = await mkdtemp(path.join(tmpdir(), 'cairn-crash-projection-'))
  dirs.push(dir)
  const acknowledged: string[] = []
  for (let cycle = 0; cycle < CYCLES; cycle++) {
    const killAfterAcks = 5 + Math.floor(random() * 40)
    const killDelayMs = Math.floor(random() * 30)
    acknowledged.push(...await runAndKill(dir, Math.floor(random() * 2 ** 31), killAfterAcks, killDelayMs))
    const where = `cycle ${cycle}, CAIRN_CRASH_SEED=${SEED}`

    const memory = await Memory.open({ path: dir })
    try {
      expect((await memory.log.verify()).ok, where).toBe(true)
      expect(memory.projectedCount, where).toBe(memory.log.appliedCount)
      const missing: string[] = []
      for (const id of acknowledged) if (!(await memory.get(id))) missing.push(id)
      expect(missing, `acknowledged records missing after the crash (${where})`).toEqual([])
      const last = await memory.get(acknowledged[acknowledged.length - 1] as string)
      const hits = await memory.search(String(last?.summary).split(' ')[0] as string, { limit: 5 })
      expect(hits.map((hit) => hit.record.id), where).toEqual([last?.id])
      const digest = await memory.digest()
      await memory.rebuild()
      expect(await memory.digest(), `projection after the crash differs from a rebuild (${where})`).toBe(digest)
    } finally {
      await memory.close()
    }
  }
}, 120_000)

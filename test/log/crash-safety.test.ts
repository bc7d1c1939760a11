/**
 * Crash safety of the disk store: a child process (test/helpers/append-loop.ts) appends in a
 * loop, single appends and batches of random size, and is killed with SIGKILL at a random
 * moment; the store then reopens in this process, verifies, and must hold every append the
 * child saw return, on one contiguous chain. The cycle repeats on the same directory, the child
 * resuming the same chain each time, every other cycle with a journal that starts a new file
 * every 16 KiB (so kills land across its files and their removal). A batch is atomic, so the store holds either none or all
 * of the call that was in flight when the child died.
 *
 * Every failure message names its seed; CAIRN_CRASH_SEED=<seed> npx vitest run <this file> replays
 * the same kill points (counted in acknowledgements plus a delay) and the same append sizes, though
 * not the exact instruction the kill lands on, which depends on timing.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { openHome } from '../../src/log/home-directory.js'
import { seededRandom, seedFromEnv } from '../helpers/seeded-random.js'

const REPO_ROOT = path.resolve(import.meta.dirname, '../..')
const CHILD = 'test/helpers/append-loop.ts'
const CYCLES = 6
const SMALL_JOURNAL_FILE_BYTES = 16 * 1024
const SEED = seedFromEnv('CAIRN_CRASH_SEED')

interface Ack {
  readonly seq: number
  readonly id: string
}

interface Cycle {
  readonly space: string
  readonly author: string
  /** The author's tip seq when the child opened the store. */
  readonly openedAtSeq: number
  readonly acks: Ack[]
  /** Events in the call that had begun and not been acknowledged when the child died. */
  readonly inFlight: number
}

type ChildLine =
  | { type: 'ready'; space: string; author: string; seq: number }
  | { type: 'begin'; count: number }
  | { type: 'ack'; events: [number, string][] }

/**
 * Runs the child until `killAfterAcks` acknowledgements have arrived, waits `killDelayMs`, kills
 * it with SIGKILL, and returns what it acknowledged. Only complete lines count: a line cut off
 * by the kill acknowledges nothing.
 */
async function runAndKill(dir: string, childSeed: number, killAfterAcks: number, killDelayMs: number, rotateBytes?: number): Promise<Cycle> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, dir, String(childSeed), ...(rotateBytes ? [String(rotateBytes)] : [])], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let buffered = ''
  let stderr = ''
  let ready: Extract<ChildLine, { type: 'ready' }> | undefined
  const acks: Ack[] = []
  let inFlight = 0
  let ackCalls = 0
  let killTimer: NodeJS.Timeout | undefined
  let killed = false

  const kill = (): void => {
    killed = true
    child.kill('SIGKILL')
  }
  const handle = (entry: ChildLine): void => {
    if (entry.type === 'ready') ready = entry
    else if (entry.type === 'begin') inFlight = entry.count
    else {
      for (const [seq, id] of entry.events) acks.push({ seq, id })
      inFlight = 0
      ackCalls++
      if (ackCalls === killAfterAcks) killTimer = setTimeout(kill, killDelayMs)
    }
  }
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (chunk: string) => {
    buffered += chunk
    let newline: number
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const text = buffered.slice(0, newline)
      buffered = buffered.slice(newline + 1)
      handle(JSON.parse(text) as ChildLine)
    }
  })
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (chunk: string) => {
    stderr += chunk
  })
  // A child stuck before its first acknowledgement must not hang the test.
  const watchdog = setTimeout(kill, 20_000)
  const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal }))
  })
  clearTimeout(watchdog)
  clearTimeout(killTimer)
  if (!killed || exit.signal !== 'SIGKILL' || !ready) {
    throw new Error(`append-loop ended on its own (code ${exit.code}, signal ${exit.signal}; CAIRN_CRASH_SEED=${SEED}): ${stderr}`)
  }
  return { space: ready.space, author: ready.author, openedAtSeq: ready.seq, acks, inFlight }
}

/**
 * Reopens the home and lists everything wrong with it given what was acknowledged: an empty
 * list means the store survived. Returns the author's tip seq for the next cycle.
 */
async function checkStore(dir: string, acknowledged: readonly Ack[], last: Cycle): Promise<{ problems: string[]; tipSeq: number }> {
  const problems: string[] = []
  const home = await openHome(dir)
  try {
    const { log } = home
    const author = last.author
    expect(log.space).toBe(last.space)

    const report = await log.verify()
    if (!report.ok) problems.push(`verify: ${JSON.stringify(report.problems.slice(0, 3))}`)
    if (report.heldEvents !== 0) problems.push(`verify: ${report.heldEvents} held events`)

    // Every acknowledged append is there, with the seq it was acknowledged at.
    for (const ack of acknowledged) {
      const event = await log.get(ack.id)
      if (!event) {
        problems.push(`acknowledged event ${ack.id} (seq ${ack.seq}) is missing`)
        continue
      }
      if (event.header.seq !== ack.seq || event.header.author !== author) {
        problems.push(`event ${ack.id} is at ${event.header.author}:${event.header.seq}, acknowledged at seq ${ack.seq}`)
      }
      if (event.bodyState !== 'present') problems.push(`event ${ack.id} lost its body (${event.bodyState})`)
      const bySeq = await log.getBySeq(author, ack.seq)
      if (bySeq?.id !== ack.id) problems.push(`seq ${ack.seq} reads as ${bySeq?.id}, acknowledged as ${ack.id}`)
    }

    // The chain is contiguous from the genesis (seq 1, no prev) to the tip, each prev linking.
    const tipSeq = log.versionVector()[author] ?? 0
    let expectedSeq = 1
    let previousId: string | undefined
    for await (const event of log.range(author)) {
      if (event.header.seq !== expectedSeq) problems.push(`chain jumps from seq ${expectedSeq - 1} to ${event.header.seq}`)
      if (event.header.prev !== previousId) problems.push(`seq ${event.header.seq} has prev ${event.header.prev}, expected ${previousId}`)
      previousId = event.id
      expectedSeq = event.header.seq + 1
    }
    if (expectedSeq - 1 !== tipSeq) problems.push(`chain ends at seq ${expectedSeq - 1}, version vector says ${tipSeq}`)
    if (report.events !== tipSeq) problems.push(`verify counted ${report.events} events, the chain has ${tipSeq}`)
    const heads = log.heads()
    if (heads.length !== 1 || heads[0] !== previousId) problems.push(`heads ${JSON.stringify(heads)} are not the chain tip ${previousId}`)

    // Apply order holds each event once, at local positions 1..n.
    let local = 0
    for await (const event of log.readApplied()) {
      local++
      if (event.local !== local) problems.push(`applied event ${event.id} at local ${event.local}, expected ${local}`)
    }
    if (local !== tipSeq) problems.push(`readApplied lists ${local} events, the chain has ${tipSeq}`)

    // Nothing beyond the last acknowledgement but, at most, the whole call in flight: a batch
    // is all or nothing, so never a part of it.
    const lastAcked = Math.max(last.openedAtSeq, ...last.acks.map((ack) => ack.seq))
    const allowed = [lastAcked, lastAcked + last.inFlight]
    if (!allowed.includes(tipSeq)) {
      problems.push(`tip is seq ${tipSeq}: expected ${lastAcked} (in-flight call lost) or ${lastAcked + last.inFlight} (kept whole)`)
    }
    return { problems, tipSeq }
  } finally {
    await home.store.close()
  }
}

describe('crash safety of the disk store', () => {
  const dirs: string[] = []
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true })
  })

  // The seed is in every failure message (not in the test name, which must stay stable).
  it(`holds every acknowledged append after ${CYCLES} SIGKILLs at random moments`, async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'cairn-crash-'))
    dirs.push(root)
    const dir = path.join(root, 'home')
    const random = seededRandom(SEED)
    const acknowledged: Ack[] = []
    let tipSeq = 0
    let last: Cycle | undefined
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const killAfterAcks = 1 + Math.floor(random() * 25)
      const killDelayMs = Math.floor(random() * 150)
      const childSeed = Math.floor(random() * 2 ** 31)
      // Every other cycle the journal goes on in a new file every few appends, so kills land
      // across its files and on the removal of flushed ones.
      const rotateBytes = cycle % 2 === 1 ? SMALL_JOURNAL_FILE_BYTES : undefined
      const label = `CAIRN_CRASH_SEED=${SEED}, cycle ${cycle}, kill after ${killAfterAcks} acks + ${killDelayMs} ms${rotateBytes ? ', small journal files' : ''}`
      const result = await runAndKill(dir, childSeed, killAfterAcks, killDelayMs, rotateBytes)
      expect(result.acks.length, label).toBeGreaterThan(0)
      if (last) {
        expect(result.space, label).toBe(last.space)
        expect(result.author, label).toBe(last.author)
        // The child resumed exactly where the reopened store ended.
        expect(result.openedAtSeq, label).toBe(tipSeq)
      }
      acknowledged.push(...result.acks)
      last = result
      const checked = await checkStore(dir, acknowledged, result)
      expect(checked.problems, label).toEqual([])
      tipSeq = checked.tipSeq
    }
    // The runs did real work: many calls, spread over every cycle.
    expect(acknowledged.length, `CAIRN_CRASH_SEED=${SEED}`).toBeGreaterThanOrEqual(CYCLES)
    expect(new Set(acknowledged.map((ack) => ack.id)).size, `CAIRN_CRASH_SEED=${SEED}`).toBe(acknowledged.length)

    // The check itself can fail: an acknowledged append the store lacks is reported, as is one
    // acknowledged at another seq, and a tip that ends inside the in-flight batch.
    const final = last as Cycle
    const forged = { seq: tipSeq + 1, id: 'ab'.repeat(32) }
    const missing = await checkStore(dir, [...acknowledged, forged], final)
    expect(missing.problems.some((problem) => problem.includes(`${forged.id} (seq ${forged.seq}) is missing`))).toBe(true)
    const real = acknowledged[acknowledged.length - 1] as Ack
    const moved = await checkStore(dir, [{ seq: real.seq - 1, id: real.id }], final)
    expect(moved.problems.length).toBeGreaterThan(0)
    const partial = await checkStore(dir, [], { ...final, acks: [], openedAtSeq: tipSeq - 1, inFlight: 2 })
    expect(partial.problems.some((problem) => problem.startsWith('tip is seq'))).toBe(true)
  })
})

/**
 * LevelDB batch writes, the primitive under every store write: classic-level's array batch
 * (`db.batch(ops)`) against its chained batch (`db.batch().put(…).write()`), and Cairn's storage
 * adapter (`LevelLogStorage.write`, which uses the chained batch) on the same operations, in
 * the same run. Sizes: an interactive append (5 puts), a log batch (1,000) and an import's
 * projection batch (28,000: 1,000 records of ~28 keys each).
 *
 * "sync" is the part on the JS thread before the write goes to LevelDB's thread (what blocks the
 * caller's next step); "total" includes the wait for LevelDB. Results go to stdout and
 * `bench/results/level-batch.json`.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { Level } from 'level'
import { DEFAULT_WRITE_BUFFER_BYTES, LevelLogStorage, type StorageWrite } from '../src/log/index.js'

const SIZES = [5, 1_000, 28_000]
/** Operations timed per size and way (rounded to whole batches). */
const OPS_PER_ROUND = 100_000
const ROUNDS = 3
const VALUE = new Uint8Array(80).fill(7)

type Op = { type: 'put'; key: string; value: Uint8Array }

let serial = 0
function ops(count: number): Op[] {
  serial++
  // Shaped like projection keys: a 64-hex space id, a section, a term or id, a sequence.
  return Array.from({ length: count }, (_, i) => ({ type: 'put' as const, key: `${'0123456789abcdef'.repeat(4)}:p:term${i % 977}:${serial}:${String(i).padStart(8, '0')}`, value: VALUE }))
}

interface Timing { syncUsPerOp: number; totalUsPerOp: number }

async function time(size: number, write: (batch: Op[]) => Promise<void>): Promise<Timing> {
  const batches = Math.max(1, Math.round(OPS_PER_ROUND / size))
  const prepared = Array.from({ length: batches }, () => ops(size))
  let syncMs = 0
  const start = performance.now()
  for (const batch of prepared) {
    const t = performance.now()
    const written = write(batch)
    syncMs += performance.now() - t
    await written
  }
  const totalMs = performance.now() - start
  const count = batches * size
  return { syncUsPerOp: (syncMs * 1000) / count, totalUsPerOp: (totalMs * 1000) / count }
}

function best(timings: Timing[]): Timing {
  return { syncUsPerOp: Math.min(...timings.map((t) => t.syncUsPerOp)), totalUsPerOp: Math.min(...timings.map((t) => t.totalUsPerOp)) }
}

export async function run(): Promise<void> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'cairn-bench-level-'))
  // Each way writes a store of its own, configured as Cairn's (its 16 MiB write buffer), so the
  // totals differ by the batch form and not by one store's compactions or buffer size.
  const level = async (name: string): Promise<Level<string, Uint8Array>> => {
    const db = new Level<string, Uint8Array>(path.join(root, name), { keyEncoding: 'utf8', valueEncoding: 'view', writeBufferSize: DEFAULT_WRITE_BUFFER_BYTES })
    await db.open()
    return db
  }
  const arrayDb = await level('array')
  const chainedDb = await level('chained')
  const storage = await LevelLogStorage.openDisk(path.join(root, 'cairn'))
  try {
    console.log(`node ${process.version}, ${os.cpus()[0]?.model}, ${os.cpus().length} cores, load ${os.loadavg()[0]?.toFixed(1)}`)
    const ways: Record<string, (batch: Op[]) => Promise<void>> = {
      array: (batch) => arrayDb.batch(batch),
      chained: (batch) => {
        const chained = chainedDb.batch()
        for (const op of batch) chained.put(op.key, op.value)
        return chained.write()
      },
      cairn: (batch) => storage.write(batch as StorageWrite[]),
    }
    const rows = []
    for (const size of SIZES) {
      const runs: Record<string, Timing[]> = { array: [], chained: [], cairn: [] }
      // Ways alternate within each round, so a busy moment does not favour one.
      for (let round = 0; round < ROUNDS; round++) for (const [name, write] of Object.entries(ways)) runs[name]?.push(await time(size, write))
      const [array, chained, cairn] = (['array', 'chained', 'cairn'] as const).map((name) => best(runs[name] as Timing[])) as [Timing, Timing, Timing]
      rows.push({ opsPerBatch: size, array, chained, cairn })
      const fmt = (t: Timing) => `sync ${t.syncUsPerOp.toFixed(2)} / total ${t.totalUsPerOp.toFixed(2)} µs/op`
      console.log(`${String(size).padStart(6)} ops/batch: array ${fmt(array)} | chained ${fmt(chained)} | cairn ${fmt(cairn)} (${(cairn.totalUsPerOp / chained.totalUsPerOp).toFixed(2)}x chained)`)
    }
    await mkdir(new URL('./results/', import.meta.url), { recursive: true })
    await writeFile(new URL('./results/level-batch.json', import.meta.url), `${JSON.stringify({
      date: new Date().toISOString(), node: process.version, cpu: os.cpus()[0]?.model, cores: os.cpus().length, loadAverage: os.loadavg(), opsPerRound: OPS_PER_ROUND, rounds: ROUNDS, rows,
    }, null, 2)}\n`)
    console.log('wrote bench/results/level-batch.json (best of each way\'s rounds)')
  } finally {
    await arrayDb.close()
    await chainedDb.close()
    await storage.close()
    await rm(root, { recursive: true, force: true })
  }
}

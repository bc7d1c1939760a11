/**
 * Child process for test/memory/crash-projection.test.ts: writes records to an on-disk Memory in
 * a loop until it is killed, and reports on stdout, one JSON line at a time, what was
 * acknowledged (a `remember` or `rememberMany` that returned: stored and projected).
 *
 *   node --import tsx test/helpers/remember-loop.ts <store dir> <seed>
 *
 * Lines: {"type":"ready","space":…} then {"type":"ack","ids":[…]} after each call returned.
 * stdout on a pipe is synchronous on Linux, so a line is in the pipe once write() returns.
 */
import { Memory } from '../../src/memory/index.js'
import { seededRandom } from './seeded-random.js'

const WORDS = ['harbor', 'lantern', 'copper', 'meadow', 'violet', 'granite', 'orchard', 'cobalt', 'ember', 'willow']

function line(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`)
}

async function main(): Promise<void> {
  const dir = process.argv[2]
  if (!dir) throw new Error('usage: remember-loop.ts <store dir> <seed>')
  const seed = Number(process.argv[3] ?? Date.now())
  const random = seededRandom(seed)
  const memory = await Memory.open({ path: dir })
  line({ type: 'ready', space: memory.space })
  let n = 0
  const record = () => {
    const words = Array.from({ length: 3 + Math.floor(random() * 30) }, () => WORDS[Math.floor(random() * WORDS.length)] as string)
    // The first word is unique (one token: letters and digits), so a search can find this record alone.
    return { kind: 'episode' as const, summary: `k${seed.toString(36)}n${n++} ${words.join(' ')}`, tags: [WORDS[n % WORDS.length] as string] }
  }
  for (;;) {
    if (random() < 0.5) {
      line({ type: 'ack', ids: [await memory.remember(record())] })
    } else {
      const count = 1 + Math.floor(random() * 200)
      line({ type: 'ack', ids: await memory.rememberMany(Array.from({ length: count }, record)) })
    }
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`remember-loop failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`)
  process.exit(1)
})

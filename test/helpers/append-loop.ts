/**
 * Child process for test/log/crash-safety.test.ts: appends to a disk store in a loop until it
 * is killed, and reports on stdout, one JSON line at a time, exactly what was acknowledged.
 *
 *   node --import tsx test/helpers/append-loop.ts <home dir> [seed] [journal rotate bytes]
 *
 * First run: `initHome` (identity, space, store). Later runs: `openHome`, resuming the same
 * author's chain. Lines, in the order things happen:
 *   {"type":"ready","space":…,"author":…,"seq":<tip seq when opened>}
 *   {"type":"begin","count":<events in the call about to start>}
 *   {"type":"ack","events":[[seq,id],…]}        written only after the call has returned
 * Invariant: an "ack" line is written after, never before, the append it names returned, and a
 * "begin" line before its call starts, so the parent knows the most that can be in flight.
 * stdout on a pipe is synchronous on Linux, so a line is in the pipe once write() returns.
 */
import { existsSync } from 'node:fs'
import { homePaths, initHome, openHome, type Home } from '../../src/log/home-directory.js'
import type { AppendEntry } from '../../src/log/space-log.js'
import { seededRandom } from './seeded-random.js'

const MAX_BATCH = 40
const MAX_TEXT = 3000

function line(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`)
}

async function main(): Promise<void> {
  const dir = process.argv[2]
  if (!dir) throw new Error('usage: append-loop.ts <home dir> [seed] [journal rotate bytes]')
  const random = seededRandom(Number(process.argv[3] ?? Date.now()))
  const rotate = process.argv[4] ? { journalRotateBytes: Number(process.argv[4]) } : {}
  const home: Home = existsSync(homePaths(dir).configFile) ? await openHome(dir, rotate) : await initHome(dir, { name: 'crash-safety', ...rotate })
  const { log, identity } = home
  line({ type: 'ready', space: log.space, author: identity.author, seq: log.versionVector()[identity.author] ?? 0 })

  const entry = (): AppendEntry => ({
    op: 'note.add',
    data: { text: 'x'.repeat(Math.floor(random() * MAX_TEXT)), n: Math.floor(random() * 1e9) },
  })
  for (;;) {
    if (random() < 0.5) {
      line({ type: 'begin', count: 1 })
      const event = await log.append(identity, entry())
      line({ type: 'ack', events: [[event.header.seq, event.id]] })
    } else {
      const count = 1 + Math.floor(random() * MAX_BATCH)
      line({ type: 'begin', count })
      const events = await log.appendBatch(identity, Array.from({ length: count }, entry))
      line({ type: 'ack', events: events.map((event) => [event.header.seq, event.id]) })
    }
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`append-loop failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`)
  process.exit(1)
})

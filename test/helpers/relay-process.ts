/**
 * A relay in its own process, for tests that kill it: `node --import tsx relay-process.ts DIR
 * PORT [SPACE…]`. Before it listens, it reads what its store holds for each SPACE (version vector,
 * event count, whether the log verifies), so a test sees exactly what survived a crash before any
 * peer can add to it. Then it prints one JSON line `{ url, spaces }` and serves until SIGTERM
 * (stops cleanly, exit 0) or SIGKILL.
 */
import { existsSync } from 'node:fs'
import path from 'node:path'
import { LogStore } from '../../src/log/index.js'
import { Relay } from '../../src/sync/relay.js'

export interface SpaceReport {
  readonly vector: Record<string, number>
  readonly events: number
  readonly ok: boolean
}

const [dir, port, ...spaces] = process.argv.slice(2)
if (dir === undefined || port === undefined) throw new Error('usage: relay-process.ts DIR PORT [SPACE…]')

const reports: Record<string, SpaceReport> = {}
if (spaces.length > 0 && existsSync(path.join(dir, 'store'))) {
  const store = await LogStore.open({ path: path.join(dir, 'store') })
  for (const space of spaces) {
    const log = await store.openSpace(space)
    const report = await log.verify()
    reports[space] = { vector: { ...log.versionVector() }, events: report.events, ok: report.ok }
  }
  await store.close()
}

const relay = await Relay.start({ path: dir, port: Number(port) })
process.stdout.write(`${JSON.stringify({ url: relay.url, spaces: reports })}\n`)
process.on('SIGTERM', () => {
  void relay.stop().then(() => process.exit(0))
})

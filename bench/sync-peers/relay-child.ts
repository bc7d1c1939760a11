/**
 * The entry point of a relay child process: `relay-child.ts <relay module> <data dir>`. It loads
 * the module's `createRelay`, starts the relay on loopback, reports its URL to the parent and
 * then answers the parent's requests (`relay-process.ts`) over the IPC channel.
 *
 * Invariant: the process exits only after `close()` returned (everything flushed) or when the
 * parent goes away; a failed request is answered with its message, never left hanging.
 */
import { pathToFileURL } from 'node:url'
import type { BenchRelay, CreateBenchRelay } from './relay-contract.js'

/** A request from the parent: `id` pairs it with its answer. */
export interface RelayRequest {
  id: number
  method: 'holds' | 'stats' | 'reset-peak' | 'stop'
  args: unknown[]
}

export type RelayAnswer =
  | { type: 'ready'; url: string }
  | { type: 'answer'; id: number; value: unknown }
  | { type: 'failure'; id: number; message: string }
  | { type: 'startup-failure'; message: string }

export interface RelayProcessStats {
  rssBytes: number
  peakRssBytes: number
  heapUsedBytes: number
  receivedBytes?: number
  sentBytes?: number
}

/** Resident set sampling interval for the peak: short enough to catch a burst of a few ms. */
const RSS_SAMPLE_MS = 10

const [modulePath, dataDir] = process.argv.slice(2)
const send = (answer: RelayAnswer) => process.send?.(answer)

let relay: BenchRelay | undefined
let peakRssBytes = process.memoryUsage.rss()
const sampler = setInterval(() => {
  peakRssBytes = Math.max(peakRssBytes, process.memoryUsage.rss())
}, RSS_SAMPLE_MS)

async function answer(request: RelayRequest): Promise<unknown> {
  const current = relay as BenchRelay
  switch (request.method) {
    case 'holds':
      return current.holds(request.args[0], request.args[1] as number)
    case 'stats': {
      const rssBytes = process.memoryUsage.rss()
      peakRssBytes = Math.max(peakRssBytes, rssBytes)
      const stats: RelayProcessStats = {
        rssBytes,
        peakRssBytes,
        heapUsedBytes: process.memoryUsage().heapUsed,
        ...current.traffic?.(),
      }
      return stats
    }
    case 'reset-peak':
      peakRssBytes = process.memoryUsage.rss()
      return peakRssBytes
    case 'stop':
      await current.close()
      clearInterval(sampler)
      // Answer first, then leave once the answer is on its way.
      setTimeout(() => process.exit(0), 10)
      return null
  }
}

process.on('disconnect', () => process.exit(0))
process.on('message', (message: RelayRequest) => {
  answer(message).then(
    (value) => send({ type: 'answer', id: message.id, value }),
    (error: unknown) =>
      send({ type: 'failure', id: message.id, message: error instanceof Error ? error.stack ?? error.message : String(error) }),
  )
})

try {
  if (!modulePath || !dataDir) throw new Error('usage: relay-child.ts <relay module> <data dir>')
  const module = (await import(pathToFileURL(modulePath).href)) as { createRelay?: CreateBenchRelay }
  if (typeof module.createRelay !== 'function') throw new Error(`${modulePath} does not export createRelay`)
  relay = await module.createRelay({ dataDir, host: '127.0.0.1' })
  send({ type: 'ready', url: relay.url })
} catch (error) {
  send({ type: 'startup-failure', message: error instanceof Error ? error.stack ?? error.message : String(error) })
  process.exit(1)
}

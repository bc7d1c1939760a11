/**
 * Fixtures for sync tests over real WebSockets on loopback: relays, replicas of one space, sync
 * clients, and a teardown list that closes all of them (clients first, then relays, then
 * memories) whatever the test did. Also polling (`waitFor`) and a read-only look at what a relay
 * holds (`download`: a fresh replica with a read-everything token, synced once).
 *
 * Invariant: everything opened through a Teardown is closed by `teardown.run()`, even when a
 * step of the test failed; closing something twice is harmless.
 */
import { CairnError } from '../../src/errors.js'
import type { Permission, TokenScope } from '../../src/auth/index.js'
import type { Clock } from '../../src/log/clock.js'
import { Memory } from '../../src/memory/index.js'
import { Relay, type RelayOptions } from '../../src/sync/relay.js'
import type { WithheldEvent } from '../../src/sync/messages.js'
import type { SyncClient, SyncOptions } from '../../src/sync/sync-client.js'

type Step = () => Promise<void> | void

/** Closes what a test opened, in three waves: sync clients, relays, memories. */
export class Teardown {
  private readonly waves: Step[][] = [[], [], []]

  /** A step of wave 0 (clients, sockets), 1 (relays, processes) or 2 (stores). */
  add(wave: 0 | 1 | 2, step: Step): void {
    ;(this.waves[wave] as Step[]).push(step)
  }

  async run(): Promise<void> {
    const failures: unknown[] = []
    for (const wave of this.waves) {
      for (const step of wave.splice(0).reverse()) {
        try {
          await step()
        } catch (error) {
          failures.push(error)
        }
      }
    }
    if (failures.length > 0) throw failures[0]
  }
}

export async function startRelay(teardown: Teardown, options: RelayOptions = {}): Promise<Relay> {
  const relay = await Relay.start(options)
  teardown.add(1, () => relay.stop())
  return relay
}

/** A new space owned by a fresh in-memory replica. */
export async function openOwner(teardown: Teardown, options: { clock?: Clock } = {}): Promise<Memory> {
  const memory = await Memory.open({ name: 'sync-test', ...(options.clock ? { clock: options.clock } : {}) })
  teardown.add(2, () => memory.close())
  return memory
}

/** A new in-memory replica of `owner`'s space (no genesis yet: it learns it by syncing). */
export async function openReplica(teardown: Teardown, owner: Memory, options: { clock?: Clock; grant?: boolean } = {}): Promise<Memory> {
  const memory = await Memory.open({ space: owner.space, ...(options.clock ? { clock: options.clock } : {}) })
  teardown.add(2, () => memory.close())
  if (options.grant) await owner.grant(memory.author)
  return memory
}

/** Starts syncing `memory` with the relay; the client is closed at teardown. Fast reconnects. */
export async function startSync(teardown: Teardown, memory: Memory, url: string, options: SyncOptions = {}): Promise<SyncClient> {
  const client = await memory.sync(url, { initialDelayMs: 20, maxDelayMs: 200, ...options })
  teardown.add(0, () => client.close())
  return client
}

/** A token for `audience` issued by `issuer` with a one-hour lifetime. */
export function tokenFor(issuer: Memory, audience: Memory, scope: TokenScope, permissions: readonly Permission[] = ['read']): string {
  return issuer.createToken({ audience: audience.author, scope, permissions, expiresIn: 3_600_000 })
}

/** Polls `check` until it holds; throws naming `what` after `timeoutMs`. */
export async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (await check()) return
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** Resolves with the error that ended the client (status `error`), or throws if it synced. */
export async function refusalOf(client: SyncClient, timeoutMs = 10_000): Promise<CairnError> {
  const outcome = await Promise.race([
    client.synced().then(() => 'synced' as const, (error: unknown) => error),
    sleep(timeoutMs).then(() => 'timeout' as const),
  ])
  if (outcome === 'synced') throw new Error(`expected a refusal, but the client synced (status ${client.status})`)
  if (outcome === 'timeout') throw new Error(`expected a refusal within ${timeoutMs} ms (status ${client.status})`)
  if (!(outcome instanceof CairnError)) throw outcome
  return outcome
}

/**
 * Resolves with the events the relay next reports it kept as headers only (`withheld`), the
 * client's token not allowing them; throws if the client fails or nothing is reported in time.
 */
export function withheldOf(client: SyncClient, timeoutMs = 10_000): Promise<readonly WithheldEvent[]> {
  return new Promise((resolve, reject) => {
    const stops: (() => void)[] = []
    const end = (settle: () => void): void => {
      clearTimeout(timer)
      for (const stop of stops) stop()
      settle()
    }
    const timer = setTimeout(() => end(() => reject(new Error(`nothing was withheld within ${timeoutMs} ms (status ${client.status})`))), timeoutMs)
    stops.push(client.on('withheld', ({ events }) => end(() => resolve(events))))
    stops.push(client.on('error', (error) => end(() => reject(error))))
  })
}

/** Resolves with the error that ends a client that may already be live (status `error`). */
export function failureOf(client: SyncClient, timeoutMs = 10_000): Promise<CairnError> {
  return new Promise((resolve, reject) => {
    let last: CairnError | undefined
    const timer = setTimeout(() => reject(new Error(`the client did not fail within ${timeoutMs} ms (status ${client.status})`)), timeoutMs)
    client.on('error', (error) => { last = error })
    client.on('status', (status) => {
      if (status !== 'error') return
      clearTimeout(timer)
      if (last) resolve(last)
      else reject(new Error('status error without an error event'))
    })
  })
}

/** Every status a client goes through from now on. */
export function recordStatuses(client: SyncClient): string[] {
  const seen: string[] = [client.status]
  client.on('status', (status) => seen.push(status))
  return seen
}

/**
 * What the relay holds for `owner`'s space, seen from outside: a fresh replica that downloads
 * everything once with a read-all token. The caller inspects it; it is closed at teardown.
 */
export async function download(teardown: Teardown, url: string, owner: Memory): Promise<Memory> {
  const observer = await openReplica(teardown, owner)
  const client = await startSync(teardown, observer, url, { token: tokenFor(owner, observer, { all: true }), live: false })
  await client.synced()
  return observer
}

/** Sum of a version vector: how many events it names. */
export function eventCount(vector: Readonly<Record<string, number>>): number {
  return Object.values(vector).reduce((sum, seq) => sum + seq, 0)
}

/** Ids of the events that shaped a record on `memory` (create, patches, text, tombstone). */
export async function eventsOf(memory: Memory, id: string): Promise<string[]> {
  return (await memory.history(id)).map((item) => item.event)
}

/** Every key and value in a memory's store, as latin1 text: to look for content that must be gone. */
export async function storeText(memory: Memory): Promise<string> {
  // The raw storage is not public API; tests reach it the way test/property/memory.property.test.ts does.
  const storage = (memory.log as unknown as { storage: { entries(range: object): AsyncIterable<[string, Uint8Array]> } }).storage
  const parts: string[] = []
  for await (const [key, value] of storage.entries({})) parts.push(key, Buffer.from(value).toString('latin1'))
  return parts.join('\n')
}

/**
 * Replicas of one memory for merge tests: an owner and writers it granted, each with its own
 * in-memory store and key, and ways to exchange events between them (whole or partial, shuffled,
 * with duplicates).
 */
import type { EventEnvelope } from '../../src/log/index.js'
import { ManualClock } from '../../src/log/clock.js'
import { Memory } from '../../src/memory/index.js'
import type { SeededRandom } from './seeded-random.js'

export interface Replicas {
  readonly memories: Memory[]
  readonly clock: ManualClock
}

/** `count` replicas of one new space, all with write access, all holding the grants. */
export async function openReplicas(count: number, clock = new ManualClock(Date.UTC(2026, 0, 1))): Promise<Replicas> {
  const owner = await Memory.open({ clock, name: 'replicas' })
  const memories = [owner]
  for (let i = 1; i < count; i++) {
    const replica = await Memory.open({ clock, space: owner.space })
    await owner.grant(replica.author)
    memories.push(replica)
  }
  for (const replica of memories.slice(1)) await replica.ingest(await owner.events(replica.versionVector()))
  return { memories, clock }
}

/** Sends `to` everything `from` has that it lacks, in one shuffled delivery with stale duplicates. */
export async function deliver(from: Memory, to: Memory, random?: SeededRandom): Promise<void> {
  const fresh = await from.log.envelopesSince(to.versionVector(), { signatures: 'stored' })
  let batch: EventEnvelope[] = fresh
  if (random) {
    // Stale copies of old events ride along: a replica re-sending what the target already has.
    const old = await from.log.envelopesSince({}, { signatures: 'stored' })
    const stale = old.filter(() => random.int(0, 4) === 0)
    batch = random.shuffle([...fresh, ...stale])
  }
  if (batch.length > 0) await to.ingest(batch)
}

/** Every replica sends to every other until all hold the same events. */
export async function exchangeAll(memories: readonly Memory[]): Promise<void> {
  for (let round = 0; round < 2; round++) {
    for (const from of memories) for (const to of memories) if (from !== to) await deliver(from, to)
  }
}

export async function closeAll(memories: readonly Memory[]): Promise<void> {
  for (const memory of memories) await memory.close()
}

/** Every event body a replica holds, as text (to check what a deletion erased). */
export async function bodyText(memory: Memory): Promise<string> {
  return (await memory.events()).map((envelope) => Buffer.from(envelope.body ?? []).toString('utf8')).join('\n')
}

/**
 * One step of a random history over `memories`: on a random replica, forget, redact (with
 * `redact`) or update one of `ids` it still shows, or remember a batch or one record (their ids
 * go into `ids`). Returns the replica it acted on.
 */
export async function randomStep(memories: readonly Memory[], ids: string[], random: SeededRandom, step: number, options: { redact?: boolean } = {}): Promise<Memory> {
  const redact = options.redact ?? false
  const memory = random.pick(memories)
  const roll = random.int(0, redact ? 11 : 9)
  const mine = ids.length > 0 ? random.pick(ids) : undefined
  const visible = mine !== undefined && (await memory.status(mine)) === 'visible'
  if (roll < 2 && visible) await memory.forget(mine)
  else if (redact && roll < 3 && visible) await memory.redact(mine)
  else if (roll < (redact ? 5 : 4) && visible) await memory.update(mine, { set: { summary: `edit ${step}` } })
  else if (roll < (redact ? 7 : 6)) ids.push(...await memory.rememberMany(Array.from({ length: random.int(2, 8) }, (_, i) => ({ kind: 'episode' as const, summary: `b${step}.${i}` }))))
  else ids.push(await memory.remember({ kind: 'episode', summary: `s${step}` }))
  return memory
}

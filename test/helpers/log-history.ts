/**
 * Random multi-replica histories for log properties: three authors (an owner and two granted
 * writers) on their own stores, appending singly or in batches and syncing in random pairs.
 */
import fc from 'fast-check'
import type { EventEnvelope } from '../../src/log/event.js'
import { Identity } from '../../src/log/identity.js'
import type { SpaceLog } from '../../src/log/space-log.js'
import { emptyReplica, memoryStore, syncInto } from './log-fixtures.js'

export type HistoryStep =
  | { readonly type: 'append'; readonly replica: number; readonly count: number; readonly signEach: boolean }
  | { readonly type: 'sync'; readonly from: number; readonly to: number }

export const historySteps = fc.array(
  fc.oneof(
    fc.record({
      type: fc.constant('append' as const),
      replica: fc.integer({ min: 0, max: 2 }),
      count: fc.integer({ min: 1, max: 4 }),
      signEach: fc.boolean(),
    }),
    fc.record({ type: fc.constant('sync' as const), from: fc.integer({ min: 0, max: 2 }), to: fc.integer({ min: 0, max: 2 }) }),
  ),
  { minLength: 1, maxLength: 14 },
)

export interface History {
  readonly identities: Identity[]
  readonly replicas: SpaceLog[]
  /** A replica holding every event of the history. */
  readonly full: SpaceLog
}

export async function playHistory(steps: readonly HistoryStep[]): Promise<History> {
  const identities = [Identity.generate(), Identity.generate(), Identity.generate()]
  const [owner, second, third] = identities as [Identity, Identity, Identity]
  const first = await (await memoryStore()).createSpace(owner, { name: 'property' })
  await first.grant(owner, second.author, ['write', 'admin'])
  await first.grant(owner, third.author)
  const replicas = [first, await emptyReplica(first.space), await emptyReplica(first.space)]
  for (const replica of replicas.slice(1)) await syncInto(first, replica)
  let n = 0
  for (const step of steps) {
    if (step.type === 'sync') {
      if (step.from !== step.to) await syncInto(replicas[step.from] as SpaceLog, replicas[step.to] as SpaceLog)
      continue
    }
    const entries = Array.from({ length: step.count }, () => ({ op: 'note', data: { n: n++, by: step.replica } }))
    await (replicas[step.replica] as SpaceLog).appendBatch(identities[step.replica] as Identity, entries, { signEach: step.signEach })
  }
  const full = await emptyReplica(first.space)
  for (const replica of replicas) await syncInto(replica, full)
  return { identities, replicas, full }
}

/** Splits envelopes (in apply order) into signed segments: runs of one author ending at a signature. */
export function segmentsOf(envelopes: readonly EventEnvelope[], authorOf: (envelope: EventEnvelope) => string): EventEnvelope[][] {
  const open = new Map<string, EventEnvelope[]>()
  const segments: EventEnvelope[][] = []
  for (const envelope of envelopes) {
    const author = authorOf(envelope)
    const run = open.get(author) ?? []
    run.push(envelope)
    open.set(author, run)
    if (envelope.signature) {
      segments.push(run)
      open.delete(author)
    }
  }
  if (open.size > 0) throw new Error('a run does not end at a signature')
  return segments
}

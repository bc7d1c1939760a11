/**
 * Bodies that arrive after their headers: a replica holds an event header-only (its body was
 * erased at the source, or left out for a scoped reader), then a peer that kept the body sends
 * it. Content of a deleted record must stay erased; anything else must show as if it had come
 * with its header.
 */
import { readFileSync } from 'node:fs'
import { afterEach, expect, it } from 'vitest'
import type { EventEnvelope, EventId } from '../../src/log/index.js'
import type { LogStorage } from '../../src/log/storage.js'
import { ManualClock } from '../../src/log/clock.js'
import { Memory } from '../../src/memory/index.js'
import type { CatchUpLimits, Projection } from '../../src/projection/index.js'

const opened: Memory[] = []
afterEach(async () => {
  for (const memory of opened.splice(0)) await memory.close()
})

async function open(options: { space?: string } = {}): Promise<Memory> {
  const memory = await Memory.open(options)
  opened.push(memory)
  return memory
}

const text = (envelope: EventEnvelope): string => Buffer.from(envelope.body ?? new Uint8Array()).toString('utf8')

/** Every event without its body, but control events (which always travel whole). */
function headersOnly(envelopes: readonly EventEnvelope[]): EventEnvelope[] {
  return envelopes.map((envelope) => (text(envelope).includes('"op":"space.') || text(envelope).includes('"op":"access.') ? envelope : (({ body: _body, ...header }) => header)(envelope)))
}

/**
 * A source and a replica of its space on a clock the test moves (the replica's recorded times),
 * and `fresh()`: the source's events not handed out before.
 */
async function timedReplica(): Promise<{ clock: ManualClock; source: Memory; replica: Memory; fresh: () => Promise<EventEnvelope[]> }> {
  const clock = new ManualClock(Date.UTC(2026, 0, 1))
  const source = await open()
  const replica = await Memory.open({ space: source.space, clock })
  opened.push(replica)
  const seen = new Set<string>()
  const fresh = async (): Promise<EventEnvelope[]> => {
    const out = (await source.events()).filter((envelope) => !seen.has(envelope.id))
    for (const envelope of out) seen.add(envelope.id)
    return out
  }
  return { clock, source, replica, fresh }
}

it('a stale peer re-sending the body of a deleted record does not bring the content back', async () => {
  const source = await open()
  const stale = await open({ space: source.space })
  const replica = await open({ space: source.space })
  const id = await source.remember({ kind: 'episode', summary: 'door code pelican' })
  await stale.ingest(await source.events())
  await source.forget(id)
  await replica.ingest(await source.events())

  const result = await replica.ingest(await stale.events())
  expect(result.filled.length).toBeGreaterThan(0)
  expect(await replica.status(id)).toBe('deleted')
  for (const envelope of await replica.events()) expect(text(envelope)).not.toContain('pelican')
  for (const filled of result.filled) expect((await replica.log.get(filled))?.bodyState).toBe('erased')
  expect(await replica.digest()).toBe(await source.digest())
})

it('a body that arrives after its header shows the record, as on the replica that had it all along', async () => {
  const source = await open()
  const replica = await open({ space: source.space })
  const id = await source.remember({ kind: 'episode', summary: 'kayak on Sunday', tags: ['sport'] })
  await source.update(id, { add: { tags: ['weekend'] }, remove: { tags: ['sport'] } })
  const all = await source.events()
  await replica.ingest(headersOnly(all))
  expect(await replica.status(id)).toBe('absent')

  const result = await replica.ingest(all)
  expect(result.filled.length).toBe(2)
  expect((await replica.get(id))?.tags).toEqual(['weekend'])
  expect(await replica.digest()).toBe(await source.digest())
})

it('a record whose bodies come late keeps the as-of versions it had when they came in time, even across a clock that stepped back', async () => {
  const { clock, source, replica, fresh } = await timedReplica()
  const id = await source.remember({ kind: 'episode', summary: 'first plan' })
  const first = await fresh()
  await source.remember({ kind: 'episode', summary: 'another record' })
  const second = await fresh()
  await source.update(id, { set: { summary: 'second plan' } })
  const third = await fresh()
  // At three recorded times: t0, t0+10 s, then t0+5 s. The clock stepped back, so the third
  // frame joins the run of t0+10 s, where the record has no event of its own. Its events come
  // header-only; the other record's whole, so the replay is of this record's events alone.
  const t0 = clock.nowMs()
  await replica.ingest(headersOnly(first))
  clock.set(t0 + 10_000)
  await replica.ingest(second)
  clock.set(t0 + 5_000)
  await replica.ingest(headersOnly(third))
  expect(await replica.status(id)).toBe('absent')

  await replica.ingest(await source.events())
  const asOf = async (ms: number): Promise<unknown> => (await replica.get(id, { asOf: ms }))?.summary
  const versions = async (): Promise<unknown[]> => [await asOf(t0 - 1), await asOf(t0), await asOf(t0 + 5_000), await asOf(t0 + 10_000)]
  expect(await versions()).toEqual([undefined, 'first plan', 'first plan', 'second plan'])
  await replica.rebuild()
  expect(await versions()).toEqual([undefined, 'first plan', 'first plan', 'second plan'])
})

it('a late deletion shows in the as-of versions of the records that reference it from the run it fell in, as in a rebuild', async () => {
  const { clock, source, replica, fresh } = await timedReplica()
  const entity = await source.remember({ kind: 'entity', type: 'person', canonicalName: 'Ann' })
  const community = await source.remember({ kind: 'community', label: 'v1', memberEntityIDs: [entity] })
  const created = await fresh()
  await source.forget(entity)
  const deletion = await fresh()
  await source.update(community, { set: { label: 'v2' } })
  const relabelled = await fresh()
  // The deletion comes header-only at t0+10 s and its body only later, after the relabelling.
  const t0 = clock.nowMs()
  await replica.ingest(created)
  clock.set(t0 + 10_000)
  await replica.ingest(headersOnly(deletion))
  clock.set(t0 + 20_000)
  await replica.ingest(relabelled)
  clock.set(t0 + 30_000)
  await replica.ingest(await source.events())
  expect(await replica.status(entity)).toBe('deleted')
  const versions = async (): Promise<unknown[]> => Promise.all([t0, t0 + 10_000, t0 + 20_000, t0 + 30_000].map(async (ms) => {
    const view = await replica.get(community, { asOf: ms })
    return view && `${String(view.label)} ${JSON.stringify(view.memberEntityIDs)}`
  }))
  const expected = [`v1 ["${entity}"]`, 'v1 []', 'v2 []', 'v2 []']
  expect(await versions()).toEqual(expected)
  await replica.rebuild()
  expect(await versions()).toEqual(expected)
})

it('an event whose recorded time is before the first run (the clock went back) replays into the run it was applied in', async () => {
  const { clock, source, replica, fresh } = await timedReplica()
  await source.remember({ kind: 'episode', summary: 'first' })
  const first = await fresh()
  const id = await source.remember({ kind: 'episode', summary: 'late' })
  const second = await fresh()
  await source.remember({ kind: 'episode', summary: 'third' })
  const third = await fresh()
  const t0 = clock.nowMs()
  await replica.ingest(first)
  clock.set(t0 - 5_000)
  await replica.ingest(headersOnly(second))
  clock.set(t0 + 20_000)
  await replica.ingest(third)
  await replica.ingest(await source.events())
  const versions = async (): Promise<unknown[]> => Promise.all([t0 - 5_000, t0, t0 + 20_000].map(async (ms) => (await replica.get(id, { asOf: ms }))?.summary))
  expect(await versions()).toEqual([undefined, 'late', 'late'])
  await replica.rebuild()
  expect(await versions()).toEqual([undefined, 'late', 'late'])
})

// Found by the late-bodies variant of catch-up-cuts.property.test.ts (seed 20261124), kept as
// its events (fixtures/late-link-replay.json: one full delivery, and the deliveries that brought
// some bodies late). A link is created twice (the owner's create erased by its redaction), the
// fact it starts from is deleted through a forgotten episode. The other create's body came
// first and was stored as content; then the fact's body and the redaction's came, and placing
// them replayed the link: the replay deleted its stored history, and the seal's purge (the link
// now deleted through its parent), reading the entries stored before, wrote the old create's
// entry back as kept. `history` listed a create that one full delivery does not.
it('a replay leaves no history entry the replay itself did not write (a late redaction of a link deleted through its parent)', async () => {
  const fixture = JSON.parse(readFileSync(new URL('./fixtures/late-link-replay.json', import.meta.url), 'utf8')) as LateCase
  const envelope = (event: FixtureEvent): EventEnvelope => ({
    id: event.id as EventId, header: Buffer.from(event.header, 'base64'),
    ...(event.body ? { body: Buffer.from(event.body, 'base64') } : {}), ...(event.signature ? { signature: Buffer.from(event.signature, 'base64') } : {}),
  })
  const feed = async (deliveries: readonly FixtureEvent[][], limits?: CatchUpLimits): Promise<Memory> => {
    const clock = new ManualClock(fixture.now)
    const memory = await Memory.open({ clock, space: fixture.space })
    opened.push(memory)
    if (limits) (memory as unknown as { core: { projection: Projection } }).core.projection.limits = limits
    for (const delivery of deliveries) {
      await memory.ingest(delivery.map(envelope))
      clock.advance(fixture.tick)
    }
    return memory
  }
  const whole = await feed([fixture.full])
  const late = await feed(fixture.deliveries, fixture.limits)
  expect(await late.log.lateBodies()).toEqual([])
  // The link's history entries as stored (a kept entry is not listed by `history`).
  const entries = async (memory: Memory): Promise<string[]> => {
    const storage = (memory.log as unknown as { storage: LogStorage }).storage
    const prefix = `${fixture.space}:q:h:fl_`
    const rows: string[] = []
    for await (const [key, value] of storage.entries({ gte: prefix, lt: `${prefix}\u{10FFFF}` })) rows.push(`${key.slice(prefix.length)}=${Buffer.from(value).toString('utf8')}`)
    return rows
  }
  expect(await entries(whole)).toHaveLength(1)
  expect(await entries(late)).toEqual(await entries(whole))
  expect(await late.digest()).toBe(await whole.digest())
  expect((await late.checkProjection()).ok).toBe(true)
})

interface FixtureEvent { readonly id: string; readonly header: string; readonly body?: string; readonly signature?: string }
interface LateCase { readonly space: string; readonly now: number; readonly tick: number; readonly limits: CatchUpLimits; readonly full: FixtureEvent[]; readonly deliveries: FixtureEvent[][] }

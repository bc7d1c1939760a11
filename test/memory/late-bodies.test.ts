/**
 * Bodies that arrive after their headers: a replica holds an event header-only (its body was
 * erased at the source, or left out for a scoped reader), then a peer that kept the body sends
 * it. Content of a deleted record must stay erased; anything else must show as if it had come
 * with its header.
 */
import { afterEach, expect, it } from 'vitest'
import type { EventEnvelope } from '../../src/log/index.js'
import { Memory } from '../../src/memory/index.js'

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

/**
 * Deferred ingest (what sync uses): the log takes each frame at once and the projection catches
 * up behind it. When catch-ups queue up, the first to run applies the later frames' events from
 * what was handed over instead of reading them back from the log, and the result is the same as
 * ingesting everything at once.
 */
import { afterEach, expect, it, vi } from 'vitest'
import type { EventEnvelope } from '../../src/log/index.js'
import { Memory } from '../../src/memory/index.js'

const opened: Memory[] = []
afterEach(async () => {
  vi.restoreAllMocks()
  for (const memory of opened.splice(0)) await memory.close()
})

async function open(options: { space?: string } = {}): Promise<Memory> {
  const memory = await Memory.open(options)
  opened.push(memory)
  return memory
}

/** Splits a causal list of envelopes into parts that each end at a signed event. */
function signedParts(envelopes: readonly EventEnvelope[]): EventEnvelope[][] {
  const parts: EventEnvelope[][] = []
  let current: EventEnvelope[] = []
  for (const envelope of envelopes) {
    current.push(envelope)
    if (envelope.signature) {
      parts.push(current)
      current = []
    }
  }
  return parts
}

it('queued catch-ups apply handed-over events without reading the log back, and match a whole ingest', async () => {
  const source = await open()
  for (let batch = 0; batch < 4; batch++) {
    const ids = await source.rememberMany(Array.from({ length: 50 }, (_, i) => ({ kind: 'episode' as const, summary: `note ${batch}-${i}`, tags: [`t${i % 3}`] })))
    await source.updateMany(ids.slice(0, 10).map((id) => ({ id, changes: { set: { summary: `edited ${id}` } } })))
  }
  const parts = signedParts(await source.log.envelopesSince({}, { signatures: 'stored' }))
  expect(parts.length).toBeGreaterThan(4)

  const replica = await open({ space: source.space })
  const logReads = vi.spyOn(replica.log, 'readApplied')
  for (const part of parts) await replica.ingestDeferred(part)
  await replica.settled()

  expect(logReads).not.toHaveBeenCalled()
  expect(await replica.digest()).toBe(await source.digest())
  const whole = await open({ space: source.space })
  await whole.ingest(await source.events())
  expect(await replica.digest()).toBe(await whole.digest())
})

/**
 * A catch-up applies events a chunk at a time into one projection batch (projection.ts,
 * CatchUpLimits). What the batch remembers between chunks must be what it would have read back
 * had each chunk been stored on its own. The property over random histories is in
 * test/property/memory.property.test.ts; these are the cases it does not generate.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { Memory } from '../../src/index.js'
import type { Projection } from '../../src/projection/index.js'
import { closeAll, openReplicas } from '../helpers/memory-replicas.js'

function projectionOf(memory: Memory): Projection {
  return (memory as unknown as { core: { projection: Projection } }).core.projection
}

const open: Memory[] = []
afterEach(async () => {
  for (const memory of open.splice(0)) await memory.close()
})

async function pair(): Promise<{ source: Memory; replica: Memory }> {
  const source = await Memory.open({})
  const replica = await Memory.open({ space: source.space })
  open.push(source, replica)
  return { source, replica }
}

describe('catch-up batches', () => {
  it('keep the first-seen order of a foreign line that two events in different chunks carry', async () => {
    const { source, replica } = await pair()
    await source.rememberForeign('vendorThing', ['{"n":1}', '{"n":2}'])
    await source.rememberForeign('vendorThing', ['{"n":3}', '{"n":1}'])
    projectionOf(replica).limits = { chunk: 1, batchEvents: 100, batchRecords: 100, batchNewRecords: 100, derivedWrites: 0 }
    await replica.ingest(await source.events({}))
    expect(await replica.foreignLines()).toEqual({ vendorThing: ['{"n":1}', '{"n":2}', '{"n":3}'] })
    expect(await replica.foreignLines()).toEqual(await source.foreignLines())
  })

  it('store a record touched in many chunks of one batch once, as its final state', async () => {
    const { source, replica } = await pair()
    await source.remember({ kind: 'episode', id: 'ep_1', summary: 'first words', tags: ['a'] })
    for (let i = 0; i < 30; i++) await source.update('ep_1', { set: { summary: `words number ${i}` }, add: { tags: [`t${i % 4}`] } })
    projectionOf(replica).limits = { chunk: 3, batchEvents: 1000, batchRecords: 1000, batchNewRecords: 1000, derivedWrites: 0 }
    const changes: string[] = []
    replica.subscribe(({ changes: batch }) => { for (const change of batch) changes.push(`${change.id}:${change.action}`) })
    await replica.ingest(await source.events({}))
    expect(await replica.get('ep_1')).toEqual(await source.get('ep_1'))
    expect((await replica.search('number 29')).map((hit) => hit.record.id)).toEqual(['ep_1'])
    // The full-text index holds the final summary only (details keep the created text).
    expect(await replica.search('number 17')).toEqual(await source.search('number 17'))
    expect((await replica.search('17')).length).toBe(0)
    expect(await replica.digest()).toBe(await source.digest())
    // One batch: subscribers hear of the record once, as created.
    expect(changes).toEqual(['ep_1:created'])
  })

  // Found in review: the deletion's closure read referrers from the stored index only, which did
  // not have a fact created in an earlier run of the same batch.
  it('delete a record whose parent a later frame of the same batch deletes', async () => {
    const { memories, clock } = await openReplicas(4)
    const [writer, deleter, held, stepwise] = memories as [Memory, Memory, Memory, Memory]
    const episode = await writer.remember({ kind: 'episode', summary: 'the parent' })
    await deleter.ingest(await writer.events(deleter.versionVector()))
    const fact = await writer.remember({ kind: 'fact', episodeID: episode, subject: 'user', predicate: 'likes', object: 'tea' })
    await deleter.forget(episode) // never saw the fact: its deletion does not name it
    const first = await writer.log.envelopesSince(held.versionVector(), { signatures: 'stored' })
    await held.ingestDeferred(first, { more: true })
    await stepwise.ingest(first)
    clock.advance(5000)
    const second = await deleter.log.envelopesSince(held.versionVector(), { signatures: 'stored' })
    await held.ingestDeferred(second, { more: true })
    await stepwise.ingest(second)
    held.applyPending()
    await held.settled()
    expect(await stepwise.status(fact)).toBe('deleted')
    expect(await held.status(fact)).toBe('deleted')
    expect(await held.digest()).toBe(await stepwise.digest())
    await closeAll(memories)
  })
})

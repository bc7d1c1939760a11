/**
 * Expiry (memory-model §1.7): a record past its `expirationDate` is hidden from query and search
 * at once, and `expire()` forgets it, with its cascade, under a tombstone id every replica
 * computes alike.
 */
import { createHash } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import type { Memory } from '../../src/memory/index.js'
import { closeAll, exchangeAll, openReplicas } from '../helpers/memory-replicas.js'

const open: Memory[] = []
afterEach(async () => {
  await closeAll(open.splice(0))
})

const HOUR = 3_600_000

describe('expiry', () => {
  it('hides an expired record from query and search, then expire() forgets it with what was derived from it', async () => {
    const { memories, clock } = await openReplicas(1)
    open.push(...memories)
    const [m] = memories as [Memory]
    const later = new Date(clock.nowMs() + HOUR).toISOString().replace('.000', '')
    await m.remember({ kind: 'episode', id: 'ep_task', summary: 'scratch notes about the kettle', expirationDate: later, tags: ['working'] })
    await m.remember({ kind: 'episode', id: 'ep_keep', summary: 'notes about the kettle to keep', tags: ['working'] })
    await m.remember({ kind: 'fact', id: 'fact_task', episodeID: 'ep_task', subject: 'kettle', predicate: 'is', object: 'broken' })
    const ids = async (query: object): Promise<string[]> => (await m.query(query)).records.map((record) => record.id).sort()
    expect(await ids({ kind: 'episode' })).toEqual(['ep_keep', 'ep_task'])
    expect(await m.expire()).toEqual([])

    clock.advance(HOUR)
    // Expired at its expirationDate: hidden from the index walk, the view walk and search.
    expect(await ids({ kind: 'episode' })).toEqual(['ep_keep'])
    expect(await ids({ tags: { all: ['working'] }, minConfidence: 0 })).toEqual(['ep_keep'])
    expect((await m.search('kettle')).map((hit) => hit.record.id).sort()).toEqual(['ep_keep', 'fact_task'])
    expect((await m.search('kettle', { kind: 'episode' })).map((hit) => hit.record.id)).toEqual(['ep_keep'])
    // As of before it expired, it shows.
    expect(await ids({ kind: 'episode', asOf: clock.nowMs() - HOUR })).toEqual(['ep_keep', 'ep_task'])
    expect((await m.get('ep_task'))?.id).toBe('ep_task')

    expect(await m.expire()).toEqual(['ep_task'])
    expect(await m.status('ep_task')).toBe('deleted')
    expect(await m.status('fact_task')).toBe('deleted')
    const [tombstone] = await m.tombstones()
    const expected = `tomb_${createHash('sha256').update(JSON.stringify(['expire', 'ep_task'])).digest('hex').slice(0, 24)}`
    expect(tombstone).toMatchObject({ id: expected, reason: 'expired', targetID: 'ep_task', derived: { factIDs: ['fact_task'] } })
    expect(await m.expire()).toEqual([])
  })

  it('two expire() calls started together, or one alongside a forget, all resolve; each record is forgotten once', async () => {
    const { memories, clock } = await openReplicas(1)
    open.push(...memories)
    const [m] = memories as [Memory]
    const soon = new Date(clock.nowMs() + 1000).toISOString().replace('.000', '')
    for (const id of ['ep_a', 'ep_b', 'ep_c']) await m.remember({ kind: 'episode', id, summary: id, expirationDate: soon })
    clock.advance(2000)
    const [first, second, forget] = await Promise.allSettled([m.expire(), m.expire(), m.forget('ep_c')])
    expect([first.status, second.status, forget.status]).toEqual(['fulfilled', 'fulfilled', 'fulfilled'])
    const expired = [...(first as PromiseFulfilledResult<string[]>).value, ...(second as PromiseFulfilledResult<string[]>).value]
    // ep_c went to whichever came first: the forget (started last) or an expire.
    expect(expired.filter((id) => id !== 'ep_c').sort()).toEqual(['ep_a', 'ep_b'])
    expect((await m.tombstones()).map((tombstone) => tombstone.targetID).sort()).toEqual(['ep_a', 'ep_b', 'ep_c'])
  })

  it('search still fills its limit when the best hits have expired', async () => {
    const { memories, clock } = await openReplicas(1)
    open.push(...memories)
    const [m] = memories as [Memory]
    const soon = new Date(clock.nowMs() + 1000).toISOString().replace('.000', '')
    for (let i = 0; i < 5; i++) await m.remember({ kind: 'episode', id: `ep_old${i}`, summary: 'kettle kettle kettle kettle', expirationDate: soon })
    for (let i = 0; i < 3; i++) await m.remember({ kind: 'episode', id: `ep_new${i}`, summary: `the kettle and ${'other words '.repeat(i + 2)}` })
    clock.advance(2000)
    expect((await m.search('kettle', { limit: 2 })).map((hit) => hit.record.id)).toEqual(['ep_new0', 'ep_new1'])
  })

  it('replicas that expire one record concurrently write the same tombstone id and converge', async () => {
    const { memories, clock } = await openReplicas(2)
    open.push(...memories)
    const [a, b] = memories as [Memory, Memory]
    await a.remember({ kind: 'episode', id: 'ep_task', summary: 'pending', expirationDate: new Date(clock.nowMs() + 1000).toISOString().replace('.000', '') })
    await exchangeAll(memories)
    clock.advance(2000)
    expect(await a.expire()).toEqual(['ep_task'])
    expect(await b.expire()).toEqual(['ep_task'])
    await exchangeAll(memories)
    const [one, two] = [await a.tombstones(), await b.tombstones()]
    expect(one.map((tombstone) => tombstone.id)).toEqual(two.map((tombstone) => tombstone.id))
    expect(await a.digest()).toBe(await b.digest())
  })
})

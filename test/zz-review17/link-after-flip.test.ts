import { afterEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/log/clock.js'
import { Memory } from '../../src/memory/index.js'
import { deliver, openReplicas } from '../helpers/memory-replicas.js'

const open: Memory[] = []
afterEach(async () => { for (const m of open.splice(0).reverse()) await m.close() })

describe('review17: link under a record deleted only through a parent, then kind flip', () => {
  it('replicas agree on the link', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1))
    const [owner, phone, laptop] = (await openReplicas(3, clock)).memories as [Memory, Memory, Memory]
    open.push(owner, phone, laptop)
    await owner.remember({ kind: 'episode', id: 'ep_p', summary: 'parent' })
    await owner.remember({ kind: 'episode', id: 'ep_q', summary: 'other' })
    await owner.remember({ kind: 'fact', id: 'fact_f2', episodeID: 'ep_q', subject: 'a', predicate: 'b', object: 'c' })
    await deliver(owner, phone)
    await deliver(owner, laptop)
    clock.advance(1000)
    await laptop.remember({ kind: 'episode', id: 'shared', summary: 'laptop episode' })
    clock.advance(1000)
    await phone.remember({ kind: 'fact', id: 'shared', episodeID: 'ep_p', subject: 'x', predicate: 'y', object: 'z' })
    const link = await phone.remember({ kind: 'factLink', srcFactID: 'shared', dstFactID: 'fact_f2', linkType: 'supports-link' })
    clock.advance(1000)
    await owner.forget('ep_p')
    await deliver(owner, phone)       // phone: shared (fact) deleted through ep_p, link erased
    console.log('phone after forget', await phone.status('shared'), await phone.status(link))
    await deliver(laptop, phone)      // earlier episode create: shared replayed as episode
    console.log('phone after episode', await phone.status('shared'), await phone.status(link))
    for (let i = 0; i < 2; i++) for (const [from, to] of [[phone, owner], [phone, laptop], [laptop, owner], [owner, laptop], [owner, phone], [laptop, phone]] as const) await deliver(from, to)
    const statuses = await Promise.all([owner, phone, laptop].map(async (m) => [await m.status('shared'), await m.status(link)]))
    console.log(statuses, await Promise.all([owner, phone, laptop].map((m) => m.digest())), await Promise.all([owner, phone, laptop].map((m) => m.get(link))))
    expect(new Set(statuses.map((s) => JSON.stringify(s))).size).toBe(1)
    expect(new Set(await Promise.all([owner, phone, laptop].map((m) => m.digest()))).size).toBe(1)
  })
})

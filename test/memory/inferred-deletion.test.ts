/**
 * Records deleted because a parent was, where no event names them (a child created concurrently
 * with its parent's forget): every replica must end showing the same memory whatever it saw
 * first, so the bodies that show why a record is deleted are kept (hidden) until a deletion
 * names it. Link kinds, whose ids are their parents, still lose their bodies at once.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { Memory } from '../../src/memory/index.js'
import { closeAll, deliver, exchangeAll, openReplicas } from '../helpers/memory-replicas.js'

const open: Memory[] = []
afterEach(async () => {
  await closeAll(open.splice(0))
})

async function replicas(count: number): Promise<{ memories: Memory[]; tick: () => void }> {
  const { memories, clock } = await openReplicas(count)
  open.push(...memories)
  return { memories, tick: () => clock.advance(1000) }
}

async function bodies(memory: Memory): Promise<string> {
  return (await memory.events()).map((envelope) => Buffer.from(envelope.body ?? []).toString('utf8')).join('\n')
}

async function expectSameMemory(memories: readonly Memory[]): Promise<void> {
  const digests = await Promise.all(memories.map((memory) => memory.digest()))
  expect(new Set(digests).size).toBe(1)
}

describe('deletions found through a parent', () => {
  it('converge when two replicas create one edge id with different endpoints and one endpoint is forgotten', async () => {
    const [a, b, c] = (await replicas(3)).memories as [Memory, Memory, Memory]
    await a.remember({ kind: 'entity', id: 'ent_a', type: 'person', canonicalName: 'Ann' })
    await exchangeAll([a, b, c])
    await c.remember({ kind: 'edge', id: 'edge_x', srcEntityID: 'ent_c', dstEntityID: 'ent_b', edgeType: 'knows' })
    await b.remember({ kind: 'edge', id: 'edge_x', srcEntityID: 'ent_a', dstEntityID: 'ent_b', edgeType: 'knows' })
    await a.forget('ent_a')
    // b hears of the forget first: its edge is deleted there before anyone else has it.
    await deliver(a, b)
    expect(await b.status('edge_x')).toBe('deleted')
    await exchangeAll([a, b, c])
    for (const memory of [a, b, c]) expect(await memory.status('edge_x')).toBe('deleted')
    await expectSameMemory([a, b, c])
  })

  it('delete a record with any parent it ever named, not only the one whose write wins', async () => {
    // x sees the create naming ent_a, then its forget: deleted. y sees a later create of the same
    // id naming ent_d first; it must still delete the record when the forget comes.
    const { memories, tick } = await replicas(4)
    const [owner, x, y, late] = memories as [Memory, Memory, Memory, Memory]
    await owner.remember({ kind: 'entity', id: 'ent_a', type: 'person', canonicalName: 'Ann' })
    await exchangeAll([owner, x, y, late])
    await x.remember({ kind: 'edge', id: 'edge_x', srcEntityID: 'ent_a', dstEntityID: 'ent_b', edgeType: 'knows' })
    await deliver(x, y)
    tick()
    await late.remember({ kind: 'edge', id: 'edge_x', srcEntityID: 'ent_d', dstEntityID: 'ent_b', edgeType: 'knows' })
    await deliver(late, y)
    expect((await y.get('edge_x'))?.srcEntityID).toBe('ent_d')
    await owner.forget('ent_a')
    await deliver(owner, x)
    expect(await x.status('edge_x')).toBe('deleted')
    await deliver(owner, y)
    expect(await y.status('edge_x')).toBe('deleted')
    await exchangeAll([owner, x, y, late])
    await expectSameMemory([owner, x, y, late])
  })

  it('reach a fact link whose fact was deleted through its episode on another replica', async () => {
    const [a, b] = (await replicas(2)).memories as [Memory, Memory]
    await b.remember({ kind: 'fact', id: 'fact_c', episodeID: 'ep_a', subject: 'user', predicate: 'likes', object: 'oslo' })
    await a.remember({ kind: 'episode', id: 'ep_a', summary: 'about oslo' })
    await a.remember({ kind: 'factLink', srcFactID: 'fact_c', dstFactID: 'fact_b', linkType: 'derived_from' })
    await a.forget('ep_a')
    await deliver(a, b)
    expect(await b.status('fact_c')).toBe('deleted')
    await exchangeAll([a, b])
    for (const memory of [a, b]) {
      expect(await memory.status('fact_c')).toBe('deleted')
      expect((await memory.query({ kind: 'factLink' })).records).toEqual([])
    }
    await expectSameMemory([a, b])
    // The fact's create is kept (hidden) so a's link could be found deleted; the link's own body,
    // which names only its parents, is erased.
    expect(await bodies(a)).toContain('oslo"')
    expect(await bodies(b)).not.toContain('"linkType":"derived_from"')
    expect(await b.search('oslo')).toEqual([])
  })

  it('erase the kept bodies on every replica once a deletion names the record', async () => {
    const [a, b, c] = (await replicas(3)).memories as [Memory, Memory, Memory]
    await b.remember({ kind: 'fact', id: 'fact_c', episodeID: 'ep_a', subject: 'user', predicate: 'likes', object: 'lapsang' })
    await deliver(b, c)
    await a.remember({ kind: 'episode', id: 'ep_a', summary: 'about tea' })
    await a.forget('ep_a')
    await deliver(a, b)
    expect(await bodies(b)).toContain('lapsang')
    // c has not heard of the forget: it still shows the fact, and forgets it by name.
    await c.forget('fact_c')
    await exchangeAll([a, b, c])
    for (const memory of [a, b, c]) {
      expect(await memory.status('fact_c')).toBe('deleted')
      expect(await bodies(memory)).not.toContain('lapsang')
    }
    await expectSameMemory([a, b, c])
  })
})

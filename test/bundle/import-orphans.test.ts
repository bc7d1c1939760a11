/**
 * A bundle carrying a record under a parent the importer holds deleted: the record is blocked
 * (no resurrection), and an importer holding `admin` deletes it too, with the tombstone an admin
 * names inferred deletions with, so what names it here goes with it. Without that, a link to it
 * imported before stayed (the parent's deletion came first) where, imported after it, the link
 * went with the record (the record came first and was deleted through its parent): two fresh
 * replicas importing the same two bundles in either order showed the link differently (found by
 * the bundle-merge property, about one run in 100).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/log/clock.js'
import { Memory } from '../../src/memory/index.js'
import { tempBundlePath } from './helpers/mem-fixtures.js'

const open: Memory[] = []
afterEach(async () => {
  for (const memory of open.splice(0).reverse()) await memory.close()
})

const START = Date.UTC(2026, 0, 1)

/**
 * `forgetting`: forgot ep_b and links fact_b (which it never held) to fact_a; `keeping`: holds
 * fact_b under ep_b. A bundle from each.
 */
async function twoBundles(clock: ManualClock): Promise<{ forgetting: string; keeping: string }> {
  const a = await Memory.open({ clock })
  const b = await Memory.open({ clock, space: a.space })
  open.push(a, b)
  await a.grant(b.author)
  await a.remember({ kind: 'episode', id: 'ep_a', summary: 'a walk' })
  await a.remember({ kind: 'episode', id: 'ep_b', summary: 'a swim' })
  await a.remember({ kind: 'fact', id: 'fact_a', episodeID: 'ep_a', subject: 'user', predicate: 'likes', object: 'walks' })
  await b.ingest(await a.events())
  clock.advance(1_000)
  await b.remember({ kind: 'fact', id: 'fact_b', episodeID: 'ep_b', subject: 'user', predicate: 'likes', object: 'swims' })
  await a.forget('ep_b')
  await a.remember({ kind: 'factLink', srcFactID: 'fact_b', dstFactID: 'fact_a', linkType: 'derived_from' })
  const [forgetting, keeping] = [tempBundlePath(), tempBundlePath()]
  await a.export(forgetting)
  await b.export(keeping)
  return { forgetting, keeping }
}

async function statuses(memory: Memory): Promise<string[]> {
  const links = (await memory.query({ kind: 'factLink' })).records.length
  return [`fact_b:${await memory.status('fact_b')}`, `ep_b:${await memory.status('ep_b')}`, `links:${links}`]
}

describe('a record a bundle carries under a parent deleted here', () => {
  it('is deleted by an admin importer, so either import order shows the same memory', async () => {
    const clock = new ManualClock(START)
    const { forgetting, keeping } = await twoBundles(clock)
    const x = await Memory.open({ clock })
    const y = await Memory.open({ clock })
    open.push(x, y)
    await x.import(forgetting)
    const report = await x.import(keeping)
    expect(report.format === 'mem' && report.blocked).toBe(2) // ep_b and fact_b
    await y.import(keeping)
    await y.import(forgetting)
    expect(await statuses(x)).toEqual(['fact_b:deleted', 'ep_b:deleted', 'links:0'])
    expect(await statuses(y)).toEqual(await statuses(x))
    // Its content was never written, and importing again writes nothing.
    const before = x.versionVector()
    await x.import(keeping)
    expect(x.versionVector()).toEqual(before)
    expect(JSON.stringify(await x.events())).not.toContain('swims')
  })

  it('deletes only ids the replica holds nothing of: a held record is forget\'s work', async () => {
    const memory = await Memory.open({})
    open.push(memory)
    await memory.remember({ kind: 'episode', id: 'ep_held', summary: 'kept' })
    expect(await memory.nameBlockedOrphans([{ kind: 'episode', id: 'ep_held' }, { kind: 'fact', id: 'fact_never' }])).toBe(1)
    expect([await memory.status('ep_held'), await memory.status('fact_never')]).toEqual(['visible', 'deleted'])
  })

  it('stays only blocked for an importer without admin, as naming does', async () => {
    const clock = new ManualClock(START)
    const { forgetting, keeping } = await twoBundles(clock)
    const owner = await Memory.open({ clock })
    const writer = await Memory.open({ clock, space: owner.space })
    open.push(owner, writer)
    await owner.grant(writer.author)
    await writer.ingest(await owner.events())
    await writer.import(forgetting)
    const before = writer.versionVector()
    const report = await writer.import(keeping)
    expect(report.format === 'mem' && report.blocked).toBe(2) // ep_b and fact_b
    expect(writer.versionVector()).toEqual(before)
    expect(await writer.status('fact_b')).toBe('absent')
  })
})

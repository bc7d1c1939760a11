/**
 * Importing records this replica already holds.
 *
 * Counters (episode.accessCount, procedure successCount/failureCount) are sums of increments, and
 * a create adds its value to the sum. An import that wrote a held record used to carry the
 * bundle's whole count, so every import of the same bundle added it again (and wrote again):
 * found by the bundle-merge property. An import now raises a counter to the bundle's value and
 * never lowers it (memory-model §1.5, the catch-up rule, here without its increment identity).
 *
 * A redaction whose record the importer holds takes its skeleton from the bundle's line, as it
 * does for a record never seen: it used to take it from the importer's view, so two bundles
 * imported in either order showed different skeletons (found by the bundle-merge property).
 */
import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/log/clock.js'
import { Memory } from '../../src/memory/index.js'
import { tempBundlePath } from './helpers/mem-fixtures.js'

describe('importing counters', () => {
  it('a re-import writes nothing and adds nothing; a higher count catches up, a lower one changes nothing', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1))
    const source = await Memory.open({ clock })
    const target = await Memory.open({ clock })
    await source.remember({ kind: 'episode', id: 'ep_counted', summary: 'counted', accessCount: 3 })
    const low = tempBundlePath()
    await source.export(low)
    await target.import(low)
    expect((await target.get('ep_counted'))?.accessCount).toBe(3)

    await source.update('ep_counted', { increment: { accessCount: 2 } })
    const high = tempBundlePath()
    await source.export(high)
    await target.import(high)
    expect((await target.get('ep_counted'))?.accessCount).toBe(5)
    const before = target.versionVector()
    const again = await target.import(high)
    expect(target.versionVector()).toEqual(before)
    expect(again.format === 'mem' && again.imported).toEqual({})
    expect((await target.get('ep_counted'))?.accessCount).toBe(5)

    // The older bundle, with a lower count and another summary: the summary is written, the count stays.
    await target.update('ep_counted', { set: { summary: 'edited here' } })
    await target.import(low)
    expect((await target.get('ep_counted'))?.summary).toBe('counted')
    expect((await target.get('ep_counted'))?.accessCount).toBe(5)
    await source.close()
    await target.close()
  })

  it('a redaction of a held record shows the skeleton the bundle carries, whichever bundle came first', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1))
    const redacting = await Memory.open({ clock })
    const editing = await Memory.open({ clock, space: redacting.space })
    await redacting.grant(editing.author)
    await editing.ingest(await redacting.events(editing.versionVector()))
    await redacting.remember({ kind: 'episode', id: 'ep_r', summary: 'secret', contextID: 'ctx_0', tags: ['x'] })
    await editing.ingest(await redacting.events(editing.versionVector()))
    await editing.update('ep_r', { set: { contextID: 'ctx_1', importance: 0.9 } })
    await redacting.redact('ep_r')
    const [redacted, edited] = [tempBundlePath(), tempBundlePath()]
    await redacting.export(redacted)
    await editing.export(edited)
    const first = await Memory.open({ clock })
    const second = await Memory.open({ clock })
    await first.import(redacted)
    await first.import(edited)
    await second.import(edited)
    await second.import(redacted)
    expect(await second.get('ep_r')).toEqual(await first.get('ep_r'))
    expect((await second.get('ep_r'))?.contextID).toBe('ctx_0')
    expect(await second.digest()).toBe(await first.digest())
    for (const memory of [redacting, editing, first, second]) await memory.close()
  })
})

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
 *
 * A `.mem` bundle made before this replica wrote a field does not undo that write (its
 * manifest's creation time against the field's write time): importing an old backup used to
 * put back every value it held. What an import writes for a record new here carries the
 * bundle's time, so a newer bundle imported later still writes over it.
 */
import { describe, expect, it, vi } from 'vitest'
import { ManualClock } from '../../src/log/clock.js'
import { Memory } from '../../src/memory/index.js'
import { tempBundlePath } from './helpers/mem-fixtures.js'
import { rejection } from '../helpers/error-code.js'

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

describe('importing a bundle made before what this replica wrote since', () => {
  const at = (time: string): number => Date.parse(`2026-06-01T${time}Z`)

  it('a stale .mem bundle undoes no field, map key, extension key or text written after it was made; older held writes it does write', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    try {
      vi.setSystemTime(at('09:50:00'))
      const source = await Memory.open()
      const target = await Memory.open()
      await source.remember({ kind: 'episode', id: 'ep_s', summary: 'first', details: 'first details', metadata: { a: '1', b: '1' }, x_vendor: 'v1', x_gone: 'g', sourceID: 'src-1' })
      await source.remember({ kind: 'core', id: 'human', content: 'first text' })
      const start = tempBundlePath()
      await source.export(start)
      await target.import(start)

      vi.setSystemTime(at('09:55:00'))
      await target.update('ep_s', { set: { details: 'details written before the bundle' } })
      vi.setSystemTime(at('10:00:00.700'))
      const old = tempBundlePath()
      await source.export(old)
      // Within the second the bundle names (it has whole seconds): it may not have seen this write, which stays.
      vi.setSystemTime(at('10:00:00.900'))
      await target.update('ep_s', { set: { sourceType: 'edited in the same second' } })
      vi.setSystemTime(at('10:05:00'))
      await target.update('ep_s', { set: { summary: 'edited since', metadata: { a: '2' }, x_vendor: 'v2' }, unset: ['x_gone', 'sourceID'] })
      await target.editText('human', 'edited since')
      const [episodeTimes, humanTimes] = await target.lookup(['ep_s', 'human'], { writeTimes: true })
      expect(episodeTimes?.writeTimes?.fields).toMatchObject({ summary: at('10:05:00'), x_vendor: at('10:05:00'), x_gone: at('10:05:00'), details: at('09:55:00'), sourceType: at('10:00:00.900') })
      expect(episodeTimes?.writeTimes?.entries.metadata).toEqual({ a: at('10:05:00'), b: at('09:50:00') })
      expect(humanTimes?.writeTimes?.fields.content).toBe(at('10:05:00'))
      expect((await target.lookup(['ep_s']))[0]?.writeTimes).toBeUndefined()
      expect(await rejection(target.lookup(['ep_s'], { writeTimes: 'yes' as unknown as boolean }))).toMatchObject({ code: 'WRONG_TYPE', where: { field: 'options.writeTimes' } })

      vi.setSystemTime(at('10:10:00'))
      const report = await target.import(old)
      const episode = await target.get('ep_s')
      expect(episode).toMatchObject({ summary: 'edited since', metadata: { a: '2', b: '1' }, x_vendor: 'v2', details: 'first details', sourceType: 'edited in the same second' })
      // Unset since: they stay unset.
      expect(episode?.x_gone).toBeUndefined()
      expect(episode?.sourceID).toBeUndefined()
      expect((await target.get('human'))?.content).toBe('edited since')
      expect(report).toMatchObject({ format: 'mem', imported: { episode: 1 }, keptNewer: 2 })

      // Again: nothing left to write.
      const before = target.versionVector()
      expect(await target.import(old)).toMatchObject({ imported: {}, keptNewer: 2 })
      expect(target.versionVector()).toEqual(before)

      // A bundle made after those writes: its lines carry no write times, so the import cannot
      // tell that the source's values are older than the target's. They are written, as any import
      // writes (the limit docs/design-decisions.md names).
      vi.setSystemTime(at('10:20:00'))
      const fresh = tempBundlePath()
      await source.export(fresh)
      await target.import(fresh)
      expect(await target.get('ep_s')).toMatchObject({ summary: 'first', metadata: { a: '1', b: '1' }, x_vendor: 'v1' })
      expect((await target.get('human'))?.content).toBe('first text')
      await source.close()
      await target.close()
    } finally {
      vi.useRealTimers()
    }
  })

  it('two backups restored oldest first: the newer one writes over what the older one brought (imported values carry their source\'s time)', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    try {
      vi.setSystemTime(at('09:00:00'))
      const source = await Memory.open()
      await source.remember({ kind: 'episode', id: 'ep_b', summary: 'first', metadata: { k: '1' } })
      await source.remember({ kind: 'core', id: 'human', content: 'first text' })
      const older = tempBundlePath()
      await source.export(older)
      vi.setSystemTime(at('09:30:00'))
      await source.update('ep_b', { set: { summary: 'second', metadata: { k: '2' } } })
      await source.editText('human', 'second text')
      const newer = tempBundlePath()
      await source.export(newer)

      vi.setSystemTime(at('10:00:00'))
      const target = await Memory.open()
      await target.import(older)
      const [times] = await target.lookup(['ep_b'], { writeTimes: true })
      expect(times?.writeTimes?.fields.summary).toBe(at('09:00:00'))
      vi.setSystemTime(at('10:05:00'))
      const report = await target.import(newer)
      expect(report).toMatchObject({ imported: { episode: 1, core: 1 }, keptNewer: 0 })
      expect(await target.get('ep_b')).toMatchObject({ summary: 'second', metadata: { k: '2' } })
      expect((await target.get('human'))?.content).toBe('second text')
      await source.close()
      await target.close()
    } finally {
      vi.useRealTimers()
    }
  })
})

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
import path from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { madeAtOf } from '../../src/bundle/merge-records.js'
import { ManualClock } from '../../src/log/clock.js'
import { canonicalJson, MAX_BODY_BYTES } from '../../src/log/index.js'
import { Memory } from '../../src/memory/index.js'
import { editManifest, tempBundlePath, tempDir } from './helpers/mem-fixtures.js'
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

    // The older bundle, with a lower count and another summary: the count stays, and so does the
    // summary edited here since (the clock never moved: in the bundle's own second, so after it).
    await target.update('ep_counted', { set: { summary: 'edited here' } })
    await target.import(low)
    expect((await target.get('ep_counted'))?.summary).toBe('edited here')
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

/** Runs `test` with Date faked (vi.setSystemTime sets it), real again after. */
async function withFakeDate(test: () => Promise<void>): Promise<void> {
  vi.useFakeTimers({ toFake: ['Date'] })
  try {
    await test()
  } finally {
    vi.useRealTimers()
  }
}

describe('importing a bundle made before what this replica wrote since', () => {
  const at = (time: string): number => Date.parse(`2026-06-01T${time}Z`)

  it('a stale .mem bundle undoes no field, map key, extension key or text written after it was made; older held writes it does write', () => withFakeDate(async () => {
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
  }))

  it('two backups restored oldest first: the newer one writes over what the older one brought (imported values carry their source\'s time)', () => withFakeDate(async () => {
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
  }))

  it('backups restored oldest first end with the newest: what an import changes in a held record looks as old as its bundle', async () => {
    // helper-82: the second import's changes carried its own time, newer than the third bundle,
    // which was then kept out (b1, b2, b3 ended with b2's values).
    const clock = new ManualClock(at('09:00:00'))
    const source = await Memory.open({ clock })
    const bundles: string[] = []
    for (const [n, time] of [[1, '09:00:00'], [2, '09:10:00'], [3, '09:20:00']] as const) {
      clock.set(at(time))
      if (n === 1) await source.remember({ kind: 'episode', id: 'ep', summary: 'v1', details: 'd1', metadata: { k: 'm1' } })
      else await source.update('ep', { set: { summary: `v${n}`, ...(n === 3 ? { details: 'd3', metadata: { k: 'm3' } } : {}) } })
      const bundle = tempBundlePath()
      await source.export(bundle)
      bundles.push(bundle)
    }
    clock.set(at('10:00:00'))
    const target = await Memory.open({ clock })
    for (const bundle of bundles) expect(await target.import(bundle)).toMatchObject({ keptNewer: 0 })
    expect(await target.get('ep')).toMatchObject({ summary: 'v3', details: 'd3', metadata: { k: 'm3' } })
    const [times] = await target.lookup(['ep'], { writeTimes: true })
    expect(times?.writeTimes).toMatchObject({ fields: { summary: at('09:20:00'), details: at('09:20:00') }, entries: { metadata: { k: at('09:20:00') } } })
    await source.close()
    await target.close()
  })

  it('a held record\'s kept values keep their own times in the write that carries them again, so a bundle made between does not undo them', async () => {
    const clock = new ManualClock(at('09:00:00'))
    const source = await Memory.open({ clock })
    await source.remember({ kind: 'episode', id: 'ep', summary: 's1', details: 'd1', metadata: { k: 'm1', j: 'j1' } })
    const first = tempBundlePath()
    await source.export(first)
    const target = await Memory.open({ clock })
    await target.import(first)
    clock.set(at('09:10:00'))
    await source.update('ep', { set: { summary: 's2', metadata: { j: 'j2' } } })
    const middle = tempBundlePath()
    await source.export(middle)
    clock.set(at('09:20:00'))
    await target.update('ep', { set: { summary: 'edited here', metadata: { k: 'edited' } } })
    clock.set(at('09:30:00'))
    await source.update('ep', { set: { details: 'd3' } })
    const stale = tempBundlePath()
    await source.export(stale)
    editManifest(stale, (manifest) => { manifest.createdAt = '2026-06-01T09:05:00Z' })
    clock.set(at('09:40:00'))
    // Writes the details and j (older here than 09:05), carrying the summary and k as kept.
    expect(await target.import(stale)).toMatchObject({ imported: { episode: 1 }, keptNewer: 1 })
    const [times] = await target.lookup(['ep'], { writeTimes: true })
    expect(times?.writeTimes).toMatchObject({ fields: { summary: at('09:20:00'), details: at('09:05:00') }, entries: { metadata: { k: at('09:20:00'), j: at('09:05:00') } } })
    // The 09:10 bundle keeps what was edited here at 09:20 and writes over what came from the
    // one said to be made at 09:05 (its details, d1 again).
    expect(await target.import(middle)).toMatchObject({ keptNewer: 1 })
    expect(await target.get('ep')).toMatchObject({ summary: 'edited here', details: 'd1', metadata: { k: 'edited', j: 'j2' } })
    await source.close()
    await target.close()
  })

  it('an import reads the write times of held records once: the times it kept go with its write (helper-86)', async () => {
    const clock = new ManualClock(at('09:00:00'))
    const source = await Memory.open({ clock })
    const target = await Memory.open({ clock })
    const ids = ['ep_1', 'ep_2', 'ep_3']
    for (const id of ids) await source.remember({ kind: 'episode', id, summary: 's1', details: 'd1', metadata: { k: 'm1' } })
    const first = tempBundlePath()
    await source.export(first)
    await target.import(first)
    clock.set(at('09:10:00'))
    for (const id of ids) await source.update(id, { set: { details: 'd2' } })
    const stale = tempBundlePath()
    await source.export(stale)
    clock.set(at('09:20:00'))
    // One event per record after the bundle: the only ones an import needs to read.
    for (const id of ids) await target.update(id, { set: { summary: 'edited here', metadata: { k: 'edited' } } })
    clock.set(at('09:30:00'))
    const reads: string[][] = []
    const getManyBySeq = target.log.getManyBySeq.bind(target.log)
    const spy = vi.spyOn(target.log, 'getManyBySeq').mockImplementation((refs) => {
      reads.push(refs.map(({ author, seq }) => `${author}:${seq}`))
      return getManyBySeq(refs)
    })
    expect(await target.import(stale)).toMatchObject({ imported: { episode: 3 }, keptNewer: 3 })
    spy.mockRestore()
    // Each edit once, in one batched read: merge-records reads them and hands the kept times to
    // rememberMany, which read them all again before (and each event was a read of its own).
    expect(reads).toHaveLength(1)
    expect(reads[0]).toHaveLength(ids.length)
    expect(new Set(reads[0]).size).toBe(ids.length)
    for (const [i, result] of (await target.lookup(ids, { writeTimes: true })).entries()) {
      expect(result.view, ids[i]).toMatchObject({ summary: 'edited here', details: 'd2', metadata: { k: 'edited' } })
      expect(result.writeTimes, ids[i]).toMatchObject({ fields: { summary: at('09:20:00'), details: at('09:10:00') }, entries: { metadata: { k: at('09:20:00') } } })
    }
    await source.close()
    await target.close()
  })

  it('a held record whose kept times would not fit its bodies is written without times, as new as the import, and nothing fails', async () => {
    const clock = new ManualClock(at('09:00:00'))
    const source = await Memory.open({ clock })
    const keys = Array.from({ length: 60 }, (_, n) => `key${String(n).padStart(2, '0')}`)
    const metadata = Object.fromEntries(keys.map((key) => [key, 'v']))
    // Details leave less room in the create than 60 kept map keys' times take.
    await source.remember({ kind: 'episode', id: 'ep', summary: 's1', details: 'x'.repeat(MAX_BODY_BYTES - 2_500), metadata })
    const bundle = tempBundlePath()
    await source.export(bundle)
    await source.update('ep', { set: { summary: 's2' } })
    const newer = tempBundlePath()
    clock.set(at('09:05:00'))
    await source.export(newer)
    clock.set(at('09:10:00'))
    const target = await Memory.open({ clock })
    await target.import(bundle)
    clock.set(at('09:20:00'))
    await target.update('ep', { set: { metadata: Object.fromEntries(keys.map((key) => [key, 'edited'])) } })
    clock.set(at('09:30:00'))
    expect(await target.import(newer)).toMatchObject({ imported: { episode: 1 }, keptNewer: 1 })
    expect(await target.get('ep')).toMatchObject({ summary: 's2', metadata: Object.fromEntries(keys.map((key) => [key, 'edited'])) })
    const [times] = await target.lookup(['ep'], { writeTimes: true })
    expect(times?.writeTimes?.fields.summary).toBe(at('09:30:00'))
    expect(times?.writeTimes?.entries.metadata?.key00).toBe(at('09:30:00'))
    await source.close()
    await target.close()
  }, 30_000)

  it('kept times of map keys beyond ASCII are measured in bytes against the room left in a body (helper-83)', async () => {
    // keptAt was measured in UTF-16 units: 7 keys of 40 CJK characters are 416 units but 983
    // bytes, so a held record whose create had 568 bytes to spare went over MAX_BODY_BYTES and
    // the import threw BODY_TOO_LARGE. Now it is written without times.
    const keys = Array.from({ length: 7 }, (_, n) => `${n}${'\u952e'.repeat(39)}`)
    const mapOf = (value: string): Record<string, string> => Object.fromEntries(keys.map((key) => [key, value]))
    const run = async (detailsLength: number): Promise<{ firstSize: number; firstStamp: string; error?: unknown; view?: unknown }> => {
      const clock = new ManualClock(at('09:00:00'))
      const source = await Memory.open({ clock })
      const target = await Memory.open({ clock })
      try {
        await source.remember({ kind: 'episode', id: 'ep_big', summary: 's1', details: 'd'.repeat(detailsLength), metadata: mapOf('a') })
        const first = tempBundlePath()
        await source.export(first)
        const empty = target.versionVector()
        await target.import(first)
        const [created] = await target.events(empty)
        const body = created?.body as Uint8Array
        const { madeAt } = (JSON.parse(Buffer.from(body).toString('utf8')) as { data: { madeAt: number } }).data
        clock.set(at('09:10:00'))
        await source.update('ep_big', { set: { summary: 's2' } })
        const second = tempBundlePath()
        await source.export(second)
        clock.set(at('09:20:00'))
        await target.update('ep_big', { set: { metadata: mapOf('b') } })
        clock.set(at('09:30:00'))
        const outcome = { firstSize: body.length, firstStamp: `,"madeAt":${madeAt}` }
        try {
          await target.import(second)
        } catch (error) {
          return { ...outcome, error }
        }
        return { ...outcome, view: await target.get('ep_big') }
      } finally {
        await source.close()
        await target.close()
      }
    }
    const probe = await run(1000)
    expect(probe.error).toBeUndefined()
    expect(Buffer.byteLength(`,"keptAt":${canonicalJson({ metadata: Object.fromEntries(keys.map((key) => [key, at('09:20:00')])) })}`)).toBeGreaterThan(512)
    // Details sized so the held record's create (the second import's, values of one length
    // alike) is 600 bytes under the limit: room for its madeAt, not for its keptAt.
    const bare = probe.firstSize - probe.firstStamp.length
    const large = await run(1000 + MAX_BODY_BYTES - 600 - bare)
    expect(large.error).toBeUndefined()
    expect(large.view).toMatchObject({ summary: 's2', metadata: mapOf('b') })
  })

  it('three backups in any order end with the newest: a text a written record holds as the bundle does looks as old as the bundle (helper-83)', async () => {
    // The text went X, Y, X again while another field changed. Imported b1, b3, b2: b3 writes
    // the record (charBudget) and re-stamps every plain field with its time, but its text is
    // held already, so no change is made and the text keeps b1's time; b2 (older than b3, newer
    // than b1) then writes Y over it. In the order b1, b2, b3 the record ends with X.
    const clock = new ManualClock(at('09:00:00'))
    const source = await Memory.open({ clock })
    await source.remember({ kind: 'core', id: 'human', content: 'X', charBudget: 100 })
    const bundles: string[] = []
    for (const [time, step] of [['09:00:00', async () => {}], ['09:10:00', async () => source.editText('human', 'Y')], ['09:20:00', async () => {
      await source.editText('human', 'X')
      await source.update('human', { set: { charBudget: 200 } })
    }]] as const) {
      clock.set(at(time))
      await step()
      const bundle = tempBundlePath()
      await source.export(bundle)
      bundles.push(bundle)
    }
    const [b1, b2, b3] = bundles as [string, string, string]
    clock.set(at('10:00:00'))
    const ends: unknown[] = []
    for (const order of [[b1, b2, b3], [b1, b3, b2]]) {
      const target = await Memory.open({ clock })
      for (const bundle of order) await target.import(bundle)
      ends.push(await target.get('human'))
      await target.close()
    }
    expect(ends[0]).toMatchObject({ content: 'X', charBudget: 200 })
    expect(ends[1]).toMatchObject({ content: 'X', charBudget: 200 })
    await source.close()
  })

  it('a held record\'s write an import kept stays as new as it was: a bundle made between the two does not undo it', () => withFakeDate(async () => {
    vi.setSystemTime(at('09:00:00'))
    const source = await Memory.open()
    await source.remember({ kind: 'episode', id: 'ep_h', summary: 'first', details: 'd1' })
    const first = tempBundlePath()
    await source.export(first)
    const target = await Memory.open()
    await target.import(first)
    vi.setSystemTime(at('09:10:00'))
    await source.update('ep_h', { set: { summary: 'middle', details: 'd2' } })
    const middle = tempBundlePath()
    await source.export(middle)
    vi.setSystemTime(at('09:20:00'))
    await target.update('ep_h', { set: { summary: 'edited here' } })
    vi.setSystemTime(at('09:30:00'))
    await source.update('ep_h', { set: { details: 'd3' } })
    // Said to be made at 09:05 but holding other details than the target now: the import writes
    // the record again (the details) and keeps the summary edited at 09:20. Were that write to
    // carry the bundle's 09:05 for the summary too, it would look older than the 09:10 bundle.
    const stale = tempBundlePath()
    await source.export(stale)
    editManifest(stale, (manifest) => { manifest.createdAt = '2026-06-01T09:05:00Z' })
    expect(await target.import(stale)).toMatchObject({ imported: { episode: 1 }, keptNewer: 1 })
    expect(await target.get('ep_h')).toMatchObject({ summary: 'edited here', details: 'd3' })
    vi.setSystemTime(at('09:40:00'))
    expect(await target.import(middle)).toMatchObject({ keptNewer: 1 })
    expect(await target.get('ep_h')).toMatchObject({ summary: 'edited here' })
    await source.close()
    await target.close()
  }))

  it('a bundle\'s time is read in the clock of the space\'s events: a writer whose clock runs ahead moves both alike', () => withFakeDate(async () => {
    vi.setSystemTime(at('09:00:00'))
    const hour = 3_600_000
    const ahead = new ManualClock(at('10:00:00'))
    const owner = await Memory.open()
    const fast = await Memory.open({ clock: ahead, space: owner.space })
    const other = await Memory.open({ space: owner.space })
    await owner.grant(fast.author)
    await owner.grant(other.author)
    const sync = async (to: Memory, from: Memory): Promise<void> => { await to.ingest(await from.events(to.versionVector())) }
    await sync(fast, owner)
    await fast.remember({ kind: 'episode', id: 'ep_fast', summary: 'from a clock an hour ahead' })
    await sync(owner, fast)
    await owner.remember({ kind: 'episode', id: 'ep', summary: 'old' })
    vi.setSystemTime(at('09:20:00'))
    ahead.set(Date.now() + hour)
    await sync(fast, owner)
    await fast.update('ep_fast', { set: { summary: 'still ahead' } })
    await sync(other, fast)
    await other.update('ep', { set: { summary: 'new' } })
    vi.setSystemTime(at('09:25:00'))
    const bundle = tempBundlePath()
    await other.export(bundle)
    // What it wrote at 09:20 is dated 10:20 like every write after the fast one: so is its bundle.
    const [times] = await other.lookup(['ep'], { writeTimes: true })
    expect(times?.writeTimes?.fields.summary).toBe(at('10:20:00'))
    expect(owner.log.clockWall()).toBe(at('10:00:00'))
    // The owner's 'old' carries 10:00 (a physical 09:00): older than the bundle, so written over.
    vi.setSystemTime(at('09:30:00'))
    expect(await owner.import(bundle)).toMatchObject({ imported: { episode: 2 }, keptNewer: 0 })
    expect((await owner.get('ep'))?.summary).toBe('new')
    expect((await owner.get('ep_fast'))?.summary).toBe('still ahead')
    for (const memory of [owner, fast, other]) await memory.close()
  }))

  it('a text edited after its bundle was made keeps the edit when a writer\'s clock ran ahead: text changes are dated in the space\'s clock', async () => {
    // helper-82: the bundle was dated in the space's clock (10:00, from one write an hour ahead)
    // and the text change in the machine's (09:20), so the edit looked older and was undone.
    const clock = new ManualClock(at('09:00:00'))
    const memory = await Memory.open({ clock })
    await memory.remember({ kind: 'core', id: 'human', content: 'Notes:' })
    clock.set(at('10:00:00'))
    await memory.remember({ kind: 'episode', id: 'ep', summary: 'old' })
    clock.set(at('09:10:00'))
    const bundle = tempBundlePath()
    await memory.export(bundle)
    clock.set(at('09:20:00'))
    await memory.appendText('human', ' tea')
    await memory.update('ep', { set: { summary: 'new' } })
    const [times] = await memory.lookup(['human'], { writeTimes: true })
    expect(times?.writeTimes?.fields.content).toBe(at('10:00:00'))
    clock.set(at('09:30:00'))
    expect(await memory.import(bundle)).toMatchObject({ keptNewer: 2 })
    expect(await memory.get('human')).toMatchObject({ content: 'Notes: tea' })
    expect(await memory.get('ep')).toMatchObject({ summary: 'new' })
    await memory.close()
  })

  it('an import\'s source time is never after the event that carries it, and a write time never after its event', () => withFakeDate(async () => {
    vi.setSystemTime(at('09:00:00'))
    const memory = await Memory.open()
    await memory.rememberMany([{ kind: 'episode', id: 'ep_future', summary: 'a source dated later' }], { madeAt: at('12:00:00') })
    await memory.rememberMany([{ kind: 'episode', id: 'ep_past', summary: 'a source dated earlier' }], { madeAt: at('08:00:00') })
    // Another writer's body can say anything: a source time after its own event counts as the event's.
    await memory.log.append(memory.identity, { op: 'memory.create', data: { kind: 'episode', id: 'ep_signed', fields: { summary: 's' }, madeAt: at('23:00:00') } })
    // So is a kept time; one that is not a number, or a keptAt that is not a map, counts as none.
    await memory.log.append(memory.identity, { op: 'memory.create', data: { kind: 'episode', id: 'ep_kept', fields: { summary: 's', details: 'd', metadata: { k: 'v' } }, madeAt: at('07:00:00'), keptAt: { summary: at('23:00:00'), details: 'soon', metadata: { k: at('08:30:00') } } } })
    await memory.log.append(memory.identity, { op: 'memory.create', data: { kind: 'episode', id: 'ep_bad_kept', fields: { summary: 's' }, madeAt: at('07:00:00'), keptAt: [at('08:30:00')] } })
    const times = await memory.lookup(['ep_future', 'ep_past', 'ep_signed', 'ep_bad_kept'], { writeTimes: true })
    expect(times.map((item) => item.writeTimes?.fields.summary)).toEqual([at('09:00:00'), at('08:00:00'), at('09:00:00'), at('07:00:00')])
    const [kept] = await memory.lookup(['ep_kept'], { writeTimes: true })
    expect(kept?.writeTimes).toMatchObject({ fields: { summary: at('09:00:00'), details: at('07:00:00') }, entries: { metadata: { k: at('08:30:00') } } })
    // With `from`, times only need to tell before from after it: an event older than it is not read.
    vi.setSystemTime(at('09:30:00'))
    const from = await memory.lookup(['ep_past'], { writeTimes: { from: at('09:10:00') } })
    expect(from[0]?.writeTimes?.fields.summary).toBe(at('09:00:00'))
    const after = await memory.lookup(['ep_past'], { writeTimes: { from: at('08:30:00') } })
    expect(after[0]?.writeTimes?.fields.summary).toBe(at('08:00:00'))
    expect(await rejection(memory.lookup(['ep_past'], { writeTimes: { from: 'soon' } as unknown as { from: number } }))).toMatchObject({ code: 'WRONG_TYPE', where: { field: 'options.writeTimes.from' } })
    expect(await rejection(memory.lookup(['ep_past'], { writeTimes: { since: 1 } as unknown as { from: number } }))).toMatchObject({ code: 'UNKNOWN_FIELD', where: { field: 'options.writeTimes.since' } })
    await memory.close()
  }))

  it('rememberMany takes a source time of whole milliseconds since 1970, naming the option otherwise; nothing is written', async () => {
    const memory = await Memory.open()
    const before = memory.versionVector()
    for (const [madeAt, code] of [[-1, 'OUT_OF_RANGE'], [0.5, 'WRONG_TYPE'], [-1.2345678901234567e300, 'WRONG_TYPE'], [Number.NaN, 'WRONG_TYPE']] as const) {
      expect(await rejection(memory.rememberMany([{ kind: 'episode', summary: 's' }], { madeAt })), String(madeAt)).toMatchObject({ code, where: { field: 'options.madeAt' } })
    }
    expect(memory.versionVector()).toEqual(before)
    await memory.close()
  })

  it('a source dated before 1970, or not at all, gives no time: the import writes as it always did', () => {
    expect(madeAtOf('2026-06-01T09:00:00Z')).toBe(at('09:00:00'))
    expect(madeAtOf('2026-06-01T09:00:00.250Z')).toBe(at('09:00:00.250'))
    expect(madeAtOf('1969-12-31T23:59:59Z')).toBeUndefined()
    expect(madeAtOf('not a time')).toBeUndefined()
    expect(madeAtOf(undefined)).toBeUndefined()
  })

  it('a bundle dated with milliseconds keeps a held write in its own second, before the milliseconds too', () => withFakeDate(async () => {
    vi.setSystemTime(at('09:00:00'))
    const source = await Memory.open()
    await source.remember({ kind: 'episode', id: 'ep_ms', summary: 'from the bundle' })
    const bundle = tempBundlePath()
    await source.export(bundle)
    editManifest(bundle, (manifest) => { manifest.createdAt = '2026-06-01T09:05:00.900Z' })
    const target = await Memory.open()
    await target.remember({ kind: 'episode', id: 'ep_ms', summary: 'first here' })
    vi.setSystemTime(at('09:05:00.100'))
    await target.update('ep_ms', { set: { summary: 'written in the bundle\'s second' } })
    vi.setSystemTime(at('09:10:00'))
    expect(await target.import(bundle)).toMatchObject({ keptNewer: 1 })
    expect((await target.get('ep_ms'))?.summary).toBe('written in the bundle\'s second')
    await source.close()
    await target.close()
  }))

  it('a PAM import keeps later edits by the write times its entries sign, not its unsigned creation time (import-pam-times.test.ts)', () => withFakeDate(async () => {
    vi.setSystemTime(at('09:00:00'))
    const memory = await Memory.open()
    await memory.remember({ kind: 'episode', id: 'ep_pam', summary: 'in the artifact' })
    const artifact = path.join(tempDir(), 'memory.pam')
    await memory.export(artifact, { format: 'pam' })
    vi.setSystemTime(at('09:30:00'))
    await memory.update('ep_pam', { set: { summary: 'edited since' } })
    const report = await memory.import(artifact)
    expect(report).toMatchObject({ format: 'pam', keptNewer: 1 })
    expect((await memory.get('ep_pam'))?.summary).toBe('edited since')
    await memory.close()
  }))
})

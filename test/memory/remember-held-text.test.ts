/**
 * A create of a record this replica already holds, with collaborative text (a core block's
 * `content`): remembering the block again, or importing a bundle that carries it with other
 * content. The create's text used to be built from the shared base document, a second first
 * change by the same author (same Automerge actor and seq): Automerge refused it when the create
 * was applied, after the event was stored, so the write threw and every read after it threw too
 * (found by the bundle-merge property). Now the text is an edit of the held document.
 */
import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/log/clock.js'
import { Memory } from '../../src/memory/index.js'
import { tempBundlePath } from '../bundle/helpers/mem-fixtures.js'

async function pair(): Promise<[Memory, Memory, ManualClock]> {
  const clock = new ManualClock(Date.UTC(2026, 0, 1))
  const a = await Memory.open({ clock })
  const b = await Memory.open({ clock, space: a.space })
  await a.grant(b.author)
  await b.ingest(await a.events(b.versionVector()))
  return [a, b, clock]
}

describe('a create of a held record with text', () => {
  it('remembering a core block again by its author sets the new content, and peers converge', async () => {
    const [a, b] = await pair()
    await a.remember({ kind: 'core', id: 'human', content: 'Notes:' })
    await a.appendText('human', ' tea')
    await a.remember({ kind: 'core', id: 'human', content: 'Notes: coffee' })
    expect((await a.get('human'))?.content).toBe('Notes: coffee')
    await a.remember({ kind: 'episode', id: 'ep_after', summary: 'still writes' })
    await b.ingest(await a.events(b.versionVector()))
    expect(await b.digest()).toBe(await a.digest())
    expect((await a.checkProjection()).named).toEqual([])
    await a.close()
    await b.close()
  })

  it('a concurrent append on another replica survives a re-remember', async () => {
    const [a, b] = await pair()
    await a.remember({ kind: 'core', id: 'human', content: 'Notes:' })
    await b.ingest(await a.events(b.versionVector()))
    await b.appendText('human', ' [b]')
    await a.remember({ kind: 'core', id: 'human', content: 'Notes: [a]' })
    await b.ingest(await a.events(b.versionVector()))
    await a.ingest(await b.events(a.versionVector()))
    const content = (await a.get('human'))?.content as string
    expect(content).toContain('[a]')
    expect(content).toContain('[b]')
    expect(await b.digest()).toBe(await a.digest())
    await a.close()
    await b.close()
  })

  it('rememberMany with two creates of one block writes the later content', async () => {
    const [a] = await pair()
    await a.rememberMany([{ kind: 'core', id: 'persona', content: 'first' }, { kind: 'core', id: 'persona', content: 'second' }])
    expect((await a.get('persona'))?.content).toBe('second')
    expect((await a.checkProjection()).named).toEqual([])
    await a.close()
  })

  it('importing a bundle whose core block differs takes its content, and importing it again writes nothing', async () => {
    const [a, b, clock] = await pair()
    await a.remember({ kind: 'core', id: 'human', content: 'Notes:' })
    await b.ingest(await a.events(b.versionVector()))
    await a.appendText('human', ' tea')
    await b.appendText('human', ' coffee')
    // Made after b's edit (one made in its second would keep it: see import-held-records.test.ts).
    clock.set(Date.UTC(2026, 0, 1, 0, 0, 1))
    const bundle = tempBundlePath()
    await a.export(bundle)
    await b.import(bundle)
    expect((await b.get('human'))?.content).toBe('Notes: tea')
    const before = b.versionVector()
    await b.import(bundle)
    expect(b.versionVector()).toEqual(before)
    await a.ingest(await b.events(a.versionVector()))
    await b.ingest(await a.events(b.versionVector()))
    expect(await b.digest()).toBe(await a.digest())
    await a.close()
    await b.close()
  })

  it('a bundle whose core block is empty leaves held text as it is, and writes nothing, every time', async () => {
    const [a, b] = await pair()
    await a.remember({ kind: 'core', id: 'human', content: '' })
    const bundle = tempBundlePath()
    await a.export(bundle)
    await b.remember({ kind: 'core', id: 'human', content: 'Notes: tea' })
    const before = b.versionVector()
    for (let i = 0; i < 2; i++) {
      const report = await b.import(bundle)
      expect(report.format === 'mem' && report.imported).toEqual({})
    }
    expect(b.versionVector()).toEqual(before)
    expect((await b.get('human'))?.content).toBe('Notes: tea')
    await a.close()
    await b.close()
  })
})

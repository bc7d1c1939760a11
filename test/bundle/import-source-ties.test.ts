/**
 * helper-87 review of d8a0cae: an entry the source dates by its creation only, changed there
 * since, with no edit here. Its first import dated what it wrote by that time; a later export
 * gives the same time, and a held value written in or after the source's second is kept as
 * "newer" (merge-records.ts), so the later export's change never lands, though nothing was
 * edited here (before d8a0cae it did: the import wrote over).
 */
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/log/clock.js'
import { Memory } from '../../src/memory/index.js'
import { tempDir } from './helpers/mem-fixtures.js'

const ID = 'ep_0123456789abcdef'

async function mem0Export(name: string, text: string): Promise<string> {
  const file = path.join(tempDir(), name)
  await writeFile(file, JSON.stringify([{ id: ID, memory: text, user_id: 'alice', created_at: '2025-01-01T00:00:00Z' }]))
  return file
}

describe('an entry dated only by its creation, changed in the source', () => {
  it('a later export writes its change over what an earlier import wrote, with no edit here', async () => {
    const clock = new ManualClock(Date.parse('2026-03-01T00:00:00Z'))
    const memory = await Memory.open({ clock })
    await memory.import(await mem0Export('old.json', 'likes tea'), { from: 'mem0' })
    clock.advance(86_400_000)
    const report = await memory.import(await mem0Export('new.json', 'likes coffee'), { from: 'mem0' })
    expect((await memory.get(ID))?.details).toBe('likes coffee')
    expect(report).toMatchObject({ imported: { episode: 1 }, keptNewer: 0 })
    await memory.close()
  })

  it('an edit here after the entry is still kept against that export', async () => {
    const clock = new ManualClock(Date.parse('2026-03-01T00:00:00Z'))
    const memory = await Memory.open({ clock })
    await memory.import(await mem0Export('old.json', 'likes tea'), { from: 'mem0' })
    clock.advance(60_000)
    await memory.update(ID, { set: { details: 'likes water' } })
    clock.advance(60_000)
    const report = await memory.import(await mem0Export('new.json', 'likes coffee'), { from: 'mem0' })
    expect((await memory.get(ID))?.details).toBe('likes water')
    expect(report).toMatchObject({ keptNewer: 1 })
    // And the same export again writes nothing.
    const before = memory.versionVector()
    expect(await memory.import(await mem0Export('new.json', 'likes coffee'), { from: 'mem0' })).toMatchObject({ imported: {} })
    expect(memory.versionVector()).toEqual(before)
    await memory.close()
  })
})

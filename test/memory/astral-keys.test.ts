/**
 * Ids, tags and contexts that begin with a character past U+FFFF (an emoji, CJK Extension B).
 * Storage orders keys by their UTF-8 bytes, where such characters sort after U+FFFF, so every
 * prefix range must reach past them: each read below walks one (kind, tag and context indexes,
 * all views, the digest, tombstones, reverse references for a cascade, the export).
 */
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { Memory } from '../../src/index.js'
import { tempDirs } from '../helpers/temp-dirs.js'

const { tempDir, removeTempDirs } = tempDirs('cairn-astral-')
afterEach(removeTempDirs)

async function ids(records: AsyncIterable<{ id: string }>): Promise<string[]> {
  const out: string[] = []
  for await (const record of records) out.push(record.id)
  return out
}

describe.each([['in memory', false], ['on disk', true]] as const)('keys past U+FFFF (%s)', (_, onDisk) => {
  it('are found by every range read, and a forget reaches them', async () => {
    const memory = await Memory.open(onDisk ? { path: await tempDir() } : {})
    const astral = '😀note'
    // U+10FFFF is the range bound itself: a key part holding it is escaped.
    const last = '\u{10FFFF}end'
    await memory.remember({ kind: 'episode', id: 'ep_plain', summary: 'plain tea', tags: ['tea'], contextID: 'ctx_a' } as never)
    await memory.remember({ kind: 'episode', id: astral, summary: 'emoji tea', tags: ['🍵'], contextID: '𠀀ctx' } as never)
    await memory.remember({ kind: 'episode', id: last, summary: 'last tea' } as never)
    await memory.remember({ kind: 'fact', id: '😀fact', episodeID: astral, subject: 'user', predicate: 'likes', object: 'tea' } as never)

    expect((await memory.query({ kind: 'episode' })).records.map((record) => record.id).sort()).toEqual(['ep_plain', last, astral].sort())
    expect((await memory.query({ tags: ['🍵'] })).records.map((record) => record.id)).toEqual([astral])
    expect((await memory.query({ context: '𠀀ctx' })).records.map((record) => record.id)).toEqual([astral])
    expect((await ids(memory.records())).sort()).toEqual(['ep_plain', last, astral, '😀fact'].sort())
    expect(await memory.recordCount()).toBe(4)
    expect((await memory.get(last))?.summary).toBe('last tea')

    const before = await memory.digest()
    await memory.update(astral, { set: { summary: 'changed' } } as never)
    expect(await memory.digest()).not.toBe(before)

    expect(await memory.referrers(astral)).toEqual(['😀fact'])
    await memory.forget(astral)
    expect(await memory.status('😀fact')).toBe('deleted')
    expect((await memory.tombstones()).map((tombstone) => tombstone.targetID)).toContain(astral)
    await memory.forget(last)
    expect((await memory.tombstones()).map((tombstone) => tombstone.targetID)).toContain(last)

    const out = path.join(await tempDir(), 'out.mem')
    await memory.remember({ kind: 'episode', id: '🦀kept', summary: 'exported' } as never)
    await memory.export(out)
    const episodes = await readFile(path.join(out, 'items', 'episode.jsonl'), 'utf8')
    expect(episodes).toContain('"id":"🦀kept"')
    expect(await readFile(path.join(out, 'audit', 'tombstones.jsonl'), 'utf8')).toContain(`"targetID":"${astral}"`)
    await memory.close()
  })
})

/**
 * Another system's export imported again after an edit here (adapters: mem0, ChatGPT, Claude…).
 * Each record is dated by the latest time its source gives the entry (sourceTimeOf): a field
 * written here after it keeps its value, so re-importing the same export no longer undoes the
 * edit (it put every imported value back), while an export in which the entry changed after the
 * edit writes over it, and two exports end alike in either import order.
 */
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { sourceTimeOf } from '../../src/bundle/source-times.js'
import { ManualClock } from '../../src/log/clock.js'
import { Memory } from '../../src/memory/index.js'
import { rejection } from '../helpers/error-code.js'
import { tempDir } from './helpers/mem-fixtures.js'

const ID = 'ep_0123456789abcdef'

/** A mem0 export (list form) of one memory. */
async function mem0Export(name: string, memory: { text: string; created?: string; updated?: string }): Promise<string> {
  const file = path.join(tempDir(), name)
  await writeFile(file, JSON.stringify([{
    id: ID, memory: memory.text, user_id: 'alice',
    ...(memory.created ? { created_at: memory.created } : {}), ...(memory.updated ? { updated_at: memory.updated } : {}),
  }]))
  return file
}

async function replica(at: string): Promise<{ memory: Memory; clock: ManualClock }> {
  const clock = new ManualClock(Date.parse(at))
  return { memory: await Memory.open({ clock }), clock }
}

describe('an adapter import dates each record by its source', () => {
  it('re-importing an export after an edit here keeps the edit and writes nothing', async () => {
    const { memory, clock } = await replica('2026-03-01T00:00:00Z')
    const file = await mem0Export('mem0.json', { text: 'likes tea', created: '2025-01-01T00:00:00Z', updated: '2025-01-02T00:00:00Z' })
    await memory.import(file, { from: 'mem0' })
    clock.advance(60_000)
    await memory.update(ID, { set: { details: 'likes coffee' } })
    const before = memory.versionVector()

    const again = await memory.import(file, { from: 'mem0' })
    expect((await memory.get(ID))?.details).toBe('likes coffee')
    expect(again).toMatchObject({ imported: {}, unchanged: 1, keptNewer: 1 })
    expect(memory.versionVector()).toEqual(before)
    await memory.close()
  })

  it('what the import wrote is as old as its entry: an edit here, even before the import, is newer', async () => {
    const { memory } = await replica('2026-03-01T00:00:00Z')
    await memory.import(await mem0Export('mem0.json', { text: 'likes tea', created: '2025-01-01T00:00:00Z', updated: '2025-01-02T00:00:00Z' }), { from: 'mem0' })
    const [found] = await memory.lookup([ID], { writeTimes: true })
    expect(found?.writeTimes?.fields.details).toBe(Date.parse('2025-01-02T00:00:00Z'))
    expect(found?.writeTimes?.fields.mentionTime).toBe(Date.parse('2025-01-02T00:00:00Z'))
    await memory.close()
  })

  it('an export in which the entry changed after the edit writes over it', async () => {
    const { memory, clock } = await replica('2026-03-01T00:00:00Z')
    await memory.import(await mem0Export('old.json', { text: 'likes tea', created: '2025-01-01T00:00:00Z' }), { from: 'mem0' })
    await memory.update(ID, { set: { details: 'likes coffee' } })
    clock.set(Date.parse('2026-05-01T00:00:00Z'))
    const newer = await memory.import(await mem0Export('new.json', { text: 'likes green tea', created: '2025-01-01T00:00:00Z', updated: '2026-04-01T00:00:00Z' }), { from: 'mem0' })
    expect(newer).toMatchObject({ imported: { episode: 1 }, keptNewer: 0 })
    expect((await memory.get(ID))?.details).toBe('likes green tea')
    await memory.close()
  })

  it('two exports of one entry end with the later one\'s values, imported in either order', async () => {
    const older = await mem0Export('older.json', { text: 'likes tea', created: '2025-01-01T00:00:00Z' })
    const newer = await mem0Export('newer.json', { text: 'likes green tea', created: '2025-01-01T00:00:00Z', updated: '2025-06-01T00:00:00Z' })
    for (const order of [[older, newer], [newer, older]]) {
      const { memory } = await replica('2026-03-01T00:00:00Z')
      for (const file of order) await memory.import(file, { from: 'mem0' })
      expect((await memory.get(ID))?.details).toBe('likes green tea')
      expect((await memory.get(ID))?.mentionTime).toBe('2025-06-01T00:00:00Z')
      await memory.close()
    }
  })
})

describe('entries dated after the import', () => {
  it('are imported with one FUTURE_TIME warning naming the first and how many more; times in the past or just ahead give none', async () => {
    const { memory } = await replica('2026-03-01T00:00:00Z')
    const file = path.join(tempDir(), 'mem0.json')
    const ahead = (ms: number): string => new Date(Date.now() + ms).toISOString().replace(/\.\d{3}Z$/, 'Z')
    await writeFile(file, JSON.stringify([
      { id: 'ep_000000000000000a', memory: 'a', created_at: '2025-01-01T00:00:00Z', updated_at: ahead(9 * 3_600_000) },
      { id: 'ep_000000000000000b', memory: 'b', created_at: ahead(3 * 3_600_000) },
      { id: 'ep_000000000000000c', memory: 'c', created_at: '2025-01-01T00:00:00Z', updated_at: ahead(60_000) },
    ]))
    const report = await memory.import(file, { from: 'mem0' })
    expect(report).toMatchObject({ imported: { episode: 3 } })
    if (report.format !== 'source') throw new Error(`imported as ${report.format}`)
    const future = report.warnings.filter((warning) => warning.code === 'FUTURE_TIME')
    expect(future).toHaveLength(1)
    expect(future[0]).toMatchObject({ where: { file } })
    expect(future[0]?.message).toMatch(/^ep_000000000000000a and 1 more are dated after this import/)
    await memory.close()
  })
})

describe('sourceTimeOf', () => {
  const none = new Set<string>()

  it('is the latest of the times the source gave the entry', () => {
    expect(sourceTimeOf('episode', { eventTime: '2025-01-01T00:00:00Z', mentionTime: '2025-02-01T00:00:00Z', ingestionTime: '2025-01-15T00:00:00Z' }, none))
      .toBe(Date.parse('2025-02-01T00:00:00Z'))
    expect(sourceTimeOf('entity', { updatedAt: '2024-05-05T05:05:05Z' }, none)).toBe(Date.parse('2024-05-05T05:05:05Z'))
    expect(sourceTimeOf('resource', { created: '2024-01-01T00:00:00Z', modified: '2024-03-01T00:00:00Z' }, none)).toBe(Date.parse('2024-03-01T00:00:00Z'))
  })

  it('leaves out the times the adapter took from the import, and times that say when something holds', () => {
    const importTimes = new Set(['2026-03-01T00:00:00Z'])
    expect(sourceTimeOf('episode', { eventTime: '2025-01-01T00:00:00Z', mentionTime: '2026-03-01T00:00:00Z', ingestionTime: '2026-03-01T00:00:00Z' }, importTimes))
      .toBe(Date.parse('2025-01-01T00:00:00Z'))
    expect(sourceTimeOf('episode', { eventTime: '2026-03-01T00:00:00Z', mentionTime: '2026-03-01T00:00:00Z', ingestionTime: '2026-03-01T00:00:00Z' }, importTimes)).toBeUndefined()
    // A valid time and an expiry are not when the source wrote the record.
    expect(sourceTimeOf('edge', { tValidFrom: '2025-01-01T00:00:00Z', tValidTo: '2025-02-01T00:00:00Z' }, none)).toBeUndefined()
    expect(sourceTimeOf('episode', { expirationDate: '2030-01-01T00:00:00Z' }, none)).toBeUndefined()
    expect(sourceTimeOf('chunk', { text: 'x', position: 0 }, none)).toBeUndefined()
  })
})

describe('rememberMany with a time per record', () => {
  it('dates each record by its own time, and none where the list holds none', async () => {
    const { memory } = await replica('2026-03-01T00:00:00Z')
    const early = Date.parse('2025-01-01T00:00:00Z')
    const ids = await memory.rememberMany([
      { kind: 'episode', summary: 'one' }, { kind: 'episode', summary: 'two' },
    ], { madeAt: [early, undefined] })
    const found = await memory.lookup(ids, { writeTimes: true })
    expect(found[0]?.writeTimes?.fields.summary).toBe(early)
    expect(found[1]?.writeTimes?.fields.summary).toBe(Date.parse('2026-03-01T00:00:00Z'))
    await memory.close()
  })

  it('over a held record, dates a value it replaces by its own time and one it keeps as held by the held write (helper-86)', async () => {
    const { memory, clock } = await replica('2026-03-01T00:00:00Z')
    const [id] = await memory.rememberMany([{ kind: 'episode', summary: 'one', details: 'first' }])
    clock.advance(60_000)
    const edited = clock.nowMs()
    await memory.update(id as string, { set: { summary: 'two', details: 'second' } })
    // A caller's own source, made before that edit: its summary replaces the edit's, its details are the edit's.
    clock.advance(60_000)
    const source = edited - 30_000
    await memory.rememberMany([{ kind: 'episode', id: id as string, summary: 'three', details: 'second' }], { madeAt: source })
    const [found] = await memory.lookup([id as string], { writeTimes: true })
    expect(found?.view).toMatchObject({ summary: 'three', details: 'second' })
    expect(found?.writeTimes?.fields.summary).toBe(source)
    expect(found?.writeTimes?.fields.details).toBe(edited)
    await memory.close()
  })

  it('refuses a list of another length or a bad entry, naming it, and writes nothing', async () => {
    const { memory } = await replica('2026-03-01T00:00:00Z')
    const before = memory.versionVector()
    const records = [{ kind: 'episode' as const, summary: 'one' }, { kind: 'episode' as const, summary: 'two' }]
    expect(await rejection(memory.rememberMany(records, { madeAt: [1] }))).toMatchObject({ code: 'WRONG_LENGTH', where: { field: 'options.madeAt' } })
    expect(await rejection(memory.rememberMany(records, { madeAt: [1, -5] }))).toMatchObject({ code: 'OUT_OF_RANGE', where: { field: 'options.madeAt[1]' } })
    expect(await rejection(memory.rememberMany(records, { madeAt: [1, 'x' as unknown as number] }))).toMatchObject({ code: 'WRONG_TYPE', where: { field: 'options.madeAt[1]' } })
    expect(memory.versionVector()).toEqual(before)
    await memory.close()
  })
})

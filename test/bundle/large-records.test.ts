/**
 * Records too large for one event body. An honest replica can hold one (a core block grown by
 * many appends, a set or a map grown by many updates), and its `.mem` export used to be refused
 * whole on import (RECORD_TOO_LARGE), so Cairn → .mem → Cairn lost everything. An import now
 * writes such a record as a create and further events of the record, all in one atomic batch
 * (src/memory/create-split.ts); only a field (or one element) too large for any event is still
 * refused, naming it, before anything is written.
 */
import path from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { MAX_BODY_BYTES } from '../../src/log/index.js'
import { Memory } from '../../src/memory/index.js'
import { createWrites } from '../../src/memory/create-split.js'
import { buildCreateEntry } from '../../src/memory/record-entries.js'
import { rejection } from '../helpers/error-code.js'
import { rewriteLines, tempBundlePath } from './helpers/mem-fixtures.js'

const opened: Memory[] = []
afterEach(async () => {
  for (const memory of opened.splice(0)) await memory.close()
})

async function open(): Promise<Memory> {
  const memory = await Memory.open({})
  opened.push(memory)
  return memory
}

/** `source` exported, imported into `target`, and imported again: the second import must write nothing. */
async function roundTrip(source: Memory, target: Memory): Promise<string> {
  const dir = tempBundlePath()
  await source.export(dir)
  await target.import(dir)
  const before = target.versionVector()
  const again = await target.import(dir)
  expect(target.versionVector()).toEqual(before)
  expect(again.format === 'mem' && again.imported).toEqual({})
  return dir
}

/** Events `memory` wrote itself (its own seq). */
const ownEvents = (memory: Memory): number => memory.versionVector()[memory.author] ?? 0

/**
 * Text of `units` UTF-16 units, mostly `filler` (ASCII by default), with one-, two- and four-byte
 * characters where a cut may fall. A three-byte filler ('文') makes a text past one body in a
 * third of the characters: Automerge's work goes by characters, the body limit by bytes.
 */
function mixedText(units: number, seed: string, filler = 'y'): string {
  const piece = `${seed} é 😀 ${filler.repeat(90)}\n`
  return piece.repeat(Math.ceil(units / piece.length)).slice(0, units).replace(/\ud83d$/, 'z')
}


describe('records too large for one event body', () => {
  it('a core block grown past one body by appends travels through .mem: the same view, and a re-import writes nothing', async () => {
    const source = await open()
    await source.remember({ kind: 'core', id: 'human', content: 'start ' })
    // Two appends of ~550 KB each, mostly three-byte characters: a text of 1.1 MB, more than one
    // body even before its changes are base64'd in a create (~1.5 MB).
    await source.appendText('human', mixedText(200_000, 'one', '文'))
    await source.appendText('human', mixedText(200_000, 'two', '文'))
    const view = await source.get('human')
    expect((view?.content as string).length).toBe(400_006)
    expect(Buffer.byteLength(view?.content as string)).toBeGreaterThan(MAX_BODY_BYTES)

    const target = await open()
    await roundTrip(source, target)
    expect(await target.get('human')).toEqual(view)
    expect(await target.digest()).toBe(await source.digest())
    // Written as a create and further text events of the record.
    expect(ownEvents(target)).toBeGreaterThan(1)
  }, 60_000)

  it('a held block takes the bundle\'s large text whatever it held: what differs is replaced in steps', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    try {
      vi.setSystemTime(Date.UTC(2026, 5, 1, 9))
      const source = await open()
      await source.remember({ kind: 'core', id: 'human', content: 'shared start ' })
      // As above, a text past one body (1.08 MB) in few characters.
      await source.appendText('human', mixedText(200_000, 'bundle one', '文'))
      await source.appendText('human', mixedText(200_000, 'bundle two', '文'))
      expect(Buffer.byteLength((await source.get('human'))?.content as string)).toBeGreaterThan(MAX_BODY_BYTES)
      const target = await open()
      // The target edited the block on its own before the bundle was made (a write in or after
      // the bundle's second would be kept): a long text of its own goes, the common start stays.
      await target.remember({ kind: 'core', id: 'human', content: `shared start ${mixedText(100_000, 'held')}` })
      vi.setSystemTime(Date.UTC(2026, 5, 1, 10))
      await roundTrip(source, target)
      expect(await target.get('human')).toEqual(await source.get('human'))
    } finally {
      vi.useRealTimers()
    }
  }, 60_000)

  it('an entity whose aliases outgrew one body (many updates) travels through .mem in order', async () => {
    const source = await open()
    const alias = (i: number): string => `alias number ${String(i).padStart(6, '0')} ${'é'.repeat(i % 3)}`
    const all = Array.from({ length: 60_000 }, (_, i) => alias(i))
    await source.remember({ kind: 'entity', id: 'ent_many', type: 'person', canonicalName: 'Many', aliases: all.slice(0, 20_000), tags: ['big'] })
    for (let start = 20_000; start < all.length; start += 20_000) await source.update('ent_many', { add: { aliases: all.slice(start, start + 20_000) } })
    const view = await source.get('ent_many')
    expect(view?.aliases).toEqual(all)
    expect(Buffer.byteLength(JSON.stringify(all))).toBeGreaterThan(MAX_BODY_BYTES)

    const target = await open()
    await roundTrip(source, target)
    expect(await target.get('ent_many')).toEqual(view)
    expect(await target.digest()).toBe(await source.digest())
    expect(ownEvents(target)).toBeGreaterThan(1)
  }, 60_000)

  it('an episode whose metadata and unknown keys outgrew one body travels through .mem', async () => {
    const source = await open()
    await source.remember({ kind: 'episode', id: 'ep_wide', summary: 'wide', actors: ['ada'] })
    for (let batch = 0; batch < 3; batch++) {
      const metadata = Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`key${batch}_${i}`, 'm'.repeat(100)]))
      const unknown = Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`x${batch}_${i}`, { nested: ['v'.repeat(90)] }]))
      await source.update('ep_wide', { set: { metadata, ...unknown } })
    }
    const view = await source.get('ep_wide')
    expect(Buffer.byteLength(JSON.stringify(view))).toBeGreaterThan(MAX_BODY_BYTES)

    const target = await open()
    await roundTrip(source, target)
    expect(await target.get('ep_wide')).toEqual(view)
    expect(await target.digest()).toBe(await source.digest())
  }, 60_000)

  it('an episode whose two long strings, written by two updates, outgrew one body travels through .mem (a patch sets the larger)', async () => {
    const source = await open()
    await source.remember({ kind: 'episode', id: 'ep_long', details: mixedText(600_000, 'details'), tags: ['kept'] })
    await source.update('ep_long', { set: { summary: mixedText(600_000, 'summary') } })
    await source.remember({ kind: 'episode', id: 'ep_other', summary: 'other' })
    const view = await source.get('ep_long')
    expect(Buffer.byteLength(JSON.stringify(view))).toBeGreaterThan(MAX_BODY_BYTES)

    const target = await open()
    await roundTrip(source, target)
    expect(await target.get('ep_long')).toEqual(view)
    expect(await target.get('ep_other')).toBeDefined()
    expect(await target.digest()).toBe(await source.digest())
    // A PAM export keeps it too (it left the record out as one no import could take).
    const file = path.join(path.dirname(tempBundlePath()), 'memory.pam')
    const pam = await source.export(file, { format: 'pam' })
    expect(pam.format === 'pam' && pam.skipped.filter((item) => item.id === 'ep_long')).toEqual([])
  }, 60_000)

  it('integers kept exact (beyond 2^53) are measured by their digits: such a record is split, not refused when appended', async () => {
    const source = await open()
    const digits = (i: number): bigint => 10n ** 99n + BigInt(i)
    const unknown = Object.fromEntries([0, 1, 2].map((key) => [`x_big${key}`, Array.from({ length: 4_000 }, (_, i) => digits(key * 4_000 + i))]))
    await source.rememberMany([{ kind: 'episode', id: 'ep_digits', summary: 'digits', ...unknown }, { kind: 'episode', id: 'ep_next', summary: 'next' }])
    const view = await source.get('ep_digits')
    expect(view?.x_big2).toEqual(unknown.x_big2)
    expect(ownEvents(source)).toBeGreaterThan(3)

    const target = await open()
    await roundTrip(source, target)
    expect(await target.get('ep_digits')).toEqual(view)
    expect(await target.digest()).toBe(await source.digest())
  }, 60_000)

  it('tags stay in the create when a set before them fills it: a relay judges a token writer\'s create by its tags', () => {
    const author = 'ab'.repeat(32)
    const context = { nowMs: Date.UTC(2026, 0, 1), randomHex: (bytes: number) => '0'.repeat(2 * bytes), author }
    const aliases = Array.from({ length: 60_000 }, (_, i) => `alias number ${i} padded`)
    const entry = buildCreateEntry(context, { kind: 'entity', id: 'ent_big', type: 'person', canonicalName: 'Big', aliases, tags: ['project-x'] })
    const { entries } = createWrites(entry, undefined, author, context.nowMs)
    expect(entries.length).toBeGreaterThan(1)
    const [create, ...patches] = entries.map((written) => written.data as { fields?: { tags?: string[]; aliases?: string[] }; add?: { aliases?: string[] } })
    expect(create?.fields?.tags).toEqual(['project-x'])
    expect([...(create?.fields?.aliases ?? []), ...patches.flatMap((patch) => patch.add?.aliases ?? [])]).toEqual(aliases)

    // A long string that leaves no room for them moves out instead (reviewed: 474 of 2,000 tags went to a patch).
    const tags = Array.from({ length: 2_000 }, (_, i) => `tag-${i}`)
    const named = buildCreateEntry(context, { kind: 'entity', id: 'ent_named', type: 'person', canonicalName: 'n'.repeat(1_030_000), tags })
    const [first, ...rest] = createWrites(named, undefined, author, context.nowMs).entries.map((written) => written.data as { fields?: { tags?: string[]; canonicalName?: string }; set?: { canonicalName?: string } })
    expect(first?.fields?.tags).toEqual(tags)
    expect(rest.find((patch) => patch.set?.canonicalName !== undefined)?.set?.canonicalName).toHaveLength(1_030_000)
  })

  it('a PAM artifact carrying such a record imports too (importPam merges through the same path)', async () => {
    const source = await open()
    const all = Array.from({ length: 50_000 }, (_, i) => `alias number ${String(i).padStart(6, '0')}`)
    await source.remember({ kind: 'entity', id: 'ent_many', type: 'person', canonicalName: 'Many', aliases: all.slice(0, 25_000) })
    await source.update('ent_many', { add: { aliases: all.slice(25_000) } })
    const file = path.join(path.dirname(tempBundlePath()), 'memory.pam')
    await source.export(file, { format: 'pam' })
    const target = await open()
    await target.import(file, { trustedKeys: [source.author] })
    expect((await target.get('ent_many'))?.aliases).toEqual(all)
    const before = target.versionVector()
    await target.import(file, { trustedKeys: [source.author] })
    expect(target.versionVector()).toEqual(before)
  }, 60_000)

  it('a plain field too large for any event is still refused, naming the record and field, and nothing is written', async () => {
    const source = await open()
    await source.remember({ kind: 'episode', id: 'ep_1', summary: 'one', details: 'one' })
    await source.remember({ kind: 'entity', id: 'ent_1', type: 'person', canonicalName: 'Ada', aliases: ['a'] })
    const cases: [string, string, string, string][] = [
      ['items/episode.jsonl', '"details":"one"', `"details":"${'x'.repeat(1_100_000)}"`, 'episode.details'],
      ['items/entity.jsonl', '"aliases":["a"]', `"aliases":["a","${'x'.repeat(1_100_000)}"]`, 'entity.aliases'],
    ]
    for (const [file, from, to, field] of cases) {
      const dir = tempBundlePath()
      await source.export(dir)
      rewriteLines(dir, file, (rows) => rows.map((line) => line.replace(from, to)))
      const target = await open()
      await target.remember({ kind: 'episode', id: 'ep_held', summary: 'held' })
      const before = { vector: target.versionVector(), digest: await target.digest() }
      const error = await rejection(target.import(dir))
      expect(error.code, field).toBe('RECORD_TOO_LARGE')
      expect(error.where, field).toMatchObject({ file, field })
      expect(error.message).toContain(field.split('.')[1])
      expect({ vector: target.versionVector(), digest: await target.digest() }).toEqual(before)
    }
  }, 60_000)

  it('rememberMany writes a large record with the rest of its batch, and refuses a plain field too large naming its place', async () => {
    const memory = await open()
    const aliases = Array.from({ length: 50_000 }, (_, i) => `an alias of some length, number ${i}`)
    await memory.rememberMany([
      { kind: 'episode', id: 'ep_small', summary: 'small' },
      { kind: 'entity', id: 'ent_big', type: 'thing', canonicalName: 'Big', aliases },
      { kind: 'core', id: 'persona', content: mixedText(800_000, 'persona') },
    ])
    expect((await memory.get('ent_big'))?.aliases).toEqual(aliases)
    expect((await memory.get('persona'))?.content).toBe(mixedText(800_000, 'persona'))
    expect(await memory.get('ep_small')).toBeDefined()

    const before = memory.versionVector()
    const error = await rejection(memory.rememberMany([
      { kind: 'entity', id: 'ent_other', type: 'thing', canonicalName: 'Other', aliases },
      { kind: 'episode', summary: 'too long', details: 'x'.repeat(1_100_000) },
    ]))
    expect(error).toMatchObject({ code: 'BODY_TOO_LARGE', where: { field: 'records[1].episode.details' } })
    expect(memory.versionVector()).toEqual(before)
    expect(await memory.get('ent_other')).toBeUndefined()
  }, 60_000)
})

/**
 * Memory.export and Memory.import end to end: the golden bundles through a replica byte for
 * byte, tombstones first and no resurrection, redaction skeletons, incremental exports, the
 * audit trail and Evidence Pack, signing and trusted keys, native log snapshots (erased bodies
 * stay erased), PAM artifacts, adapters, and bad input that leaves the store as it was.
 */
import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { validateMemBundle } from '../../src/bundle/mem/index.js'
import { verifyLogSnapshot } from '../../src/bundle/log-snapshot.js'
import { ManualClock } from '../../src/log/clock.js'
import { openReplicas } from '../helpers/memory-replicas.js'
import { Memory } from '../../src/memory/index.js'
import { InputError, StorageError } from '../../src/errors.js'
import type { JsonValue } from '../../src/log/index.js'
import { FIXTURES, listFiles, rewriteLines, tempBundlePath, tempDir, TEST_KEY } from './helpers/mem-fixtures.js'
import { validateBundle } from '../../src/cli/bundle-validation.js'
import { BundleProgress } from '../../src/cli/bundle-progress.js'
import { rejection } from '../helpers/error-code.js'
import { zipArchive } from '../helpers/zip-writer.js'

const opened: Memory[] = []
afterEach(async () => {
  for (const memory of opened.splice(0)) await memory.close()
})

async function open(options: Parameters<typeof Memory.open>[0] = {}): Promise<Memory> {
  const memory = await Memory.open(options)
  opened.push(memory)
  return memory
}

/**
 * Imports an adapter sample at noon (2026-06-01, a faked clock), checks, imports it again an
 * hour later, and checks that nothing was written (the version vector stands) and what `later` says.
 */
async function importTwiceAnHourApart(
  sample: string, from: 'mem0' | 'oams',
  first: (memory: Memory) => Promise<void>,
  later: (memory: Memory, again: Awaited<ReturnType<Memory['import']>>) => Promise<void>,
): Promise<void> {
  vi.useFakeTimers({ toFake: ['Date'] })
  try {
    vi.setSystemTime(Date.UTC(2026, 5, 1, 12))
    const memory = await open()
    const file = path.join(import.meta.dirname, 'adapters', 'samples', sample)
    await memory.import(file, { from })
    await first(memory)
    const before = memory.versionVector()
    vi.setSystemTime(Date.UTC(2026, 5, 1, 13))
    const again = await memory.import(file, { from })
    expect(memory.versionVector()).toEqual(before)
    await later(memory, again)
  } finally {
    vi.useRealTimers()
  }
}

function read(dir: string, file: string): string {
  return readFileSync(path.join(dir, file), 'utf8')
}


function lines(dir: string, file: string): Record<string, unknown>[] {
  return read(dir, file).split('\n').filter((line) => line.length > 0).map((line) => JSON.parse(line) as Record<string, unknown>)
}

describe('golden bundles through a replica', () => {
  for (const [name, fixture] of Object.entries(FIXTURES)) {
    it(`${name}: import then export reproduces every data file and CHECKSUMS byte for byte`, async () => {
      const memory = await open()
      const report = await memory.import(fixture)
      expect(report.format).toBe('mem')
      const out = tempBundlePath()
      await memory.export(out)
      const expected = listFiles(fixture).filter((file) => file !== 'manifest.json' && file !== 'manifest.sig')
      expect(listFiles(out).filter((file) => file !== 'manifest.json')).toEqual(expected)
      for (const file of expected) expect(read(out, file), file).toBe(read(fixture, file))
    })
  }

  it('sample.mem: the tombstone applies first and blocks its target; the vendor kind survives verbatim', async () => {
    const memory = await open()
    const report = await memory.import(FIXTURES.sample)
    expect(report.format === 'mem' && report.tombstones).toBe(1)
    expect(await memory.status('ep_legacy')).toBe('deleted')
    expect((await memory.foreignLines()).vendorThing).toEqual([read(FIXTURES.sample, 'items/vendorThing.jsonl').replace(/\n$/, '')])
    // The bundle's record of the tombstoned id, if it had one, would be blocked, not stored.
    await expect(memory.remember({ kind: 'episode', id: 'ep_legacy', summary: 'back?' })).rejects.toMatchObject({ code: 'FORGOTTEN' })
  })

  it('re-import writes no event', async () => {
    const memory = await open()
    await memory.import(FIXTURES.sample11)
    const before = memory.versionVector()
    const again = await memory.import(FIXTURES.sample11)
    expect(memory.versionVector()).toEqual(before)
    expect(again.format === 'mem' && { imported: again.imported, unchanged: again.unchanged }).toEqual({ imported: {}, unchanged: 14 })
  })
})

describe('export', () => {
  it('deletions travel as tombstones and redactions as skeletons, and both survive a second replica', async () => {
    const memory = await open()
    await memory.remember({ kind: 'episode', id: 'ep_keep', summary: 'kept' })
    await memory.remember({ kind: 'episode', id: 'ep_gone', summary: 'secret plans' })
    await memory.remember({ kind: 'episode', id: 'ep_red', summary: 'private detail', categories: ['health'], metadata: { k: 'v' } })
    await memory.forget('ep_gone', { reason: 'user asked' })
    await memory.redact('ep_red')
    const out = tempBundlePath()
    await memory.export(out)
    expect(listFiles(out)).toContain('audit/tombstones.jsonl')
    expect(read(out, 'items/episode.jsonl')).not.toContain('secret plans')
    expect(read(out, 'items/episode.jsonl')).not.toContain('private detail')
    const tombstones = lines(out, 'audit/tombstones.jsonl')
    expect(tombstones.map((row) => [row.op, row.targetID, row.reason ?? null])).toEqual(expect.arrayContaining([['delete', 'ep_gone', 'user asked'], ['redact', 'ep_red', null]]))
    for (const row of tombstones) expect(row.signature).toMatch(new RegExp(`^ed25519:${memory.author}:[0-9a-f]{128}$`))

    const copy = await open()
    await copy.import(out)
    expect(await copy.status('ep_gone')).toBe('deleted')
    expect(await copy.status('ep_red')).toBe('redacted')
    expect((await copy.get('ep_red'))?.summary).toBe('')
    expect((await copy.get('ep_red'))?.categories).toEqual((await memory.get('ep_red'))?.categories)
    expect(await copy.tombstones()).toEqual(await memory.tombstones())
  })

  it('a redaction of a record never held (its tombstone without its line) exports as the tombstone alone, and round-trips', async () => {
    const memory = await open()
    await memory.remember({ kind: 'episode', id: 'ep_keep', summary: 'kept' })
    await memory.remember({ kind: 'episode', id: 'ep_red', summary: 'private detail' })
    await memory.redact('ep_red')
    const source = tempBundlePath()
    await memory.export(source)
    rewriteLines(source, 'items/episode.jsonl', (rows) => rows.filter((line) => !line.includes('"ep_red"')))

    const copy = await open()
    await copy.import(source)
    expect(await copy.status('ep_red')).toBe('redacted')
    const out = tempBundlePath()
    await copy.export(out)
    expect(read(out, 'items/episode.jsonl')).not.toContain('ep_red')
    expect(lines(out, 'audit/tombstones.jsonl').map((row) => [row.op, row.targetID])).toEqual([['redact', 'ep_red']])
    expect((await validateMemBundle(out)).valid).toBe(true)
    const third = await open()
    await third.import(out)
    expect(await third.status('ep_red')).toBe('redacted')
    const again = tempBundlePath()
    await third.export(again)
    expect(read(again, 'items/episode.jsonl')).toBe(read(out, 'items/episode.jsonl'))
    expect(read(again, 'audit/tombstones.jsonl')).toBe(read(out, 'audit/tombstones.jsonl'))
  })

  it('since: episodes by ingestionTime, chunks with their resource, other kinds in full, tombstones by deletedAt', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1))
    const memory = await open({ clock })
    await memory.remember({ kind: 'episode', id: 'ep_old', summary: 'old' })
    await memory.remember({ kind: 'resource', id: 'res_old', uri: 'file:///a', mimeType: 'text/plain', contentHash: 'sha256:aa', title: 'A' })
    await memory.remember({ kind: 'chunk', id: 'chk_old', resourceID: 'res_old', position: 0, text: 'a' })
    await memory.remember({ kind: 'entity', id: 'ent_old', type: 'person', canonicalName: 'Ada' })
    await memory.remember({ kind: 'episode', id: 'ep_doomed', summary: 'doomed' })
    await memory.forget('ep_doomed')
    clock.advance(86_400_000)
    await memory.remember({ kind: 'episode', id: 'ep_new', summary: 'new' })
    await memory.remember({ kind: 'resource', id: 'res_new', uri: 'file:///b', mimeType: 'text/plain', contentHash: 'sha256:bb', title: 'B' })
    await memory.remember({ kind: 'chunk', id: 'chk_new', resourceID: 'res_new', position: 0, text: 'b' })
    const out = tempBundlePath()
    const result = await memory.export(out, { since: '2026-01-02T00:00:00Z' })
    const manifest = JSON.parse(read(out, 'manifest.json')) as Record<string, unknown>
    expect(manifest.exportMode).toBe('incremental')
    expect(manifest.since).toBe('2026-01-02T00:00:00Z')
    expect(lines(out, 'items/episode.jsonl').map((row) => row.id)).toEqual(['ep_new'])
    expect(lines(out, 'items/resource.jsonl').map((row) => row.id)).toEqual(['res_new'])
    expect(lines(out, 'items/chunk.jsonl').map((row) => row.id)).toEqual(['chk_new'])
    expect(lines(out, 'items/entity.jsonl').map((row) => row.id)).toEqual(['ent_old'])
    expect(listFiles(out)).not.toContain('audit/tombstones.jsonl')
    expect(result.records).toBe(4)
  })

  it('since also takes every record changed here at or after it: an older episode edited since, an older chunk edited without its resource', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1))
    const memory = await open({ clock })
    await memory.remember({ kind: 'episode', id: 'ep_edited', summary: 'old' })
    await memory.remember({ kind: 'episode', id: 'ep_untouched', summary: 'old too' })
    await memory.remember({ kind: 'resource', id: 'res_old', uri: 'file:///a', mimeType: 'text/plain', contentHash: 'sha256:aa', title: 'A' })
    await memory.remember({ kind: 'chunk', id: 'chk_old', resourceID: 'res_old', position: 0, text: 'a' })
    await memory.remember({ kind: 'chunk', id: 'chk_edited', resourceID: 'res_old', position: 1, text: 'b' })
    clock.advance(86_400_000)
    await memory.update('ep_edited', { set: { summary: 'edited after the cut' } })
    await memory.update('chk_edited', { set: { text: 'b, edited' } })
    expect([...await memory.changedSince(Date.UTC(2026, 0, 2))].sort()).toEqual(['chk_edited', 'ep_edited'])
    expect((await memory.changedSince(Date.UTC(2026, 0, 3))).size).toBe(0)
    const out = tempBundlePath()
    await memory.export(out, { since: '2026-01-02T00:00:00Z' })
    expect(lines(out, 'items/episode.jsonl').map((row) => [row.id, row.summary])).toEqual([['ep_edited', 'edited after the cut']])
    expect(lines(out, 'items/chunk.jsonl').map((row) => row.id)).toEqual(['chk_edited'])
    expect(listFiles(out)).not.toContain('items/resource.jsonl')
    expect((await validateMemBundle(out)).valid).toBe(true)
  })

  it('audit and Evidence Pack: one row per mutation, none for erased content; edges with their evidence', async () => {
    const memory = await open()
    await memory.remember({ kind: 'episode', id: 'ep_a', summary: 'a' })
    await memory.remember({ kind: 'episode', id: 'ep_b', summary: 'b' })
    await memory.update('ep_a', { set: { importance: 0.9 } })
    await memory.remember({ kind: 'entity', id: 'ent_x', type: 'person', canonicalName: 'X' })
    await memory.remember({ kind: 'entity', id: 'ent_y', type: 'place', canonicalName: 'Y' })
    await memory.remember({ kind: 'edge', id: 'edge_xy', srcEntityID: 'ent_x', dstEntityID: 'ent_y', edgeType: 'visits', evidenceEpisodeIDs: ['ep_a'] })
    await memory.forget('ep_b', { reason: 'gone' })
    const out = tempBundlePath()
    await memory.export(out, { evidencePack: true, sign: true })
    const audit = lines(out, 'audit/log.jsonl').map((row) => `${row.op} ${row.targetID}${row.reason ? ` (${row.reason})` : ''}`)
    expect(audit.sort()).toEqual(['create edge_xy', 'create ent_x', 'create ent_y', 'create ep_a', 'delete ep_b (gone)', 'update ep_a'].sort())
    expect(lines(out, 'provenance/edges.jsonl').map((row) => row.id)).toEqual(['edge_xy'])
    const manifest = JSON.parse(read(out, 'manifest.json')) as Record<string, unknown>
    expect(manifest.conformanceLevel).toBe('L3')
    expect(manifest.capabilities).toContain('signed')
    expect((await validateMemBundle(out, { trustedKeys: [memory.author] })).valid).toBe(true)
    // Signed with the audit trail but no Evidence Pack is not L3; neither is an unsigned pack.
    const auditOnly = tempBundlePath()
    await memory.export(auditOnly, { audit: true, sign: true })
    expect((JSON.parse(read(auditOnly, 'manifest.json')) as Record<string, unknown>).conformanceLevel).toBe('L2')
    const unsigned = tempBundlePath()
    await memory.export(unsigned, { evidencePack: true })
    expect((JSON.parse(read(unsigned, 'manifest.json')) as Record<string, unknown>).conformanceLevel).toBe('L2')
    const untrusted = await validateMemBundle(out, { trustedKeys: [TEST_KEY.publicKeyHex] })
    expect(untrusted.valid).toBe(false)
    expect(untrusted.problems.map((problem) => problem.file)).toContain('manifest.sig')
  })

  it('the manifest\'s scopes and coverage come from every episode, whatever keys earlier ones had', async () => {
    const memory = await open()
    // An episode key that holds, as text, the bytes of two members of the next episode.
    await memory.remember({ kind: 'episode', id: 'ep_a', summary: 'one', eventTime: '2026-01-02T00:00:00Z', ['contextID":"ctx_x","cz']: 1 })
    await memory.remember({ kind: 'episode', id: 'ep_b', summary: 'two', eventTime: '2026-03-04T00:00:00Z', contextID: 'ctx_x', cz: 1 })
    const out = tempBundlePath()
    await memory.export(out)
    const manifest = JSON.parse(read(out, 'manifest.json')) as Record<string, unknown>
    expect(manifest.scopes).toEqual(['ctx_x'])
    expect(manifest.coverage).toEqual({ from: '2026-01-02T00:00:00Z', to: '2026-03-04T00:00:00Z' })
  })

  it('refuses a target that holds files, and writes nothing there', async () => {
    const memory = await open()
    await memory.remember({ kind: 'episode', summary: 'x' })
    const dir = tempDir()
    writeFileSync(path.join(dir, 'mine.txt'), 'keep me')
    expect((await rejection(memory.export(dir))).code).toBe('TARGET_NOT_EMPTY')
    expect(listFiles(dir)).toEqual(['mine.txt'])
  })
})

describe("Cairn's extension fields through .mem (items/cairnExtensions.jsonl)", () => {
  const EXTENSIONS = 'items/cairnExtensions.jsonl'

  /** A replica whose records carry tags and contextID on kinds without ext, a composite-key kind and a redaction among them. */
  async function tagged(): Promise<Memory> {
    const memory = await open()
    await memory.remember({ kind: 'episode', id: 'ep_1', summary: 'tea at the lab', tags: ['kept-inline'], contextID: 'ctx_home' })
    await memory.remember({ kind: 'entity', id: 'ent_ada', type: 'person', canonicalName: 'Ada', tags: ['people', 'work'] })
    await memory.remember({ kind: 'fact', id: 'fact_1', episodeID: 'ep_1', subject: 'Ada', predicate: 'likes', object: 'tea', contextID: 'ctx_home' })
    await memory.remember({ kind: 'fact', id: 'fact_2', episodeID: 'ep_1', subject: 'Ada', predicate: 'drinks', object: 'green tea', tags: ['health'] })
    await memory.remember({ kind: 'factLink', srcFactID: 'fact_1', dstFactID: 'fact_2', linkType: 'refines', tags: ['linked'] })
    await memory.remember({ kind: 'preference', key: 'units', value: 'metric' })
    await memory.redact('fact_2')
    return memory
  }

  const extensionsOf = async (memory: Memory): Promise<Record<string, unknown>> => {
    const out: Record<string, unknown> = {}
    for await (const view of memory.records()) out[view.id] = { tags: view.tags, contextID: view.contextID }
    return out
  }

  it('export writes them to a file of their own, not into the PM lines, and warns about nothing', async () => {
    const memory = await tagged()
    const dir = tempBundlePath()
    const result = await memory.export(dir)
    expect(result.format === 'mem' && result.warnings).toEqual([])
    const link = (await memory.query({ kind: 'factLink' })).records[0]
    expect(lines(dir, EXTENSIONS)).toEqual([
      { id: 'ent_ada', kind: 'entity', tags: ['people', 'work'] },
      { contextID: 'ctx_home', id: 'fact_1', kind: 'fact' },
      { id: 'fact_2', kind: 'fact', tags: ['health'] },
      { id: link?.id, kind: 'factLink', tags: ['linked'] },
    ])
    for (const file of ['items/entity.jsonl', 'items/fact.jsonl', 'items/factLink.jsonl']) {
      for (const line of lines(dir, file)) expect(Object.keys(line), file).not.toEqual(expect.arrayContaining(['tags']))
    }
    // Episodes keep theirs inline (their unknown keys are ext), as before.
    expect(lines(dir, 'items/episode.jsonl')[0]).toMatchObject({ tags: ['kept-inline'], contextID: 'ctx_home' })
    expect(JSON.parse(read(dir, 'manifest.json')).counts.cairnExtensions).toBe(4)
    expect((await validateMemBundle(dir)).valid).toBe(true)
  })

  it('a replica importing the bundle holds the same tags and contexts (redacted skeleton included), keeps no copy of the file, and exports the same bytes', async () => {
    const memory = await tagged()
    const dir = tempBundlePath()
    await memory.export(dir)
    const target = await open()
    const report = await target.import(dir)
    expect(report.format === 'mem' && report.warnings).toEqual([])
    expect(await extensionsOf(target)).toEqual(await extensionsOf(memory))
    expect(await target.status('fact_2')).toBe('redacted')
    expect(await target.foreignLines()).toEqual({})
    const again = tempBundlePath()
    await target.export(again)
    for (const file of listFiles(dir)) if (file !== 'manifest.json') expect(read(again, file), file).toBe(read(dir, file))
    // Re-import: nothing to write.
    const before = target.versionVector()
    await target.import(dir)
    expect(target.versionVector()).toEqual(before)
  })

  it('tags already held merge with the bundle\'s (add-wins); lines for records the bundle lacks and unknown keys are warned about', async () => {
    const memory = await tagged()
    const dir = tempBundlePath()
    await memory.export(dir)
    const copy = tempBundlePath()
    cpSync(dir, copy, { recursive: true })
    const extra = ['{"id":"ent_nobody","kind":"entity","tags":["x"]}', '{"futureField":1,"id":"ent_ada","kind":"entity","tags":["people"]}']
    rewriteLines(copy, EXTENSIONS, (old) => [...old.filter((line) => !line.includes('"ent_ada"')), ...extra])
    const target = await open()
    await target.remember({ kind: 'entity', id: 'ent_ada', type: 'person', canonicalName: 'Ada', tags: ['mine'] })
    const report = await target.import(copy)
    expect((await target.get('ent_ada'))?.tags).toEqual(['mine', 'people'])
    expect(await target.get('ent_nobody')).toBeUndefined()
    const warnings = report.format === 'mem' ? report.warnings : []
    expect(warnings.map((w) => [w.code, w.file, w.line])).toEqual([
      ['UNKNOWN_FIELD_DROPPED', EXTENSIONS, 5],
      ['EXTENSION_WITHOUT_RECORD', EXTENSIONS, 4],
    ])
  })

  /** A create no `.mem` line can hold, signed straight into the log as any granted peer could. */
  async function storeRaw(memory: Memory, kind: string, id: string, fields: Record<string, JsonValue>): Promise<void> {
    await memory.log.append(memory.identity, { op: 'memory.create', data: { kind, id, fields: { id, ...fields } } })
  }
  const ENTITY = { type: 'person', aliases: [], sensitivity: 'low', summary: '', updatedAt: '2026-01-01T00:00:00Z' }

  it('a stored record no .mem line can hold (a raw event from a peer) is left out and named with the codec\'s refusal; everything else exports and reads back', async () => {
    const memory = await open()
    await memory.remember({ kind: 'entity', id: 'ent_good', type: 'person', canonicalName: 'Good' })
    await storeRaw(memory, 'entity', 'ent_bad', { ...ENTITY, canonicalName: 42 })
    // A core whose create gave no content text and no charBudget: the API fills both, a raw create need not.
    await storeRaw(memory, 'core', 'core_bad', { version: 1 })
    expect((await memory.get('ent_bad'))?.canonicalName).toBe(42)
    const dir = tempBundlePath()
    const result = await memory.export(dir)
    if (result.format !== 'mem') throw new Error('expected a .mem export')
    expect(result.records).toBe(1)
    expect(result.skipped.map((item) => [item.kind, item.id, item.code])).toEqual([
      ['core', 'core_bad', 'MISSING_FIELD'],
      ['entity', 'ent_bad', 'WRONG_TYPE'],
    ])
    expect(result.skipped[1]?.field).toBe('records.entity["ent_bad"].canonicalName')
    expect(result.skipped[0]?.field).toBe('records.core["core_bad"].content')
    expect((await validateMemBundle(dir)).valid).toBe(true)
    const target = await open()
    await target.import(dir)
    expect((await target.get('ent_good'))?.canonicalName).toBe('Good')
    expect(await target.get('ent_bad')).toBeUndefined()
    expect(await target.get('core_bad')).toBeUndefined()
    // Forgetting the record is all it takes for the next export to be whole.
    await memory.forget('ent_bad')
    await memory.forget('core_bad')
    const again = await memory.export(tempBundlePath())
    expect(again.format === 'mem' ? again.skipped : undefined).toEqual([])
  })

  it('a stored record the codec takes but a Cairn import refuses (an id of another kind, a parent of another kind, a composite id its keys do not make, an unmasked preview, a score beyond 2^53) is left out, so the bundle imports', async () => {
    const memory = await open()
    const episode = await memory.remember({ kind: 'episode', summary: 'met' })
    const fact = await memory.remember({ kind: 'fact', episodeID: episode, subject: 'a', predicate: 'is', object: 'b' })
    const other = await memory.remember({ kind: 'fact', episodeID: episode, subject: 'c', predicate: 'is', object: 'd' })
    const link = await memory.remember({ kind: 'factLink', srcFactID: fact, dstFactID: other, linkType: 'supports' })
    const secret = await memory.remember({ kind: 'secretRef', label: 'key', category: 'api', preview: 'sk-****', encryptionMetadata: 'vault' })
    /** The stored fields of `id` with `changes`, created again under `newId` by a raw create. */
    const copy = async (id: string, newId: string, changes: Record<string, JsonValue>): Promise<void> => {
      const { kind, ...fields } = (await memory.get(id)) as Record<string, JsonValue>
      await storeRaw(memory, kind as string, newId, { ...fields, ...changes })
    }
    await copy(episode, 'ent_is_no_episode', {})
    await copy(fact, 'fact_under_a_fact', { episodeID: other })
    await copy(link, 'fl_notmadefromkeys', {})
    await copy(secret, 'sec_unmasked', { preview: 'sk-live-0123456789abcdef' })
    // An integer kept exact beyond 2^53 in a number field (a counter takes one; a score does not).
    await copy(episode, 'ep_huge_importance', { importance: 2n ** 60n })
    const dir = tempBundlePath()
    const result = await memory.export(dir)
    if (result.format !== 'mem') throw new Error('expected a .mem export')
    expect(result.skipped.map((item) => [item.id, item.code, item.field])).toEqual([
      ['ent_is_no_episode', 'BAD_ID', 'records.episode["ent_is_no_episode"].id'],
      ['ep_huge_importance', 'OUT_OF_RANGE', 'records.episode["ep_huge_importance"].importance'],
      ['fact_under_a_fact', 'BAD_ID', 'records.fact["fact_under_a_fact"].episodeID'],
      ['fl_notmadefromkeys', 'BAD_ID', 'records.factLink["fl_notmadefromkeys"].id'],
      ['sec_unmasked', 'UNMASKED_SECRET', 'records.secretRef["sec_unmasked"].preview'],
    ])
    expect(result.records).toBe(5)
    const target = await open()
    await target.import(dir)
    for (const id of [episode, fact, other, link, secret]) expect(await target.get(id), id).toEqual(await memory.get(id))
  })

  it('a stored extension field of the wrong shape (a raw event from a peer) leaves its record out, named with record and field, rather than write a line import refuses', async () => {
    // tags cannot be of the wrong shape here: the set keeps only strings. A contextID is a register and keeps what came.
    const cases: [{ contextID: number | string[] }, string][] = [[{ contextID: 5 }, 'contextID'], [{ contextID: ['ctx'] }, 'contextID'], [{ contextID: [] }, 'contextID']]
    for (const [fields, field] of cases) {
      const memory = await open()
      await storeRaw(memory, 'entity', 'ent_bad', { ...ENTITY, canonicalName: 'Bad', ...fields })
      await memory.remember({ kind: 'entity', id: 'ent_ok', type: 'person', canonicalName: 'Ok', tags: ['kept'] })
      const target = tempBundlePath()
      const result = await memory.export(target)
      if (result.format !== 'mem') throw new Error('expected a .mem export')
      expect(result.skipped.map((item) => [item.id, item.code, item.field]), field).toEqual([['ent_bad', 'WRONG_TYPE', `records.entity["ent_bad"].${field}`]])
      expect(read(target, 'items/entity.jsonl'), field).not.toContain('ent_bad')
      expect(read(target, EXTENSIONS), field).toBe('{"id":"ent_ok","kind":"entity","tags":["kept"]}\n')
      expect((await validateMemBundle(target)).valid, field).toBe(true)
    }
  })

  it('an Evidence Pack leaves out the provenance line of an edge it leaves out, and keeps the others', async () => {
    const memory = await open()
    const episode = await memory.remember({ kind: 'episode', summary: 'met' })
    const a = await memory.remember({ kind: 'entity', type: 'person', canonicalName: 'A' })
    const b = await memory.remember({ kind: 'entity', type: 'person', canonicalName: 'B' })
    await memory.remember({ kind: 'edge', id: 'edge_good', srcEntityID: a, dstEntityID: b, edgeType: 'knows', evidenceEpisodeIDs: [episode] })
    const good = await memory.get('edge_good')
    await storeRaw(memory, 'edge', 'edge_bad', { ...Object.fromEntries(Object.entries(good ?? {}).filter(([name]) => name !== 'kind' && name !== 'id')), edgeType: 7 })
    const dir = tempBundlePath()
    const result = await memory.export(dir, { evidencePack: true })
    expect(result.format === 'mem' ? result.skipped.map((item) => item.id) : undefined).toEqual(['edge_bad'])
    const provenance = read(dir, 'provenance/edges.jsonl')
    expect(provenance).toContain('edge_good')
    expect(provenance).not.toContain('edge_bad')
    expect((await validateMemBundle(dir)).valid).toBe(true)
  })

  it('a stored null extension field is no value, as the codec drops a null: the record exports without it', async () => {
    const memory = await open()
    await memory.log.append(memory.identity, { op: 'memory.create', data: { kind: 'entity', id: 'ent_null', fields: {
      id: 'ent_null', type: 'person', canonicalName: 'Null', aliases: [], sensitivity: 'low', summary: '', updatedAt: '2026-01-01T00:00:00Z', contextID: null,
    } } })
    const dir = tempBundlePath()
    await memory.export(dir)
    expect(read(dir, 'items/entity.jsonl')).toContain('"canonicalName":"Null"')
    expect(existsSync(path.join(dir, EXTENSIONS))).toBe(false)
  })

  it('the file is Cairn\'s to write: rememberForeign refuses its kind, and lines of it stored by an older replica are not exported again', async () => {
    const memory = await tagged()
    expect((await rejection(memory.rememberForeign('cairnExtensions', ['{}']))).code).toBe('RESERVED_KIND')
    // An older replica kept the file of an imported bundle as foreign lines, and they synced here.
    const stale = '{"id":"ent_ada","kind":"entity","tags":["removed-since"]}'
    await memory.log.append(memory.identity, { op: 'memory.foreign', data: { kind: 'cairnExtensions', lines: [stale] } })
    expect((await memory.foreignLines()).cairnExtensions).toEqual([stale])
    const dir = tempBundlePath()
    await memory.export(dir)
    expect(read(dir, EXTENSIONS)).not.toContain('removed-since')
    const target = await open()
    await target.import(dir)
    expect((await target.get('ent_ada'))?.tags).toEqual(['people', 'work'])
  })

  it('an incremental export lists the lines in id order, chunks (which follow their resource) included', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1))
    const memory = await open({ clock })
    await memory.remember({ kind: 'entity', id: 'ent_old', type: 'person', canonicalName: 'Old', tags: ['a'] })
    clock.advance(60_000)
    const since = clock.nowMs()
    await memory.remember({ kind: 'resource', id: 'res_1', uri: 'file:///a.md', mimeType: 'text/markdown', contentHash: 'sha256:00', title: 'A', tags: ['r'] })
    await memory.remember({ kind: 'chunk', id: 'chk_1', resourceID: 'res_1', position: 0, text: 'one', tags: ['c'] })
    await memory.remember({ kind: 'entity', id: 'ent_new', type: 'person', canonicalName: 'New', tags: ['e'] })
    const dir = tempBundlePath()
    await memory.export(dir, { since })
    expect(lines(dir, EXTENSIONS).map((line) => line.id)).toEqual(['chk_1', 'ent_new', 'ent_old', 'res_1'])
  })

  it.each([
    ['a line that is not JSON', '{"id":', 'BAD_JSON', undefined],
    ['a line that is not an object', '["ent_ada"]', 'WRONG_TYPE', undefined],
    ['no id', '{"kind":"entity","tags":["a"]}', 'WRONG_TYPE', 'id'],
    ['a kind with ext', '{"id":"ep_1","kind":"episode","tags":["a"]}', 'UNKNOWN_KIND', 'kind'],
    ['a vendor kind', '{"id":"x_1","kind":"vendorThing","tags":["a"]}', 'UNKNOWN_KIND', 'kind'],
    ['tags that are not strings', '{"id":"ent_ada","kind":"entity","tags":["a",1]}', 'WRONG_TYPE', 'tags[1]'],
    ['a contextID that is not a string', '{"contextID":7,"id":"fact_9","kind":"fact"}', 'WRONG_TYPE', 'contextID'],
    ['a second line for one record', '{"id":"fact_1","kind":"fact","tags":["again"]}', 'DUPLICATE_ID', 'id'],
  ])('%s is refused naming the file and line, and nothing is written', async (_name, bad, code, field) => {
    const memory = await tagged()
    const dir = tempBundlePath()
    await memory.forget('ent_ada')
    await memory.export(dir)
    rewriteLines(dir, EXTENSIONS, (old) => [...old, bad])
    const target = await open()
    await target.remember({ kind: 'episode', id: 'ep_mine', summary: 'mine' })
    const before = { vector: target.versionVector(), digest: await target.digest() }
    const error = await rejection(target.import(dir))
    expect(error.code).toBe(code)
    expect(error.where.file).toBe(EXTENSIONS)
    expect(error.where.line).toBe(4)
    expect(error.where.field).toBe(field)
    expect({ vector: target.versionVector(), digest: await target.digest() }).toEqual(before)
  })
})

describe('import refuses bad bundles before writing anything', () => {
  async function exported(): Promise<{ memory: Memory; dir: string }> {
    const memory = await open()
    await memory.remember({ kind: 'episode', id: 'ep_1', summary: 'one' })
    await memory.remember({ kind: 'entity', id: 'ent_1', type: 'person', canonicalName: 'Ada' })
    const dir = tempBundlePath()
    await memory.export(dir, { sign: true })
    return { memory, dir }
  }

  it.each([
    ['a changed byte', (dir: string) => writeFileSync(path.join(dir, 'items/episode.jsonl'), read(dir, 'items/episode.jsonl').replace('one', 'uno')), 'CHECKSUM_MISMATCH', 'items/episode.jsonl'],
    ['an unlisted file', (dir: string) => writeFileSync(path.join(dir, 'items/extra.jsonl'), '{}\n'), 'UNLISTED_FILE', 'items/extra.jsonl'],
    ['a truncated file', (dir: string) => writeFileSync(path.join(dir, 'items/entity.jsonl'), read(dir, 'items/entity.jsonl').slice(0, 20)), undefined, 'items/entity.jsonl'],
  ])('%s', async (_name, damage, code, file) => {
    const { dir } = await exported()
    const copy = tempBundlePath()
    cpSync(dir, copy, { recursive: true })
    damage(copy)
    const target = await open()
    await target.remember({ kind: 'episode', id: 'ep_mine', summary: 'mine' })
    const before = { vector: target.versionVector(), digest: await target.digest() }
    const error = await rejection(target.import(copy))
    if (code) expect(error.code).toBe(code)
    expect(error.where.file).toBe(file)
    expect({ vector: target.versionVector(), digest: await target.digest() }).toEqual(before)
  })

  // Lines the format accepts but a record here cannot be: refused before the bundle's tombstone
  // (which deletes a record the target holds) or any record is written.
  it.each([
    ['an empty id', (line: string) => line.replace('"id":"ep_1"', '"id":""'), 'BAD_ID', 'episode.id'],
    ['an integer past 2^53', (line: string) => line.replace('"accessCount":0', '"accessCount":9223372036854775807'), 'OUT_OF_RANGE', 'episode.accessCount'],
    ['a __proto__ key', (line: string) => line.replace('{', '{"__proto__":1,'), 'RESERVED_KEY', undefined],
    ['a record too large for one event', (line: string) => line.replace('"details":"one"', `"details":"${'x'.repeat(1_100_000)}"`), 'RECORD_TOO_LARGE', undefined],
  ])('a record the format accepts but Cairn cannot store: %s', async (_name, change, code, field) => {
    const source = await open()
    await source.remember({ kind: 'episode', id: 'ep_victim', summary: 'held by the target' })
    await source.forget('ep_victim')
    await source.remember({ kind: 'episode', id: 'ep_1', summary: 'one' })
    const dir = tempBundlePath()
    await source.export(dir)
    rewriteLines(dir, 'items/episode.jsonl', (rows) => rows.map((line) => (line.includes('"ep_1"') ? change(line) : line)))
    const target = await open()
    await target.remember({ kind: 'episode', id: 'ep_victim', summary: 'held by the target' })
    const before = { vector: target.versionVector(), digest: await target.digest() }
    const error = await rejection(target.import(dir))
    expect(error.code).toBe(code)
    expect(error.where.file).toBe('items/episode.jsonl')
    if (field !== undefined) expect(error.where.field).toBe(field)
    expect({ vector: target.versionVector(), digest: await target.digest() }).toEqual(before)
    expect(await target.status('ep_victim')).toBe('visible')
  })

  it('an id met twice (in one file, or in two kinds) and a field named kind are refused: one line would silently win', async () => {
    const source = await open()
    await source.remember({ kind: 'episode', id: 'ep_1', summary: 'one' })
    await source.remember({ kind: 'entity', id: 'ent_1', type: 'person', canonicalName: 'Ada' })
    const dir = tempBundlePath()
    await source.export(dir)
    const cases: [string, (rows: string[]) => string[], string, string][] = [
      ['items/episode.jsonl', (rows) => [...rows, (rows[0] as string).replace('"one"', '"uno"')], 'DUPLICATE_ID', 'episode.id'],
      ['items/episode.jsonl', (rows) => [...rows, (rows[0] as string).replace('"ep_1"', '"ent_1"')], 'BAD_ID', 'episode.id'],
      ['items/entity.jsonl', (rows) => [...rows, (rows[0] as string).replace('"ent_1"', '"e_shared"')], 'DUPLICATE_ID', 'episode.id'],
      ['items/episode.jsonl', (rows) => rows.map((line) => line.replace('{', '{"kind":"vendor",')), 'RESERVED_KEY', 'episode.kind'],
    ]
    for (const [file, change, code, field] of cases) {
      const copy = tempBundlePath()
      cpSync(dir, copy, { recursive: true })
      rewriteLines(copy, file, change)
      // The third case: an episode then takes the entity's new id.
      if (code === 'DUPLICATE_ID' && file === 'items/entity.jsonl') rewriteLines(copy, 'items/episode.jsonl', (rows) => [...rows, (rows[0] as string).replace('"ep_1"', '"e_shared"')])
      const target = await open()
      const before = target.versionVector()
      const error = await rejection(target.import(copy))
      expect(error.code, code).toBe(code)
      expect(error.where.field, code).toBe(field)
      expect(target.versionVector()).toEqual(before)
      // `cairn validate` reads the bundle as import does: it does not pass what import refuses.
      const validation = await validateBundle({ given: copy, resolved: copy }, 'mem', [], new BundleProgress('validate', { write: () => Promise.resolve() }, new ManualClock(0)))
      expect(validation.valid, code).toBe(false)
      expect(validation.problems, code).toEqual([expect.objectContaining({ code, path: `$.${field}` })])
    }
  })

  it('keeps every copy of a repeated vendor line, counts only new copies, and exports them all again', async () => {
    const source = await open()
    await source.rememberForeign('vendorThing', ['{"a":1}', '{"b":2}', '{"a":1}'])
    const dir = tempBundlePath()
    await source.export(dir)
    expect(read(dir, 'items/vendorThing.jsonl')).toBe('{"a":1}\n{"b":2}\n{"a":1}\n')
    const { memories } = await openReplicas(2)
    opened.push(...memories)
    const [target, other] = memories as [Memory, Memory]
    const passthrough = async (memory: Memory): Promise<number> => {
      const report = await memory.import(dir)
      return report.format === 'mem' ? report.passthrough : Number.NaN
    }
    expect(await passthrough(target)).toBe(3)
    expect(await passthrough(target)).toBe(0)
    // A bundle with one more copy adds one line.
    rewriteLines(dir, 'items/vendorThing.jsonl', (rows) => [...rows, '{"a":1}'])
    expect(await passthrough(target)).toBe(1)
    expect(((await target.foreignLines()).vendorThing ?? []).sort()).toEqual(['{"a":1}', '{"a":1}', '{"a":1}', '{"b":2}'])
    // A replica that imported the same bundle on its own holds the same lines once they sync.
    await other.import(dir)
    await target.ingest(await other.events(target.versionVector()))
    expect(((await target.foreignLines()).vendorThing ?? []).length).toBe(4)
  })

  it('importing again writes nothing, for timestamps with fractions or offsets, and sets and maps the merge already holds', async () => {
    const source = await open()
    await source.remember({ kind: 'episode', id: 'ep_1', summary: 'one', categories: ['a', 'b'], metadata: { k: 'v', j: 'w' } })
    const dir = tempBundlePath()
    await source.export(dir)
    rewriteLines(dir, 'items/episode.jsonl', (rows) => rows.map((line) => line
      .replace(/"eventTime":"(\d{4}-\d\d-\d\dT)(\d\d)(:\d\d:\d\d)Z"/, (_all, day: string, hour: string, rest: string) => `"eventTime":"${day}${String((Number(hour) + 2) % 24).padStart(2, '0')}${rest}+02:00"`)
      .replace(/"mentionTime":"([^"]+)Z"/, '"mentionTime":"$1.250Z"')))
    const target = await open()
    const imported = async (): Promise<unknown> => {
      const report = await target.import(dir)
      return 'imported' in report ? report.imported : report
    }
    expect(await imported()).toEqual({ episode: 1 })
    const vector = target.versionVector()
    expect(await imported()).toEqual({})
    expect(target.versionVector()).toEqual(vector)
    // A bundle with fewer categories and metadata keys than the replica holds: the merge adds and
    // never removes, so there is nothing to write.
    rewriteLines(dir, 'items/episode.jsonl', (rows) => rows.map((line) => line.replace('"categories":["a","b"]', '"categories":["b"]').replace('"metadata":{"j":"w","k":"v"}', '"metadata":{"k":"v"}')))
    expect(await imported()).toEqual({})
    expect(target.versionVector()).toEqual(vector)
  })

  it('a signed bundle is accepted with its key and refused with another', async () => {
    const { memory, dir } = await exported()
    const target = await open()
    expect((await rejection(target.import(dir, { trustedKeys: [TEST_KEY.publicKeyHex] }))).code).toMatch(/UNTRUSTED_KEY|BAD_SIGNATURE/)
    expect(target.versionVector()).toEqual({ [target.author]: 1 })
    const report = await target.import(dir, { trustedKeys: [memory.author] })
    expect(report.format === 'mem' && report.imported).toEqual({ entity: 1, episode: 1 })
  })

  it('signed.mem verifies with the conformance key', async () => {
    const target = await open()
    const report = await target.import(FIXTURES.signed, { trustedKeys: [TEST_KEY.publicKeyHex] })
    expect(report.format === 'mem' && report.imported).toEqual({ entity: 1, episode: 2 })
  })
})

describe('native log snapshots', () => {
  it('carry every signed event; erased bodies stay erased; a replica of the space imports them whole', async () => {
    const memory = await open()
    await memory.remember({ kind: 'episode', id: 'ep_1', summary: 'kept' })
    await memory.remember({ kind: 'episode', id: 'ep_2', summary: 'erase me' })
    await memory.forget('ep_2')
    const dir = tempBundlePath('snapshot')
    const result = await memory.export(dir, { format: 'log' })
    expect(result.format === 'log' && result.records).toBe(memory.log.appliedCount)
    expect(read(dir, 'events.jsonl')).not.toContain('erase me')
    expect((await verifyLogSnapshot(dir)).ok).toBe(true)

    const replica = await open({ space: memory.space })
    const report = await replica.import(dir)
    expect(report.format).toBe('log')
    expect(await replica.digest()).toBe(await memory.digest())
    expect(replica.versionVector()).toEqual(memory.versionVector())
    // The erased create is no longer attributable to ep_2 (its body named it): only the tombstone remains, on both.
    expect((await replica.history('ep_2')).map((item) => item.op)).toEqual(['memory.delete'])
    expect((await replica.history('ep_2')).map((item) => item.event)).toEqual((await memory.history('ep_2')).map((item) => item.event))
    expect((await replica.log.verify()).ok).toBe(true)
    // Every body erased here arrives without its body there (as in sync: erased or never received).
    const erased: string[] = []
    for await (const event of memory.log.readApplied()) if (event.bodyState === 'erased') erased.push(event.id)
    expect(erased).toHaveLength(1)
    for (const id of erased) expect(['erased', 'absent']).toContain((await replica.log.get(id))?.bodyState)
  })

  it('refuses a snapshot of another space, and a tampered one, storing nothing', async () => {
    const memory = await open()
    await memory.remember({ kind: 'episode', summary: 'x' })
    const dir = tempBundlePath('snapshot')
    await memory.export(dir, { format: 'log' })
    const stranger = await open()
    expect((await rejection(stranger.import(dir))).code).toBe('WRONG_SPACE')
    const replica = await open({ space: memory.space })
    writeFileSync(path.join(dir, 'events.jsonl'), read(dir, 'events.jsonl').replace('"x"', '"y"'))
    const error = await rejection(replica.import(dir))
    expect(error.where.file).toMatch(/events\.jsonl$/)
    expect(replica.versionVector()).toEqual({})
  })

  it('reads its files as a .mem bundle\'s are read: no links, no special files, a checked manifest and CHECKSUMS', async () => {
    const memory = await open()
    await memory.remember({ kind: 'episode', summary: 'x' })
    const dir = tempBundlePath('snapshot')
    await memory.export(dir, { format: 'log' })
    const replica = await open({ space: memory.space })
    const damaged = (change: (copy: string) => void): string => {
      const copy = tempBundlePath('damaged')
      cpSync(dir, copy, { recursive: true })
      change(copy)
      return copy
    }
    const outside = path.join(tempDir(), 'events.jsonl')
    writeFileSync(outside, read(dir, 'events.jsonl'))
    const cases: [string, string, (copy: string) => void][] = [
      ['SYMLINK', 'events.jsonl', (copy) => { rmSync(path.join(copy, 'events.jsonl')); symlinkSync(outside, path.join(copy, 'events.jsonl')) }],
      ['NOT_A_FILE', 'events.jsonl', (copy) => { rmSync(path.join(copy, 'events.jsonl')); execFileSync('mkfifo', [path.join(copy, 'events.jsonl')]) }],
      ['BAD_SNAPSHOT', 'manifest.json', (copy) => writeFileSync(path.join(copy, 'manifest.json'), read(copy, 'manifest.json').replace(/"files":\[[^\]]*\]/, '"files":5'))],
      ['BAD_SNAPSHOT', 'manifest.json', (copy) => writeFileSync(path.join(copy, 'manifest.json'), read(copy, 'manifest.json').replace(/"files":\[[^\]]*\]/, '"files":[null]'))],
      ['CHECKSUM_MISMATCH', 'CHECKSUMS', (copy) => writeFileSync(path.join(copy, 'CHECKSUMS'), 'garbage\n')],
    ]
    for (const [code, file, change] of cases) {
      const error = await rejection(replica.import(damaged(change)))
      expect(error.code, code).toBe(code)
      expect(error.where.file, code).toMatch(new RegExp(`${file.replace('.', '\\.')}$`))
    }
    expect(replica.versionVector()).toEqual({})
    await replica.import(dir)
    expect(replica.versionVector()).toEqual(memory.versionVector())
  })
})

describe('PAM artifacts', () => {
  it('export, verify with the exporter key, import into another replica; refused without trusting that key', async () => {
    const memory = await open()
    await memory.remember({ kind: 'core', id: 'persona', content: 'A careful assistant.' })
    await memory.remember({ kind: 'episode', id: 'ep_1', summary: 'Prefers tea', details: 'Prefers tea over coffee' })
    await memory.remember({ kind: 'fact', id: 'fact_1', episodeID: 'ep_1', subject: 'user', predicate: 'prefers', object: 'tea' })
    for (const file of ['memory.pam', 'memory.pam.cbor']) {
      const target = path.join(tempDir(), file)
      const result = await memory.export(target, { format: 'pam' })
      expect(result.format).toBe('pam')
      if (file.endsWith('.cbor')) expect(readFileSync(target).subarray(0, 4)).toEqual(Buffer.from('PAM\x01', 'latin1'))
      const other = await open()
      const refused = await rejection(other.import(target))
      expect(refused.code).toBe('PAM_INVALID_SIGNATURE')
      expect(refused.where.file).toBe(target)
      expect(other.versionVector()).toEqual({ [other.author]: 1 })
      const report = await other.import(target, { trustedKeys: [memory.author] })
      expect(report.format).toBe('pam')
      expect((await other.get('fact_1'))?.object).toBe('tea')
      // Its own export needs no flag, and importing again writes nothing.
      const before = memory.versionVector()
      await memory.import(target)
      expect(memory.versionVector()).toEqual(before)
    }
  })

  it('leaves out, and names, a record an import would refuse (a peer\'s raw event) and a redacted record\'s skeleton; the artifact imports', async () => {
    const memory = await open()
    await memory.remember({ kind: 'episode', id: 'ep_1', summary: 'Prefers tea' })
    await memory.remember({ kind: 'fact', id: 'fact_1', episodeID: 'ep_1', subject: 'user', predicate: 'prefers', object: 'tea' })
    await memory.remember({ kind: 'fact', id: 'fact_2', episodeID: 'ep_1', subject: 'user', predicate: 'lives in', object: 'Oslo' })
    await memory.redact('fact_2')
    await memory.log.append(memory.identity, { op: 'memory.create', data: { kind: 'preference', id: 'pref_bad', fields: { id: 'pref_bad', key: 5 } } })
    const target = path.join(tempDir(), 'memory.pam')
    const result = await memory.export(target, { format: 'pam' })
    if (result.format !== 'pam') throw new Error('expected a PAM export')
    expect(result.skipped.filter((item) => item.id !== 'ctx_default').map((item) => [item.id, item.reason.split(':')[0]])).toEqual([
      ['fact_2', 'redacted'],
      ['pref_bad', 'WRONG_TYPE'],
    ])
    expect(result.skipped.find((item) => item.id === 'pref_bad')?.reason).toContain('preference.key')

    const other = await open()
    await other.import(target, { trustedKeys: [memory.author] })
    expect((await other.get('fact_1'))?.object).toBe('tea')
    expect(await other.get('fact_2')).toBeUndefined()
    expect(await other.get('pref_bad')).toBeUndefined()
  })
})

describe('PAM export counts', () => {
  it('records counts what the artifact holds: a record with no place in PAM is named in skipped, not counted', async () => {
    const memory = await open()
    await memory.remember({ kind: 'episode', id: 'ep_1', summary: 'Prefers tea' })
    await memory.remember({ kind: 'fact', id: 'fact_1', episodeID: 'ep_1', subject: 'user', predicate: 'prefers', object: 'tea' })
    const unused = await memory.remember({ kind: 'context', label: 'nothing in it' })
    const result = await memory.export(path.join(tempDir(), 'memory.pam'), { format: 'pam' })
    if (result.format !== 'pam') throw new Error('expected a PAM export')
    expect(result.skipped.map((item) => item.id)).toEqual([unused])
    expect(result.records).toBe(2)
  })
})

describe('adapters through import({ from })', () => {
  it('transfer: options.source names who produced the text; it applies with from only', async () => {
    const memory = await open()
    const text = path.join(tempDir(), 'memories.txt')
    writeFileSync(text, '- [2026-01-15] Leads the data team.\n')
    const report = await memory.import(text, { from: 'transfer', source: 'claude' })
    const id = report.format === 'source' ? (await memory.query({ kind: 'episode' })).records[0]?.id : undefined
    expect((await memory.get(id as string))?.metadata).toMatchObject({ transfer_source: 'claude' })
    expect(await rejection(memory.import(text, { source: 'claude' }))).toMatchObject({ code: 'UNSUPPORTED_OPTION', where: { field: 'options.source' } })
    expect(await rejection(memory.import(text, { from: 'transfer', source: '' }))).toMatchObject({ code: 'EMPTY', where: { field: 'options.source' } })
  })

  it('mem0: imports the sample, and importing it again writes nothing', async () => {
    const memory = await open()
    const sample = path.join(import.meta.dirname, 'adapters', 'samples', 'mem0', 'list.json')
    const report = await memory.import(sample, { from: 'mem0' })
    expect(report.format).toBe('source')
    const written = report.format === 'source' ? Object.values(report.imported).reduce((a, b) => a + (b ?? 0), 0) : 0
    expect(written).toBeGreaterThan(0)
    const before = memory.versionVector()
    const again = await memory.import(sample, { from: 'mem0' })
    expect(memory.versionVector()).toEqual(before)
    expect(again.format === 'source' && again.imported).toEqual({})
  })

  it('mem0: an hour later, a record whose source time is unreadable keeps the time of its first import', async () => {
    await importTwiceAnHourApart('mem0/list.json', 'mem0', async (memory) => {
      expect((await memory.get('c0ffee00-1111-2222-3333-444455556666'))?.eventTime).toBe('2026-06-01T12:00:00Z')
    }, async (memory, again) => {
      expect(again.format === 'source' && { imported: again.imported, unchanged: again.unchanged }).toEqual({ imported: {}, unchanged: 4 })
      expect((await memory.get('c0ffee00-1111-2222-3333-444455556666'))?.eventTime).toBe('2026-06-01T12:00:00Z')
    })
  })

  it('oams: an hour later, importing the same export again moves no envelope expiry (counted from the first receipt)', async () => {
    let expiring: string[] = []
    await importTwiceAnHourApart('oams/memories.jsonl', 'oams', async (memory) => {
      const records = (await memory.query({ kind: 'episode', limit: 100 })).records.filter((record) => record.expirationDate !== undefined)
      expect(records.map((record) => record.expirationDate)).toEqual(records.map(() => '2026-06-02T12:00:00Z'))
      expect(records.length).toBeGreaterThan(0)
      expiring = records.map((record) => record.id)
    }, async (memory, again) => {
      expect(again.format === 'source' && again.imported).toEqual({})
      for (const id of expiring) expect((await memory.get(id))?.expirationDate).toBe('2026-06-02T12:00:00Z')
    })
  })

  it('claude-export: a zipped export with projects brings their documents in as searchable chunks, and once only', async () => {
    const memory = await open()
    const samples = path.join(import.meta.dirname, 'adapters', 'samples', 'claude-export')
    const archive = path.join(tempDir(), 'claude-data.zip')
    writeFileSync(archive, zipArchive(['conversations.json', 'projects.json', 'memories.json'].map((name) => ({ name, data: readFileSync(path.join(samples, name)), deflate: true }))))
    const report = await memory.import(archive, { from: 'claude-export' })
    expect(report.format === 'source' && report.imported).toMatchObject({ resource: 2, chunk: 2 })
    const [hit] = await memory.search('divide and conquer')
    expect(hit?.record).toMatchObject({ kind: 'chunk', contextID: 'proj-77' })
    expect((await memory.query({ context: 'proj-77', limit: 50 })).records.map((record) => record.kind).sort()).toEqual(['chunk', 'chunk', 'episode', 'episode', 'episode', 'resource', 'resource'])
    const before = memory.versionVector()
    const again = await memory.import(archive, { from: 'claude-export' })
    expect(again.format === 'source' && again.imported).toEqual({})
    expect(memory.versionVector()).toEqual(before)
  })

  it('claude-export: a project document that shrank has its trailing chunks emptied, and they fill again when it grows', async () => {
    const memory = await open()
    const dir = tempDir()
    // Paragraphs of ~1,000 code points, each with a word of its own: ten of them make two chunks.
    const paragraph = (i: number): string => `Paragraph ${i} mentions zebra${i}. ${'lorem ipsum dolor sit amet '.repeat(36)}`
    const exportWith = (paragraphs: number): string => {
      const file = path.join(dir, `projects-${paragraphs}.json`)
      const content = Array.from({ length: paragraphs }, (_, i) => paragraph(i)).join('\n\n')
      writeFileSync(file, JSON.stringify([{ uuid: 'proj-1', name: 'Notes', created_at: '2025-02-10T09:00:00Z', docs: [{ uuid: 'doc-1', filename: 'notes.md', content }] }]))
      return file
    }
    const chunksOf = async (): Promise<string[]> => {
      const [resource] = (await memory.query({ kind: 'resource', limit: 5 })).records
      const views = await memory.lookup(await memory.referrers(resource?.id as string))
      return views.flatMap(({ view }) => (view?.kind === 'chunk' ? [view] : [])).sort((a, b) => (a.position as number) - (b.position as number)).map((view) => view.text as string)
    }
    const long = await memory.import(exportWith(10), { from: 'claude-export' })
    expect(long.format === 'source' && [long.imported.chunk, long.emptiedChunks]).toEqual([2, 0])
    expect((await memory.search('zebra9')).map((hit) => hit.record.kind)).toEqual(['chunk'])

    const short = await memory.import(exportWith(3), { from: 'claude-export' })
    expect(short.format === 'source' && short.emptiedChunks).toBe(1)
    expect((await chunksOf()).map((text) => text.length > 0)).toEqual([true, false])
    expect(await memory.search('zebra9')).toEqual([])
    expect((await memory.search('zebra2')).map((hit) => hit.record.kind)).toEqual(['chunk'])

    // The same export again writes nothing: the emptied chunk is already empty.
    const before = memory.versionVector()
    const again = await memory.import(exportWith(3), { from: 'claude-export' })
    expect(again.format === 'source' && [again.imported, again.emptiedChunks]).toEqual([{}, 0])
    expect(memory.versionVector()).toEqual(before)

    const grown = await memory.import(exportWith(10), { from: 'claude-export' })
    expect(grown.format === 'source' && grown.emptiedChunks).toBe(0)
    expect((await chunksOf()).every((text) => text.length > 0)).toBe(true)
    expect((await memory.search('zebra9')).map((hit) => hit.record.kind)).toEqual(['chunk'])

    // A chunk someone else attached to the resource is not the adapter's: never emptied.
    const [resource] = (await memory.query({ kind: 'resource', limit: 5 })).records
    const own = await memory.remember({ kind: 'chunk', resourceID: resource?.id as string, position: 7, text: 'my own note about giraffes' })
    const shrunk = await memory.import(exportWith(3), { from: 'claude-export' })
    expect(shrunk.format === 'source' && shrunk.emptiedChunks).toBe(1)
    expect((await memory.get(own))?.text).toBe('my own note about giraffes')
    expect((await memory.search('giraffes')).map((hit) => hit.record.id)).toEqual([own])

    // A chunk deleted by a peer between the lookup and the update does not fail the import: the others are emptied.
    await memory.import(exportWith(10), { from: 'claude-export' })
    expect((await memory.search('zebra9')).length).toBe(1)
    const updateMany = vi.spyOn(memory, 'updateMany').mockRejectedValueOnce(new InputError('FORGOTTEN', 'deleted meanwhile', {}))
    const raced = await memory.import(exportWith(3), { from: 'claude-export' })
    expect(updateMany).toHaveBeenCalledTimes(1)
    updateMany.mockRestore()
    expect(raced.format === 'source' && raced.emptiedChunks).toBe(1)
    expect(await memory.search('zebra9')).toEqual([])

    // Anything else that refuses the update (a closed store) is not swallowed.
    await memory.import(exportWith(10), { from: 'claude-export' })
    const failing = vi.spyOn(memory, 'updateMany').mockRejectedValueOnce(new StorageError('STORAGE_FAILED', 'closed', {}))
    expect((await rejection(memory.import(exportWith(3), { from: 'claude-export' }))).code).toBe('STORAGE_FAILED')
    failing.mockRestore()

    // One import holding the document twice, long then short: the first copy's chunks are kept
    // (the second is a duplicate), and none of the import's own chunks is emptied.
    await memory.import(exportWith(10), { from: 'claude-export' })
    const twice = path.join(dir, 'twice.json')
    writeFileSync(twice, JSON.stringify([...JSON.parse(readFileSync(exportWith(10), 'utf8')), ...JSON.parse(readFileSync(exportWith(3), 'utf8'))]))
    const doubled = await memory.import(twice, { from: 'claude-export' })
    expect(doubled.format === 'source' && doubled.emptiedChunks).toBe(0)
    expect((await memory.search('zebra9')).length).toBe(1)

    // Under a redacted resource nothing is emptied (the merge leaves it alone too).
    await memory.import(exportWith(10), { from: 'claude-export' })
    await memory.redact(resource?.id as string)
    const redacted = await memory.import(exportWith(3), { from: 'claude-export' })
    expect(redacted.format === 'source' && [redacted.emptiedChunks, redacted.blocked > 0]).toEqual([0, true])
  })

  it('a record as large as one event holds (900 KiB of prose) goes out and comes back in', async () => {
    const source = await open()
    const words = ['planning', 'quarterly', 'budgets', 'with', 'marta', 'in', 'trondheim', 'before', 'coffee']
    const details = Array.from({ length: 120_000 }, (_, i) => words[(i * 7 + (i >> 3)) % words.length]).join(' ').slice(0, 900 * 1024)
    const id = await source.remember({ kind: 'episode', summary: 'long', details })
    const dir = tempBundlePath()
    await source.export(dir)
    const target = await open()
    await target.import(dir)
    expect((await target.get(id))?.details).toBe(details)
  })

  it('a source item too large for one event is refused before any record is written', async () => {
    const memory = await open()
    const file = path.join(tempDir(), 'memories.json')
    const items = Array.from({ length: 2_100 }, (_, i) => ({ id: `m${i}`, memory: `memory ${i}` }))
    items.push({ id: 'huge', memory: 'x'.repeat(1_200_000) })
    writeFileSync(file, JSON.stringify(items))
    const before = memory.versionVector()
    const error = await rejection(memory.import(file, { from: 'mem0' }))
    expect(error.code).toBe('RECORD_TOO_LARGE')
    expect(error.where.path).toMatch(/^records\.episode\[\d+\]$/)
    expect(memory.versionVector()).toEqual(before)
  })

  it('a malformed source is refused naming the file, and nothing is written', async () => {
    const memory = await open()
    const file = path.join(tempDir(), 'broken.json')
    writeFileSync(file, '[{"memory": "ok"}, {"memory": ')
    const before = memory.versionVector()
    const error = await rejection(memory.import(file, { from: 'mem0' }))
    expect(error.where.file ?? error.where.path).toBeDefined()
    expect(memory.versionVector()).toEqual(before)
  })
})

describe('export options by format', () => {
  it('refuses options a format has no place for, naming them, and writes nothing', async () => {
    const memory = await open()
    await memory.remember({ kind: 'episode', summary: 'x' })
    const cases: [string, Record<string, unknown>, string][] = [
      ['memory.pam', { format: 'pam', since: '2026-01-01T00:00:00Z' }, 'options.since'],
      ['memory.pam', { format: 'pam', generator: 'x/1' }, 'options.generator'],
      ['memory.pam', { format: 'pam', audit: true }, 'options.audit'],
      ['snapshot', { format: 'log', sign: true }, 'options.sign'],
      ['bundle.mem', { cbor: true }, 'options.cbor'],
      ['bundle.mem', { disclose: [] }, 'options.disclose'],
    ]
    for (const [name, options, field] of cases) {
      const target = path.join(tempDir(), name)
      const error = await rejection(memory.export(target, options as never))
      expect({ code: error.code, field: error.where.field }).toEqual({ code: 'UNSUPPORTED_OPTION', field })
      expect(existsSync(target)).toBe(false)
    }
  })

  it('a PAM export takes sign (it is always signed) and disclose', async () => {
    const memory = await open()
    await memory.remember({ kind: 'episode', summary: 'Prefers the aisle seat' })
    await memory.remember({ kind: 'episode', summary: 'Drinks green tea' })
    const whole = await memory.export(path.join(tempDir(), 'all.pam'), { format: 'pam', sign: true })
    expect(whole.format === 'pam' && whole.records).toBe(2)
    const entries = whole.format === 'pam' ? Object.values(whole.artifact.components).flat() as { id: string }[] : []
    const chosen = entries.find((entry) => JSON.stringify(entry).includes('aisle'))
    expect(chosen).toBeDefined()
    const target = path.join(tempDir(), 'some.pam')
    await memory.export(target, { format: 'pam', disclose: [chosen?.id ?? ''] })
    const text = readFileSync(target, 'utf8')
    expect(text).toContain('aisle')
    expect(text).not.toContain('green tea')
  })
})

describe('log snapshot target', () => {
  it('appears whole or not at all: a target that is a file is refused and left alone', async () => {
    const memory = await open()
    await memory.remember({ kind: 'episode', summary: 'x' })
    const target = path.join(tempDir(), 'taken')
    writeFileSync(target, 'mine')
    const error = await rejection(memory.export(target, { format: 'log' }))
    expect(error.where.file).toBe(target)
    expect(readFileSync(target, 'utf8')).toBe('mine')
    expect(readdirSync(path.dirname(target))).toEqual(['taken'])
  })
})

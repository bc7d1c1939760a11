/**
 * A PAM artifact imported again after an edit here. Cairn's export signs, per entry, when each
 * record it carries was last written (`cairn.writtenAtMs`, covered by the entry's content id and
 * so by the root signature); the import dates each record by it, so re-importing the same
 * artifact no longer undoes an edit made since (it put every imported value back), while an
 * artifact whose record changed after the edit still writes over it. Entries without such a
 * time (other producers, earlier Cairn exports) are written as before.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  PAM_COMPONENTS, computeEntryId, computeRootHash, encodePamJson, pamFromRecords, verifyPam,
  type PamArtifact, type PamEntry, type PamRecord,
} from '../../src/bundle/pam/index.js'
import { ManualClock } from '../../src/log/clock.js'
import { Memory } from '../../src/memory/index.js'
import { rejection } from '../helpers/error-code.js'
import { tempDir } from './helpers/mem-fixtures.js'

const ID = 'ep_pam_times'
const MINUTE = 60_000

/** Two replicas of different spaces, each on its own hand-driven clock. */
async function replicas(aheadMs = 0): Promise<{ a: Memory; b: Memory; clockA: ManualClock; clockB: ManualClock }> {
  const start = Date.parse('2026-03-01T09:00:00Z')
  const clockA = new ManualClock(start + aheadMs)
  const clockB = new ManualClock(start)
  return { a: await Memory.open({ clock: clockA }), b: await Memory.open({ clock: clockB }), clockA, clockB }
}

async function exported(memory: Memory, name: string, disclose?: string[]): Promise<string> {
  const file = path.join(tempDir(), name)
  await memory.export(file, { format: 'pam', ...(disclose ? { disclose } : {}) })
  return file
}

/** a remembers ID, b imports a's artifact of it and edits it a minute later. */
async function editedOnBAfterImport(): ReturnType<typeof replicas> {
  const pair = await replicas()
  await pair.a.remember({ kind: 'episode', id: ID, summary: 'in the artifact' })
  await pair.b.import(await exported(pair.a, 'first.pam'), { trustedKeys: [pair.a.author] })
  pair.clockB.advance(MINUTE)
  await pair.b.update(ID, { set: { summary: 'edited on b' } })
  return pair
}

const entriesOf = (artifact: PamArtifact): PamEntry[] => PAM_COMPONENTS.flatMap((component) => artifact.components[component])
const readArtifact = (file: string): PamArtifact => JSON.parse(readFileSync(file, 'utf8')) as PamArtifact

/** The entry whose main record is `id`. */
function entryOf(artifact: PamArtifact, id: string): PamEntry {
  const entry = entriesOf(artifact).find((item) => (item.cairn as { record?: { id?: string } } | undefined)?.record?.id === id)
  if (entry === undefined) throw new Error(`no entry for ${id}`)
  return entry
}

async function closeAll(...memories: Memory[]): Promise<void> {
  for (const memory of memories) await memory.close()
}

describe('a PAM import dates each record by the write time its entry signs', () => {
  it('re-importing an artifact after an edit here keeps the edit and writes nothing', async () => {
    const { a, b, clockA, clockB } = await replicas()
    await a.remember({ kind: 'episode', id: ID, summary: 'in the artifact' })
    clockA.advance(MINUTE)
    const file = await exported(a, 'a.pam')
    await b.import(file, { trustedKeys: [a.author] })
    const unchanged = b.versionVector()
    expect(await b.import(file, { trustedKeys: [a.author] })).toMatchObject({ imported: {}, keptNewer: 0 })
    expect(b.versionVector()).toEqual(unchanged)
    clockB.advance(2 * MINUTE)
    await b.update(ID, { set: { summary: 'edited on b' } })
    const before = b.versionVector()

    const again = await b.import(file, { trustedKeys: [a.author] })
    expect((await b.get(ID))?.summary).toBe('edited on b')
    expect(again).toMatchObject({ format: 'pam', imported: {}, keptNewer: 1, warnings: [] })
    expect(b.versionVector()).toEqual(before)
    await closeAll(a, b)
  })

  it('signs the time of the record\'s latest write, in the entry its id and the root cover', async () => {
    const { a, clockA } = await replicas()
    await a.remember({ kind: 'episode', id: ID, summary: 'first' })
    clockA.advance(MINUTE)
    await a.update(ID, { set: { details: 'later' } })
    const artifact = readArtifact(await exported(a, 'a.pam'))
    const entry = entryOf(artifact, ID)
    expect((entry.cairn as { writtenAtMs?: unknown }).writtenAtMs).toEqual({ [ID]: clockA.nowMs() })
    expect(verifyPam(artifact, { trustedKeys: [a.author] }).ok).toBe(true)
    await closeAll(a)
  })

  it('an artifact whose record changed after the edit here writes over it; one made later without such a change does not', async () => {
    const { a, b, clockA, clockB } = await editedOnBAfterImport()

    // Made after the edit, but holding the record as it was before it: the edit stays.
    clockA.advance(2 * MINUTE)
    await a.remember({ kind: 'episode', id: 'ep_other', summary: 'something else' })
    const unchangedHere = await b.import(await exported(a, 'later.pam'), { trustedKeys: [a.author] })
    expect(unchangedHere).toMatchObject({ keptNewer: 1 })
    expect((await b.get(ID))?.summary).toBe('edited on b')

    // The record written there after the edit here: the newer value lands.
    await a.update(ID, { set: { summary: 'changed on a' } })
    const newer = await b.import(await exported(a, 'newer.pam'), { trustedKeys: [a.author] })
    expect(newer).toMatchObject({ keptNewer: 0 })
    expect((await b.get(ID))?.summary).toBe('changed on a')
    await closeAll(a, b)
  })

  it('dates each record an entry carries by its own time: a preference edited here stays when the persona changed there', async () => {
    const { a, b, clockA, clockB } = await replicas()
    await a.remember({ kind: 'core', id: 'persona', content: 'A careful assistant.' })
    const prefID = await a.remember({ kind: 'preference', key: 'tone', value: 'formal' })
    await b.import(await exported(a, 'first.pam'), { trustedKeys: [a.author] })
    clockB.advance(MINUTE)
    await b.update(prefID, { set: { value: 'casual' } })
    clockA.advance(2 * MINUTE)
    await a.appendText('persona', ' Brief.')

    // One entry, two times: the persona is written, the preference keeps its edit.
    const report = await b.import(await exported(a, 'second.pam'), { trustedKeys: [a.author] })
    expect(report).toMatchObject({ keptNewer: 1 })
    expect((await b.get('persona'))?.content).toBe('A careful assistant. Brief.')
    expect((await b.get(prefID))?.value).toBe('casual')
    await closeAll(a, b)
  })

  it('survives selective disclosure: the disclosed entry keeps its signed time and verifies', async () => {
    const { a, b, clockA, clockB } = await replicas()
    await a.remember({ kind: 'episode', id: ID, summary: 'disclosed' })
    await a.remember({ kind: 'episode', id: 'ep_kept_back', summary: 'not disclosed' })
    clockA.advance(MINUTE)
    const whole = readArtifact(await exported(a, 'whole.pam'))
    const file = await exported(a, 'some.pam', [entryOf(whole, ID).id])
    const disclosed = readArtifact(file)
    expect(entriesOf(disclosed)).toEqual([entryOf(whole, ID)])
    expect(verifyPam(disclosed, { trustedKeys: [a.author] }).ok).toBe(true)
    await b.import(file, { trustedKeys: [a.author] })
    clockB.advance(2 * MINUTE)
    await b.update(ID, { set: { summary: 'edited on b' } })
    expect(await b.import(file, { trustedKeys: [a.author] })).toMatchObject({ imported: {}, keptNewer: 1 })
    expect((await b.get(ID))?.summary).toBe('edited on b')
    await closeAll(a, b)
  })
})

describe('the signed time cannot be moved', () => {
  it('a backdated time breaks the entry id, and with the ids recomputed, the signature; nothing is written', async () => {
    const { a, b } = await replicas()
    await a.remember({ kind: 'episode', id: ID, summary: 'in the artifact' })
    const file = await exported(a, 'a.pam')
    const artifact = readArtifact(file)
    const entry = entryOf(artifact, ID)
    ;(entry.cairn as { writtenAtMs: Record<string, number> }).writtenAtMs[ID] = Date.parse('2000-01-01T00:00:00Z')
    writeFileSync(file, JSON.stringify(artifact))
    const before = b.versionVector()
    expect((await rejection(b.import(file, { trustedKeys: [a.author] }))).code).toBe('PAM_HASH_MISMATCH')

    const { id: _id, ...content } = entry
    entry.id = computeEntryId(content)
    artifact.root_hash = computeRootHash(artifact.components)
    writeFileSync(file, JSON.stringify(artifact))
    expect((await rejection(b.import(file, { trustedKeys: [a.author] }))).code).toBe('PAM_INVALID_SIGNATURE')
    expect(b.versionVector()).toEqual(before)
    await closeAll(a, b)
  })

  it('the artifact\'s created_at, which the signature does not cover, dates nothing: backdated, the newer values still land', async () => {
    const { a, b, clockA, clockB } = await editedOnBAfterImport()
    clockA.advance(2 * MINUTE)
    await a.update(ID, { set: { summary: 'changed on a' } })
    const file = await exported(a, 'newer.pam')
    writeFileSync(file, JSON.stringify({ ...readArtifact(file), created_at: '2000-01-01T00:00:00Z' }))
    await b.import(file, { trustedKeys: [a.author] })
    expect((await b.get(ID))?.summary).toBe('changed on a')
    await closeAll(a, b)
  })
})

describe('entries without a signed time', () => {
  it('an artifact whose entries carry none (an earlier Cairn, another producer) writes over an edit here, as before', async () => {
    const { a, b, clockB } = await replicas()
    await a.remember({ kind: 'episode', id: ID, summary: 'in the artifact' })
    const records: PamRecord[] = []
    for await (const view of a.records()) records.push(view as unknown as PamRecord)
    const { artifact } = pamFromRecords(records, { identity: a.identity, nowMs: Date.now() })
    expect(JSON.stringify(artifact)).not.toContain('writtenAtMs')
    const file = path.join(tempDir(), 'untimed.pam')
    writeFileSync(file, encodePamJson(artifact))
    await b.import(file, { trustedKeys: [a.author] })
    clockB.advance(MINUTE)
    await b.update(ID, { set: { summary: 'edited on b' } })
    expect(await b.import(file, { trustedKeys: [a.author] })).toMatchObject({ keptNewer: 0 })
    expect((await b.get(ID))?.summary).toBe('in the artifact')
    await closeAll(a, b)
  })
})

describe('a signed time after the import', () => {
  it('is warned of (FUTURE_TIME) and, as an adapter\'s, stays newer than an edit made here before it', async () => {
    const { a, b, clockB } = await replicas(60 * MINUTE)
    await a.remember({ kind: 'episode', id: ID, summary: 'from a clock ahead' })
    await a.remember({ kind: 'episode', id: 'ep_second', summary: 'also ahead' })
    const file = await exported(a, 'ahead.pam')
    const report = await b.import(file, { trustedKeys: [a.author] })
    if (report.format !== 'pam') throw new Error(`imported as ${report.format}`)
    expect(report.warnings).toHaveLength(1)
    expect(report.warnings[0]).toMatchObject({ code: 'FUTURE_TIME', where: { file } })
    expect(report.warnings[0]?.message).toMatch(/^ep_\w+ and 1 more are dated after this import/)
    clockB.advance(MINUTE)
    await b.update(ID, { set: { summary: 'edited on b' } })
    await b.import(file, { trustedKeys: [a.author] })
    expect((await b.get(ID))?.summary).toBe('from a clock ahead')
    await closeAll(a, b)
  })
})

import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { canonicalJson } from '../../src/log/canonical-json.js'
import { ManualClock } from '../../src/log/clock.js'
import { NativeCrypto } from '../../src/log/crypto/index.js'
import { Memory } from '../../src/memory/index.js'
import type { LogStorage } from '../../src/log/storage.js'
import { MEMORY_OPS } from '../../src/projection/index.js'
import { decodeMeta, encodeMeta } from '../../src/projection/projection-codec.js'
import { closeAll, exchangeAll, openReplicas } from '../helpers/memory-replicas.js'
import { rejection as refusal } from '../helpers/error-code.js'

const open: Memory[] = []
const dirs: string[] = []
afterEach(async () => {
  await closeAll(open.splice(0))
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true })
})

async function memory(clock = new ManualClock(Date.UTC(2026, 4, 1, 12))): Promise<Memory> {
  const instance = await Memory.open({ clock })
  open.push(instance)
  return instance
}

describe('remember and get', () => {
  it('fills documented defaults and derives the missing summary or details', async () => {
    const m = await memory()
    const id = await m.remember({ kind: 'episode', details: 'Line one of the note\nline two' })
    expect(id).toMatch(/^ep_[0-9a-f]{16}$/)
    expect(await m.get(id)).toMatchObject({
      kind: 'episode', id, summary: 'Line one of the note', details: 'Line one of the note\nline two',
      sourceType: 'note', importance: 0.5, confidence: 0.7, lifecycleState: 'HOT', accessCount: 0, pinned: false,
      eventTime: '2026-05-01T12:00:00Z', actors: [], categories: [], metadata: {}, vaultRefs: [],
    })
  })

  it('keeps unknown episode keys, including UInt64 integers, and every kind round-trips', async () => {
    const m = await memory()
    const id = await m.remember({ kind: 'episode', summary: 's', vendorScore: 0.92, vendorId: 18446744073709551615n })
    expect(await m.get(id)).toMatchObject({ vendorScore: 0.92, vendorId: 18446744073709551615n })
    const pref = await m.remember({ kind: 'preference', key: 'tone', value: 'direct' })
    const again = await m.remember({ kind: 'preference', key: 'tone', value: 'warm' })
    expect(again).toBe(pref)
    expect((await m.get(pref))?.value).toBe('warm')
  })

  it('refuses bad records naming the field, and writes nothing', async () => {
    const m = await memory()
    const before = m.versionVector()
    expect((await refusal(m.remember({ kind: 'nope' } as never))).code).toBe('UNKNOWN_KIND')
    const wrong = await refusal(m.remember({ kind: 'episode', summary: 5 } as never))
    expect(wrong.code).toBe('WRONG_TYPE')
    expect(wrong.message).toContain('summary')
    expect((await refusal(m.remember({ kind: 'entity', id: 'ent_x' } as never))).code).toBe('MISSING_FIELD')
    expect((await refusal(m.remember({ kind: 'fact', subject: 'a', predicate: 'b', object: 'c', bogus: 1 } as never))).code).toBe('UNKNOWN_FIELD')
    expect((await refusal(m.remember(null as never))).code).toBe('WRONG_TYPE')
    expect(m.versionVector()).toEqual(before)
  })
})

describe('update', () => {
  it('sets, unsets map keys, adds and removes set members, increments counters', async () => {
    const m = await memory()
    const id = await m.remember({ kind: 'episode', summary: 's', tags: ['a'], metadata: { k1: 'v1', k2: 'v2' } })
    await m.update(id, { set: { importance: 0.9, metadata: { k3: 'v3' } }, unset: ['metadata.k1'], add: { tags: ['b'] }, increment: { accessCount: 3 } })
    await m.update(id, { remove: { tags: ['a'] }, increment: { accessCount: -1 } })
    expect(await m.get(id)).toMatchObject({ importance: 0.9, metadata: { k2: 'v2', k3: 'v3' }, tags: ['b'], accessCount: 2 })
  })

  it('refuses unknown records, identity fields and temporal fields', async () => {
    const m = await memory()
    expect((await refusal(m.update('ep_missing', { set: { summary: 'x' } }))).code).toBe('UNKNOWN_RECORD')
    const id = await m.remember({ kind: 'episode', summary: 's' })
    expect((await refusal(m.update(id, { set: { id: 'ep_other' } }))).code).toBe('IMMUTABLE_FIELD')
    const fact = await m.remember({ kind: 'fact', episodeID: id, subject: 'a', predicate: 'b', object: 'c' })
    expect((await refusal(m.update(fact, { set: { tValidTo: '2026-01-01T00:00:00Z' } }))).code).toBe('IMMUTABLE_FIELD')
  })
})

describe('supersede and valid time', () => {
  it('closes the old fact and opens the new one; validAt picks the one valid then', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1))
    const m = await memory(clock)
    const episode = await m.remember({ kind: 'episode', summary: 'moved' })
    const old = await m.remember({ kind: 'fact', episodeID: episode, subject: 'user', predicate: 'lives in', object: 'Oslo', tValidFrom: '2025-01-01T00:00:00Z' })
    const next = await m.supersede(old, { episodeID: episode, subject: 'user', predicate: 'lives in', object: 'Bergen' }, { validFrom: '2026-03-01T00:00:00Z' })
    expect(await m.get(old)).toMatchObject({ tValidTo: '2026-03-01T00:00:00Z', supersededBy: next })
    expect(await m.get(next)).toMatchObject({ tValidFrom: '2026-03-01T00:00:00Z', object: 'Bergen' })
    const objects = async (validAt: string) => (await m.query({ kind: 'fact', validAt })).records.map((r) => r.object)
    expect(await objects('2025-06-01T00:00:00Z')).toEqual(['Oslo'])
    expect(await objects('2026-06-01T00:00:00Z')).toEqual(['Bergen'])
    expect((await refusal(m.supersede(await m.remember({ kind: 'episode', summary: 's' }), {}))).code).toBe('NOT_TEMPORAL')
  })

  it('remember refuses a fact or edge that ends before it begins; rememberMany, the import path, takes it as exported', async () => {
    const m = await memory(new ManualClock(Date.UTC(2026, 0, 1)))
    const episode = await m.remember({ kind: 'episode', summary: 'trip' })
    const [a, b] = await m.rememberMany([{ kind: 'entity', type: 'person', canonicalName: 'A' }, { kind: 'entity', type: 'person', canonicalName: 'B' }])
    const fact = { kind: 'fact', episodeID: episode, subject: 'user', predicate: 'was in', object: 'Rome', tValidFrom: '2025-02-01T00:00:00Z' } as const
    const edge = { kind: 'edge', srcEntityID: a as string, dstEntityID: b as string, edgeType: 'knows', tValidFrom: '2025-02-01T00:00:00Z' } as const
    const before = m.versionVector()
    expect(await refusal(m.remember({ ...fact, tValidTo: '2025-01-31T23:59:59Z' }))).toMatchObject({ code: 'OUT_OF_RANGE', where: { field: 'fact.tValidTo' } })
    // Left out, tValidFrom is now (2026-01-01).
    expect(await refusal(m.remember({ ...edge, tValidFrom: undefined, tValidTo: '2025-12-31T00:00:00Z' }))).toMatchObject({ code: 'OUT_OF_RANGE', where: { field: 'edge.tValidTo' } })
    expect(m.versionVector()).toEqual(before)
    // An empty interval is a version replaced at once, as supersede writes it.
    expect(await m.get(await m.remember({ ...edge, tValidTo: '2025-02-01T00:00:00Z' }))).toMatchObject({ tValidTo: '2025-02-01T00:00:00Z' })
    const [imported] = await m.rememberMany([{ ...fact, tValidTo: '2025-01-01T00:00:00Z' }])
    expect(await m.get(imported as string)).toMatchObject({ tValidFrom: '2025-02-01T00:00:00Z', tValidTo: '2025-01-01T00:00:00Z' })
  })

  it('refuses to supersede a version already superseded here, one after the other or started together', async () => {
    const m = await memory(new ManualClock(Date.UTC(2026, 0, 1)))
    const episode = await m.remember({ kind: 'episode', summary: 'jobs' })
    const fact = (object: string) => ({ episodeID: episode, subject: 'user', predicate: 'works at', object })
    const first = await m.remember({ kind: 'fact', ...fact('Initech'), tValidFrom: '2020-01-01T00:00:00Z' })
    const second = await m.supersede(first, fact('Globex'))
    const refused = await refusal(m.supersede(first, fact('Umbrella')))
    expect(refused).toMatchObject({ code: 'SUPERSEDED', where: { field: 'id' } })
    expect(refused.message).toContain(second)
    const other = await m.remember({ kind: 'fact', ...fact('Hooli'), tValidFrom: '2020-01-01T00:00:00Z' })
    const together = await Promise.allSettled([m.supersede(other, fact('Pied Piper')), m.supersede(other, fact('Raviga'))])
    expect(together.map((outcome) => outcome.status).sort()).toEqual(['fulfilled', 'rejected'])
    expect(await m.conflicts()).toEqual([])
    const current = (await m.query({ kind: 'fact' })).records.filter((record) => record.tValidTo === undefined).map((record) => record.object).sort()
    expect(current).toHaveLength(2)
    expect(current).toContain('Globex')
  })

  it('keeps concurrent supersedes, reports the conflict, and picks the same winner everywhere', async () => {
    const { memories } = await openReplicas(2)
    open.push(...memories)
    const [a, b] = memories as [Memory, Memory]
    const episode = await a.remember({ kind: 'episode', summary: 'drinks' })
    const fact = await a.remember({ kind: 'fact', episodeID: episode, subject: 'user', predicate: 'drinks', object: 'tea' })
    await exchangeAll(memories)
    const low = await a.supersede(fact, { episodeID: episode, subject: 'user', predicate: 'drinks', object: 'coffee', confidence: 0.3 }, { validFrom: '2026-02-01T00:00:00Z' })
    const high = await b.supersede(fact, { episodeID: episode, subject: 'user', predicate: 'drinks', object: 'juice', confidence: 0.9 }, { validFrom: '2026-02-01T00:00:10Z' })
    await exchangeAll(memories)
    for (const replica of memories) {
      const conflicts = await replica.conflicts()
      expect(conflicts).toHaveLength(1)
      expect(conflicts[0]).toMatchObject({ id: fact, winner: high, reason: 'confidence' })
      expect(conflicts[0]?.candidates.map((c) => c.by).sort()).toEqual([low, high].sort())
      expect((await replica.get(fact))?.supersededBy).toBe(high)
      expect(await replica.get(low)).toBeDefined()
    }
  })

  /** Two concurrent supersedes of one fact, from two replicas; every replica's conflict report. */
  async function concurrentSupersedes(
    first: { confidence: number; validFrom: string; source?: 'asserted' | 'inferred' },
    second: { confidence: number; validFrom: string; source?: 'asserted' | 'inferred' },
  ) {
    const { memories, clock } = await openReplicas(2)
    open.push(...memories)
    const [a, b] = memories as [Memory, Memory]
    const episode = await a.remember({ kind: 'episode', summary: 'drinks' })
    const fact = await a.remember({ kind: 'fact', episodeID: episode, subject: 'user', predicate: 'drinks', object: 'tea' })
    await exchangeAll(memories)
    const by = async (memory: Memory, object: string, { confidence, validFrom, source }: typeof first) =>
      memory.supersede(fact, { episodeID: episode, subject: 'user', predicate: 'drinks', object, confidence }, { validFrom, ...(source ? { source } : {}) })
    const one = await by(a, 'coffee', first)
    clock.advance(1000) // the second supersede is the later one by the clock
    const two = await by(b, 'juice', second)
    await exchangeAll(memories)
    return { one, two, reports: await Promise.all(memories.map(async (memory) => (await memory.conflicts())[0])) }
  }

  it('a successor valid more than 60 s later than the others wins on recency, whatever its confidence', async () => {
    const { two, reports } = await concurrentSupersedes(
      { confidence: 0.9, validFrom: '2026-02-01T00:00:00Z' },
      { confidence: 0.2, validFrom: '2026-02-01T00:01:01Z' },
    )
    for (const report of reports) expect(report).toMatchObject({ winner: two, reason: 'recency' })
  })

  it('between close, equally confident successors, a direct statement wins over an inference', async () => {
    const { one, reports } = await concurrentSupersedes(
      { confidence: 0.8, validFrom: '2026-02-01T00:00:30Z', source: 'asserted' },
      { confidence: 0.8, validFrom: '2026-02-01T00:00:40Z', source: 'inferred' },
    )
    for (const report of reports) expect(report).toMatchObject({ winner: one, reason: 'source' })
  })

  it('when nothing else separates them, the later supersede wins by its clock', async () => {
    const { two, reports } = await concurrentSupersedes(
      { confidence: 0.8, validFrom: '2026-02-01T00:00:30Z' },
      { confidence: 0.8, validFrom: '2026-02-01T00:00:40Z' },
    )
    for (const report of reports) expect(report).toMatchObject({ winner: two, reason: 'clock' })
  })

  it('a forgotten successor is as if it never came: the conflict ends, and a version left without successors is current again', async () => {
    const { memories } = await openReplicas(2)
    open.push(...memories)
    const [a, b] = memories as [Memory, Memory]
    const episode = await a.remember({ kind: 'episode', summary: 'drinks' })
    const fact = await a.remember({ kind: 'fact', episodeID: episode, subject: 'user', predicate: 'drinks', object: 'tea', tValidFrom: '2026-01-01T00:00:00Z' })
    await exchangeAll(memories)
    const low = await a.supersede(fact, { episodeID: episode, subject: 'user', predicate: 'drinks', object: 'coffee', confidence: 0.3 }, { validFrom: '2026-02-01T00:00:00Z' })
    const high = await b.supersede(fact, { episodeID: episode, subject: 'user', predicate: 'drinks', object: 'juice', confidence: 0.9 }, { validFrom: '2026-02-01T00:00:10Z' })
    await exchangeAll(memories)
    // The winner is forgotten on one replica: the loser is now the only successor, everywhere.
    await a.forget(high)
    await exchangeAll(memories)
    for (const replica of memories) {
      expect(await replica.conflicts()).toEqual([])
      expect(await replica.get(fact)).toMatchObject({ supersededBy: low, tValidTo: '2026-02-01T00:00:00Z' })
    }
    await b.forget(low)
    await exchangeAll(memories)
    for (const replica of memories) {
      const old = await replica.get(fact)
      expect(old?.supersededBy).toBeUndefined()
      expect(old?.tValidTo).toBeUndefined()
      expect((await replica.query({ kind: 'fact', validAt: '2026-06-01T00:00:00Z' })).records.map((record) => record.id)).toEqual([fact])
      expect(JSON.stringify(await replica.get(fact))).not.toContain(high)
    }
    expect(await a.digest()).toBe(await b.digest())
  })
})

describe('grants', () => {
  it('a grant to 64 hex characters that are no usable Ed25519 key is refused, naming the author, writing nothing', async () => {
    const m = await memory()
    const before = m.versionVector()
    // No point of the curve (y past p; y with no x), and points of small order (any verifier that is not strict accepts forged signatures).
    for (const key of ['ff'.repeat(32), 'ab'.repeat(32), '00'.repeat(32), `01${'00'.repeat(31)}`]) {
      expect(await refusal(m.grant(key, ['write'])), key).toMatchObject({ code: 'BAD_KEY', where: { field: 'author' } })
    }
    expect(await refusal(m.grant('AB'.repeat(32)))).toMatchObject({ code: 'BAD_HEX', where: { field: 'author' } })
    expect(m.versionVector()).toEqual(before)
    await m.grant('cd'.repeat(32), ['write'])
    expect(m.log.rightsOf('cd'.repeat(32))).toEqual(['write'])
  })

  it('revoking an author that holds no rights is refused, writing nothing; a granted one is revoked once', async () => {
    const m = await memory()
    const other = 'cd'.repeat(32)
    const before = m.versionVector()
    expect(await refusal(m.revoke(other))).toMatchObject({ code: 'NOT_GRANTED', where: { field: 'author' } })
    expect(m.versionVector()).toEqual(before)
    await m.grant(other, ['write'])
    await m.revoke(other)
    expect(m.log.rightsOf(other)).toEqual([])
    expect(await refusal(m.revoke(other))).toMatchObject({ code: 'NOT_GRANTED' })
    // A replica without the admin right is told that, whoever it names.
    const replica = await Memory.open({ space: m.space })
    try {
      await replica.ingest(await m.events())
      expect(await refusal(replica.revoke(other))).toMatchObject({ code: 'NOT_AUTHORIZED' })
    } finally {
      await replica.close()
    }
  })
})

describe('forget and redact', () => {
  it('two forgets of one record started together: one tombstone, the other call refused', async () => {
    const m = await memory()
    const id = await m.remember({ kind: 'episode', summary: 'forget twice' })
    const together = await Promise.allSettled([m.forget(id), m.forget(id), m.redact(id)])
    expect(together.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'rejected'])
    expect(together.slice(1).map((outcome) => (outcome as PromiseRejectedResult).reason.code)).toEqual(['FORGOTTEN', 'FORGOTTEN'])
    const kept = (await m.tombstones()).filter((tombstone) => tombstone.targetID === id).map((tombstone) => tombstone.id)
    expect(kept).toEqual([(together[0] as PromiseFulfilledResult<{ id: string }>).value.id])
  })

  it('deletes with what was derived only from the target, signs the tombstone, and erases the bodies', async () => {
    const m = await memory()
    const episode = await m.remember({ kind: 'episode', summary: 'Met Ada about Vermilion' })
    const other = await m.remember({ kind: 'episode', summary: 'Another meeting' })
    const fact = await m.remember({ kind: 'fact', episodeID: episode, subject: 'Ada', predicate: 'leads', object: 'Vermilion' })
    await m.remember({ kind: 'entity', id: 'ent_ada', type: 'person', canonicalName: 'Ada' })
    await m.remember({ kind: 'entity', id: 'ent_vermilion', type: 'project', canonicalName: 'Vermilion' })
    await m.remember({ kind: 'entity', id: 'ent_kept', type: 'person', canonicalName: 'Kept' })
    const onlyHere = await m.remember({ kind: 'edge', srcEntityID: 'ent_ada', dstEntityID: 'ent_vermilion', edgeType: 'leads', evidenceEpisodeIDs: [episode] })
    const shared = await m.remember({ kind: 'edge', srcEntityID: 'ent_kept', dstEntityID: 'ent_kept', edgeType: 'self', evidenceEpisodeIDs: [episode, other] })
    await m.remember({ kind: 'episodeLink', srcEpisodeID: episode, dstEpisodeID: other, linkType: 'follows' })
    const createEvent = (await m.history(episode))[0]?.event as string

    const tombstone = await m.forget(episode, { reason: 'user asked' })
    expect(tombstone).toMatchObject({
      op: 'delete', targetKind: 'episode', targetID: episode, reason: 'user asked', actor: m.author,
      derived: { factIDs: [fact], edgeIDs: [onlyHere], entityIDs: ['ent_ada', 'ent_vermilion'], chunkIDs: [], sentenceIDs: [], episodeLinkCount: 1, embeddingCacheKeys: [] },
    })
    const [scheme, key, signature] = tombstone.signature.split(':')
    const { signature: _s, ...unsigned } = tombstone
    expect(scheme).toBe('ed25519')
    expect(new NativeCrypto().verify(Buffer.from(signature as string, 'hex'), new TextEncoder().encode(canonicalJson(unsigned)), key as string)).toBe(true)

    for (const id of [episode, fact, onlyHere, 'ent_ada', 'ent_vermilion']) expect(await m.get(id)).toBeUndefined()
    expect((await m.get(shared))?.evidenceEpisodeIDs).toEqual([other])
    expect(await m.get('ent_kept')).toBeDefined()
    expect((await m.query({ kind: 'episodeLink' })).records).toEqual([])
    expect(await m.search('Vermilion')).toEqual([])
    expect((await m.log.get(createEvent))?.bodyState).toBe('erased')
    expect((await m.tombstones()).map((t) => t.targetID)).toEqual([episode])
    expect((await refusal(m.remember({ kind: 'episode', id: episode, summary: 'back' }))).code).toBe('FORGOTTEN')
    expect((await refusal(m.update(episode, { set: { summary: 'x' } }))).code).toBe('FORGOTTEN')
  })

  // The deletion reaches a replica whose fact names the episode, though the deleting replica never
  // knew the fact: the fact is deleted with it and its content erased, so its link to the
  // episode is gone from the log. A rebuild must still know it is deleted.
  it('refuses new records that name a deleted parent, and write-once fields in updates, naming the field; writes nothing', async () => {
    const m = await memory()
    const episode = await m.remember({ kind: 'episode', summary: 'source' })
    const other = await m.remember({ kind: 'episode', summary: 'kept' })
    const fact = await m.remember({ kind: 'fact', episodeID: other, subject: 'user', predicate: 'likes', object: 'tea' })
    const [a, b, c] = [await m.remember({ kind: 'entity', canonicalName: 'A', type: 'person' }), await m.remember({ kind: 'entity', canonicalName: 'B', type: 'person' }), await m.remember({ kind: 'entity', canonicalName: 'C', type: 'person' })]
    const edge = await m.remember({ kind: 'edge', srcEntityID: a, dstEntityID: b, edgeType: 'knows', evidenceEpisodeIDs: [other] })
    await m.forget(episode)
    await m.forget(c)
    const before = m.versionVector()
    expect((await refusal(m.remember({ kind: 'fact', episodeID: episode, subject: 'user', predicate: 'likes', object: 'coffee' })))).toMatchObject({ code: 'FORGOTTEN', where: { field: 'fact.episodeID' } })
    expect((await refusal(m.rememberMany([{ kind: 'episode', summary: 'fine' }, { kind: 'edge', srcEntityID: a, dstEntityID: c, edgeType: 'likes' }])))).toMatchObject({ code: 'FORGOTTEN', where: { field: 'records[1].edge.dstEntityID' } })
    // A list item's bad field is named the same way, and the message says the code once.
    expect(await refusal(m.rememberMany([{ kind: 'episode', summary: 'fine' }, { kind: 'episode', summary: 5 } as never]))).toMatchObject({
      code: 'WRONG_TYPE', where: { field: 'records[1].episode.summary' }, message: 'WRONG_TYPE: expected a string, got number (field records[1].episode.summary)',
    })
    expect(await refusal(m.updateMany([{ id: edge, changes: { set: { confidence: 'high' } } }]))).toMatchObject({ code: 'WRONG_TYPE', where: { field: 'updates[0].edge.confidence' } })
    // A record too large for one event names its largest field, not the event's `data`.
    const huge = 'x'.repeat(1100 * 1024)
    expect(await refusal(m.remember({ kind: 'episode', summary: 'big', details: huge }))).toMatchObject({ code: 'BODY_TOO_LARGE', where: { field: 'episode.details' } })
    expect(await refusal(m.remember({ kind: 'episode', summary: 'big', blob: huge }))).toMatchObject({ code: 'BODY_TOO_LARGE', where: { field: 'episode.blob' } })
    expect(await refusal(m.rememberMany([{ kind: 'episode', summary: 'fine' }, { kind: 'entity', type: 'note', canonicalName: 'n', summary: huge }]))).toMatchObject({
      code: 'BODY_TOO_LARGE', where: { field: 'records[1].entity.summary' }, message: expect.stringMatching(/over 1048576 \(summary alone is 1126402 bytes\) \(field records\[1\]\.entity\.summary\)$/),
    })
    for (const [id, field] of [[fact, 'object'], [fact, 'episodeID'], [fact, 'subject'], [edge, 'edgeType'], [edge, 'srcEntityID']] as const) {
      expect((await refusal(m.update(id, { set: { [field]: 'x' } }))), field).toMatchObject({ code: 'IMMUTABLE_FIELD' })
      expect((await refusal(m.updateMany([{ id, changes: { set: { [field]: 'x' } } }]))), field).toMatchObject({ code: 'IMMUTABLE_FIELD' })
    }
    // A replacement is a new record: the old id, or any id in use, is refused.
    expect((await refusal(m.supersede(fact, { id: fact, episodeID: other, subject: 'user', predicate: 'likes', object: 'coffee' })))).toMatchObject({ code: 'ID_TAKEN', where: { field: 'replacement.id' } })
    expect((await refusal(m.supersede(fact, { id: episode, episodeID: other, subject: 'user', predicate: 'likes', object: 'coffee' })))).toMatchObject({ code: 'BAD_ID' })
    // The old version cannot end before it began.
    const began = (await m.get(fact))?.tValidFrom as string
    const early = new Date(Date.parse(began) - 1000).toISOString().replace('.000', '')
    expect((await refusal(m.supersede(fact, { episodeID: other, subject: 'user', predicate: 'likes', object: 'coffee' }, { validFrom: early })))).toMatchObject({ code: 'OUT_OF_RANGE', where: { field: 'options.validFrom' } })
    expect(m.versionVector()).toEqual(before)
    await m.update(fact, { set: { confidence: 0.4 } })
    const replacement = await m.supersede(fact, { episodeID: other, subject: 'user', predicate: 'likes', object: 'coffee' })
    expect((await m.get(fact))?.supersededBy).toBe(replacement)
    // Written by a clock ahead of this one: by default the replacement takes over when it began.
    const ahead = await m.remember({ kind: 'fact', episodeID: other, subject: 'user', predicate: 'likes', object: 'oolong', tValidFrom: new Date(Date.now() + 60_000).toISOString().replace(/\.\d+Z$/, 'Z') })
    const next = await m.supersede(ahead, { episodeID: other, subject: 'user', predicate: 'likes', object: 'sencha' })
    expect((await m.get(ahead))?.tValidTo).toBe((await m.get(ahead))?.tValidFrom)
    expect((await m.get(next))?.tValidFrom).toBe((await m.get(ahead))?.tValidFrom)
  })

  it('keeps a record deleted through its parent deleted across a rebuild; its bodies stay, hidden, until a deletion names it', async () => {
    const { memories } = await openReplicas(3)
    // `here` holds no admin right, so it names nothing itself (deletion-naming.ts).
    const [there, here, stale] = memories as [Memory, Memory, Memory]
    open.push(...memories)
    await here.remember({ kind: 'fact', id: 'fact_c', episodeID: 'ep_d', subject: 'user', predicate: 'likes', object: 'tea' })
    await stale.ingest(await here.events())
    await stale.update('fact_c', { set: { speaker: 'green tea' } })
    await there.remember({ kind: 'episode', id: 'ep_d', summary: 'about tea' })
    await there.forget('ep_d')
    await here.ingest(await there.events())
    expect(await here.status('fact_c')).toBe('deleted')
    await here.rebuild()
    expect(await here.status('fact_c')).toBe('deleted')
    // A store from before the derived tombstone was kept apart: the rebuild finds it in the state.
    const storage = (here.log as unknown as { storage: LogStorage }).storage
    await storage.write([{ type: 'del', key: `${here.space}:q:z:fact_c` }])
    await here.rebuild()
    expect(await here.status('fact_c')).toBe('deleted')
    // A patch from a replica that had the fact before the deletion: ignored, and shown nowhere.
    const result = await here.ingest(await stale.events(here.versionVector()))
    expect(result.applied.length).toBeGreaterThan(0)
    expect(await here.get('fact_c')).toBeUndefined()
    expect(await here.search('green')).toEqual([])
    expect((await here.history('fact_c')).filter((entry) => entry.type === 'content')).toEqual([])
    // No event names the fact, so its bodies stay: a replica they go to next must find it deleted too.
    const bodies = async (memory: Memory): Promise<string> => (await memory.events()).map((envelope) => Buffer.from(envelope.body ?? []).toString('utf8')).join('\n')
    expect(await bodies(here)).toContain('green tea')
    // The stale replica still shows the fact and forgets it: that deletion names it, and the kept bodies go.
    await stale.forget('fact_c')
    await here.ingest(await stale.events(here.versionVector()))
    expect(await here.status('fact_c')).toBe('deleted')
    expect(await bodies(here)).not.toContain('green tea')
    expect(await bodies(here)).not.toContain('"object":"tea"')
  })

  it('is unreachable as of any earlier time once deleted', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1))
    const m = await memory(clock)
    const id = await m.remember({ kind: 'episode', summary: 'to be forgotten' })
    const then = clock.nowMs()
    expect(await m.get(id, { asOf: then })).toBeDefined()
    clock.advance(60_000)
    await m.forget(id)
    expect(await m.get(id, { asOf: then })).toBeUndefined()
    expect((await m.query({ asOf: then })).records).toEqual([])
  })

  it('redaction purges what docs/memory-model.md §1.1 lists, keeps the rest, and leaves none of it in the log', async () => {
    const clock = new ManualClock(Date.UTC(2026, 4, 1, 12))
    const m = await memory(clock)
    const episode = await m.remember({ kind: 'episode', summary: 'zeta summary', details: 'zeta details', actors: ['zeta-actor'], speaker: 'zeta-speaker', categories: ['zeta-category'], metadata: { k: 'zeta-meta' }, tags: ['kept-tag'], zetaExtra: 'zeta-ext' } as never)
    const entity = await m.remember({ kind: 'entity', canonicalName: 'Zeta Person', type: 'person', aliases: ['zeta-alias'], summary: 'zeta bio' })
    const resource = await m.remember({ kind: 'resource', uri: 'file:///zeta.txt', mimeType: 'text/plain', contentHash: 'zetahash', title: 'zeta title', summary: 'zeta doc' })
    const fact = await m.remember({ kind: 'fact', episodeID: (await m.remember({ kind: 'episode', summary: 'other' })), subject: 'zeta-subject', predicate: 'zeta-predicate', object: 'zeta-object', speaker: 'zeta-speaker' })
    const preference = await m.remember({ kind: 'preference', key: 'zeta-key', value: 'zeta-value' })
    clock.advance(60_000)
    for (const id of [episode, entity, resource, fact, preference]) await m.redact(id)
    expect(await m.get(episode)).toMatchObject({ summary: '', details: '', actors: [], categories: [], metadata: {}, tags: ['kept-tag'], sourceType: 'note', deletedAt: '2026-05-01T12:01:00Z' })
    expect(await m.get(entity)).toMatchObject({ canonicalName: '', aliases: [], summary: '', type: 'person' })
    expect(await m.get(resource)).toMatchObject({ uri: '', contentHash: '', title: '', summary: '', mimeType: 'text/plain' })
    expect(await m.get(fact)).toMatchObject({ subject: '', predicate: '', object: '', text: '' })
    expect(await m.get(preference)).toMatchObject({ key: '', value: '' })
    for (const id of [episode, fact]) expect(await m.get(id)).not.toHaveProperty('speaker')
    expect(await m.get(episode)).not.toHaveProperty('zetaExtra')
    // Nothing of the purged content is left anywhere: views, the redact events' bodies, erased content.
    for await (const event of m.log.readApplied()) expect(JSON.stringify(event.body ?? {})).not.toMatch(/zeta|Zeta/)
    for (const id of [episode, entity, resource, fact, preference]) expect(JSON.stringify(await m.get(id))).not.toMatch(/zeta|Zeta/)
  })

  it('judges a redaction skeleton by kind only in every query, live or as of a time, indexed or not', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1))
    const m = await memory(clock)
    const id = await m.remember({ kind: 'episode', summary: 'secret', tags: ['x'], contextID: 'ctx_a', confidence: 0.9 })
    clock.advance(5_000)
    await m.redact(id)
    clock.advance(5_000)
    const now = clock.nowMs()
    const filters = [{ tags: ['x'] }, { context: 'ctx_a' }, { minConfidence: 0.5 }, { kind: 'episode' as const }, { kind: 'episode' as const, tags: { none: ['x'] } }]
    const found = []
    for (const filter of filters) {
      const live = (await m.query(filter)).records.map((record) => record.id)
      expect((await m.query({ ...filter, asOf: now })).records.map((record) => record.id), JSON.stringify(filter)).toEqual(live)
      found.push(live.length)
    }
    expect(found).toEqual([0, 0, 0, 1, 1])
  })

  it('redacts content but keeps a skeleton and the tombstone', async () => {
    const clock = new ManualClock(Date.UTC(2026, 4, 1, 12))
    const m = await memory(clock)
    const id = await m.remember({ kind: 'episode', summary: 'secret salary', details: 'exact figures', tags: ['hr'], metadata: { k: 'v' } })
    const created = clock.nowMs()
    const createEvent = (await m.history(id))[0]?.event as string
    clock.advance(10_000)
    const tombstone = await m.redact(id, { reason: 'privacy' })
    // The content is unreachable by every route: the body is erased, and no earlier version remains.
    expect((await m.log.get(createEvent))?.bodyState).toBe('erased')
    expect(JSON.stringify((await m.get(id, { asOf: created })) ?? null)).not.toContain('salary')
    expect(JSON.stringify((await m.query({ asOf: created })).records)).not.toContain('salary')
    expect(tombstone.op).toBe('redact')
    const skeleton = await m.get(id)
    expect(skeleton).toMatchObject({ id, kind: 'episode', summary: '', details: '', metadata: {}, eventTime: expect.any(String) })
    expect(await m.search('salary')).toEqual([])
    expect((await m.query({ tags: ['hr'] })).records).toEqual([])
    expect((await refusal(m.update(id, { set: { summary: 'again' } }))).code).toBe('REDACTED')
    expect((await refusal(m.remember({ kind: 'episode', id, summary: 'again' }))).code).toBe('REDACTED')
    expect((await m.tombstones())[0]).toMatchObject({ op: 'redact', targetID: id, reason: 'privacy' })
    expect(await m.status(id)).toBe('redacted')
    await m.forget(id)
    expect(await m.status(id)).toBe('deleted')
    expect(await m.get(id)).toBeUndefined()
    expect(await m.status('ep_never')).toBe('absent')
  })
})

describe('queries', () => {
  it('filters by kind, context, tags (any, all, none), entity and confidence', async () => {
    const m = await memory()
    const a = await m.remember({ kind: 'episode', summary: 'a', contextID: 'ctx_work', tags: ['x', 'y'], confidence: 0.9 })
    const b = await m.remember({ kind: 'episode', summary: 'b', contextID: 'ctx_work', tags: ['y'], confidence: 0.4 })
    const c = await m.remember({ kind: 'episode', summary: 'c', contextID: 'ctx_home', tags: ['z'] })
    const edge = await m.remember({ kind: 'edge', srcEntityID: 'ent_1', dstEntityID: 'ent_2', edgeType: 'knows' })
    const ids = async (q: Parameters<Memory['query']>[0]) => (await m.query(q)).records.map((r) => r.id).sort()
    expect(await ids({ context: 'ctx_work' })).toEqual([a, b].sort())
    expect(await ids({ tags: ['x', 'y'] })).toEqual([a])
    expect(await ids({ tags: { any: ['x', 'z'] } })).toEqual([a, c].sort())
    expect(await ids({ kind: 'episode', tags: { none: ['y'] } })).toEqual([c])
    expect(await ids({ context: 'ctx_work', minConfidence: 0.5 })).toEqual([a])
    expect(await ids({ entity: 'ent_2' })).toEqual([edge])
    expect(await ids({ kind: ['edge', 'fact'] })).toEqual([edge])
    expect((await refusal(m.query({ kind: 'bogus' as never }))).code).toBe('UNKNOWN_KIND')
    expect((await refusal(m.query({ limit: 0 }))).code).toBe('OUT_OF_RANGE')
    expect((await refusal(m.query({ colour: 'red' } as never))).code).toBe('UNKNOWN_FIELD')
  })

  it('pages through results with a cursor, without duplicates or gaps', async () => {
    const m = await memory()
    const all: string[] = []
    for (let i = 0; i < 23; i++) all.push(await m.remember({ kind: 'episode', summary: `n${i}` }))
    const seen: string[] = []
    let cursor: string | undefined
    do {
      const page = await m.query({ kind: 'episode', limit: 5, ...(cursor ? { cursor } : {}) })
      seen.push(...page.records.map((r) => r.id))
      cursor = page.cursor
    } while (cursor)
    expect(seen.sort()).toEqual([...all].sort())
  })

  it('gives no cursor with the last page, even a full one (index walk, view walk, as of a time)', async () => {
    const m = await memory()
    for (let i = 0; i < 10; i++) await m.remember({ kind: 'episode', summary: `n${i}`, tags: ['t'] })
    const asOf = Date.now() + 1000
    for (const filter of [{ kind: 'episode' as const }, { tags: { all: ['t'] } }, {}, { kind: 'episode' as const, asOf }]) {
      const pages: number[] = []
      let cursor: string | undefined
      do {
        const page = await m.query({ ...filter, limit: 5, ...(cursor ? { cursor } : {}) })
        pages.push(page.records.length)
        cursor = page.cursor
      } while (cursor)
      expect(pages, JSON.stringify(filter)).toEqual([5, 5])
      expect((await m.query({ ...filter, limit: 10 })).cursor, JSON.stringify(filter)).toBeUndefined()
      expect((await m.query({ ...filter, limit: 9 })).cursor, JSON.stringify(filter)).toBeDefined()
    }
  })

  it('takes back only a cursor its own query returned, naming query.cursor', async () => {
    const m = await memory()
    for (let i = 0; i < 6; i++) await m.remember({ kind: 'episode', summary: `n${i}`, tags: i % 2 === 0 ? ['even', 'x'] : [] })
    const first = await m.query({ kind: 'episode', limit: 2 })
    const cursor = first.cursor as string
    expect((await m.query({ kind: 'episode', limit: 2, cursor })).records).toHaveLength(2)
    // The same cursor with another filter, or as of another time, would start somewhere arbitrary.
    for (const other of [{ kind: 'fact' as const }, { kind: 'episode' as const, tags: { any: ['even'] } }, { kind: 'episode' as const, asOf: Date.now() }]) {
      expect(await refusal(m.query({ ...other, limit: 2, cursor }))).toMatchObject({ code: 'BAD_CURSOR', where: { field: 'query.cursor' } })
    }
    // Kinds and tags are sets: the order they are listed in does not make another query.
    const listed = await m.query({ kind: ['episode', 'fact'], tags: { none: ['y', 'z'] }, limit: 2 })
    expect((await m.query({ kind: ['fact', 'episode'], tags: { none: ['z', 'y', 'z'] }, limit: 2, cursor: listed.cursor as string })).records).toHaveLength(2)
    const one = await m.query({ kind: 'episode', limit: 2 })
    expect((await m.query({ kind: ['episode', 'episode'], limit: 2, cursor: one.cursor as string })).records).toHaveLength(2)
    const tagged = await m.query({ tags: { all: ['even', 'x'] }, limit: 1 })
    expect((await m.query({ tags: { all: ['x', 'even'] }, limit: 1, cursor: tagged.cursor as string })).records).toHaveLength(1)
    for (const garbage of ['!!!***', '', 'abc', `${cursor}=`, `x${cursor}`, Buffer.from('not a cursor at all').toString('base64url')]) {
      expect(await refusal(m.query({ kind: 'episode', limit: 2, cursor: garbage })), garbage).toMatchObject({ code: 'BAD_CURSOR', where: { field: 'query.cursor' } })
    }
  })

  it('searches full text with filters and reads as of a recorded time', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1))
    const m = await memory(clock)
    const tea = await m.remember({ kind: 'episode', summary: 'The user drinks green tea every morning', contextID: 'ctx_a' })
    await m.remember({ kind: 'episode', summary: 'Tea ceremony notes, tea history, more tea', contextID: 'ctx_b' })
    await m.remember({ kind: 'episode', summary: 'Coffee beans' })
    expect((await m.search('tea')).map((hit) => hit.record.id)).toHaveLength(2)
    expect((await m.search('tea', { context: 'ctx_a' })).map((hit) => hit.record.id)).toEqual([tea])
    expect(await m.search('nothing-matches-this')).toEqual([])
    const before = clock.nowMs()
    clock.advance(5000)
    await m.update(tea, { set: { summary: 'The user switched to coffee' } })
    expect((await m.get(tea, { asOf: before }))?.summary).toBe('The user drinks green tea every morning')
    expect((await m.get(tea, { asOf: new Date(clock.nowMs()) }))?.summary).toBe('The user switched to coffee')
    expect((await refusal(m.get(tea, { asOf: 'yesterday' }))).code).toBe('BAD_TIMESTAMP')
    // A time with a fraction names its millisecond; a whole-second time the whole second.
    clock.advance(400)
    await m.update(tea, { set: { summary: 'The user switched to juice' } })
    const juice = new Date(clock.nowMs()).toISOString()
    expect((await m.get(tea, { asOf: juice.replace(/\.\d+Z$/, '.399Z') }))?.summary).toBe('The user switched to coffee')
    expect((await m.get(tea, { asOf: juice }))?.summary).toBe('The user switched to juice')
    expect((await m.get(tea, { asOf: juice.replace(/\.\d+Z$/, 'Z') }))?.summary).toBe('The user switched to juice')
    // Search options are named as such in errors.
    expect(await refusal(m.search('tea', { kind: 'nope' } as never))).toMatchObject({ code: 'UNKNOWN_KIND', where: { field: 'options.kind' } })
    expect(await refusal(m.search('tea', { tags: { any: 'x' } } as never))).toMatchObject({ where: { field: 'options.tags.any' } })
  })
})

describe('history, subscribe, text, persistence', () => {
  it('lists the events behind a record and notifies subscribers of changes', async () => {
    const m = await memory()
    const seen: string[] = []
    const stop = m.subscribe(({ changes }) => seen.push(...changes.map((c) => `${c.action}:${c.kind}`)))
    const id = await m.remember({ kind: 'episode', summary: 's' })
    await m.update(id, { set: { pinned: true } })
    await m.forget(id)
    stop()
    await m.remember({ kind: 'episode', summary: 'after unsubscribe' })
    expect(seen).toEqual(['created:episode', 'updated:episode', 'deleted:episode'])
    const history = await m.history(id)
    expect(history.map((h) => h.type)).toEqual(['tombstone'])
    expect(history[0]).toMatchObject({ op: MEMORY_OPS.delete, author: m.author, bodyState: 'present' })
  })

  it('hands what a subscriber throws or rejects with to onError; the write is stored and resolves', async () => {
    const m = await memory()
    const errors: string[] = []
    const onError = (error: unknown) => errors.push((error as Error).message)
    m.subscribe(() => { throw new Error('sync boom') }, { onError })
    m.subscribe(async () => { throw new Error('async boom') }, { onError })
    const id = await m.remember({ kind: 'episode', summary: 'still stored' })
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(errors.sort()).toEqual(['async boom', 'sync boom'])
    expect((await m.get(id))?.summary).toBe('still stored')
    expect(() => m.subscribe(() => undefined, { onError: 'log' as never })).toThrow(expect.objectContaining({ code: 'WRONG_TYPE' }))
  })

  it('edits and appends collaborative text in core blocks', async () => {
    const m = await memory()
    await m.remember({ kind: 'core', id: 'human', content: 'Name: Ada.' })
    await m.appendText('human', ' Likes tea.')
    await m.editText('human', 'Name: Ada Lovelace. Likes tea.')
    expect((await m.get('human'))?.content).toBe('Name: Ada Lovelace. Likes tea.')
    expect((await m.history('human')).length).toBe(3)
    const episode = await m.remember({ kind: 'episode', summary: 's' })
    expect((await refusal(m.appendText(episode, 'x'))).code).toBe('NOT_TEXT')
  })

  it('reopens from disk ready, and applies on open what the log has beyond the projection', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'cairn-memory-'))
    dirs.push(dir)
    let m = await Memory.open({ path: dir })
    const id = await m.remember({ kind: 'episode', summary: 'kept on disk', tags: ['disk'] })
    const digest = await m.digest()
    // A write that reached the log but not the projection (a crash between the two writes).
    await m.log.append(
      (m as unknown as { engine: { identity: never } }).engine.identity,
      { op: MEMORY_OPS.create, data: { kind: 'episode', id: 'ep_late', fields: { id: 'ep_late', summary: 'late', details: 'late' } } },
    )
    await m.close()
    m = await Memory.open({ path: dir })
    open.push(m)
    expect((await m.get(id))?.tags).toEqual(['disk'])
    expect((await m.get('ep_late'))?.summary).toBe('late')
    expect(await m.digest()).not.toBe(digest)
    expect((await m.query({ tags: ['disk'] })).records).toHaveLength(1)
  })

  it('counts the records it shows as they come and go, and counts a store from before that once', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'cairn-memory-'))
    dirs.push(dir)
    let m = await Memory.open({ path: dir })
    expect(await m.recordCount()).toBe(0)
    const ids = []
    for (let i = 0; i < 4; i++) ids.push(await m.remember({ kind: 'episode', summary: `counted ${i}` }))
    await m.forget(ids[0] as string)
    await m.redact(ids[1] as string)
    expect(await m.recordCount()).toBe(3) // a redaction skeleton still shows
    // A store written before the count was kept: its meta has no count.
    const storage = (m.log as unknown as { storage: LogStorage }).storage
    const key = `${m.space}:q:m`
    const { views: _views, ...older } = decodeMeta(await storage.get(key))
    await storage.write([{ type: 'put', key, value: encodeMeta(older) }])
    await m.close()
    m = await Memory.open({ path: dir })
    open.push(m)
    expect(await m.recordCount()).toBe(3)
    await m.remember({ kind: 'episode', summary: 'counted after' })
    expect(await m.recordCount()).toBe(4)
    // Counted once, then kept in the meta again.
    expect(decodeMeta(await (m.log as unknown as { storage: LogStorage }).storage.get(key)).views).toBe(4)
  })
})

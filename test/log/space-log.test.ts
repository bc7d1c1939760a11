import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { SpaceAuthority } from '../../src/log/authorization.js'
import { utf8Decode } from '../../src/log/bytes.js'
import { Identity } from '../../src/log/identity.js'
import type { EventId } from '../../src/log/ids.js'
import { LevelLogStorage } from '../../src/log/level-storage.js'
import { LogStore } from '../../src/log/log-store.js'
import type { LogEvent } from '../../src/log/log-event.js'
import type { LogStorage } from '../../src/log/storage.js'
import { keys } from '../../src/log/store-keys.js'
import { eventSignable } from '../../src/log/signable.js'
import {
  allApplied, emptyReplica, handMadeEnvelope, memoryStore, readStoredRecord, rejectionOf, snapshot, syncInto,
} from '../helpers/log-fixtures.js'

const directories: string[] = []
afterEach(async () => {
  for (const dir of directories.splice(0)) await rm(dir, { recursive: true, force: true })
})

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cairn-log-'))
  directories.push(dir)
  return dir
}

describe('appending', () => {
  it('signs a single append and chains it to the previous event', async () => {
    const owner = Identity.generate()
    const log = await (await memoryStore()).createSpace(owner)
    const first = await log.append(owner, { op: 'note', data: { text: 'a' } })
    const second = await log.append(owner, { op: 'note', data: { text: 'b' } })
    expect(first.header).toMatchObject({ seq: 2, prev: log.space, space: log.space, kind: 'data' })
    expect(second.header.prev).toBe(first.id)
    expect(second.signature).toBeInstanceOf(Uint8Array)
    expect(owner.crypto.verify(second.signature as Uint8Array, eventSignable(second.id), owner.author)).toBe(true)
    expect(second.header.clock.wall * 1000 + second.header.clock.logical).toBeGreaterThan(first.header.clock.wall * 1000 + first.header.clock.logical)
  })

  it('signs only the newest event of a batch and stores the batch atomically', async () => {
    const owner = Identity.generate()
    const store = await memoryStore()
    const log = await store.createSpace(owner)
    const events = await log.appendBatch(owner, [1, 2, 3].map((n) => ({ op: 'note', data: { n } })))
    expect(events.map((event) => Boolean(event.signature))).toEqual([false, false, true])
    expect(events.map((event) => event.header.seq)).toEqual([2, 3, 4])
    const before = await snapshot(log)
    const error = await rejectionOf(log.appendBatch(owner, [{ op: 'note', data: 1 }, { op: 'note', data: { bad: Number.NaN } }]))
    expect(error.code).toBe('NOT_FINITE')
    expect(await snapshot(log)).toBe(before)
    expect((await log.verify()).ok).toBe(true)
  })

  it('reads events by id, by author and seq, and by range', async () => {
    const owner = Identity.generate()
    const log = await (await memoryStore()).createSpace(owner)
    const events = await log.appendBatch(owner, Array.from({ length: 10 }, (_, n) => ({ op: 'note', data: { n } })))
    const middle = events[4]
    expect((await log.get(middle?.id as string))?.body?.data).toEqual({ n: 4 })
    expect((await log.getBySeq(owner.author, 6))?.id).toBe(middle?.id)
    const seqs: number[] = []
    for await (const event of log.range(owner.author, 3, 7)) seqs.push(event.header.seq)
    expect(seqs).toEqual([3, 4, 5, 6, 7])
    expect(await log.get('ab'.repeat(32))).toBeUndefined()
    expect(log.versionVector()).toEqual({ [owner.author]: 11 })
    expect(log.heads()).toEqual([events[9]?.id])
  })

  it('reads many events by (author, seq) at once, in the order asked, near and far apart, each as getBySeq gives it', async () => {
    const owner = Identity.generate()
    const writer = Identity.generate()
    const log = await (await memoryStore()).createSpace(owner)
    await log.grant(owner, writer.author)
    // Runs of one event and of many, far apart: clusters of near seqs and single reads.
    for (let n = 0; n < 150; n++) await log.append(owner, { op: 'note', data: { n } })
    await log.appendBatch(owner, Array.from({ length: 300 }, (_, n) => ({ op: 'note', data: { batch: n } })))
    await log.append(writer, { op: 'note', data: 'w' })
    const tip = log.versionVector()[owner.author] as number
    const refs = [
      { author: owner.author, seq: tip }, { author: owner.author, seq: 1 }, { author: writer.author, seq: 1 },
      { author: owner.author, seq: 3 }, { author: owner.author, seq: 60 }, { author: owner.author, seq: 200 },
      { author: owner.author, seq: 3 }, { author: owner.author, seq: tip + 1 }, { author: writer.author, seq: 2 },
      { author: Identity.generate().author, seq: 1 },
    ]
    const many = await log.getManyBySeq(refs)
    expect(many).toHaveLength(refs.length)
    for (const [i, ref] of refs.entries()) expect(many[i]?.id, `${i}`).toBe((await log.getBySeq(ref.author, ref.seq))?.id)
    expect(many.map((event) => event?.header.seq)).toEqual([tip, 1, 1, 3, 60, 200, 3, undefined, undefined, undefined])
    expect(await log.getManyBySeq([])).toEqual([])
    await expect(log.getManyBySeq([{ author: owner.author, seq: 0 }])).rejects.toMatchObject({ code: 'OUT_OF_RANGE', where: { field: 'refs[0].seq' } })
    await expect(log.getManyBySeq([{ author: 'nope', seq: 1 }])).rejects.toMatchObject({ where: { field: 'refs[0].author' } })
  })

  it('refuses reserved and malformed operations before writing', async () => {
    const owner = Identity.generate()
    const log = await (await memoryStore()).createSpace(owner)
    expect((await rejectionOf(log.append(owner, { op: 'space.grant', data: {} }))).code).toBe('BAD_OP')
    expect((await rejectionOf(log.append(owner, { op: '', data: {} }))).code).toBe('BAD_OP')
    expect((await rejectionOf(log.append(owner, { op: 'x', data: { big: 'x'.repeat(1024 * 1024) } }))).code).toBe('BODY_TOO_LARGE')
    expect(log.versionVector()).toEqual({ [owner.author]: 1 })
  })
})

describe('replicas and authorization', () => {
  it('lets a granted writer append and merges both chains', async () => {
    const owner = Identity.generate()
    const writer = Identity.generate()
    const a = await (await memoryStore()).createSpace(owner, { name: 'shared' })
    await a.grant(owner, writer.author)
    const b = await emptyReplica(a.space)
    expect((await rejectionOf(b.append(writer, { op: 'note' }))).code).toBe('NO_GENESIS')
    await syncInto(a, b)
    const mine = await b.append(writer, { op: 'note', data: 'from b' })
    expect(mine.header.deps).toEqual([a.heads()[0]])
    await a.append(owner, { op: 'note', data: 'from a' })
    await syncInto(b, a)
    await syncInto(a, b)
    expect(b.versionVector()).toEqual(a.versionVector())
    expect(b.heads()).toEqual(a.heads())
    expect(a.heads()).toHaveLength(2)
    expect((await a.verify()).ok).toBe(true)
    expect((await b.verify()).ok).toBe(true)
  })

  it('verify re-checks grants: an event from a writer never granted, stored by a store that skipped the check, is named', async () => {
    const owner = Identity.generate()
    const stranger = Identity.generate()
    const log = await (await memoryStore()).createSpace(owner, { name: 'planted' })
    await log.append(owner, { op: 'note', data: 'by the owner' })
    // A store whose authorization check was broken when it stored the stranger's event.
    const authorize = vi.spyOn(SpaceAuthority.prototype, 'authorize').mockReturnValue(undefined)
    let planted: EventId
    try {
      planted = (await log.append(stranger, { op: 'note', data: 'never granted' })).id
    } finally {
      authorize.mockRestore()
    }
    const report = await log.verify()
    expect(report.ok).toBe(false)
    expect(report.problems).toEqual([expect.objectContaining({ code: 'NOT_AUTHORIZED', event: planted })])
  })

  it('refuses an unauthorized writer on append and on ingest, changing nothing', async () => {
    const owner = Identity.generate()
    const stranger = Identity.generate()
    const log = await (await memoryStore()).createSpace(owner)
    expect((await rejectionOf(log.append(stranger, { op: 'note' }))).code).toBe('NOT_AUTHORIZED')
    const before = await snapshot(log)
    const forged = handMadeEnvelope({ author: stranger, space: log.space, seq: 1, deps: [log.space as string as EventId], clock: { wall: Date.now() + 1, logical: 0 } })
    const error = await rejectionOf(log.ingest([forged]))
    expect(error.code).toBe('NOT_AUTHORIZED')
    expect(error.where.event).toBe(forged.id)
    expect(await snapshot(log)).toBe(before)
  })

  it('refuses a revoked writer\'s events that saw the revoke, and keeps earlier ones', async () => {
    const owner = Identity.generate()
    const writer = Identity.generate()
    const a = await (await memoryStore()).createSpace(owner)
    await a.grant(owner, writer.author)
    const b = await emptyReplica(a.space)
    await syncInto(a, b)
    const before = await b.append(writer, { op: 'note', data: 'before revoke' })
    await syncInto(b, a)
    const revoke = await a.revoke(owner, writer.author)
    expect(a.rightsOf(writer.author)).toEqual([])
    await syncInto(a, b)
    expect((await rejectionOf(b.append(writer, { op: 'note', data: 'after revoke' }))).code).toBe('NOT_AUTHORIZED')
    // A hand-made event by the writer that cites the revoke in its past is refused everywhere.
    const late = handMadeEnvelope({
      author: writer, space: a.space, seq: 2, prev: before.id, deps: [revoke.id], clock: { wall: revoke.header.clock.wall + 1, logical: 0 },
    })
    expect((await rejectionOf(a.ingest([late]))).code).toBe('NOT_AUTHORIZED')
    expect((await a.get(before.id))?.bodyState).toBe('present')
    expect((await a.verify()).ok).toBe(true)
  })

  it('holds a concurrent grant and revoke as revoked (revoke wins)', async () => {
    const owner = Identity.generate()
    const admin = Identity.generate()
    const writer = Identity.generate()
    const a = await (await memoryStore()).createSpace(owner)
    await a.grant(owner, admin.author, ['admin'])
    await a.grant(owner, writer.author)
    const b = await emptyReplica(a.space)
    await syncInto(a, b)
    await b.grant(admin, writer.author, ['write', 'admin'])
    await a.revoke(owner, writer.author)
    await syncInto(b, a)
    await syncInto(a, b)
    expect(a.rightsOf(writer.author)).toEqual([])
    expect(b.rightsOf(writer.author)).toEqual([])
  })

  it('refuses a grant by a writer without the admin right', async () => {
    const owner = Identity.generate()
    const writer = Identity.generate()
    const a = await (await memoryStore()).createSpace(owner)
    await a.grant(owner, writer.author)
    expect((await rejectionOf(a.grant(writer, Identity.generate().author))).code).toBe('NOT_AUTHORIZED')
    expect((await rejectionOf(a.revoke(owner, owner.author))).code).toBe('BAD_CONTROL')
  })
})

describe('ingest checks', () => {
  it('refuses equivocation with an error naming both ids, and flags the author', async () => {
    const owner = Identity.generate()
    const a = await (await memoryStore()).createSpace(owner)
    const b = await emptyReplica(a.space)
    await syncInto(a, b)
    // The same key used on two devices forks its chain at seq 2.
    const onA = await a.append(owner, { op: 'note', data: 'a' })
    const onB = await b.append(owner, { op: 'note', data: 'b' })
    const before = await snapshot(a)
    const error = await rejectionOf(a.ingest(await b.envelopesSince({})))
    expect(error.code).toBe('EQUIVOCATION')
    expect(error.message).toContain(onA.id)
    expect(error.message).toContain(onB.id)
    expect(a.equivocations()).toMatchObject([{ author: owner.author, seq: 2 }])
    expect(await snapshot(a)).toBe(before)
  })

  it('holds events whose dependencies are missing and applies them when they arrive, across a restart', async () => {
    const dir = await tempDir()
    const owner = Identity.generate()
    const source = await (await memoryStore()).createSpace(owner)
    await source.appendBatch(owner, [{ op: 'note', data: 1 }, { op: 'note', data: 2 }])
    await source.append(owner, { op: 'note', data: 3 })
    await source.append(owner, { op: 'note', data: 4 })
    const all = await source.envelopesSince({}, { signatures: 'stored' })
    let store = await LogStore.open({ path: dir })
    let replica = await store.openSpace(source.space)
    const held = await replica.ingest(all.slice(3))
    expect(held.applied).toHaveLength(0)
    expect([...held.held].sort()).toEqual(all.slice(3).map((event) => event.id).sort())
    await store.close()
    store = await LogStore.open({ path: dir })
    replica = await store.openSpace(source.space)
    expect(replica.heldCount).toBe(2)
    const released = await replica.ingest(all.slice(0, 3))
    expect(released.applied.map((event) => event.id)).toEqual(all.map((event) => event.id))
    expect(replica.heldCount).toBe(0)
    expect(replica.versionVector()).toEqual(source.versionVector())
    expect((await replica.verify())).toMatchObject({ ok: true, heldEvents: 0 })
    await store.close()
  })

  it('holds a signed segment whole while any part of it waits, so chains never end unsigned', async () => {
    const owner = Identity.generate()
    const writer = Identity.generate()
    const source = await (await memoryStore()).createSpace(owner)
    await source.grant(owner, writer.author)
    const writerReplica = await emptyReplica(source.space)
    await syncInto(source, writerReplica)
    const missing = await writerReplica.append(writer, { op: 'note', data: 'not delivered yet' })
    const ownerTip = (await source.getBySeq(owner.author, 2))
    const now = missing.header.clock.wall + 10
    // Seq 3 could apply on its own; seq 4 (which carries the signature) depends on `missing`.
    const lower = handMadeEnvelope({ author: owner, space: source.space, seq: 3, prev: ownerTip?.id as EventId, clock: { wall: now, logical: 0 }, sign: false })
    const upper = handMadeEnvelope({ author: owner, space: source.space, seq: 4, prev: lower.id, deps: [missing.id], clock: { wall: now + 1, logical: 0 } })
    const result = await source.ingest([lower, upper])
    expect(result.applied).toEqual([])
    expect([...result.held].sort()).toEqual([lower.id, upper.id].sort())
    expect(source.versionVector()[owner.author]).toBe(2)
    expect((await source.verify()).ok).toBe(true)
    const released = await source.ingest(await writerReplica.envelopesSince(source.versionVector()))
    expect(released.applied.map((event) => event.id)).toEqual([missing.id, lower.id, upper.id])
    expect((await source.verify()).ok).toBe(true)
  })

  it('refuses an event that no signature covers, and a broken chain', async () => {
    const owner = Identity.generate()
    const source = await (await memoryStore()).createSpace(owner)
    await source.appendBatch(owner, [{ op: 'note', data: 1 }, { op: 'note', data: 2 }])
    const all = await source.envelopesSince({})
    const replica = await emptyReplica(source.space)
    const unsigned = await rejectionOf(replica.ingest(all.slice(0, 2)))
    expect(unsigned.code).toBe('UNSIGNED')
    expect(unsigned.where.event).toBe(all[1]?.id)
    const other = handMadeEnvelope({ author: owner, space: source.space, seq: 2, prev: source.space as string as EventId, clock: { wall: 1, logical: 0 }, sign: false })
    const broken = await rejectionOf(replica.ingest([all[0], other, all[2]] as never))
    expect(broken.code).toBe('BROKEN_CHAIN')
    expect(broken.where.event).toBe(other.id)
    expect(replica.versionVector()).toEqual({})
  })

  it('refuses a clock that does not move past its causal past', async () => {
    const owner = Identity.generate()
    const log = await (await memoryStore()).createSpace(owner)
    const tip = await log.append(owner, { op: 'note' })
    const stale = handMadeEnvelope({ author: owner, space: log.space, seq: 3, prev: tip.id, clock: tip.header.clock })
    expect((await rejectionOf(log.ingest([stale]))).code).toBe('BAD_CLOCK')
  })

  it('refuses events of another space', async () => {
    const owner = Identity.generate()
    const a = await (await memoryStore()).createSpace(owner)
    const b = await (await memoryStore()).createSpace(owner)
    const error = await rejectionOf(a.ingest(await b.envelopesSince({})))
    expect(error.code).toBe('WRONG_SPACE')
  })

  it('ingests duplicates as no-ops', async () => {
    const owner = Identity.generate()
    const source = await (await memoryStore()).createSpace(owner)
    await source.append(owner, { op: 'note' })
    const replica = await emptyReplica(source.space)
    const all = await source.envelopesSince({})
    await replica.ingest(all)
    const before = await snapshot(replica)
    const again = await replica.ingest([...all, ...all])
    expect(again).toMatchObject({ applied: [], duplicates: 2 })
    expect(await snapshot(replica)).toBe(before)
  })
})

describe('ingest deadline', () => {
  it('stores nothing and throws SLOW_FRAME once the deadline has passed; before it, ingests as usual', async () => {
    const owner = Identity.generate()
    const source = await (await memoryStore()).createSpace(owner)
    await source.appendBatch(owner, Array.from({ length: 600 }, (_, n) => ({ op: 'note', data: { n } })))
    const envelopes = await source.envelopesSince({}, { signatures: 'stored' })
    const replica = await emptyReplica(source.space)
    const before = await snapshot(replica)
    const late = await rejectionOf(replica.ingest(envelopes, { deadline: Date.now() - 1 }))
    expect(late.code).toBe('SLOW_FRAME')
    expect(await snapshot(replica)).toBe(before)
    expect((await rejectionOf(replica.ingest(envelopes, { deadline: 'soon' as unknown as number }))).code).toBe('WRONG_TYPE')
    const result = await replica.ingest(envelopes, { deadline: Date.now() + 60_000 })
    expect(result.applied).toHaveLength(601)
    expect(replica.versionVector()).toEqual(source.versionVector())
  })
})

describe('erasure compaction', () => {
  /** Every file of a store directory (LevelDB's tables and logs, the write journal) holding `text`. */
  async function filesHolding(dir: string, text: string): Promise<string[]> {
    const names = await readdir(dir)
    const holding: string[] = []
    for (const name of names) if ((await readFile(path.join(dir, name))).includes(Buffer.from(text))) holding.push(name)
    return holding
  }

  /** A space on a memory storage whose compact calls are counted (and fail while `failing`). */
  async function countingSpace() {
    const storage: LogStorage = await LevelLogStorage.openMemory()
    const compactions: [string, string][] = []
    const failing = { on: false }
    const compact = storage.compact.bind(storage)
    storage.compact = async (start, end) => {
      compactions.push([start, end])
      if (failing.on) throw new Error('disk on fire')
      return compact(start, end)
    }
    const owner = Identity.generate()
    const store = await LogStore.open({ storage })
    const log = await store.createSpace(owner)
    return { storage, compactions, failing, owner, store, log }
  }

  it('takes an erased body out of every file of a disk store, soon after the erasure returns', async () => {
    const dir = await tempDir()
    const owner = Identity.generate()
    const store = await LogStore.open({ path: dir })
    const log = await store.createSpace(owner)
    const secret = await log.append(owner, { op: 'note', data: { text: 'needle-in-the-files' } })
    for (let i = 0; i < 50; i++) await log.append(owner, { op: 'note', data: { text: `filler ${i}`.repeat(20) } })
    await store.storage.compact('', '\u{10FFFF}') // the body is in a table file, not only in the write buffer
    expect(await filesHolding(dir, 'needle-in-the-files')).not.toEqual([])
    await log.erase([secret.id])
    await log.erasuresCompacted()
    expect(await filesHolding(dir, 'needle-in-the-files')).toEqual([])
    expect(await store.storage.get(keys.compactionOwed(log.space))).toBeUndefined()
    await store.close()
  })

  it('lets a burst of erasures share compactions instead of running one each', async () => {
    const { compactions, owner, store, log } = await countingSpace()
    const events = await log.appendBatch(owner, Array.from({ length: 40 }, (_, i) => ({ op: 'note', data: { i } })))
    await Promise.all(events.map((event) => log.erase([event.id])))
    await log.erasuresCompacted()
    expect(compactions.length).toBeGreaterThan(0)
    expect(compactions.length).toBeLessThan(events.length / 4)
    // Whatever was merged covers every erased event.
    for (const event of events) {
      const key = keys.event(log.space, event.id)
      expect(compactions.some(([start, end]) => start <= key && key < end)).toBe(true)
    }
    await store.close()
  })

  it('keeps the marker of an owed compaction when it fails, and compacts the space when it is next opened', async () => {
    const { storage, compactions, failing, owner, store, log } = await countingSpace()
    const secret = await log.append(owner, { op: 'note', data: { text: 'x' } })
    failing.on = true
    await log.erase([secret.id])
    expect((await rejectionOf(log.erasuresCompacted())).code).toBe('STORAGE_FAILED')
    expect((await log.get(secret.id))?.bodyState).toBe('erased')
    expect(await storage.get(keys.compactionOwed(log.space))).toBeDefined()
    // As after a crash: the same storage, opened again.
    failing.on = false
    compactions.length = 0
    const again = await (await LogStore.open({ storage })).openSpace(log.space)
    await again.erasuresCompacted()
    const prefix = keys.eventPrefix(log.space)
    expect(compactions).toEqual([[prefix, keys.end(prefix)]])
    expect(await storage.get(keys.compactionOwed(log.space))).toBeUndefined()
    await store.close()
  })

  // Found in review: the failed range was dropped, so a later erasure's compaction cleared the
  // marker while the first body's old bytes were still in the files.
  it('compacts a range whose compaction failed with the next erasure, and keeps the marker until then', async () => {
    const { storage, compactions, failing, owner, store, log } = await countingSpace()
    const [first, second] = await log.appendBatch(owner, [{ op: 'note', data: { n: 1 } }, { op: 'note', data: { n: 2 } }]) as [LogEvent, LogEvent]
    failing.on = true
    await log.erase([first.id])
    await expect(log.erasuresCompacted()).rejects.toMatchObject({ code: 'STORAGE_FAILED' })
    failing.on = false
    compactions.length = 0
    await log.erase([second.id])
    await log.erasuresCompacted()
    for (const event of [first, second]) {
      const key = keys.event(log.space, event.id)
      expect(compactions.some(([start, end]) => start <= key && key < end)).toBe(true)
    }
    expect(await storage.get(keys.compactionOwed(log.space))).toBeUndefined()
    await store.close()
  })

  it('a store opened after a crash compacts every space that owes a compaction, opened or not', async () => {
    const { storage, compactions, failing, owner, log } = await countingSpace()
    const secret = await log.append(owner, { op: 'note', data: { text: 'x' } })
    failing.on = true
    await log.erase([secret.id])
    await log.erasuresCompacted().catch(() => undefined)
    failing.on = false
    compactions.length = 0
    // The same storage opened again (as after a crash); nothing opens the space.
    const reopened = await LogStore.open({ storage })
    for (let i = 0; i < 200 && (await storage.get(keys.compactionOwed(log.space))) !== undefined; i++) await new Promise((resolve) => setTimeout(resolve, 5))
    const prefix = keys.eventPrefix(log.space)
    expect(compactions).toEqual([[prefix, keys.end(prefix)]])
    expect(await storage.get(keys.compactionOwed(log.space))).toBeUndefined()
    await reopened.close() // closes the storage the first store shares
  })

  it('closing the store waits for the compaction an erasure asked for', async () => {
    const { compactions, owner, store, log } = await countingSpace()
    const secret = await log.append(owner, { op: 'note', data: { text: 'x' } })
    await log.erase([secret.id])
    expect(compactions).toEqual([])
    await store.close()
    expect(compactions).toHaveLength(1)
  })
})

describe('body erasure', () => {
  it('drops a body for good while the chain still verifies', async () => {
    const owner = Identity.generate()
    const store = await memoryStore()
    const log = await store.createSpace(owner)
    const secret = await log.append(owner, { op: 'note', data: { text: 'my secret' } })
    await log.append(owner, { op: 'note', data: { text: 'public' } })
    const replica = await emptyReplica(log.space)
    const shipped = await log.envelopesSince({})
    await replica.ingest(shipped)
    expect(await log.erase([secret.id])).toEqual([secret.id])
    expect(await log.erase([secret.id])).toEqual([])
    const event = await log.get(secret.id)
    expect(event?.bodyState).toBe('erased')
    expect(event?.body).toBeUndefined()
    const record = await readStoredRecord(store, log.space, secret.id)
    expect(record.body).toBeUndefined()
    expect(JSON.stringify(record)).not.toContain('my secret')
    expect(await log.verify()).toMatchObject({ ok: true, erasedBodies: 1 })
    // The body re-sent by a replica that still has it is not stored again.
    await log.ingest(shipped)
    expect((await log.get(secret.id))?.bodyState).toBe('erased')
    // Erased bodies are not shipped.
    const again = await log.envelopesSince({})
    const secretEnvelope = again.find((envelope) => envelope.id === secret.id)
    expect(secretEnvelope?.body).toBeUndefined()
    expect(utf8Decode(secretEnvelope?.header as Uint8Array)).not.toContain('secret')
    const fresh = await emptyReplica(log.space)
    await fresh.ingest(again)
    expect((await fresh.get(secret.id))?.bodyState).toBe('absent')
    expect((await fresh.verify()).ok).toBe(true)
  })

  it('withholds a body until it is sent again, unlike an erasure', async () => {
    const owner = Identity.generate()
    const store = await memoryStore()
    const log = await store.createSpace(owner)
    const shared = await log.append(owner, { op: 'note', data: { text: 'shared for a while' } })
    const shipped = await log.envelopesSince({})
    expect(await log.withholdBodies([shared.id])).toEqual([shared.id])
    expect(await log.withholdBodies([shared.id])).toEqual([])
    expect((await log.get(shared.id))?.bodyState).toBe('absent')
    expect(JSON.stringify(await readStoredRecord(store, log.space, shared.id))).not.toContain('shared for a while')
    expect((await log.verify()).ok).toBe(true)
    const result = await log.ingest(shipped)
    expect(result.filled).toEqual([shared.id])
    expect((await log.get(shared.id))?.body?.data).toEqual({ text: 'shared for a while' })
    // An erased body stays erased: withholding never undoes that.
    await log.erase([shared.id])
    expect(await log.withholdBodies([shared.id])).toEqual([])
    await log.ingest(shipped)
    expect((await log.get(shared.id))?.bodyState).toBe('erased')
    expect((await rejectionOf(log.withholdBodies([log.space]))).code).toBe('NOT_ERASABLE')
    expect((await rejectionOf(log.withholdBodies(['cd'.repeat(32)]))).code).toBe('UNKNOWN_EVENT')
  })

  it('keeps local settings beside the log, per space, never shipped', async () => {
    const owner = Identity.generate()
    const store = await memoryStore()
    const log = await store.createSpace(owner)
    const other = await store.createSpace(owner)
    expect(await log.localSetting('sync.access')).toBeUndefined()
    const before = await log.envelopesSince({})
    await log.setLocalSetting('sync.access', 'full')
    expect(await log.localSetting('sync.access')).toBe('full')
    expect(await other.localSetting('sync.access')).toBeUndefined()
    // Not an event: nothing to ship, and the log still verifies.
    expect((await log.envelopesSince({})).map((envelope) => envelope.id)).toEqual(before.map((envelope) => envelope.id))
    expect((await log.verify()).ok).toBe(true)
    expect((await rejectionOf(log.setLocalSetting('', 'x'))).code).toBe('EMPTY')
  })

  it('keeps control event bodies and refuses unknown ids', async () => {
    const owner = Identity.generate()
    const log = await (await memoryStore()).createSpace(owner)
    expect((await rejectionOf(log.erase([log.space]))).code).toBe('NOT_ERASABLE')
    expect((await rejectionOf(log.erase(['cd'.repeat(32)]))).code).toBe('UNKNOWN_EVENT')
  })

  it('fills in a body that first arrived as a header only', async () => {
    const owner = Identity.generate()
    const log = await (await memoryStore()).createSpace(owner)
    const note = await log.append(owner, { op: 'note', data: 'content' })
    const replica = await emptyReplica(log.space)
    await replica.ingest(await log.envelopesSince({}, { withBody: (event) => event.header.kind === 'control' }))
    expect((await replica.get(note.id))?.bodyState).toBe('absent')
    const result = await replica.ingest(await log.envelopesSince({}))
    expect(result.filled).toEqual([note.id])
    expect((await replica.get(note.id))?.body?.data).toBe('content')
    expect((await replica.verify()).ok).toBe(true)
  })
})

describe('persistence', () => {
  it('reopens with tips, grants and history intact', async () => {
    const dir = await tempDir()
    const owner = Identity.generate()
    const writer = Identity.generate()
    let store = await LogStore.open({ path: dir })
    let log = await store.createSpace(owner, { name: 'persisted' })
    await log.grant(owner, writer.author)
    await log.appendBatch(owner, [{ op: 'a' }, { op: 'b' }])
    const vector = log.versionVector()
    const heads = log.heads()
    await store.close()
    store = await LogStore.open({ path: dir })
    expect(await store.listSpaces()).toEqual([log.space])
    log = await store.existingSpace(log.space)
    expect(log.versionVector()).toEqual(vector)
    expect(log.heads()).toEqual(heads)
    expect(log.rightsOf(writer.author)).toEqual(['write'])
    await log.append(writer, { op: 'c' })
    expect((await allApplied(log)).map((event) => event.body?.op)).toEqual(['space.genesis', 'space.grant', 'a', 'b', 'c'])
    expect((await log.verify()).ok).toBe(true)
    await store.close()
  })

  it('reports a locked store clearly', async () => {
    const dir = await tempDir()
    const store = await LogStore.open({ path: dir })
    const error = await rejectionOf(LogStore.open({ path: dir }))
    expect(error.code).toBe('STORE_LOCKED')
    await store.close()
  })
})

/**
 * Memory.checkProjection: the stored records and indexes against what the log gives, derived
 * again in a scratch copy. It must find damage below the log (a changed view, a lost or extra
 * index entry, a lost posting), name the keys and records, write nothing to the replica, and
 * refuse when the replica changed while it ran.
 */
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { LevelLogStorage } from '../../src/log/level-storage.js'
import type { LogStorage, StorageWrite } from '../../src/log/storage.js'
import { Memory } from '../../src/memory/index.js'
import { closeAll, deliver, openReplicas } from '../helpers/memory-replicas.js'

const open: Memory[] = []
afterEach(async () => {
  vi.restoreAllMocks()
  await closeAll(open.splice(0))
})

function storageOf(memory: Memory): LogStorage {
  return (memory.log as unknown as { storage: LogStorage }).storage
}

/** Every key and value of the store, in order: what "writes nothing" compares. */
async function dump(memory: Memory): Promise<string> {
  const rows: string[] = []
  for await (const [key, value] of storageOf(memory).entries({})) rows.push(`${key}=${Buffer.from(value).toString('hex')}`)
  return rows.join('\n')
}

/**
 * A memory with what a projection derives in every way: records of several kinds, an edit of a
 * core block, a supersede, a forget reaching a fact through its episode and a link through the
 * fact (kept through rebuilds in q:z), a redaction.
 */
async function busyMemory(): Promise<Memory> {
  const { memories } = await openReplicas(1)
  const memory = memories[0] as Memory
  open.push(memory)
  const morning = await memory.remember({ kind: 'episode', summary: 'green tea in the morning', tags: ['drinks'], contextID: 'home' })
  const evening = await memory.remember({ kind: 'episode', summary: 'chamomile in the evening', tags: ['drinks'] })
  const likes = await memory.remember({ kind: 'fact', subject: 'user', predicate: 'likes', object: 'green tea', episodeID: morning })
  const avoids = await memory.remember({ kind: 'fact', subject: 'user', predicate: 'avoids', object: 'coffee', episodeID: evening })
  await memory.remember({ kind: 'factLink', srcFactID: likes, dstFactID: avoids, linkType: 'related' })
  await memory.remember({ kind: 'core', id: 'human', content: 'Name: Ada.' })
  await memory.appendText('human', ' Likes tea.')
  await memory.supersede(avoids, { subject: 'user', predicate: 'avoids', object: 'decaf coffee', episodeID: evening })
  await memory.remember({ kind: 'preference', key: 'tone', value: 'direct' })
  const secret = await memory.remember({ kind: 'episode', summary: 'a private note' })
  await memory.redact(secret)
  await memory.forget(morning)
  return memory
}

describe('Memory.checkProjection', () => {
  it('finds nothing to report on a replica written through the API, and writes nothing', async () => {
    const memory = await busyMemory()
    // The link went with the fact: its state is kept apart (q:z), which the log alone cannot show.
    const kept: string[] = []
    for await (const key of storageOf(memory).keys({ gte: `${memory.space}:q:z:`, lt: `${memory.space}:q:z:\u{10FFFF}` })) kept.push(key)
    expect(kept).toHaveLength(1)
    const before = await dump(memory)
    const check = await memory.checkProjection()
    expect(check).toMatchObject({ ok: true, differences: 0, named: [], events: memory.log.appliedCount })
    expect(check.keys).toBeGreaterThan(50)
    expect(check.digest.derived).toBe(check.digest.stored)
    expect(check.digest.stored).toBe(await memory.digest())
    expect(await dump(memory)).toBe(before)
  })

  it('agrees on replicas that merged concurrent writes, deletions included', async () => {
    const { memories, clock } = await openReplicas(2)
    open.push(...memories)
    const [a, b] = memories as [Memory, Memory]
    const episode = await a.remember({ kind: 'episode', summary: 'a walk by the sea' })
    await deliver(a, b)
    // b writes a fact under the episode while a forgets it: b learns of the deletion through the parent.
    await b.remember({ kind: 'fact', subject: 'user', predicate: 'walks', object: 'by the sea', episodeID: episode })
    await a.forget(episode)
    clock.advance(1000)
    await b.update(episode, { set: { summary: 'a long walk by the sea' } })
    await deliver(a, b)
    await deliver(b, a)
    for (const memory of memories) expect(await memory.checkProjection()).toMatchObject({ ok: true, differences: 0 })
  })

  it('names a changed view, a lost index entry, an extra one and a lost posting, then passes after a rebuild', async () => {
    const memory = await busyMemory()
    const evening = (await memory.search('chamomile'))[0]?.record.id as string
    expect(evening).toMatch(/^ep_/)
    const root = `${memory.space}:q:`
    const postings: string[] = []
    for await (const key of storageOf(memory).keys({ gte: `${root}x:p:chamomil`, lt: `${root}x:p:chamomil:\u{10FFFF}` })) postings.push(key)
    expect(postings).toHaveLength(1)
    const damage: StorageWrite[] = [
      { type: 'put', key: `${root}v:${evening}`, value: new TextEncoder().encode('{"id":"forged"}') },
      { type: 'del', key: `${root}t:drinks:${evening}` },
      { type: 'put', key: `${root}k:episode:ep_ghost`, value: new Uint8Array(0) },
      { type: 'del', key: postings[0] as string },
    ]
    await storageOf(memory).write(damage)

    const check = await memory.checkProjection()
    expect(check.ok).toBe(false)
    expect(check.differences).toBe(4)
    expect(check.named).toEqual([
      { key: 'k:episode:ep_ghost', change: 'unexpected', record: 'ep_ghost' },
      { key: `t:drinks:${evening}`, change: 'missing', record: evening },
      { key: `v:${evening}`, change: 'changed', record: evening },
      { key: (postings[0] as string).slice(root.length), change: 'missing' },
    ])
    // The view is part of what the digest covers; the digest of the log's records is the one before the damage.
    expect(check.digest.stored).not.toBe(check.digest.derived)

    await memory.rebuild()
    expect(await memory.checkProjection()).toMatchObject({ ok: true, differences: 0, digest: { stored: check.digest.derived } })
  })

  it('tells onProgress how far the derivation has got, ending at the log\'s length; refuses a progress that is not a function', async () => {
    const memory = await busyMemory()
    const calls: [number, number][] = []
    await memory.checkProjection({ onProgress: (done, total) => calls.push([done, total]) })
    const events = memory.log.appliedCount
    expect(calls.at(-1)).toEqual([events, events])
    expect(calls.every(([done, total]) => total === events && done <= events)).toBe(true)
    await expect(memory.checkProjection({ onProgress: 'yes' } as never)).rejects.toMatchObject({ code: 'WRONG_TYPE', where: { field: 'options.onProgress' } })
    await expect(memory.checkProjection({ verbose: true } as never)).rejects.toMatchObject({ code: 'UNKNOWN_FIELD' })
  })

  it('derives a store on disk in a temporary LevelDB beside it, removed afterwards with any a killed check left', async () => {
    const home = await mkdtemp(path.join(os.tmpdir(), 'cairn-check-test-'))
    try {
      const memory = await Memory.open({ path: home })
      open.push(memory)
      await memory.remember({ kind: 'episode', summary: 'green tea in the morning' })
      // Left by a check killed part way; a folder of the user's with a like name, and another
      // store's scratch, are not touched.
      await mkdir(path.join(home, '.cairn-check-store-Ab12Cd', 'store'), { recursive: true })
      await mkdir(path.join(home, '.cairn-check-store-notes'))
      await mkdir(path.join(home, '.cairn-check-other-Xy34Zw'))
      const openDisk = LevelLogStorage.openDisk.bind(LevelLogStorage)
      const scratchDirs: string[] = []
      vi.spyOn(LevelLogStorage, 'openDisk').mockImplementation(async (directory, options) => {
        scratchDirs.push(directory)
        return openDisk(directory, options)
      })
      expect(await memory.checkProjection()).toMatchObject({ ok: true, differences: 0 })
      expect(scratchDirs).toHaveLength(1)
      expect(path.dirname(scratchDirs[0] as string)).toBe(home)
      expect(existsSync(scratchDirs[0] as string)).toBe(false)
      expect((await readdir(home)).filter((name) => name.startsWith('.cairn-check-')).sort()).toEqual(['.cairn-check-other-Xy34Zw', '.cairn-check-store-notes'])
    } finally {
      await closeAll(open.splice(0))
      await rm(home, { recursive: true, force: true })
    }
  })

  it('names at most 20 keys and counts the rest', async () => {
    const memory = await busyMemory()
    const root = `${memory.space}:q:`
    await storageOf(memory).write(Array.from({ length: 25 }, (_, i) => ({ type: 'put' as const, key: `${root}c:nowhere:ep_${String(i).padStart(2, '0')}`, value: new Uint8Array(0) })))
    const check = await memory.checkProjection()
    expect(check).toMatchObject({ ok: false, differences: 25 })
    expect(check.named.map((difference) => difference.record)).toEqual(Array.from({ length: 20 }, (_, i) => `ep_${String(i).padStart(2, '0')}`))
  })

  it('refuses with BUSY when the replica wrote while the check ran, even a write that leaves the log as long', async () => {
    const memory = await busyMemory()
    const evening = (await memory.search('chamomile'))[0]?.record.id as string
    const openMemory = LevelLogStorage.openMemory.bind(LevelLogStorage)
    // The scratch store opens after the check has settled the replica and noted where it stood.
    for (const write of [
      () => memory.remember({ kind: 'episode', summary: 'written during the check' }),
      // Drops a record's bodies and replays it: neither the log's length nor the cursor moves.
      () => memory.withdraw([evening]),
    ]) {
      vi.spyOn(LevelLogStorage, 'openMemory').mockImplementationOnce(async () => {
        await write()
        return openMemory()
      })
      await expect(memory.checkProjection()).rejects.toMatchObject({ code: 'BUSY' })
      expect(await memory.checkProjection()).toMatchObject({ ok: true })
    }
  })

  it('beside writes, ends ok or BUSY, never torn; close waits for it; one asked for once close began is refused', async () => {
    const memory = await busyMemory()
    const outcome = (check: Promise<{ ok: boolean }>) => check.then((result) => (result.ok ? 'ok' : 'differs'), (error: { code?: string }) => error.code ?? String(error))
    for (let round = 0; round < 5; round++) {
      const writing = memory.rememberMany(Array.from({ length: 50 }, (_, i) => ({ kind: 'episode' as const, summary: `round ${round} note ${i}` })))
      const checking = outcome(memory.checkProjection())
      await writing
      expect(['ok', 'BUSY']).toContain(await checking)
    }
    const again = outcome(memory.checkProjection())
    const closing = memory.close()
    expect(await again).toBe('ok')
    await closing
    await expect(memory.checkProjection()).rejects.toMatchObject({ code: 'CLOSED' })
  })

  it('ends with the error of an onProgress that throws, and the process goes on', async () => {
    const memory = await busyMemory()
    const broken = new Error('the progress bar broke')
    await expect(memory.checkProjection({ onProgress: () => { throw broken } })).rejects.toBe(broken)
    expect(await memory.checkProjection()).toMatchObject({ ok: true })
  })
})

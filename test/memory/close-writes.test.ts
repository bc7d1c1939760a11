/**
 * Closing while writes are under way: each write either resolves and is stored, or fails with
 * CLOSED and is not; none fails after being stored (an app that retries would write it twice).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { Identity, LogStore } from '../../src/log/index.js'
import { Memory } from '../../src/memory/index.js'

const dirs: string[] = []
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true })
})

it('a write under way when close begins is stored and resolves; a later one fails with CLOSED and stores nothing', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cairn-close-'))
  dirs.push(dir)
  const home = path.join(dir, 'home')
  const memory = await Memory.open({ path: home })
  const existing = await memory.remember({ kind: 'episode', summary: 'before' })
  const settle = (write: Promise<unknown>) => write.then(() => 'resolved', (error: { code?: string }) => error.code ?? String(error))
  // Updates of a known record reach their append at once; remembers check the store first.
  const writes = [
    ...Array.from({ length: 20 }, (_, i) => settle(memory.update(existing, { set: { [`k${i}`]: i } }))),
    ...Array.from({ length: 20 }, (_, i) => settle(memory.remember({ kind: 'episode', id: `ep_w${i}`, summary: `in flight ${i}` }))),
  ]
  await memory.close()
  const outcomes = await Promise.all(writes)
  expect(outcomes.filter((outcome) => outcome !== 'resolved' && outcome !== 'CLOSED')).toEqual([])
  expect(await settle(memory.remember({ kind: 'episode', summary: 'after close' }))).toBe('CLOSED')
  for (const [name, write] of [
    ['forget', () => memory.forget(existing)], ['redact', () => memory.redact(existing)],
    ['grant', () => memory.grant('ab'.repeat(32))], ['revoke', () => memory.revoke('ab'.repeat(32))],
  ] as const) expect(await settle(write()), name).toBe('CLOSED')

  const again = await Memory.open({ path: home })
  try {
    const view = await again.get(existing)
    outcomes.slice(0, 20).forEach((outcome, i) => expect(view?.[`k${i}`], `update ${i}: ${outcome}`).toBe(outcome === 'resolved' ? i : undefined))
    const found = await again.lookup(Array.from({ length: 20 }, (_, i) => `ep_w${i}`))
    outcomes.slice(20).forEach((outcome, i) => expect(found[i]?.status, `remember ${i}: ${outcome}`).toBe(outcome === 'resolved' ? 'visible' : 'absent'))
  } finally {
    await again.close()
  }
})

it('a write whose events are appended when close begins resolves and is stored, projected', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cairn-close-'))
  dirs.push(dir)
  const home = path.join(dir, 'home')
  const memory = await Memory.open({ path: home })
  let closing: Promise<void> | undefined
  let late: Promise<unknown> | undefined
  const stop = memory.log.on('events-applied', () => {
    closing ??= memory.close()
    // Started once close has begun: refused, so close is not held up by new work.
    late ??= memory.remember({ kind: 'episode', summary: 'too late' }).then(() => 'resolved', (error: { code?: string }) => error.code)
  })
  const records = Array.from({ length: 500 }, (_, i) => ({ kind: 'episode' as const, summary: `batch ${i} about tea` }))
  const ids = await memory.rememberMany(records)
  stop()
  await closing
  expect(await late).toBe('CLOSED')
  const again = await Memory.open({ path: home })
  try {
    expect((await again.lookup(ids)).every((found) => found.status === 'visible')).toBe(true)
    expect(await again.search('tea', { limit: 1000 })).toHaveLength(500)
  } finally {
    await again.close()
  }
})

/** Every call that reaches the store, on a memory closed before it: CLOSED, never the store's own error. */
function callsOnClosed(memory: Memory, id: string): [string, () => Promise<unknown>][] {
  return [
    ['get', () => memory.get(id)], ['query', () => memory.query({})], ['search', () => memory.search('tea')],
    ['history', () => memory.history(id)], ['conflicts', () => memory.conflicts()], ['digest', () => memory.digest()],
    ['events', () => memory.events()], ['status', () => memory.status(id)], ['lookup', () => memory.lookup([id])],
    ['recordCount', () => memory.recordCount()], ['records', async () => { for await (const _ of memory.records()) break }],
    ['referrers', () => memory.referrers(id)], ['tombstones', () => memory.tombstones()], ['withheld', () => memory.withheld()],
    ['changedSince', () => memory.changedSince(0)], ['checkProjection', () => memory.checkProjection()],
    ['foreignLines', () => memory.foreignLines()], ['export', () => memory.export(path.join(os.tmpdir(), 'cairn-closed-never-written'))],
    ['settled', () => memory.settled()], ['update', () => memory.update(id, { set: { summary: 'after' } })],
    ['appendText', () => memory.appendText('human', ' more')], ['expire', () => memory.expire()],
    ['ingest', () => memory.ingest([])], ['ingestDeferred', () => memory.ingestDeferred([])],
    ['rebuild', () => memory.rebuild()], ['noteWithheld', () => memory.noteWithheld('ws://127.0.0.1:1', [])],
    ['withdraw', () => memory.withdraw([id])], ['sync', () => memory.sync('ws://127.0.0.1:1')],
  ]
}

it('every call on a closed memory fails with CLOSED, on its own store and on a shared one that stays open', async () => {
  const own = await Memory.open()
  const ownId = await own.remember({ kind: 'episode', summary: 'green tea' })
  await own.remember({ kind: 'core', id: 'human', content: 'Ada.' })
  await own.close()
  const store = await LogStore.open()
  const owner = Identity.generate()
  const space = (await store.createSpace(owner)).space
  const shared = await Memory.attach(store, space, owner)
  const sharedId = await shared.remember({ kind: 'episode', summary: 'green tea' })
  await shared.close()
  try {
    for (const [memory, id] of [[own, ownId], [shared, sharedId]] as const) {
      for (const [name, call] of callsOnClosed(memory, id)) {
        await expect(call(), name).rejects.toMatchObject({ code: 'CLOSED' })
      }
    }
  } finally {
    await store.close()
  }
})

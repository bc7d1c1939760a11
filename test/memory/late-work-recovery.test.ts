/**
 * A late body or a withdrawal is two writes: the log's (the body stored or removed), then the
 * projection's (the record replayed). A crash between them must not leave the record wrong for
 * good: reopening finishes the job (the log marks late bodies until they are placed; the
 * projection's meta names a withdrawal until its replay is stored).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterEach, expect, it } from 'vitest'
import type { EventEnvelope } from '../../src/log/index.js'
import { Memory } from '../../src/memory/index.js'

const cleanup: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step()
})

async function home(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cairn-late-'))
  cleanup.push(() => rm(dir, { recursive: true, force: true }))
  return dir
}

async function open(options: { path?: string; space?: string }): Promise<Memory> {
  const memory = await Memory.open(options)
  cleanup.push(() => memory.close())
  return memory
}

const isData = (envelope: EventEnvelope): boolean => !Buffer.from(envelope.header).toString('utf8').includes('"kind":"control"')
const headerOnly = (envelopes: readonly EventEnvelope[]): EventEnvelope[] => envelopes.map((envelope) => (isData(envelope) ? (({ body: _body, ...header }) => header)(envelope) : envelope))

/** The projection of a memory, for breaking it on purpose. */
function projectionOf(memory: Memory): { replay: (...args: unknown[]) => Promise<unknown> } {
  return (memory as unknown as { core: { projection: { replay: (...args: unknown[]) => Promise<unknown> } } }).core.projection
}

it('a late body the log stored before a crash is placed when the replica reopens', async () => {
  const source = await open({})
  const id = await source.remember({ kind: 'episode', summary: 'arrived late: lighthouse keys' })
  const dir = await home()
  const replica = await Memory.open({ path: dir, space: source.space })
  await replica.ingest(headerOnly(await source.events()))
  expect(await replica.get(id)).toBeUndefined()
  // The log alone takes the bodies (as an ingest does before the projection hears of them); then the process stops.
  expect((await replica.log.ingest(await source.events())).filled.length).toBeGreaterThan(0)
  await replica.close()

  const reopened = await open({ path: dir })
  expect((await reopened.get(id))?.summary).toBe('arrived late: lighthouse keys')
  expect((await reopened.search('lighthouse')).map((hit) => hit.record.id)).toEqual([id])
  expect(await reopened.log.lateBodies()).toEqual([])
})

it('a withdrawal cut short after the log removed the bodies finishes when the replica reopens', async () => {
  const source = await open({})
  const id = await source.remember({ kind: 'episode', summary: 'withdrawn: the harbour plan' })
  const kept = await source.remember({ kind: 'episode', summary: 'still shared' })
  const dir = await home()
  const replica = await Memory.open({ path: dir, space: source.space })
  await replica.ingest(await source.events())
  const projection = projectionOf(replica)
  projection.replay = async () => {
    throw new Error('the process stops here')
  }
  await expect(replica.withdraw([id])).rejects.toThrow('the process stops here')
  expect((await replica.get(id))?.summary).toBe('withdrawn: the harbour plan') // the projection did not get to it
  await replica.close()

  const reopened = await open({ path: dir })
  expect(await reopened.get(id)).toBeUndefined()
  expect(await reopened.search('harbour')).toEqual([])
  expect((await reopened.get(kept))?.summary).toBe('still shared')
  // Done for good: a second reopen has nothing left to finish, and a rebuild agrees.
  const digest = await reopened.digest()
  await reopened.rebuild()
  expect(await reopened.digest()).toBe(digest)
})

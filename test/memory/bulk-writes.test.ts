/**
 * updateMany: every update is checked before anything is written, against the records as this
 * replica holds them, read from the projection's cache when it has them (just written) and
 * from the store when it does not (reopened). Either way a deleted, redacted or unknown record
 * refuses the whole call, naming the update.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { Memory } from '../../src/index.js'

const dirs: string[] = []
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true })
})

async function setUp(): Promise<{ memory: Memory; dir: string; ids: string[] }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cairn-bulk-'))
  dirs.push(dir)
  const memory = await Memory.open({ path: dir })
  const ids = await memory.rememberMany([
    { kind: 'episode', summary: 'kept one' },
    { kind: 'episode', summary: 'kept two' },
    { kind: 'episode', summary: 'to forget' },
    { kind: 'episode', summary: 'to redact' },
  ])
  await memory.forget(ids[2] as string)
  await memory.redact(ids[3] as string)
  return { memory, dir, ids }
}

describe.each([
  ['cached', async (memory: Memory) => memory],
  ['reopened', async (memory: Memory, dir: string) => {
    await memory.close()
    return Memory.open({ path: dir })
  }],
] as const)('updateMany, records %s', (_, ready) => {
  it('applies every update, or refuses the call naming the update that cannot apply', async () => {
    const setup = await setUp()
    const memory = await ready(setup.memory, setup.dir)
    const [one, two, forgotten, redacted] = setup.ids as [string, string, string, string]
    const before = await memory.digest()
    const refusal = (updates: Parameters<Memory['updateMany']>[0]) => memory.updateMany(updates).then(() => undefined, (error: { code: string; where?: { field?: string } }) => `${error.code} ${error.where?.field}`)
    expect(await refusal([{ id: one, changes: { set: { summary: 'x' } } }, { id: forgotten, changes: { set: { summary: 'y' } } }])).toBe('FORGOTTEN updates[1].id')
    expect(await refusal([{ id: redacted, changes: { set: { summary: 'y' } } }])).toBe('REDACTED updates[0].id')
    expect(await refusal([{ id: two, changes: { set: { summary: 'y' } } }, { id: 'ep_nowhere', changes: { set: { summary: 'y' } } }])).toBe('UNKNOWN_RECORD updates[1].id')
    expect(await memory.digest()).toBe(before)
    await memory.updateMany([{ id: one, changes: { set: { summary: 'one, edited' } } }, { id: two, changes: { add: { tags: ['b'] } } }])
    expect((await memory.get(one))?.summary).toBe('one, edited')
    expect((await memory.get(two))?.tags).toEqual(['b'])
    await memory.close()
  })
})

/**
 * One id, one kind: a create whose id is already a record of another kind (here, or earlier in
 * the same batch) is refused with ID_TAKEN naming where, and nothing is written. It used to
 * resolve with the id while the projection kept the first kind and dropped the record.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { Memory } from '../../src/memory/index.js'

const open: Memory[] = []
afterEach(async () => {
  for (const memory of open.splice(0)) await memory.close()
})

describe('an id taken by another kind', () => {
  it('is refused by remember and rememberMany, against what is stored and within the batch', async () => {
    const memory = await Memory.open({})
    open.push(memory)
    await memory.remember({ kind: 'episode', id: 'note-1', summary: 'an episode' })
    const before = memory.versionVector()
    await expect(memory.remember({ kind: 'entity', id: 'note-1', canonicalName: 'Acme', type: 'org' })).rejects.toMatchObject({ code: 'ID_TAKEN', where: { field: 'id' } })
    await expect(memory.rememberMany([{ kind: 'entity', id: 'note-2', canonicalName: 'Acme', type: 'org' }, { kind: 'entity', id: 'note-1', canonicalName: 'Globex', type: 'org' }]))
      .rejects.toMatchObject({ code: 'ID_TAKEN', where: { field: 'records[1].id' } })
    await expect(memory.rememberMany([{ kind: 'entity', id: 'note-3', canonicalName: 'Acme', type: 'org' }, { kind: 'episode', id: 'note-3', summary: 'again' }]))
      .rejects.toMatchObject({ code: 'ID_TAKEN', where: { field: 'records[1].id' } })
    expect(memory.versionVector()).toEqual(before)
    expect((await memory.get('note-1'))?.kind).toBe('episode')
    expect(await memory.get('note-2')).toBeUndefined()
  })

  it('holds when two creates of one id with two kinds are started together', async () => {
    const memory = await Memory.open({})
    open.push(memory)
    const outcomes = await Promise.allSettled([
      memory.remember({ kind: 'episode', id: 'shared-1', summary: 'a walk' }),
      memory.remember({ kind: 'entity', id: 'shared-1', type: 'person', canonicalName: 'Alice' }),
      memory.rememberMany([{ kind: 'context', id: 'shared-1', label: 'home' }]),
    ])
    expect(outcomes.map((outcome) => (outcome.status === 'fulfilled' ? 'ok' : (outcome.reason as { code: string }).code))).toEqual(['ok', 'ID_TAKEN', 'ID_TAKEN'])
    expect((await memory.events()).length).toBe(2) // the genesis and the one create
  })

  it('does not stop a create of the same kind from merging into the record', async () => {
    const memory = await Memory.open({})
    open.push(memory)
    await memory.remember({ kind: 'entity', id: 'acme', canonicalName: 'Acme', type: 'org' })
    await memory.rememberMany([{ kind: 'entity', id: 'acme', canonicalName: 'Acme Corp', type: 'org' }, { kind: 'entity', id: 'acme', canonicalName: 'ACME', type: 'org' }])
    expect((await memory.get('acme'))?.canonicalName).toBe('ACME')
  })
})

/**
 * A register holding null (a signed create's field, which `remember` never writes: it reads a
 * null as absent, as a patch's `set` does) shows as absent. Stores of projection layout 6 whose
 * log holds such a create are rebuilt when they open.
 */
import { describe, expect, it } from 'vitest'
import { Identity, LogStore } from '../../src/log/index.js'
import { Memory } from '../../src/memory/index.js'
import { tempBundlePath } from '../bundle/helpers/mem-fixtures.js'
import { reopenAtLayout } from '../helpers/layout-reopen.js'

describe('materialize: a null in a signed create', () => {
  it('shows as absent, so the record round-trips through .mem unchanged (helper-85, hostile-bodies SEED=922822003)', async () => {
    const memory = await Memory.open({})
    const target = await Memory.open({})
    try {
      await memory.remember({ kind: 'core', id: 'human', content: 'Notes:' })
      await memory.remember({ kind: 'episode', id: 'ep_a', summary: 's' })
      // Any granted writer can sign these; `remember` never writes a null.
      await memory.log.append(memory.identity, { op: 'memory.create', data: { kind: 'core', id: 'human', fields: { id: 'human', contextID: null }, ext: {} } })
      await memory.log.append(memory.identity, { op: 'memory.create', data: { kind: 'episode', id: 'ep_a', fields: { id: 'ep_a', summary: 's', contextID: null } } })
      for (const id of ['human', 'ep_a']) expect(Object.keys((await memory.get(id)) ?? {}), id).not.toContain('contextID')
      const bundle = tempBundlePath()
      const report = await memory.export(bundle)
      expect(report.format === 'mem' && report.skipped).toEqual([])
      await target.import(bundle)
      for (const id of ['human', 'ep_a']) expect(await target.get(id), id).toEqual(await memory.get(id))
      // A rebuild from the log shows the same.
      const digest = await memory.digest()
      await memory.rebuild()
      expect(await memory.digest()).toBe(digest)
    } finally {
      await memory.close()
      await target.close()
    }
  })
})

describe('projection layout 6 → 7', () => {
  /** A store whose meta says layout 6, opened again; `withNull`: its log holds a create with a null field. */
  async function storeAtLayout6(withNull: boolean) {
    const store = await LogStore.open()
    const identity = Identity.generate()
    const log = await store.createSpace(identity)
    const memory = await Memory.attach(store, log.space, identity)
    await memory.remember({ kind: 'episode', id: 'ep_a', summary: 's' })
    if (withNull) await memory.log.append(identity, { op: 'memory.create', data: { kind: 'episode', id: 'ep_a', fields: { id: 'ep_a', summary: 's', contextID: null } } })
    await memory.get('ep_a')
    await memory.close()
    const { memory: reopened, marker } = await reopenAtLayout(store, log.space, identity, 6)
    return { store, memory: reopened, marker }
  }

  it('rebuilds a store whose log holds a create with a null field', async () => {
    const { store, memory, marker } = await storeAtLayout6(true)
    try {
      expect(await store.storage.get(marker)).toBeUndefined()
      expect(Object.keys((await memory.get('ep_a')) ?? {})).not.toContain('contextID')
    } finally {
      await memory.close()
      await store.close()
    }
  })

  it('only records layout 7 on a store without one', async () => {
    const { store, memory, marker } = await storeAtLayout6(false)
    try {
      expect(await store.storage.get(marker)).toBeDefined()
    } finally {
      await memory.close()
      await store.close()
    }
  })
})

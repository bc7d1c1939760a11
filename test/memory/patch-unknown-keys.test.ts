/**
 * Unknown episode keys (kept in `ext`, memory-model.md) change like any field: a patch that sets
 * or unsets only such keys applies, through `update` and `updateMany`, is in the history and
 * survives a rebuild. `set` takes one key of a map field as `metadata.key`, as `unset` does. Stores of projection layout 3, which dropped such a patch, are rebuilt when
 * they open if their log holds one, and only move to layout 4 otherwise.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { Identity, LogStore } from '../../src/log/index.js'
import { Memory } from '../../src/memory/index.js'
import { decodeMeta, encodeMeta, PROJECTION_LAYOUT } from '../../src/projection/projection-codec.js'

const open: { close(): Promise<void> }[] = []
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close()
})

describe('a patch of unknown episode keys only', () => {
  it('applies through update and updateMany, is in the history, and a rebuild shows the same', async () => {
    const memory = await Memory.open({})
    open.push(memory)
    const id = await memory.remember({ kind: 'episode', summary: 'a walk', mood: 'happy', metadata: { a: '1' } })
    await memory.update(id, { set: { mood: 'calm' } })
    expect((await memory.get(id))?.mood).toBe('calm')
    await memory.update(id, { unset: ['mood'] })
    expect((await memory.get(id))?.mood).toBeUndefined()
    await memory.updateMany([{ id, changes: { set: { weather: 'rain' } } }])
    expect((await memory.get(id))?.weather).toBe('rain')
    expect((await memory.history(id)).map((entry) => entry.op)).toEqual(['memory.create', 'memory.patch', 'memory.patch', 'memory.patch'])
    const digest = await memory.digest()
    await memory.rebuild()
    expect(await memory.digest()).toBe(digest)
    expect(await memory.get(id)).toMatchObject({ weather: 'rain' })
  })

  it('reaches another replica', async () => {
    const laptop = await Memory.open({})
    const phone = await Memory.open({ space: laptop.space })
    open.push(laptop, phone)
    const id = await laptop.remember({ kind: 'episode', summary: 'a walk', mood: 'happy' })
    await laptop.update(id, { set: { mood: 'calm' } })
    await phone.ingest(await laptop.events())
    expect((await phone.get(id))?.mood).toBe('calm')
    expect(await phone.digest()).toBe(await laptop.digest())
  })
})

describe('an ext key naming a field of the kind, in a body another signer wrote', () => {
  it('is dropped: the view shows the field as its own operations left it, and filters see the same', async () => {
    const store = await LogStore.open()
    const identity = Identity.generate()
    const log = await store.createSpace(identity)
    const memory = await Memory.attach(store, log.space, identity)
    open.push(store, memory)
    // Cairn's writers put only unknown keys in ext; any signer can put anything.
    await memory.log.append(identity, { op: 'memory.create', data: { kind: 'episode', id: 'ep_x', fields: { id: 'ep_x', summary: 'a walk', details: 'a walk' }, ext: { tags: ['public'], summary: 'shadow', mood: 'calm' } } })
    await memory.log.append(identity, { op: 'memory.patch', data: { kind: 'episode', id: 'ep_x', ext: { importance: 0.1, weather: 'rain' }, unsetExt: ['summary'] } })
    const view = await memory.get('ep_x')
    expect(view).toMatchObject({ summary: 'a walk', mood: 'calm', weather: 'rain' })
    expect(view?.tags).toBeUndefined()
    expect(view?.importance).toBeUndefined()
    expect((await memory.query({ tags: ['public'] })).records).toEqual([])
  })
})

describe('one key of a map field', () => {
  it('`set` takes `metadata.key` as `unset` does: a string value, merged per key; any other value is refused naming the key', async () => {
    const memory = await Memory.open({})
    open.push(memory)
    const id = await memory.remember({ kind: 'episode', summary: 'a walk', metadata: { a: '1' } })
    await memory.update(id, { set: { 'metadata.b': '2' } })
    await memory.update(id, { set: { metadata: { c: '3' }, 'metadata.d': '4', importance: 0.9 } })
    await memory.update(id, { set: { 'metadata.a': null } })
    const view = await memory.get(id)
    expect(view?.metadata).toEqual({ b: '2', c: '3', d: '4' })
    expect(Object.keys(view ?? {}).filter((key) => key.startsWith('metadata.'))).toEqual([])
    await expect(memory.update(id, { set: { 'metadata.n': 5 } })).rejects.toMatchObject({ code: 'WRONG_TYPE', where: { field: 'episode.metadata.n' } })
    await expect(memory.update(id, { set: { 'metadata.b': '9' }, unset: ['metadata.b'] })).rejects.toMatchObject({ code: 'CONFLICTING_PATCH' })
    const digest = await memory.digest()
    await memory.rebuild()
    expect(await memory.digest()).toBe(digest)
  })
})

describe('projection layout 3 → current', () => {
  /** A store whose projection is what layout 3 wrote (the meta says 3), opened again. */
  async function storeAtLayout3(patch: 'unknown keys only' | 'a map key in set' | 'an ext key naming a field' | 'none') {
    const store = await LogStore.open()
    const identity = Identity.generate()
    const log = await store.createSpace(identity)
    const memory = await Memory.attach(store, log.space, identity)
    const id = await memory.remember({ kind: 'episode', summary: 'a walk', mood: 'happy', metadata: { a: '1' } })
    await memory.update(id, { set: { importance: 0.9 } })
    const root = `${log.space}:q:`
    const before = new Map<string, Uint8Array>()
    for await (const [key, value] of store.storage.entries({ gte: root, lt: `${root}\uffff` })) before.set(key, value)
    if (patch === 'unknown keys only') await memory.update(id, { set: { mood: 'calm' } })
    // Cairn's writers never stored this form; any other signer may have.
    if (patch === 'a map key in set') {
      await memory.log.append(identity, { op: 'memory.patch', data: { kind: 'episode', id, set: { 'metadata.b': '2' } } })
      await memory.get(id) // projected: the cursor passes it
    }
    if (patch === 'an ext key naming a field') {
      await memory.log.append(identity, { op: 'memory.patch', data: { kind: 'episode', id, ext: { summary: 'shadow' } } })
      await memory.get(id)
    }
    await memory.close()
    const metaKey = `${root}m`
    const meta = decodeMeta(await store.storage.get(metaKey))
    // Layout 3 skipped the patch: its records are as before it, its cursor past it.
    const writes = [...before].filter(([key]) => key !== metaKey).map(([key, value]) => ({ type: 'put' as const, key, value }))
    await store.storage.write([...writes, { type: 'put', key: metaKey, value: encodeMeta({ ...meta, layout: 3 }) }])
    // A key a rebuild would drop: it shows whether one ran.
    const marker = `${root}~marker`
    await store.storage.write([{ type: 'put', key: marker, value: new Uint8Array([1]) }])
    open.push(store)
    // Opened by this version: it moves to the current layout.
    const reopened = await Memory.attach(store, log.space, identity)
    open.push(reopened)
    expect(decodeMeta(await store.storage.get(metaKey)).layout).toBe(PROJECTION_LAYOUT)
    return { store, memory: reopened, id, marker }
  }

  it('rebuilds a store whose log holds a patch layout 3 dropped, which then shows it', async () => {
    const { store, memory, id, marker } = await storeAtLayout3('unknown keys only')
    expect(await store.storage.get(marker)).toBeUndefined()
    expect(await memory.get(id)).toMatchObject({ mood: 'calm', importance: 0.9 })
  })

  it('rebuilds a store whose log holds a patch naming a map key in set, which layout 3 read otherwise', async () => {
    const { store, memory, id, marker } = await storeAtLayout3('a map key in set')
    expect(await store.storage.get(marker)).toBeUndefined()
    expect((await memory.get(id))?.metadata).toEqual({ a: '1', b: '2' })
  })

  it('rebuilds a store whose log holds an ext key naming a field, which layout 5 drops', async () => {
    const { store, memory, id, marker } = await storeAtLayout3('an ext key naming a field')
    expect(await store.storage.get(marker)).toBeUndefined()
    expect((await memory.get(id))?.summary).toBe('a walk')
  })

  it('only records the current layout on a store without such a patch', async () => {
    const { store, memory, id, marker } = await storeAtLayout3('none')
    expect(await store.storage.get(marker)).toBeDefined()
    expect(await memory.get(id)).toMatchObject({ mood: 'happy', importance: 0.9 })
  })
})

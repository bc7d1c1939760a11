/**
 * User data that the stored state keeps as object keys (tags and other set elements, metadata
 * keys, unknown episode fields) may be named like an Object.prototype member: a tag
 * "constructor" is an ordinary word. Such names are data everywhere, through writes, updates,
 * reopen and sync; `__proto__`, the one name an object cannot hold as data, is refused at the
 * API, and left out of an operation that carries it anyway (a peer's raw event), alike on every
 * replica.
 */
import fc from 'fast-check'
import { afterEach, describe, expect, it } from 'vitest'
import { Memory } from '../../src/index.js'
import { MEMORY_OPS } from '../../src/projection/index.js'
import { rejection } from '../helpers/error-code.js'
import { tempDirs } from '../helpers/temp-dirs.js'

const PROTOTYPE_NAMES = Object.getOwnPropertyNames(Object.prototype).filter((name) => name !== '__proto__')

const { tempDir, removeTempDirs } = tempDirs('cairn-proto-')
afterEach(removeTempDirs)

describe('keys named like Object.prototype members', () => {
  it('are data in tags, categories, aliases, metadata and unknown fields, through updates, reopen and a replica', async () => {
    await fc.assert(fc.asyncProperty(fc.constantFrom(...PROTOTYPE_NAMES), fc.constantFrom(...PROTOTYPE_NAMES), async (name, other) => {
      const dir = await tempDir()
      let memory = await Memory.open({ path: dir })
      const episode = await memory.remember(JSON.parse(JSON.stringify({
        kind: 'episode', summary: 's', tags: [name], categories: [other], metadata: { [name]: 'm' }, [other]: { nested: name },
      })) as never)
      const entity = await memory.remember({ kind: 'entity', canonicalName: 'n', type: 'project', aliases: [name, other] } as never)
      await memory.update(episode, { add: { tags: [other] }, set: { metadata: { [other]: 'n' } } } as never)
      await memory.update(entity, { remove: { aliases: [name] } } as never)
      const expectShown = async (replica: Memory): Promise<void> => {
        const view = await replica.get(episode) as Record<string, unknown>
        expect(view.tags).toEqual(name === other ? [name] : [name, other])
        expect(view.categories).toEqual([other])
        expect(view.metadata).toEqual(name === other ? { [name]: 'n' } : { [name]: 'm', [other]: 'n' })
        expect(Object.hasOwn(view, other) ? view[other] : undefined).toEqual({ nested: name })
        expect((await replica.get(entity))?.aliases).toEqual(name === other ? [] : [other])
        expect((await replica.query({ tags: [name] })).records.map((record) => record.id)).toEqual([episode])
      }
      await expectShown(memory)
      const digest = await memory.digest()
      const replica = await Memory.open({ space: memory.space })
      await replica.ingest(await memory.events({}))
      await expectShown(replica)
      expect(await replica.digest()).toBe(digest)
      await replica.close()
      await memory.close()
      memory = await Memory.open({ path: dir })
      await expectShown(memory)
      expect(await memory.digest()).toBe(digest)
      await memory.close()
    }), { numRuns: 12 })
  })

  it('refuses __proto__ as a key or set element at the API, naming the field, and writes nothing', async () => {
    const memory = await Memory.open()
    const before = memory.versionVector()
    const cases: [() => Promise<unknown>, string][] = [
      [() => memory.remember({ kind: 'episode', summary: 's', tags: ['__proto__'] } as never), 'episode.tags[0]'],
      [() => memory.remember({ kind: 'episode', summary: 's', metadata: JSON.parse('{"__proto__":"v"}') } as never), 'episode.metadata.__proto__'],
      [() => memory.remember(JSON.parse('{"kind":"episode","summary":"s","__proto__":1}') as never), 'episode.__proto__'],
    ]
    for (const [write, field] of cases) expect(await rejection(write()), field).toMatchObject({ code: 'RESERVED_KEY', where: { field } })
    expect(memory.versionVector()).toEqual(before)
    const id = await memory.remember({ kind: 'episode', summary: 's' })
    expect(await rejection(memory.update(id, { add: { tags: ['__proto__'] } } as never))).toMatchObject({ code: 'RESERVED_KEY' })
    await memory.close()
  })

  it("drops __proto__ from a peer's raw operation, alike on every replica and after reopen", async () => {
    const dir = await tempDir()
    let memory = await Memory.open({ path: dir })
    // Written below the API (as a peer running other code could): create and patch carry __proto__.
    const identity = (memory as unknown as { engine: { identity: never } }).engine.identity
    await memory.log.append(identity, {
      op: MEMORY_OPS.create,
      data: JSON.parse('{"kind":"episode","id":"ep_raw","fields":{"id":"ep_raw","summary":"raw","details":"raw","tags":["__proto__","kept"],"metadata":{"__proto__":"x","constructor":"y"}},"ext":{"__proto__":1,"toString":2}}'),
    })
    await memory.log.append(identity, {
      op: MEMORY_OPS.patch,
      data: JSON.parse('{"kind":"episode","id":"ep_raw","add":{"tags":["__proto__","also"]}}'),
    })
    await memory.settled()
    // The create's fields are taken as they come, __proto__ left out; a patch is checked as the
    // API checks it, so this one is not a valid operation and changes nothing.
    const expected = { tags: ['kept'], metadata: { constructor: 'y' }, toString: 2 }
    expect(await memory.get('ep_raw')).toMatchObject(expected)
    const digest = await memory.digest()
    const replica = await Memory.open({ space: memory.space })
    await replica.ingest(await memory.events({}))
    expect(await replica.get('ep_raw')).toMatchObject(expected)
    expect(await replica.digest()).toBe(digest)
    await replica.close()
    await memory.close()
    memory = await Memory.open({ path: dir })
    expect(await memory.get('ep_raw')).toMatchObject(expected)
    expect(await memory.digest()).toBe(digest)
    await memory.close()
  })
})

/**
 * Two tombstones of one record: a delete beats a redaction, a direct one beats one found through
 * a parent, then the tombstone line's earlier `deletedAt` (then smaller id), then the earlier
 * stamp. The line ranks before the stamp because an import writes a bundle's tombstone again
 * with the importer's stamp: ranked by stamps alone, two bundles carrying different tombstones
 * of one record left it with whichever was imported first (found by the bundle-merge property,
 * SEED=5). Stores of projection layout 5 whose log holds a second tombstone of a record are
 * rebuilt when they open (as are those holding the other bodies layout 6 reads differently:
 * a text change not its author's, `__proto__` among unknown keys, foreign lines a `.mem` file
 * cannot hold).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { baseTextDocument, newTombstoneWins, spliceText, type Tombstone } from '../../src/crdt/index.js'
import { ManualClock } from '../../src/log/clock.js'
import { Identity, LogStore, type JsonValue } from '../../src/log/index.js'
import { Memory } from '../../src/memory/index.js'
import { encodeJson } from '../../src/projection/projection-codec.js'
import { projectionKeys } from '../../src/projection/projection-keys.js'
import { tempBundlePath } from '../bundle/helpers/mem-fixtures.js'
import { reopenAtLayout } from '../helpers/layout-reopen.js'
import { openOwnerStore } from '../helpers/owner-store.js'

const open: { close(): Promise<void> }[] = []
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close()
})

const START = Date.UTC(2026, 0, 1)

type ProjectionKeys = ReturnType<typeof projectionKeys>

/** Two replicas holding one episode, each tombstoning it unseen by the other, 5 s apart; a bundle from each. */
async function twoBundles(first: 'delete' | 'redact', second: 'delete' | 'redact'): Promise<{ clock: ManualClock; bundles: [string, string] }> {
  const clock = new ManualClock(START)
  const a = await Memory.open({ clock })
  const b = await Memory.open({ clock, space: a.space })
  open.push(a, b)
  await a.grant(b.author)
  await a.remember({ kind: 'episode', id: 'ep_walk', summary: 'a walk in the rain', tags: ['outdoors'] })
  await b.ingest(await a.events())
  clock.advance(5_000)
  await (second === 'delete' ? b.forget('ep_walk') : b.redact('ep_walk'))
  clock.advance(5_000)
  await (first === 'delete' ? a.forget('ep_walk') : a.redact('ep_walk'))
  const bundles: [string, string] = [tempBundlePath(), tempBundlePath()]
  await a.export(bundles[0])
  await b.export(bundles[1])
  return { clock, bundles }
}

async function importInOrder(clock: ManualClock, paths: readonly string[]): Promise<Memory> {
  const memory = await Memory.open({ clock })
  open.push(memory)
  for (const bundle of paths) {
    clock.advance(1_000)
    await memory.import(bundle)
  }
  return memory
}

async function ownerStore(): Promise<{ memory: Memory; identity: Identity }> {
  const { store, memory, identity } = await openOwnerStore()
  open.push(store, memory)
  return { memory, identity }
}

describe('two bundles carrying different tombstones of one record', () => {
  for (const [first, second] of [['redact', 'redact'], ['delete', 'delete'], ['redact', 'delete'], ['delete', 'redact']] as const) {
    it(`${first} and ${second}: either import order keeps the same one, and importing again writes nothing`, async () => {
      const { clock, bundles } = await twoBundles(first, second)
      const x = await importInOrder(clock, bundles)
      const y = await importInOrder(clock, [...bundles].reverse())
      expect(await y.digest()).toBe(await x.digest())
      const [kept] = await x.tombstones()
      // A delete wins; between two of one op, the earlier line (the second replica's, 5 s before).
      const expectedOp = first === 'delete' || second === 'delete' ? 'delete' : 'redact'
      const expectedDeletedAt = first === second || second === 'delete' ? '2026-01-01T00:00:05Z' : '2026-01-01T00:00:10Z'
      expect(kept).toMatchObject({ op: expectedOp, targetID: 'ep_walk', deletedAt: expectedDeletedAt })
      expect(await y.tombstones()).toEqual(await x.tombstones())
      for (const memory of [x, y]) {
        const before = memory.versionVector()
        for (const bundle of bundles) await memory.import(bundle)
        expect(memory.versionVector()).toEqual(before)
      }
    })
  }
})

describe('the rank of a tombstone line', () => {
  const held: Tombstone = { op: 'redact', record: { id: 'tomb_m', deletedAt: '2026-01-01T00:00:05Z' }, stamp: { wall: 1, logical: 0, author: 'a', seq: 1 } }
  const wins = (deletedAt: JsonValue, id = 'tomb_z'): boolean => newTombstoneWins('redact', { id, deletedAt }, held)
  it('reads deletedAt as an RFC 3339 instant, offsets and fractions included', () => {
    expect(wins('2026-01-01T01:00:04+01:00')).toBe(true)
    expect(wins('2026-01-01T00:00:04.999Z')).toBe(true)
    expect(wins('2026-01-01T00:00:05.001Z')).toBe(false)
    expect(wins('2025-12-31T23:00:05-01:00', 'tomb_a')).toBe(true)
    expect(wins('2025-12-31T23:00:05-01:00', 'tomb_z')).toBe(false)
  })
  it('ranks a deletedAt that is no RFC 3339 time last, whatever the engine would read in it', () => {
    for (const odd of ['Jan 1 2026', '2026-01-01', '1', '2025-13-01T00:00:00Z', '2025-12-31T24:00:00Z', [], null]) expect(wins(odd as JsonValue)).toBe(false)
    // Years before 100 are those years (Date.UTC reads 0050 as 1950).
    const ancient: Tombstone = { ...held, record: { id: 'tomb_m', deletedAt: '0050-12-01T00:00:00Z' } }
    expect(newTombstoneWins('redact', { id: 'tomb_a', deletedAt: '1950-06-01T00:00:00Z' }, ancient)).toBe(false)
    expect(newTombstoneWins('delete', { id: 'tomb_z', deletedAt: 'Jan 1 2026' }, held)).toBe(true)
  })
})

describe('a tombstone line that is no .mem tombstone line for its operation', () => {
  it('is skipped: an early-dated malformed line does not take the record, and export goes on', async () => {
    const { memory, identity } = await ownerStore()
    await memory.remember({ kind: 'episode', id: 'ep_walk', summary: 'a walk' })
    await memory.forget('ep_walk')
    const [line] = await memory.tombstones()
    const { actor: _actor, ...noActor } = line as { [key: string]: JsonValue }
    for (const tombstone of [
      { ...noActor, id: 'tomb_0', deletedAt: '1900-01-01T00:00:00Z' },
      { ...line, id: 'tomb_1', deletedAt: '1900-01-01T00:00:00Z', targetID: 'ep_other' },
      { ...line, id: 'tomb_2', deletedAt: '1900-01-01T00:00:00Z', op: 'redact' },
      { ...line, id: 'tomb_3', deletedAt: [] },
    ]) {
      await memory.log.append(identity, { op: 'memory.delete', data: { kind: 'episode', id: 'ep_walk', tombstone, derived: [] } })
    }
    expect(await memory.tombstones()).toEqual([line])
    await memory.export(tempBundlePath())
  })
})

describe('a redaction skeleton that is no .mem line of its kind', () => {
  it('is skipped, so export goes on; one of the id alone still applies', async () => {
    const { memory, identity } = await ownerStore()
    await memory.remember({ kind: 'episode', id: 'ep_walk', summary: 'a walk' })
    await memory.remember({ kind: 'episode', id: 'ep_keep', summary: 'tea' })
    await memory.remember({ kind: 'fact', id: 'fact_f', episodeID: 'ep_keep', subject: 'user', predicate: 'likes', object: 'tea' })
    await memory.forget('ep_walk')
    const [line] = await memory.tombstones()
    const redaction = (id: string, skeleton: JsonValue) => ({ kind: 'fact', id, tombstone: { ...line, op: 'redact', targetKind: 'fact', targetID: id }, skeleton, derived: [] })
    await memory.log.append(identity, { op: 'memory.redact', data: redaction('fact_f', { id: 'fact_f', subject: 5 }) })
    await memory.log.append(identity, { op: 'memory.redact', data: redaction('fact_f', JSON.parse('{"__proto__": 0, "subject": ""}') as JsonValue) })
    expect(await memory.status('fact_f')).toBe('visible')
    await memory.log.append(identity, { op: 'memory.redact', data: redaction('fact_g', { id: 'fact_g' }) })
    expect(await memory.status('fact_g')).toBe('redacted')
    await memory.export(tempBundlePath())
  })
})

describe('two replicas redacting one record concurrently', () => {
  it('both keep the earlier redaction', async () => {
    const clock = new ManualClock(START)
    const a = await Memory.open({ clock })
    const b = await Memory.open({ clock, space: a.space })
    open.push(a, b)
    await a.grant(b.author)
    await a.remember({ kind: 'episode', id: 'ep_walk', summary: 'a walk' })
    await b.ingest(await a.events())
    clock.advance(5_000)
    await b.redact('ep_walk')
    clock.advance(5_000)
    await a.redact('ep_walk')
    await b.ingest(await a.events(b.versionVector()))
    await a.ingest(await b.events(a.versionVector()))
    expect(await b.digest()).toBe(await a.digest())
    expect(await a.tombstones()).toMatchObject([{ op: 'redact', deletedAt: '2026-01-01T00:00:05Z' }])
  })
})

describe('projection layout 5 → 6', () => {
  /**
   * A store whose meta says layout 5, opened again after `write` appended to its log (applied
   * before the reopen); `heldBefore`: projection entries a layout-5 store held that this one does not write.
   */
  async function storeAtLayout5(write: (memory: Memory, identity: Identity) => Promise<unknown>, heldBefore: (keys: ProjectionKeys) => [string, Uint8Array][] = () => []) {
    const store = await LogStore.open()
    const identity = Identity.generate()
    const log = await store.createSpace(identity)
    const memory = await Memory.attach(store, log.space, identity)
    await memory.remember({ kind: 'episode', id: 'ep_walk', summary: 'a walk' })
    await memory.redact('ep_walk')
    await write(memory, identity)
    await memory.settled()
    await memory.close()
    open.push(store)
    const held = heldBefore(projectionKeys(log.space)).map(([key, value]) => ({ type: 'put' as const, key, value }))
    const { memory: reopened, marker } = await reopenAtLayout(store, log.space, identity, 5, held)
    open.push(reopened)
    return { store, memory: reopened, marker }
  }

  it('rebuilds a store whose log holds two tombstones of one record', async () => {
    const { store, memory, marker } = await storeAtLayout5(async (memory, identity) => {
      const [line] = await memory.tombstones()
      // A second redaction with an earlier line, as an import writes one.
      await memory.log.append(identity, {
        op: 'memory.redact',
        data: { kind: 'episode', id: 'ep_walk', tombstone: { ...line, id: 'tomb_0000000000000000', deletedAt: '2025-06-01T00:00:00Z' }, skeleton: { id: 'ep_walk' }, derived: [] },
      })
    })
    expect(await store.storage.get(marker)).toBeUndefined()
    expect(await memory.tombstones()).toMatchObject([{ id: 'tomb_0000000000000000' }])
    expect((await memory.checkProjection()).named).toEqual([])
  })

  it('rebuilds a store whose log holds a text change that is not its author\'s', async () => {
    const { store, memory, marker } = await storeAtLayout5(async (memory, identity) => {
      const forged = spliceText(baseTextDocument(), 'cd'.repeat(32), 0, 0, 'forged', 1000).changes
      await memory.log.append(identity, { op: 'memory.create', data: { kind: 'core', id: 'persona', fields: { id: 'persona' }, texts: { content: forged.map((change) => Buffer.from(change).toString('base64')) } } })
    })
    expect(await store.storage.get(marker)).toBeUndefined()
    expect((await memory.get('persona'))?.content).toBe('')
  })

  it('rebuilds a store whose log holds __proto__ among a body\'s unknown keys', async () => {
    const { store, marker } = await storeAtLayout5(async (memory, identity) => {
      await memory.remember({ kind: 'episode', id: 'ep_rain', summary: 'rain' })
      await memory.log.append(identity, { op: 'memory.patch', data: { kind: 'episode', id: 'ep_rain', unsetExt: ['__proto__'] } })
    })
    expect(await store.storage.get(marker)).toBeUndefined()
  })

  it('rebuilds a store whose log holds foreign lines a .mem file cannot hold, which then exports', async () => {
    const { store, memory, marker } = await storeAtLayout5(async (memory, identity) => {
      await memory.rememberForeign('vendorThing', ['{"a":1}'])
      await memory.log.append(identity, { op: 'memory.foreign', data: { kind: 'a/b', lines: ['{"b":2}'] } })
      await memory.log.append(identity, { op: 'memory.foreign', data: { kind: 'vendorThing', lines: ['{"c":3}\n{"d":4}'] } })
    }, (keys) => [
      // What layout 5 kept of those two bodies (the log's first events are the space's own).
      [keys.foreign('a/b', 'stale'), encodeJson([90, 0, '{"b":2}'])],
      [keys.foreign('vendorThing', 'stale'), encodeJson([91, 0, '{"c":3}\n{"d":4}'])],
    ])
    expect(await store.storage.get(marker)).toBeUndefined()
    expect(await memory.foreignLines()).toEqual({ vendorThing: ['{"a":1}'] })
    await memory.export(tempBundlePath())
  })

  it('rebuilds a store whose log holds a tombstone line layout 6 skips', async () => {
    const { store, memory, marker } = await storeAtLayout5(async (memory, identity) => {
      const [line] = await memory.tombstones()
      // Of a record no other tombstone reaches, so only this trigger can rebuild.
      await memory.log.append(identity, { op: 'memory.redact', data: { kind: 'episode', id: 'ep_other', tombstone: { ...line, targetID: 'ep_other', deletedAt: [] }, skeleton: { id: 'ep_other' }, derived: [] } })
    })
    expect(await store.storage.get(marker)).toBeUndefined()
    await memory.export(tempBundlePath())
  })

  it('only records layout 6 on a store without any of them', async () => {
    const { store, marker } = await storeAtLayout5(async (memory) => {
      await memory.remember({ kind: 'core', id: 'persona', content: 'own text' })
      await memory.rememberForeign('vendorThing', ['{"a":1}'])
    })
    expect(await store.storage.get(marker)).toBeDefined()
  })
})

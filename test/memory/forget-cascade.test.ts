/**
 * What a forget reaches beyond facts, edges and chunks (memory-model §1.4): episodes derived only
 * from what goes (episodeLink derived_from), and records an import listed under an episode's
 * `metadata.cairn_derived` that no staying episode lists. The deleter names them, so every
 * replica removes them and erases their bodies.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { LogStorage } from '../../src/log/storage.js'
import { Memory } from '../../src/memory/index.js'
import { closeAll, exchangeAll, openReplicas } from '../helpers/memory-replicas.js'
import { tempDirs } from '../helpers/temp-dirs.js'

const open: Memory[] = []
const { tempDir, removeTempDirs } = tempDirs('cairn-cascade-')
afterEach(async () => {
  await closeAll(open.splice(0))
  await removeTempDirs()
})

async function memory(): Promise<Memory> {
  const m = await Memory.open({})
  open.push(m)
  return m
}

const derivedFrom = (src: string, dst: string) => ({ kind: 'episodeLink' as const, srcEpisodeID: src, dstEpisodeID: dst, linkType: 'derived_from' })

describe('forget through derived_from links and cairn_derived lists', () => {
  it('takes episodes whose every derived_from source goes, through chains, with their facts; keeps those with a source that stays', async () => {
    const m = await memory()
    await m.remember({ kind: 'episode', id: 'ep_source', summary: 'the conversation' })
    await m.remember({ kind: 'episode', id: 'ep_other', summary: 'another conversation' })
    await m.remember({ kind: 'episode', id: 'ep_summary', summary: 'a summary of the conversation' })
    await m.remember({ kind: 'episode', id: 'ep_digest', summary: 'a digest of the summary' })
    await m.remember({ kind: 'episode', id: 'ep_mixed', summary: 'drawn from both conversations' })
    await m.remember(derivedFrom('ep_summary', 'ep_source'))
    await m.remember(derivedFrom('ep_digest', 'ep_summary'))
    await m.remember(derivedFrom('ep_mixed', 'ep_source'))
    await m.remember(derivedFrom('ep_mixed', 'ep_other'))
    await m.remember({ kind: 'fact', id: 'fact_digest', episodeID: 'ep_digest', subject: 'user', predicate: 'likes', object: 'tea' })
    expect((await m.forgetReach('ep_source')).map((record) => record.id).sort()).toEqual(['ep_digest', 'ep_summary', 'fact_digest'])
    const tombstone = await m.forget('ep_source')
    expect(tombstone.derived).toMatchObject({ factIDs: ['fact_digest'], recordIDs: ['ep_digest', 'ep_summary'], episodeLinkCount: 3 })
    for (const id of ['ep_summary', 'ep_digest', 'fact_digest']) expect(await m.status(id), id).toBe('deleted')
    for (const id of ['ep_other', 'ep_mixed']) expect(await m.status(id), id).toBe('visible')
  })

  it('takes what a carrier lists in cairn_derived once no staying episode lists it, and erases it on every replica', async () => {
    const { memories } = await openReplicas(2)
    open.push(...memories)
    const [a, b] = memories as [Memory, Memory]
    const pref = await a.remember({ kind: 'preference', key: 'drink', value: 'lapsang souchong' })
    const procedure = await a.remember({ kind: 'procedure', name: 'brew', triggerPattern: 'tea', steps: ['steep for three minutes'] })
    const listing = (ids: string[]) => ({ metadata: { cairn_derived: JSON.stringify(ids) } })
    await a.remember({ kind: 'episode', id: 'ep_first', summary: 'first import', ...listing([pref, procedure]) })
    await a.remember({ kind: 'episode', id: 'ep_second', summary: 'second import', ...listing([pref]) })
    await exchangeAll(memories)
    // The preference is listed by a carrier that stays: only the procedure goes.
    expect((await a.forgetReach('ep_first')).map((record) => record.id)).toEqual([procedure])
    await a.forget('ep_first')
    expect(await a.status(pref)).toBe('visible')
    // Its last carrier gone, the preference goes too.
    expect((await a.forget('ep_second')).derived.recordIDs).toEqual([pref])
    await exchangeAll(memories)
    for (const replica of memories) {
      for (const id of [pref, procedure]) expect(await replica.status(id), id).toBe('deleted')
      const bodies = (await replica.events()).map((envelope) => Buffer.from(envelope.body ?? []).toString('utf8')).join('\n')
      expect(bodies).not.toContain('lapsang')
      expect(bodies).not.toContain('three minutes')
    }
    expect(await a.digest()).toBe(await b.digest())
  })

  it('carries the cascade in an exported tombstone: a store importing it removes the listed records it holds', async () => {
    const source = await memory()
    const pref = await source.remember({ kind: 'preference', key: 'drink', value: 'lapsang souchong' })
    await source.remember({ kind: 'episode', id: 'ep_import', summary: 'an import', metadata: { cairn_derived: JSON.stringify([pref]) } })
    const first = `${await tempDir()}/first.mem`
    await source.export(first)
    const other = await memory()
    await other.import(first)
    expect(await other.status(pref)).toBe('visible')
    await source.forget('ep_import')
    const second = `${await tempDir()}/second.mem`
    await source.export(second)
    await other.import(second)
    expect(await other.status('ep_import')).toBe('deleted')
    expect(await other.status(pref)).toBe('deleted')
  })

  it('does not read a malformed cairn_derived value as a list', async () => {
    const m = await memory()
    const pref = await m.remember({ kind: 'preference', key: 'drink', value: 'tea' })
    await m.remember({ kind: 'episode', id: 'ep_bad', summary: 'odd metadata', metadata: { cairn_derived: `not json ${pref}` } })
    expect(await m.forgetReach('ep_bad')).toEqual([])
  })

  it('rebuilds a store whose projection an older version wrote, so its references are complete', async () => {
    const path = await tempDir()
    const first = await Memory.open({ path })
    const pref = await first.remember({ kind: 'preference', key: 'drink', value: 'tea' })
    await first.remember({ kind: 'episode', id: 'ep_a', summary: 'import a', metadata: { cairn_derived: JSON.stringify([pref]) } })
    await first.remember({ kind: 'episode', id: 'ep_b', summary: 'import b', metadata: { cairn_derived: JSON.stringify([pref]) } })
    // What a store of the previous layout holds: no reference entries for derived lists, no layout number.
    const storage = (first.log as unknown as { storage: LogStorage }).storage
    const root = `${first.space}:q:`
    const stale: string[] = []
    for await (const key of storage.keys({ gte: `${root}r:`, lt: `${root}r:\uffff` })) if (key.includes(pref)) stale.push(key)
    expect(stale.length).toBe(2)
    const { decodeMeta, encodeMeta } = await import('../../src/projection/projection-codec.js')
    const { layout: _layout, ...meta } = decodeMeta(await storage.get(`${root}m`))
    await storage.write([...stale.map((key) => ({ type: 'del' as const, key })), { type: 'put', key: `${root}m`, value: encodeMeta(meta) }])
    await first.close()
    const reopened = await Memory.open({ path })
    open.push(reopened)
    // Without the rebuild, forgetting ep_a would see no other lister and take the shared preference.
    expect(await reopened.forgetReach('ep_a')).toEqual([])
    await reopened.forget('ep_a')
    expect(await reopened.status(pref)).toBe('visible')
  })
})

describe('projection layout upgrade', () => {
  /** A store whose projection an older version wrote: its meta carries no layout number. */
  async function olderLayout(records: number, features?: { fullText: boolean; asOf: boolean; onDemand: boolean }, older = true) {
    const { LogStore, Identity } = await import('../../src/log/index.js')
    const { decodeMeta, encodeMeta } = await import('../../src/projection/projection-codec.js')
    const store = await LogStore.open()
    const identity = Identity.generate()
    const log = await store.createSpace(identity)
    const writer = await Memory.attach(store, log.space, identity)
    const batch = Array.from({ length: records }, (_, i) => ({ kind: 'episode' as const, id: `ep_${i}`, summary: `note ${i}`, accessCount: 1 }))
    for (let i = 0; i < batch.length; i += 500) await writer.rememberMany(batch.slice(i, i + 500))
    const digest = await writer.digest()
    await writer.close()
    const metaKey = `${log.space}:q:m`
    const { layout: _layout, ...meta } = decodeMeta(await store.storage.get(metaKey))
    if (older) await store.storage.write([{ type: 'put', key: metaKey, value: encodeMeta(meta) }])
    const attach = () => Memory.attach(store, log.space, identity, features)
    return { store, log, digest, attach, metaKey }
  }

  it('a rebuild that dies or fails part way (on open, or asked for) is done again on the next open, never read as finished', async () => {
    for (const older of [true, false]) await rebuildDies(older)
  })

  async function rebuildDies(older: boolean): Promise<void> {
    const { store, digest, attach, log } = await olderLayout(2500, undefined, older)
    const current = older ? undefined : await attach()
    const storage = store.storage as { write: (writes: { type: string; key: string }[]) => Promise<void> }
    const write = storage.write.bind(storage)
    let died = false
    storage.write = async (writes) => {
      if (died) throw new Error('process died')
      await write(writes)
      // Dies once the first batch of dropped states is stored.
      if (writes.some((entry) => entry.type === 'del' && entry.key.startsWith(`${log.space}:q:s:`))) {
        died = true
        throw new Error('process died')
      }
    }
    await expect(current ? current.rebuild() : attach()).rejects.toThrow('process died')
    storage.write = write
    // A rebuild that failed without the process dying: the store goes on taking writes.
    const after = await current?.remember({ kind: 'episode', id: 'ep_after', summary: 'written after the failed rebuild' })
    await current?.close()
    const reopened = await attach()
    if (after === undefined) expect(await reopened.digest()).toBe(digest)
    else expect((await reopened.get(after))?.summary).toBe('written after the failed rebuild')
    // Views alone would pass for a finished store: history and states must be back too.
    expect(await reopened.history('ep_7')).toHaveLength(1)
    await reopened.update('ep_7', { increment: { accessCount: 1 } })
    expect((await reopened.get('ep_7'))?.accessCount).toBe(2)
    await reopened.close()
    await store.close()
  }

  it('an on-demand projection (a relay) at an older layout is rebuilt whole when it opens', async () => {
    const { store, attach, log } = await olderLayout(300, { fullText: false, asOf: false, onDemand: true })
    const relay = await attach()
    expect((relay as unknown as { core: { projection: { cursor: number } } }).core.projection.cursor).toBe(log.appliedCount)
    expect((await relay.get('ep_3'))?.id).toBe('ep_3')
    await relay.close()
    await store.close()
  })

})

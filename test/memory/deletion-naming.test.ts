/**
 * An admin replica names the deletions it infers from a deleted parent (deletion-naming.ts):
 * the bodies such a record keeps, hidden, go from every replica once its delete arrives.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { Memory } from '../../src/memory/index.js'
import { AuthError } from '../../src/errors.js'
import { UNNAMED_DELETION_REASON } from '../../src/memory/deletion-naming.js'
import { closeAll, deliver, exchangeAll, openReplicas } from '../helpers/memory-replicas.js'

const open: Memory[] = []
afterEach(async () => {
  await closeAll(open.splice(0))
})

async function replicas(count: number): Promise<Memory[]> {
  const { memories } = await openReplicas(count)
  open.push(...memories)
  return memories
}

async function bodies(memory: Memory): Promise<string> {
  return (await memory.events()).map((envelope) => Buffer.from(envelope.body ?? []).toString('utf8')).join('\n')
}

/** The records this replica holds deleted through a parent and named by no event (q:u). */
async function unnamed(memory: Memory): Promise<string[]> {
  const storage = (memory.log as unknown as { storage: { keys(range: object): AsyncIterable<string> } }).storage
  const prefix = `${memory.space}:q:u:`
  const out: string[] = []
  for await (const key of storage.keys({ gte: prefix, lt: `${prefix}\uffff` })) out.push(key.slice(prefix.length))
  return out
}

async function deletesOf(memory: Memory, id: string): Promise<number> {
  return (await memory.events()).filter((envelope) => {
    const text = Buffer.from(envelope.body ?? []).toString('utf8')
    return text.includes('"op":"memory.delete"') && text.includes(`"id":"${id}"`)
  }).length
}

describe('naming inferred deletions', () => {
  it('an admin that infers a deletion names it, and the kept bodies go from every replica', async () => {
    const [owner, writer, other] = await replicas(3) as [Memory, Memory, Memory]
    await owner.remember({ kind: 'episode', id: 'ep_a', summary: 'about tea' })
    await exchangeAll([owner, writer, other])
    await writer.remember({ kind: 'fact', id: 'fact_f', episodeID: 'ep_a', subject: 'user', predicate: 'likes', object: 'oolong' })
    await deliver(writer, other)
    await owner.forget('ep_a')
    // other infers the deletion first: it holds no admin right, so it keeps the bodies, hidden.
    await deliver(owner, other)
    expect(await other.status('fact_f')).toBe('deleted')
    expect(await bodies(other)).toContain('oolong')
    expect(await unnamed(other)).toEqual(['fact_f'])
    // The owner infers it when the fact arrives, and names it before ingest returns.
    await deliver(writer, owner)
    expect(await deletesOf(owner, 'fact_f')).toBe(1)
    expect(await unnamed(owner)).toEqual([])
    await exchangeAll([owner, writer, other])
    for (const memory of [owner, writer, other]) {
      expect(await memory.status('fact_f')).toBe('deleted')
      expect(await bodies(memory)).not.toContain('oolong')
      expect(await unnamed(memory)).toEqual([])
      expect((await memory.tombstones()).find((row) => row.targetID === 'fact_f')).toMatchObject({ op: 'delete', targetKind: 'fact', reason: UNNAMED_DELETION_REASON, actor: owner.author })
    }
    const digests = await Promise.all([owner, writer, other].map((memory) => memory.digest()))
    expect(new Set(digests).size).toBe(1)
    // Named once: delivering everything again writes nothing more.
    const vector = owner.versionVector()
    await owner.ingest(await writer.events())
    expect(owner.versionVector()).toEqual(vector)
    expect(await deletesOf(owner, 'fact_f')).toBe(1)
  })

  it('a link deleted through a fact that keeps its bodies keeps its own until the fact is named, then loses them everywhere', async () => {
    const [owner, phone] = await replicas(2) as [Memory, Memory]
    await owner.remember({ kind: 'episode', id: 'ep_p', summary: 'parent episode' })
    await owner.remember({ kind: 'episode', id: 'ep_q', summary: 'other episode' })
    await owner.remember({ kind: 'fact', id: 'fact_f2', episodeID: 'ep_q', subject: 'a', predicate: 'b', object: 'c' })
    await deliver(owner, phone)
    await owner.forget('ep_p')
    await phone.remember({ kind: 'fact', id: 'fact_f1', episodeID: 'ep_p', subject: 'x', predicate: 'y', object: 'z' })
    const link = await phone.remember({ kind: 'factLink', srcFactID: 'fact_f1', dstFactID: 'fact_f2', linkType: 'supports-link' })
    // The phone (no admin) deletes both through the forget and keeps their bodies; only the fact
    // waits to be named: naming it is what erases the link's.
    await deliver(owner, phone)
    expect([await phone.status('fact_f1'), await phone.status(link)]).toEqual(['deleted', 'deleted'])
    expect(await bodies(phone)).toContain('supports-link')
    expect(await unnamed(phone)).toEqual(['fact_f1'])
    // The owner names the fact when the phone's events reach it; the link's bodies go with it
    // there, and on the phone once the named deletion arrives.
    await deliver(phone, owner)
    await deliver(owner, phone)
    for (const memory of [owner, phone]) {
      expect([await memory.status('fact_f1'), await memory.status(link)], memory.author).toEqual(['deleted', 'deleted'])
      expect(await bodies(memory), memory.author).not.toContain('supports-link')
      expect(await unnamed(memory)).toEqual([])
      const digest = await memory.digest()
      await memory.rebuild()
      expect(await memory.digest()).toBe(digest)
    }
    expect(await phone.digest()).toBe(await owner.digest())
  })

  it('a replica without the admin right names nothing; once granted it, its next ingest names what it kept', async () => {
    const [owner, first, second] = await replicas(3) as [Memory, Memory, Memory]
    await first.remember({ kind: 'episode', id: 'ep_a', summary: 'about tea' })
    await deliver(first, second)
    await second.remember({ kind: 'fact', id: 'fact_f', episodeID: 'ep_a', subject: 'user', predicate: 'likes', object: 'oolong' })
    await first.forget('ep_a')
    await deliver(second, first)
    await deliver(first, second)
    for (const memory of [first, second]) {
      expect(await memory.status('fact_f')).toBe('deleted')
      expect(await bodies(memory)).toContain('oolong')
      expect(await unnamed(memory)).toEqual(['fact_f'])
      expect(await deletesOf(memory, 'fact_f')).toBe(0)
    }
    await owner.grant(first.author, ['admin'])
    await deliver(owner, first)
    expect(await deletesOf(first, 'fact_f')).toBe(1)
    await deliver(first, second)
    for (const memory of [first, second]) {
      expect(await bodies(memory)).not.toContain('oolong')
      expect(await unnamed(memory)).toEqual([])
    }
  })

  it('a refused naming (the right revoked meanwhile) fails nothing, and the next ingest tries again', async () => {
    const [owner, writer] = await replicas(2) as [Memory, Memory]
    await owner.remember({ kind: 'episode', id: 'ep_a', summary: 'about tea' })
    await deliver(owner, writer)
    await writer.remember({ kind: 'fact', id: 'fact_f', episodeID: 'ep_a', subject: 'user', predicate: 'likes', object: 'oolong' })
    await owner.forget('ep_a')
    const log = owner.log as unknown as { appendBatch: (...args: unknown[]) => Promise<unknown> }
    const appendBatch = log.appendBatch
    log.appendBatch = async () => {
      throw new AuthError('NOT_AUTHORIZED', 'no write right')
    }
    await deliver(writer, owner)
    log.appendBatch = appendBatch
    expect(await deletesOf(owner, 'fact_f')).toBe(0)
    expect(await unnamed(owner)).toEqual(['fact_f'])
    await writer.remember({ kind: 'episode', summary: 'later' })
    await deliver(writer, owner)
    expect(await deletesOf(owner, 'fact_f')).toBe(1)
    expect(await unnamed(owner)).toEqual([])
  })

  it('a store of layout 2 lists the deletions it kept when it opens, and its admin names them at the next ingest', async () => {
    const { LogStore, Identity } = await import('../../src/log/index.js')
    const { decodeMeta, encodeMeta, PROJECTION_LAYOUT } = await import('../../src/projection/projection-codec.js')
    const { Memory: MemoryClass } = await import('../../src/memory/index.js')
    const store = await LogStore.open()
    const identity = Identity.generate()
    const log = await store.createSpace(identity)
    const owner = await MemoryClass.attach(store, log.space, identity)
    const writer = await MemoryClass.open({ space: owner.space })
    open.push(writer)
    await owner.grant(writer.author)
    await owner.remember({ kind: 'episode', id: 'ep_a', summary: 'about tea' })
    await writer.ingest(await owner.events())
    await writer.remember({ kind: 'fact', id: 'fact_f', episodeID: 'ep_a', subject: 'user', predicate: 'likes', object: 'oolong' })
    await owner.forget('ep_a')
    // As the previous version did: it keeps the fact's bodies and names nothing...
    const rightsOf = owner.log.rightsOf.bind(owner.log)
    owner.log.rightsOf = () => []
    await owner.ingest(await writer.events(owner.versionVector()))
    owner.log.rightsOf = rightsOf
    await owner.close()
    // ...and lists nothing, at layout 2.
    const metaKey = `${log.space}:q:m`
    const listed = `${log.space}:q:u:fact_f`
    await store.storage.write([{ type: 'del', key: listed }, { type: 'put', key: metaKey, value: encodeMeta({ ...decodeMeta(await store.storage.get(metaKey)), layout: 2 }) }])
    const reopened = await MemoryClass.attach(store, log.space, identity)
    open.push(reopened)
    expect(decodeMeta(await store.storage.get(metaKey)).layout).toBe(PROJECTION_LAYOUT)
    expect(await unnamed(reopened)).toEqual(['fact_f'])
    expect(await bodies(reopened)).toContain('oolong')
    await writer.remember({ kind: 'episode', summary: 'later' })
    await reopened.ingest(await writer.events(reopened.versionVector()))
    expect(await deletesOf(reopened, 'fact_f')).toBe(1)
    expect(await bodies(reopened)).not.toContain('oolong')
    expect(await unnamed(reopened)).toEqual([])
  })

  it('two admins that name one record concurrently end with one tombstone on every replica', async () => {
    const [owner, admin, writer] = await replicas(3) as [Memory, Memory, Memory]
    await owner.grant(admin.author, ['admin'])
    await owner.remember({ kind: 'episode', id: 'ep_a', summary: 'about tea' })
    await exchangeAll([owner, admin, writer])
    await writer.remember({ kind: 'fact', id: 'fact_f', episodeID: 'ep_a', subject: 'user', predicate: 'likes', object: 'oolong' })
    await owner.forget('ep_a')
    await deliver(owner, admin)
    await deliver(writer, owner)
    await deliver(writer, admin)
    expect(await deletesOf(owner, 'fact_f')).toBe(1)
    expect(await deletesOf(admin, 'fact_f')).toBe(1)
    await exchangeAll([owner, admin, writer])
    const rows = await Promise.all([owner, admin, writer].map(async (memory) => JSON.stringify((await memory.tombstones()).filter((row) => row.targetID === 'fact_f'))))
    expect(new Set(rows).size).toBe(1)
    expect(JSON.parse(rows[0] as string)).toHaveLength(1)
    for (const memory of [owner, admin, writer]) expect(await bodies(memory)).not.toContain('oolong')
  })
})

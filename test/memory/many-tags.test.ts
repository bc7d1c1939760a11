/**
 * Records with very many tags or entities: index entries carry at most MAX_FACET_TAGS of a
 * record's tags and none of its entities (projection-indexes.ts), so storage grows with the
 * count, not its square, and filters still return exactly the records that pass, page by page.
 */
import fc from 'fast-check'
import { afterEach, describe, expect, it } from 'vitest'
import { Memory } from '../../src/memory/index.js'
import type { RecordView } from '../../src/projection/index.js'
import { MAX_FACET_TAGS } from '../../src/projection/projection-indexes.js'

const open: Memory[] = []
afterEach(async () => {
  for (const memory of open.splice(0)) await memory.close()
})

/** Every value stored under the projection's index prefixes (kind, tag, context, entity, valid time). */
async function indexValueBytes(memory: Memory): Promise<number> {
  const storage = (memory.log as unknown as { storage: { entries(range: object): AsyncIterable<[string, Uint8Array]> } }).storage
  let total = 0
  for (const part of ['k', 't', 'n']) {
    const prefix = `${memory.space}:q:${part}:`
    for await (const [, value] of storage.entries({ gte: prefix, lt: `${prefix}\uffff` })) total += value.length
  }
  return total
}

async function allPages(memory: Memory, filter: Parameters<Memory['query']>[0]): Promise<string[]> {
  const out: string[] = []
  let cursor: string | undefined
  do {
    const page = await memory.query({ ...filter, limit: 3, ...(cursor !== undefined ? { cursor } : {}) })
    out.push(...page.records.map((record) => record.id))
    cursor = page.cursor
  } while (cursor !== undefined)
  return out.sort()
}

describe('records with many tags', () => {
  it('index entries grow linearly with the tag count', async () => {
    const memory = await Memory.open({})
    open.push(memory)
    const sizes: number[] = []
    for (const count of [200, 800]) {
      const before = await indexValueBytes(memory)
      await memory.remember({ kind: 'episode', summary: `${count} tags`, tags: Array.from({ length: count }, (_, i) => `tag-${count}-${i}`) })
      sizes.push((await indexValueBytes(memory)) - before)
    }
    // Four times the tags: about four times the bytes (carrying every tag in every entry made it sixteen).
    expect((sizes[1] as number) / (sizes[0] as number)).toBeLessThan(5)
    expect(await allPages(memory, { tags: ['tag-800-799'] })).toHaveLength(1)
  })

  it('tag filters return exactly the records whose tags pass, below and above the cap', async () => {
    const pool = Array.from({ length: MAX_FACET_TAGS + 8 }, (_, i) => `t${i}`)
    const tagSet = fc.subarray(pool, { minLength: 0, maxLength: pool.length })
    const filter = fc.record({ all: fc.subarray(pool.slice(0, 6), { maxLength: 2 }), any: fc.subarray(pool.slice(30), { maxLength: 3 }), none: fc.subarray(pool.slice(20, 40), { maxLength: 2 }) })
    await fc.assert(fc.asyncProperty(fc.array(tagSet, { minLength: 1, maxLength: 8 }), fc.array(filter, { minLength: 1, maxLength: 4 }), async (records, filters) => {
      const memory = await Memory.open({})
      open.push(memory)
      const views: RecordView[] = []
      for (const [i, tags] of records.entries()) {
        const id = await memory.remember({ kind: 'episode', summary: `record ${i}`, tags })
        views.push((await memory.get(id)) as RecordView)
      }
      const passing = (all: readonly string[], any: readonly string[], none: readonly string[]): string[] => views.filter((view) => {
        const tags = new Set(view.tags as string[])
        return all.every((tag) => tags.has(tag)) && (any.length === 0 || any.some((tag) => tags.has(tag))) && !none.some((tag) => tags.has(tag))
      }).map((view) => view.id).sort()
      for (const { all, any, none } of filters) {
        // Walked through a tag index (`all`, or one `any`), the kind index, and the index over all kinds.
        expect(await allPages(memory, { tags: { all, any, none } })).toEqual(passing(all, any, none))
        expect(await allPages(memory, { kind: 'episode', tags: { any, none } })).toEqual(passing([], any, none))
        expect(await allPages(memory, { tags: { none } })).toEqual(passing([], [], none))
      }
      await memory.close()
      open.pop()
    }), { numRuns: 40 })
  })
})

describe('records naming many entities', () => {
  it('index entries grow linearly with a community\'s members, and entity queries stay exact', async () => {
    const memory = await Memory.open({})
    open.push(memory)
    const sizes: number[] = []
    const members = (count: number): string[] => Array.from({ length: count }, (_, i) => `ent_${count}_${String(i).padStart(6, '0')}`)
    for (const count of [200, 800]) {
      const before = await indexValueBytes(memory)
      await memory.remember({ kind: 'community', id: `com_${count}`, label: `${count} members`, memberEntityIDs: members(count) })
      sizes.push((await indexValueBytes(memory)) - before)
    }
    // Four times the members: about four times the bytes (carrying every member in every entry made it sixteen).
    expect((sizes[1] as number) / (sizes[0] as number)).toBeLessThan(5)
    const shared = 'ent_800_000007'
    await memory.remember({ kind: 'fact', id: 'fact_a', episodeID: await memory.remember({ kind: 'episode', summary: 'e' }), subject: shared, predicate: 'is', object: 'ent_other' })
    await memory.remember({ kind: 'edge', id: 'edge_a', srcEntityID: 'ent_other', dstEntityID: shared, edgeType: 'knows' })
    // An id that extends the entity's must not match it (index keys are escaped, not prefixes of each other).
    await memory.remember({ kind: 'edge', id: 'edge_b', srcEntityID: `${shared}:x`, dstEntityID: 'ent_other', edgeType: 'knows' })
    expect(await allPages(memory, { entity: shared })).toEqual(['com_800', 'edge_a', 'fact_a'])
    expect(await allPages(memory, { entity: shared, kind: 'edge' })).toEqual(['edge_a'])
    expect(await allPages(memory, { entity: 'ent_other' })).toEqual(['edge_a', 'edge_b', 'fact_a'])
    expect(await allPages(memory, { entity: 'ent_200_000003' })).toEqual(['com_200'])
    expect(await allPages(memory, { entity: 'ent_nobody' })).toEqual([])
  })
})

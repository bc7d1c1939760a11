/**
 * The persisted full-text index: ranking against a naive BM25 written from the textbook formula
 * (test/helpers/naive-bm25.ts, never from src/projection/bm25.ts), update and removal, batched
 * plans, reopening on disk, filters, bounded query work, caps on huge records and bad input.
 */
import fc from 'fast-check'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { isPlainObject } from '../../src/assert.js'
import { InputError } from '../../src/errors.js'
import { LevelLogStorage } from '../../src/log/level-storage.js'
import type { LogStorage, StorageRange } from '../../src/log/storage.js'
import { MAX_TOKENS_PER_DOCUMENT, TextIndex } from '../../src/projection/text-index.js'
import { badValues } from '../helpers/bad-inputs.js'
import { countingStorage } from '../helpers/counting-storage.js'
import { NaiveBm25, naiveSearch, zipfCorpus as corpus } from '../helpers/naive-bm25.js'
import { SeededRandom } from '../helpers/seeded-random.js'

const PREFIX = 'space1:x:'
const storages: LogStorage[] = []
const roots: string[] = []
afterEach(async () => {
  for (const storage of storages.splice(0)) await storage.close().catch(() => undefined)
})
afterAll(async () => {
  for (const dir of roots.splice(0)) await rm(dir, { recursive: true, force: true })
})

async function memoryIndex(prefix = PREFIX): Promise<{ storage: LogStorage; index: TextIndex }> {
  const storage = await LevelLogStorage.openMemory()
  storages.push(storage)
  return { storage, index: new TextIndex(storage, prefix) }
}

async function apply(storage: LogStorage, index: TextIndex, changes: { id: string; previous?: string; next?: string }[]): Promise<void> {
  await storage.write(await index.planUpdates(changes))
}

async function indexAll(storage: LogStorage, index: TextIndex, documents: Record<string, string>): Promise<void> {
  await apply(storage, index, Object.entries(documents).map(([id, next]) => ({ id, next })))
}

async function dump(storage: LogStorage, range: StorageRange = {}): Promise<[string, number[]][]> {
  const entries: [string, number[]][] = []
  for await (const [key, value] of storage.entries(range)) entries.push([key, [...value]])
  return entries
}

const ids = (hits: { id: string }[]) => hits.map((hit) => hit.id)

describe('TextIndex ranking', () => {
  it('returns only documents holding a query term, best first', async () => {
    const { storage, index } = await memoryIndex()
    await indexAll(storage, index, { a: 'tea with lemon', b: 'black coffee with milk', c: 'green tea' })
    expect(ids(await index.search('coffee'))).toEqual(['b'])
    expect(await index.search('espresso')).toEqual([])
  })

  it('weighs a rarer term more than a common one', async () => {
    const { storage, index } = await memoryIndex()
    await indexAll(storage, index, { a: 'river', b: 'river', c: 'river', d: 'lantern' })
    expect(ids(await index.search('river lantern'))).toEqual(['d', 'a', 'b', 'c'])
  })

  it('ranks a shorter document above a longer one with the same term frequency', async () => {
    const { storage, index } = await memoryIndex()
    await indexAll(storage, index, { a: 'garden hose pump valve nozzle timer', b: 'garden hose' })
    expect(ids(await index.search('garden'))).toEqual(['b', 'a'])
  })

  it('ranks a higher term frequency above a lower one at equal length', async () => {
    const { storage, index } = await memoryIndex()
    await indexAll(storage, index, { a: 'jazz piano', b: 'jazz jazz' })
    expect(ids(await index.search('jazz'))).toEqual(['b', 'a'])
  })

  it('ranks documents matching more query terms higher and breaks exact ties by id', async () => {
    const { storage, index } = await memoryIndex()
    await indexAll(storage, index, { z: 'dark roast coffee', y: 'dark chocolate', x: 'roast chicken', w: 'dark roast', v: 'dark roast' })
    const hits = await index.search('dark roast coffee')
    expect(ids(hits)).toEqual(['z', 'v', 'w', 'x', 'y'])
    expect(hits[1]?.score).toBe(hits[2]?.score)
  })

  it('scores by the BM25 formula (a hand-computed case)', async () => {
    const { storage, index } = await memoryIndex()
    await indexAll(storage, index, { a: 'apple apple pear', b: 'pear', c: 'plum fig' })
    // N = 3, avgdl = (3 + 1 + 2) / 3 = 2; apple: n = 1, tf = 2, |D| = 3.
    const idf = Math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    const expected = (idf * 2 * 2.2) / (2 + 1.2 * (0.25 + (0.75 * 3) / 2))
    const [hit] = await index.search('apple')
    expect(hit?.id).toBe('a')
    expect(hit?.score).toBeCloseTo(expected, 12)
  })

  it('matches across diacritics, inflections and CJK text', async () => {
    const { storage, index } = await memoryIndex()
    await indexAll(storage, index, { fr: 'Rendez-vous au café', en: 'She preferred the meetings in the morning', zh: '北京大学的学生喜欢喝茶' })
    expect(ids(await index.search('CAFE'))).toEqual(['fr'])
    expect(ids(await index.search('prefers meeting'))).toEqual(['en'])
    expect(ids(await index.search('大学'))).toEqual(['zh'])
    expect(ids(await index.search('喝茶'))).toEqual(['zh'])
  })

  it('bounds a posting group by its largest term frequency and smallest length', async () => {
    // x: tf 71, length 213; z: tf 66, length 212. They sit in different length buckets, and x
    // (the better one) in the bucket of lesser bound; a bound taken at its smallest tf would
    // stop the search after z.
    const filler = (count: number) => Array.from({ length: count }, (_, i) => `f${i}`).join(' ')
    const { storage, index } = await memoryIndex()
    await indexAll(storage, index, { x: `${'term '.repeat(71)}${filler(142)}`, z: `${'term '.repeat(66)}${filler(146)}` })
    expect(ids(await index.search('term', { limit: 1 }))).toEqual(['x'])
  })

  it('bounds what is left of a length bucket by its smallest length, not by the last one read', async () => {
    // Lengths 64…71 share a bucket, read in id order: p3 (71) comes before p4 (64), the best.
    const filler = (count: number, tag: string) => Array.from({ length: count }, (_, i) => `${tag}${i}`).join(' ')
    const { storage, index } = await memoryIndex()
    await indexAll(storage, index, { p1: `term ${filler(65, 'a')}`, p2: `term ${filler(65, 'b')}`, p3: `term ${filler(70, 'c')}`, p4: `term ${filler(63, 'd')}` })
    expect(ids(await index.search('term', { limit: 2 }))).toEqual(['p4', 'p1'])
  })

  it('breaks an exact tie across two terms\' lists by id, even when the tie sits at the stopping bound', async () => {
    const { storage, index } = await memoryIndex()
    await indexAll(storage, index, { b: 'lime pebble', a: 'kiwi gravel' })
    expect(ids(await index.search('lime kiwi', { limit: 1 }))).toEqual(['a'])
  })

  it('finds nothing for an empty or stopword-only query', async () => {
    const { storage, index } = await memoryIndex()
    await indexAll(storage, index, { a: 'the cat is on the mat' })
    expect(await index.search('')).toEqual([])
    expect(await index.search('  the, and of  ')).toEqual([])
  })
})

describe('TextIndex updates', () => {
  it('forgets the old terms of an updated document', async () => {
    const { storage, index } = await memoryIndex()
    await storage.write(await index.planUpdate('a', undefined, 'alpha gamma'))
    await storage.write(await index.planUpdate('a', 'alpha gamma', 'beta gamma'))
    expect(await index.search('alpha')).toEqual([])
    expect(ids(await index.search('beta'))).toEqual(['a'])
    expect(ids(await index.search('gamma'))).toEqual(['a'])
  })

  it('never returns a removed document, whatever is indexed after it', async () => {
    const { storage, index } = await memoryIndex()
    await indexAll(storage, index, { a: 'orchid', b: 'orchid fern' })
    await storage.write(await index.planUpdate('a', 'orchid', undefined))
    expect(ids(await index.search('orchid'))).toEqual(['b'])
    await indexAll(storage, index, { c: 'orchid', d: 'orchid orchid' })
    expect(ids(await index.search('orchid', { limit: 100 }))).toEqual(['d', 'c', 'b'])
    expect(await index.planUpdate('a', undefined, undefined)).toEqual([])
  })

  it('leaves no key behind once every document is removed', async () => {
    const { storage, index } = await memoryIndex()
    await indexAll(storage, index, { a: 'one two three', b: 'two three', c: 'the' })
    await apply(storage, index, [{ id: 'a' }, { id: 'b' }, { id: 'c' }])
    expect(await dump(storage)).toEqual([])
  })

  it('plans nothing for an unchanged text, a reordered one or one with no terms, and stays equal to a rebuild', async () => {
    const { storage, index } = await memoryIndex()
    await indexAll(storage, index, { a: 'stable text' })
    expect(await index.planUpdate('a', 'stable text', 'Stable  TEXT!')).toEqual([])
    expect(await index.planUpdate('a', 'stable text', 'text, stable')).toEqual([])
    expect(await index.planUpdate('b', undefined, 'the and of')).toEqual([])
    const rebuilt = await memoryIndex()
    await indexAll(rebuilt.storage, rebuilt.index, { a: 'text, stable' })
    expect(await dump(storage)).toEqual(await dump(rebuilt.storage))
  })

  it('trusts its stored entry over a stale previous text', async () => {
    const { storage, index } = await memoryIndex()
    await indexAll(storage, index, { a: 'alpha', b: 'beta' })
    await storage.write(await index.planUpdate('a', 'something else entirely', 'gamma'))
    const documents = new Map([['a', 'gamma'], ['b', 'beta']])
    expect(await index.search('alpha')).toEqual([])
    expect(await index.search('gamma beta')).toEqual(naiveSearch(documents, 'gamma beta'))
  })

  it('applies several changes to one id in one plan in order', async () => {
    const { storage, index } = await memoryIndex()
    await apply(storage, index, [{ id: 'a', next: 'red' }, { id: 'b', next: 'red blue' }, { id: 'a', next: 'blue' }, { id: 'b' }, { id: 'b', next: 'red' }])
    expect(ids(await index.search('red'))).toEqual(['b'])
    expect(ids(await index.search('blue'))).toEqual(['a'])
  })

  it('keeps indexes under different prefixes of one storage apart, and two objects over one prefix agree', async () => {
    const { storage, index } = await memoryIndex('s1:x:')
    const other = new TextIndex(storage, 's1:y:')
    await indexAll(storage, index, { a: 'kiwi' })
    await indexAll(storage, other, { b: 'kiwi mango' })
    expect(ids(await index.search('kiwi'))).toEqual(['a'])
    expect(ids(await other.search('kiwi'))).toEqual(['b'])
    // A second object plans from what the first one stored (global statistics come from storage).
    const twin = new TextIndex(storage, 's1:x:')
    await indexAll(storage, twin, { c: 'kiwi kiwi' })
    expect(await index.search('kiwi')).toEqual(await twin.search('kiwi'))
    expect(await index.search('kiwi')).toEqual(naiveSearch(new Map([['a', 'kiwi'], ['c', 'kiwi kiwi']]), 'kiwi'))
  })

  it('caps a huge document at MAX_TOKENS_PER_DOCUMENT terms', async () => {
    const { storage, index } = await memoryIndex()
    const words = Array.from({ length: 3 * MAX_TOKENS_PER_DOCUMENT }, (_, i) => `w${i}`)
    const writes = await index.planUpdate('huge', undefined, words.join(' '))
    // A posting and a histogram per term, plus the document entry and the stats.
    expect(writes.length).toBe(2 * MAX_TOKENS_PER_DOCUMENT + 2)
    await storage.write(writes)
    expect(ids(await index.search('w10'))).toEqual(['huge'])
    expect(await index.search(`w${MAX_TOKENS_PER_DOCUMENT + 10}`)).toEqual([])
  })
})

const VOCABULARY = ['coffee', 'coffees', 'tea', 'milk', 'sugar', 'dark', 'roast', 'morning', 'the', 'and', 'alpha', 'beta', '北京大学', 'café', 'cafe', '42']
const word = fc.constantFrom(...VOCABULARY)
const text = fc.oneof(
  fc.array(word, { maxLength: 8 }).map((words) => words.join(' ')),
  fc.array(word, { minLength: 55, maxLength: 90 }).map((words) => words.join(' ')), // lengths past the exact buckets
  fc.tuple(word, fc.integer({ min: 60, max: 75 })).map(([w, n]) => `${w} `.repeat(n)), // term frequencies past them
)
const change = fc.record({
  id: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'id:1', 'id;2', 'é'),
  next: fc.option(text, { nil: undefined }),
  previous: fc.option(fc.constantFrom('stale', 'coffee'), { nil: undefined }),
})

describe('TextIndex properties', () => {
  it('any sequence of batched plans searches exactly like naive BM25 over the final documents, and equals a rebuild byte for byte', async () => {
    await fc.assert(fc.asyncProperty(
      fc.array(fc.array(change, { minLength: 1, maxLength: 6 }), { maxLength: 8 }),
      fc.array(fc.tuple(fc.subarray(VOCABULARY, { minLength: 1, maxLength: 4 }), fc.integer({ min: 1, max: 6 }), fc.subarray(['a', 'b', 'c', 'd', 'e', 'id:1', 'id;2', 'é'])), { minLength: 1, maxLength: 4 }),
      async (batches, queries) => {
        const { storage, index } = await memoryIndex()
        const documents = new Map<string, string>()
        for (const batch of batches) {
          await apply(storage, index, batch)
          for (const { id, next } of batch) {
            if (next === undefined) documents.delete(id)
            else documents.set(id, next)
          }
        }
        for (const [terms, limit, accepted] of queries) {
          const query = terms.join(' ')
          expect(await index.search(query, { limit })).toEqual(naiveSearch(documents, query, limit))
          const accept = (id: string) => accepted.includes(id)
          expect(await index.search(query, { limit, filter: accept })).toEqual(naiveSearch(documents, query, limit, accept))
        }
        const rebuilt = await memoryIndex()
        await apply(rebuilt.storage, rebuilt.index, [...documents].map(([id, next]) => ({ id, next })))
        expect(await dump(storage)).toEqual(await dump(rebuilt.storage))
        await storage.close()
        await rebuilt.storage.close()
      },
    ), { numRuns: 150 })
  })
})

const QUERIES = ['word0', 'word1 word2', 'word0 word150', 'word299', 'word3 word40 word200 word7', 'word12 word12', 'nothing']

describe('TextIndex on disk', () => {
  it('reopens with identical results and keeps updating correctly', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'cairn-text-index-'))
    roots.push(dir)
    const documents = corpus(7, 400)
    let storage = await LevelLogStorage.openDisk(dir)
    storages.push(storage)
    const entries = [...documents].map(([id, next]) => ({ id, next }))
    for (let i = 0; i < entries.length; i += 100) await apply(storage, new TextIndex(storage, PREFIX), entries.slice(i, i + 100))
    const before = await Promise.all(QUERIES.map((query) => new TextIndex(storage, PREFIX).search(query, { limit: 20 })))
    await storage.close()

    storage = await LevelLogStorage.openDisk(dir)
    storages.push(storage)
    const reopened = new TextIndex(storage, PREFIX)
    const after = await Promise.all(QUERIES.map((query) => reopened.search(query, { limit: 20 })))
    expect(after).toEqual(before)
    QUERIES.forEach((query, i) => expect(after[i], query).toEqual(naiveSearch(documents, query, 20)))

    await apply(storage, reopened, [{ id: 'doc-00001' }, { id: 'doc-00002', next: 'word299 word299' }])
    documents.delete('doc-00001')
    documents.set('doc-00002', 'word299 word299')
    for (const query of QUERIES) expect(await reopened.search(query, { limit: 20 }), query).toEqual(naiveSearch(documents, query, 20))
  })
})

describe('TextIndex search', () => {
  it('fills the limit through a selective filter, sync or async, asking it only about would-be hits', async () => {
    const { storage, index } = await memoryIndex()
    const documents = corpus(11, 600)
    await indexAll(storage, index, Object.fromEntries(documents))
    const accept = (id: string) => Number(id.slice(4)) % 13 === 0
    const asked: string[] = []
    const hits = await index.search('word0 word5', { filter: async (id) => (asked.push(id), accept(id)) })
    expect(hits).toHaveLength(10)
    expect(hits).toEqual(naiveSearch(documents, 'word0 word5', 10, accept))
    expect(await index.search('word0 word5', { filter: accept })).toEqual(hits)
    const matching = [...documents].filter(([, t]) => /\bword[05]\b/.test(t)).map(([id]) => id)
    expect(asked.every((id) => matching.includes(id))).toBe(true)
    expect(asked.length).toBeLessThan(matching.length)
  })

  it('agrees with naive BM25 on a Zipf corpus for many queries, limits and filters', async () => {
    const { storage, index } = await memoryIndex()
    const documents = corpus(5, 3000)
    const entries = [...documents].map(([id, next]) => ({ id, next }))
    for (let i = 0; i < entries.length; i += 500) await apply(storage, index, entries.slice(i, i + 500))
    const naive = new NaiveBm25(documents)
    const random = new SeededRandom(17)
    for (let i = 0; i < 120; i++) {
      // Mostly common words (where the search stops early), some rare ones.
      const words = Array.from({ length: random.int(1, 4) }, () => `word${Math.floor(300 * random.next() ** 2)}`)
      const query = words.join(' ')
      const limit = random.pick([1, 3, 10, 25])
      const modulus = random.int(2, 9)
      const accept = (id: string) => Number(id.slice(4)) % modulus === 0
      expect(await index.search(query, { limit }), query).toEqual(naive.search(query, limit))
      expect(await index.search(query, { limit, filter: accept }), `${query} filtered`).toEqual(naive.search(query, limit, accept))
    }
  })

  it('reads a small part of a common term\'s postings for a top-10 query', async () => {
    const memory = await memoryIndex()
    const { storage, entriesRead: read } = countingStorage(memory.storage)
    const index = new TextIndex(storage, PREFIX)
    const random = new SeededRandom(3)
    const documents = new Map<string, string>()
    for (let i = 0; i < 3000; i++) documents.set(`d${i}`, `common ${Array.from({ length: random.int(2, 30) }, () => `f${random.int(0, 500)}`).join(' ')}`)
    documents.set('d-rare-1', 'common rare')
    documents.set('d-rare-2', 'rare f1 f2 f3')
    await indexAll(storage, index, Object.fromEntries(documents))
    for (const query of ['common', 'common rare']) {
      const start = read()
      expect(await index.search(query), query).toEqual(naiveSearch(documents, query))
      expect(read() - start, query).toBeLessThan(300)
    }
  })

  it('refuses a query that is not a string and bad options with InputError, changing nothing', async () => {
    const { storage, index } = await memoryIndex()
    await indexAll(storage, index, { a: 'alpha' })
    const before = await dump(storage)
    for (const { name, value } of badValues()) {
      const query = index.search(value as string)
      if (typeof value === 'string') await expect(query, name).resolves.toBeInstanceOf(Array)
      else await expect(query, name).rejects.toSatisfy((error: unknown) => error instanceof InputError && error.code === 'WRONG_TYPE')
      const options = index.search('alpha', value as never)
      if (value === undefined || (isPlainObject(value) && Object.keys(value).length === 0)) await expect(options, name).resolves.toHaveLength(1)
      else await expect(options, name).rejects.toBeInstanceOf(InputError)
    }
    for (const limit of [0, 1001, 1.5, '3']) await expect(index.search('alpha', { limit: limit as number })).rejects.toBeInstanceOf(InputError)
    await expect(index.search('alpha', { filter: 'yes' as never })).rejects.toBeInstanceOf(InputError)
    expect(await dump(storage)).toEqual(before)
  })

  it('refuses bad changes and prefixes with InputError before reading or planning anything', async () => {
    const { storage, index } = await memoryIndex()
    await indexAll(storage, index, { a: 'alpha' })
    for (const { name, value } of badValues()) {
      if (Array.isArray(value) && value.length === 0) {
        await expect(index.planUpdates(value)).resolves.toEqual([])
        continue
      }
      await expect(index.planUpdates(value as never), name).rejects.toBeInstanceOf(InputError)
      await expect(index.planUpdates([value] as never), name).rejects.toBeInstanceOf(InputError)
      const withText = index.planUpdates([{ id: 'a', next: 'ok' }, { id: 'b', next: value }] as never)
      if (typeof value === 'string' || value === undefined) await expect(withText, name).resolves.toBeInstanceOf(Array)
      else await expect(withText, name).rejects.toBeInstanceOf(InputError)
      if (typeof value !== 'string' || value === '') await expect(index.planUpdate(value as string, undefined, 'x'), name).rejects.toBeInstanceOf(InputError)
    }
    for (const { name, value } of badValues()) {
      if (typeof value === 'string') expect(() => new TextIndex(storage, value), name).not.toThrow()
      else expect(() => new TextIndex(storage, value as never), name).toThrow(InputError)
    }
    expect(ids(await index.search('alpha'))).toEqual(['a'])
  })
})

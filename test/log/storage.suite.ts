/**
 * The shared suite every `LogStorage` implementation runs (see src/log/storage.ts). It pins the
 * contract the log store relies on: missing keys read as `undefined`, values come back as the
 * exact bytes written, a `write` batch is all-or-nothing with later writes winning, ranges over
 * string keys honour gt/gte/lt/lte/reverse/limit in byte order (the store's keys are
 * `<64 hex>:<table>:…` with fixed-width hex numbers, bounded above by `prefix + '\u{10FFFF}'`),
 * `compact` loses no live data, and a closed storage refuses work with a `StorageError`.
 *
 * Over the 400-line mark on purpose: it is one contract, and a new backend should find all of
 * it in one place.
 *
 * Usage, from an implementation's test file:
 *   runStorageSuite('level on disk', () => LevelLogStorage.openDisk(freshDir()), { reopen })
 */
import { afterEach, describe, expect, it } from 'vitest'
import { StorageError } from '../../src/errors.js'
import type { LogStorage, StorageRange, StorageWrite } from '../../src/log/storage.js'
import { keys as storeKeys, seqKey } from '../../src/log/store-keys.js'

export interface StorageSuiteOptions {
  /** Reopens a closed storage at the same location; given for implementations that persist. */
  readonly reopen?: (closed: LogStorage) => Promise<LogStorage>
  /**
   * Titles of tests that fail today because of a known bug in the implementation. They run
   * with `it.fails`, so they turn red once the bug is fixed: then delete the title here.
   */
  readonly knownFailures?: readonly string[]
}

type TestBody = () => Promise<void>

// Two space ids, an author key and event ids in the store's real shapes (64 lowercase hex).
const SPACE_A = '1a'.repeat(32)
const SPACE_B = 'b2'.repeat(32)
const AUTHOR = 'c3'.repeat(32)
const EVENT_IDS = ['00', '0f', '7e', 'a0', 'ff'].map((byte, i) => `${byte}${String(i).repeat(62)}`)
/** Seqs chosen around hex digit boundaries, where unpadded hex would sort wrongly. */
const SEQS = [1, 2, 9, 10, 15, 16, 17, 255, 256, 4095, 4096, 2 ** 32, 2 ** 53 - 1]

const end = (prefix: string): string => `${prefix}\u{10FFFF}`

function bytesOf(...values: number[]): Uint8Array {
  return Uint8Array.from(values)
}

/** Deterministic pseudo-random bytes (xorshift32), so failures reproduce. */
export function patternBytes(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length)
  let state = seed >>> 0 || 1
  for (let i = 0; i < length; i++) {
    state ^= state << 13
    state ^= state >>> 17
    state ^= state << 5
    out[i] = state & 0xff
  }
  return out
}

function hex(value: Uint8Array | undefined): string | undefined {
  return value === undefined ? undefined : Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex')
}

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = []
  for await (const item of iterable) out.push(item)
  return out
}

async function expectStorageError(promise: Promise<unknown>): Promise<void> {
  const error = await promise.then(() => undefined, (caught: unknown) => caught)
  expect(error, 'expected a StorageError').toBeInstanceOf(StorageError)
}

/** The layout the store uses, plus neighbours that a sloppy range would let in. */
function layoutKeys(): string[] {
  const out = [
    storeKeys.meta(SPACE_A),
    storeKeys.flag(SPACE_A, AUTHOR),
    storeKeys.meta(SPACE_B),
    storeKeys.spaceEntry(SPACE_A),
    storeKeys.spaceEntry(SPACE_B),
    // Neighbours of the `${A}:e:` prefix: one char past ':' and a non-ASCII continuation.
    `${SPACE_A}:e;`,
    `${SPACE_A}:e`,
    `${SPACE_A}:e:\u00e9`,
  ]
  for (const id of EVENT_IDS) out.push(storeKeys.event(SPACE_A, id), storeKeys.event(SPACE_B, id))
  for (const seq of SEQS) out.push(storeKeys.run(SPACE_A, AUTHOR, seq), storeKeys.order(SPACE_A, seq))
  return out
}

/** Code-point order equals UTF-8 byte order; our keys are BMP-only, where code units agree. */
function sorted(list: readonly string[]): string[] {
  return [...list].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
}

function inRange(key: string, range: StorageRange): boolean {
  if (range.gt !== undefined && !(key > range.gt)) return false
  if (range.gte !== undefined && !(key >= range.gte)) return false
  if (range.lt !== undefined && !(key < range.lt)) return false
  if (range.lte !== undefined && !(key <= range.lte)) return false
  return true
}

/** What a range should yield, computed without the storage. */
function expectedKeys(all: readonly string[], range: StorageRange): string[] {
  let out = sorted(all.filter((key) => inRange(key, range)))
  if (range.reverse) out.reverse()
  if (range.limit !== undefined && range.limit >= 0) out = out.slice(0, range.limit)
  return out
}

/** Each key's value: the key's own bytes, so a value can be checked against its key. */
function valueFor(key: string): Uint8Array {
  return new TextEncoder().encode(`value of ${key}`)
}

export function runStorageSuite(name: string, open: () => Promise<LogStorage>, options: StorageSuiteOptions = {}): void {
  const known = new Set(options.knownFailures ?? [])
  const used = new Set<string>()
  const test = (title: string, body: TestBody): void => {
    used.add(title)
    if (known.has(title)) it.fails(title, body)
    else it(title, body)
  }

  describe(`LogStorage suite: ${name}`, () => {
    const handles: LogStorage[] = []
    const fresh = async (): Promise<LogStorage> => {
      const storage = await open()
      handles.push(storage)
      return storage
    }
    afterEach(async () => {
      for (const storage of handles.splice(0)) await storage.close().catch(() => undefined)
    })

    async function filled(): Promise<{ storage: LogStorage; all: string[] }> {
      const storage = await fresh()
      const all = layoutKeys()
      // Written in two batches in scrambled order: order of writing must not matter.
      const scrambled = [...all].reverse()
      const half = Math.floor(scrambled.length / 2)
      await storage.write(scrambled.slice(0, half).map((key) => ({ type: 'put', key, value: valueFor(key) })))
      await storage.write(scrambled.slice(half).map((key) => ({ type: 'put', key, value: valueFor(key) })))
      return { storage, all }
    }

    async function expectRange(storage: LogStorage, all: readonly string[], range: StorageRange): Promise<void> {
      const want = expectedKeys(all, range)
      expect(await collect(storage.keys(range)), `keys(${JSON.stringify(range)})`).toEqual(want)
      const entries = await collect(storage.entries(range))
      expect(entries.map(([key]) => key), `entries(${JSON.stringify(range)})`).toEqual(want)
      for (const [key, value] of entries) expect(hex(value)).toBe(hex(valueFor(key)))
      const batches = await collect(storage.valueBatches(range))
      for (const batch of batches) expect(batch.length, `valueBatches(${JSON.stringify(range)}): an empty batch`).toBeGreaterThan(0)
      expect(batches.flat().map(hex), `valueBatches(${JSON.stringify(range)})`).toEqual(want.map((key) => hex(valueFor(key))))
      const entryBatches = await collect(storage.entryBatches(range))
      for (const batch of entryBatches) expect(batch.length, `entryBatches(${JSON.stringify(range)}): an empty batch`).toBeGreaterThan(0)
      expect(entryBatches.flat().map(([key, value]) => `${key}=${hex(value)}`), `entryBatches(${JSON.stringify(range)})`).toEqual(want.map((key) => `${key}=${hex(valueFor(key))}`))
    }

    test('names where its data lives', async () => {
      const storage = await fresh()
      expect(typeof storage.location).toBe('string')
      expect(storage.location.length).toBeGreaterThan(0)
    })

    describe('reads', () => {
      test('get returns undefined for a key never written', async () => {
        const storage = await fresh()
        expect(await storage.get(storeKeys.meta(SPACE_A))).toBeUndefined()
        expect(await storage.get('')).toBeUndefined()
      })

      test('getMany answers missing keys with undefined and present ones with their values, in the order asked', async () => {
        const storage = await fresh()
        const a = storeKeys.event(SPACE_A, EVENT_IDS[0] as string)
        const b = storeKeys.event(SPACE_A, EVENT_IDS[1] as string)
        const missing = storeKeys.event(SPACE_A, EVENT_IDS[2] as string)
        await storage.write([{ type: 'put', key: a, value: bytesOf(1) }, { type: 'put', key: b, value: bytesOf(2, 2) }])
        expect(await storage.getMany([])).toEqual([])
        const got = await storage.getMany([b, missing, a, b])
        expect(got.map(hex)).toEqual(['0202', undefined, '01', '0202'])
        expect(got).toHaveLength(4)
      })

      test('getMany gives the same answers for a few keys and for many (reads small and large go different ways)', async () => {
        const storage = await fresh()
        const stored = Array.from({ length: 40 }, (_, i) => `k:${String(i).padStart(2, '0')}`)
        await storage.write(stored.filter((_, i) => i % 3 !== 0).map((key, i) => ({ type: 'put' as const, key, value: bytesOf(i + 1) })))
        const expected = new Map<string, string | undefined>()
        for (const key of stored) expected.set(key, hex(await storage.get(key)))
        for (const size of [1, 7, 8, 9, 16, 40]) {
          const asked = stored.slice(0, size).reverse()
          expect((await storage.getMany(asked)).map(hex)).toEqual(asked.map((key) => expected.get(key)))
        }
        expect([...expected.values()].filter((value) => value === undefined)).toHaveLength(14)
      })

      test('a key differing from a stored key only by a suffix or case is missing', async () => {
        const storage = await fresh()
        const key = storeKeys.event(SPACE_A, EVENT_IDS[3] as string)
        await storage.write([{ type: 'put', key, value: bytesOf(7) }])
        expect(await storage.get(`${key}0`)).toBeUndefined()
        expect(await storage.get(key.slice(0, -1))).toBeUndefined()
        expect(await storage.get(key.toUpperCase())).toBeUndefined()
        expect(hex(await storage.get(key))).toBe('07')
      })
    })

    describe('values', () => {
      const cases: [string, Uint8Array][] = [
        ['empty', new Uint8Array(0)],
        ['one zero byte', bytesOf(0)],
        ['every byte value', Uint8Array.from({ length: 256 }, (_, i) => i)],
        ['bytes that are not UTF-8', bytesOf(0xff, 0xfe, 0xc3, 0x28, 0xed, 0xa0, 0x80)],
        ['1 MiB of noise', patternBytes(1024 * 1024, 7)],
        ['a Buffer', Buffer.from('cafe00babe', 'hex')],
      ]

      test('values round-trip byte for byte through get, getMany and entries', async () => {
        const storage = await fresh()
        const writes: StorageWrite[] = cases.map(([label, value]) => ({ type: 'put', key: `v:${label}`, value }))
        await storage.write(writes)
        for (const [label, value] of cases) {
          const got = await storage.get(`v:${label}`)
          expect(got, label).toBeInstanceOf(Uint8Array)
          expect(got?.byteLength, label).toBe(value.byteLength)
          expect(hex(got), label).toBe(hex(value))
        }
        const many = await storage.getMany(cases.map(([label]) => `v:${label}`))
        expect(many.map(hex)).toEqual(cases.map(([, value]) => hex(value)))
        const listed = new Map(await collect(storage.entries({ gte: 'v:', lt: end('v:') })))
        for (const [label, value] of cases) expect(hex(listed.get(`v:${label}`)), label).toBe(hex(value))
      })

      test('a value written from a view into a larger buffer stores only the view', async () => {
        const storage = await fresh()
        const backing = bytesOf(9, 9, 1, 2, 3, 9, 9)
        await storage.write([{ type: 'put', key: 'view', value: backing.subarray(2, 5) }])
        expect(hex(await storage.get('view'))).toBe('010203')
      })

      test('a stored value does not change when the caller later mutates the array it wrote', async () => {
        const storage = await fresh()
        const value = bytesOf(1, 2, 3)
        await storage.write([{ type: 'put', key: 'k', value }])
        value[0] = 99
        expect(hex(await storage.get('k'))).toBe('010203')
      })

      test('a stored value does not change when the caller mutates an array it read', async () => {
        const storage = await fresh()
        await storage.write([{ type: 'put', key: 'k', value: bytesOf(1, 2, 3) }])
        const first = await storage.get('k')
        if (first) first[0] = 99
        const [viaMany] = await storage.getMany(['k'])
        if (viaMany) viaMany[1] = 99
        for await (const [, value] of storage.entries({ gte: 'k', lte: 'k' })) value[2] = 99
        for await (const batch of storage.valueBatches({ gte: 'k', lte: 'k' })) (batch[0] as Uint8Array)[0] = 98
        for await (const batch of storage.entryBatches({ gte: 'k', lte: 'k' })) ((batch[0] as readonly [string, Uint8Array])[1])[1] = 97
        expect(hex(await storage.get('k'))).toBe('010203')
      })

      test('scans read a range longer than one batch in order, each entry once', async () => {
        const storage = await fresh()
        // More entries, and more bytes, than one batch or one read-ahead holds (entry and key
        // scans read batches of growing size: this crosses every step).
        const keys = Array.from({ length: 2_600 }, (_, i) => `b:${String(i).padStart(5, '0')}`)
        const valueOf = (i: number): Uint8Array => patternBytes(200 + (i % 1_000), i)
        await storage.write(keys.map((key, i) => ({ type: 'put', key, value: valueOf(i) })))
        const values = keys.map((_, i) => hex(valueOf(i)))
        const batches = await collect(storage.valueBatches({ gte: 'b:', lt: end('b:') }))
        expect(batches.length).toBeGreaterThan(1)
        expect(batches.flat().map(hex)).toEqual(values)
        const reversed = await collect(storage.valueBatches({ gte: 'b:', lt: end('b:'), reverse: true, limit: 1_500 }))
        expect(reversed.flat().map(hex)).toEqual([...values].reverse().slice(0, 1_500))
        const entries = await collect(storage.entries({ gte: 'b:', lt: end('b:') }))
        expect(entries.map(([key]) => key)).toEqual(keys)
        expect(entries.map(([, value]) => hex(value))).toEqual(values)
        const entryBatches = await collect(storage.entryBatches({ gte: 'b:', lt: end('b:') }))
        expect(entryBatches.length).toBeGreaterThan(1)
        expect(entryBatches.flat().map(([key, value]) => `${key}=${hex(value)}`)).toEqual(keys.map((key, i) => `${key}=${values[i]}`))
        expect(await collect(storage.keys({ gte: 'b:', lt: end('b:') }))).toEqual(keys)
        const reversedEntries = await collect(storage.entries({ gte: 'b:', lt: end('b:'), reverse: true, limit: 1_500 }))
        expect(reversedEntries.map(([key]) => key)).toEqual([...keys].reverse().slice(0, 1_500))
        expect(await collect(storage.keys({ gt: 'b:00070', lt: end('b:'), limit: 700 }))).toEqual(keys.slice(71, 771))
        // Stopping in the middle of a later batch, then scanning again.
        let seen = 0
        for await (const [key] of storage.entries({ gte: 'b:', lt: end('b:') })) if (++seen === 1_200) { expect(key).toBe(keys[1_199]); break }
        expect((await collect(storage.keys({ gte: 'b:', lt: end('b:') }))).length).toBe(keys.length)
        // Value batches are read one ahead: stopping after the first, with the next one on its
        // way, closes cleanly, and a write and a full scan afterwards see everything.
        for await (const batch of storage.valueBatches({ gte: 'b:', lt: end('b:') })) {
          expect(hex(batch[0])).toBe(values[0])
          break
        }
        await storage.write([{ type: 'put', key: 'b:99999', value: bytesOf(9) }])
        expect((await collect(storage.valueBatches({ gte: 'b:', lt: end('b:') }))).flat().map(hex)).toEqual([...values, '09'])
      })
    })

    describe('atomic writes', () => {
      test('one write applies puts and dels together', async () => {
        const storage = await fresh()
        await storage.write([
          { type: 'put', key: 'a', value: bytesOf(1) },
          { type: 'put', key: 'b', value: bytesOf(2) },
          { type: 'put', key: 'c', value: bytesOf(3) },
        ])
        await storage.write([
          { type: 'del', key: 'a' },
          { type: 'put', key: 'b', value: bytesOf(20) },
          { type: 'put', key: 'd', value: bytesOf(4) },
          { type: 'del', key: 'never-written' },
        ])
        expect((await storage.getMany(['a', 'b', 'c', 'd', 'never-written'])).map(hex)).toEqual([undefined, '14', '03', '04', undefined])
        expect(await collect(storage.keys({}))).toEqual(['b', 'c', 'd'])
      })

      test('within one write a later operation on a key wins over an earlier one', async () => {
        const storage = await fresh()
        await storage.write([{ type: 'put', key: 'z', value: bytesOf(0) }])
        await storage.write([
          { type: 'put', key: 'x', value: bytesOf(1) },
          { type: 'put', key: 'x', value: bytesOf(2) },
          { type: 'put', key: 'y', value: bytesOf(1) },
          { type: 'del', key: 'y' },
          { type: 'del', key: 'z' },
          { type: 'put', key: 'z', value: bytesOf(3) },
        ])
        expect((await storage.getMany(['x', 'y', 'z'])).map(hex)).toEqual(['02', undefined, '03'])
      })

      test('an empty write changes nothing', async () => {
        const { storage, all } = await filled()
        await storage.write([])
        expect(await collect(storage.keys({}))).toEqual(sorted(all))
      })

      test('overwriting a key keeps one entry with the newest value', async () => {
        const storage = await fresh()
        for (let i = 0; i < 5; i++) await storage.write([{ type: 'put', key: 'k', value: bytesOf(i) }])
        expect(await collect(storage.entries({})).then((list) => list.map(([key, value]) => [key, hex(value)]))).toEqual([['k', '04']])
      })

      test('a write holding a malformed operation fails with a StorageError and applies none of it', async () => {
        const storage = await fresh()
        await storage.write([{ type: 'put', key: 'kept', value: bytesOf(1) }])
        const malformed = [
          { type: 'put', key: 'new', value: bytesOf(2) },
          { type: 'del', key: 'kept' },
          { type: 'put', key: 'broken', value: undefined },
        ] as unknown as StorageWrite[]
        await expectStorageError(storage.write(malformed))
        expect((await storage.getMany(['new', 'kept', 'broken'])).map(hex)).toEqual([undefined, '01', undefined])
      })

      test('a write holding an operation of no known type fails with a StorageError and applies none of it', async () => {
        const storage = await fresh()
        await storage.write([{ type: 'put', key: 'kept', value: bytesOf(1) }])
        // Neither a put nor a del: refused, not taken for either (a delete would lose `kept`).
        for (const type of ['delete', 'Put', undefined]) {
          const malformed = [
            { type: 'put', key: 'new', value: bytesOf(2) },
            { type, key: 'kept', value: bytesOf(3) },
          ] as unknown as StorageWrite[]
          await expectStorageError(storage.write(malformed))
          await expectStorageError(storage.writeDerived(malformed))
        }
        expect((await storage.getMany(['new', 'kept'])).map(hex)).toEqual([undefined, '01'])
      })

      test('writeDerived lands whole, after every write before it', async () => {
        const storage = await fresh()
        await storage.write([{ type: 'put', key: 'k', value: bytesOf(1) }, { type: 'put', key: 'gone', value: bytesOf(1) }])
        await storage.writeDerived([{ type: 'put', key: 'k', value: bytesOf(2) }, { type: 'del', key: 'gone' }, { type: 'put', key: 'new', value: bytesOf(3) }])
        await storage.write([{ type: 'put', key: 'after', value: bytesOf(4) }])
        expect((await storage.getMany(['k', 'gone', 'new', 'after'])).map(hex)).toEqual(['02', undefined, '03', '04'])
        expect(await collect(storage.keys({}))).toEqual(['after', 'k', 'new'])
        await expectStorageError(storage.writeDerived([{ type: 'put', key: 'bad', value: undefined }] as unknown as StorageWrite[]))
        expect(await storage.get('bad')).toBeUndefined()
      })

      test('a thousand-operation write lands whole', async () => {
        const storage = await fresh()
        const writes: StorageWrite[] = Array.from({ length: 1000 }, (_, i) => ({
          type: 'put', key: storeKeys.order(SPACE_A, i + 1), value: patternBytes(64, i + 1),
        }))
        await storage.write(writes)
        const listed = await collect(storage.entries({ gte: storeKeys.orderPrefix(SPACE_A), lt: end(storeKeys.orderPrefix(SPACE_A)) }))
        expect(listed).toHaveLength(1000)
        listed.forEach(([key, value], i) => {
          expect(key).toBe(storeKeys.order(SPACE_A, i + 1))
          expect(hex(value)).toBe(hex(patternBytes(64, i + 1)))
        })
      })
    })

    describe('ranges', () => {
      test('keys.end(prefix) is prefix + U+10FFFF, the bound this suite assumes', () => {
        expect(storeKeys.end('p:')).toBe(end('p:'))
        return Promise.resolve()
      })

      test('with no bounds every key is listed in byte order', async () => {
        const { storage, all } = await filled()
        await expectRange(storage, all, {})
      })

      // Scans over many records' prefixes (src/projection/prefix-scan.ts) rely on it: a store
      // ordering UTF-16 code units would put an emoji before U+E000 and hide a record's keys.
      test('keys order by their UTF-8 bytes: a character past U+FFFF after every BMP one', async () => {
        const storage = await fresh()
        const keys = ['k\u{1F600}', 'k\uE000', 'k\uFFFF', 'k~', 'k\u{10FFFF}', 'k\u00E9']
        await storage.write(keys.map((key) => ({ type: 'put', key, value: Uint8Array.of(1) })))
        const listed: string[] = []
        for await (const key of storage.keys({ gte: 'k', lt: 'l' })) listed.push(key)
        expect(listed).toEqual([...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))))
        expect(listed.indexOf('k\u{1F600}')).toBeGreaterThan(listed.indexOf('k\uFFFF'))
      })

      test('gte prefix and lt end(prefix) list exactly the keys with that prefix', async () => {
        const { storage, all } = await filled()
        const prefixes = [
          storeKeys.eventPrefix(SPACE_A), storeKeys.eventPrefix(SPACE_B), storeKeys.runPrefix(SPACE_A, AUTHOR),
          storeKeys.orderPrefix(SPACE_A), storeKeys.flagPrefix(SPACE_A), storeKeys.runsPrefix(SPACE_A), storeKeys.spaceEntryPrefix(), `${SPACE_A}:`, `${SPACE_B}:`,
        ]
        for (const prefix of prefixes) {
          const want = sorted(all.filter((key) => key.startsWith(prefix)))
          expect(want.length, prefix).toBeGreaterThan(0)
          expect(await collect(storage.keys({ gte: prefix, lt: end(prefix) })), prefix).toEqual(want)
          await expectRange(storage, all, { gte: prefix, lt: end(prefix) })
        }
      })

      test('fixed-width hex seq keys iterate in numeric order, both ways', async () => {
        const { storage } = await filled()
        const prefix = storeKeys.runPrefix(SPACE_A, AUTHOR)
        const forward = await collect(storage.keys({ gte: prefix, lt: end(prefix) }))
        expect(forward.map((key) => parseInt(key.slice(prefix.length), 16))).toEqual([...SEQS].sort((a, b) => a - b))
        const backward = await collect(storage.keys({ gte: prefix, lt: end(prefix), reverse: true }))
        expect(backward).toEqual([...forward].reverse())
        expect(seqKey(2 ** 53 - 1)).toHaveLength(seqKey(1).length)
      })

      test('gt and lt exclude their bounds; gte and lte include them', async () => {
        const { storage, all } = await filled()
        const low = storeKeys.run(SPACE_A, AUTHOR, 16)
        const high = storeKeys.run(SPACE_A, AUTHOR, 4096)
        await expectRange(storage, all, { gt: low, lt: high })
        await expectRange(storage, all, { gte: low, lte: high })
        await expectRange(storage, all, { gt: low, lte: high })
        await expectRange(storage, all, { gte: low, lt: high })
        const inclusive = await collect(storage.keys({ gte: low, lte: high }))
        expect(inclusive[0]).toBe(low)
        expect(inclusive[inclusive.length - 1]).toBe(high)
        const exclusive = await collect(storage.keys({ gt: low, lt: high }))
        expect(exclusive).toEqual(inclusive.slice(1, -1))
      })

      test('bounds between stored keys select the keys between them', async () => {
        const { storage, all } = await filled()
        // Bounds that are not stored keys: a seq that was never written, a half id.
        await expectRange(storage, all, { gte: storeKeys.run(SPACE_A, AUTHOR, 3), lte: storeKeys.run(SPACE_A, AUTHOR, 300) })
        await expectRange(storage, all, { gt: `${SPACE_A}:e:7`, lt: `${SPACE_A}:e:b` })
        await expectRange(storage, all, { lt: SPACE_B })
        await expectRange(storage, all, { gt: SPACE_B })
      })

      test('reverse lists the same range backwards', async () => {
        const { storage, all } = await filled()
        const prefix = `${SPACE_A}:`
        await expectRange(storage, all, { gte: prefix, lt: end(prefix), reverse: true })
        await expectRange(storage, all, { reverse: true })
        await expectRange(storage, all, { gt: storeKeys.run(SPACE_A, AUTHOR, 2), lte: storeKeys.run(SPACE_A, AUTHOR, 2 ** 32), reverse: true })
      })

      test('limit stops after that many entries, counted from the end when reversed', async () => {
        const { storage, all } = await filled()
        const prefix = storeKeys.eventPrefix(SPACE_A)
        for (const limit of [1, 2, 3, 100]) {
          await expectRange(storage, all, { gte: prefix, lt: end(prefix), limit })
          await expectRange(storage, all, { gte: prefix, lt: end(prefix), limit, reverse: true })
        }
        expect(await collect(storage.keys({ reverse: true, limit: 1 }))).toEqual([sorted(all).at(-1)])
      })

      test('reverse with lte and limit 1 finds the nearest key at or below a bound', async () => {
        const { storage } = await filled()
        const prefix = storeKeys.runPrefix(SPACE_A, AUTHOR)
        const nearest = async (seq: number): Promise<number | undefined> => {
          const found = await collect(storage.keys({ gte: prefix, lte: storeKeys.run(SPACE_A, AUTHOR, seq), reverse: true, limit: 1 }))
          return found[0] === undefined ? undefined : parseInt(found[0].slice(prefix.length), 16)
        }
        expect(await nearest(1)).toBe(1)
        expect(await nearest(11)).toBe(10)
        expect(await nearest(255)).toBe(255)
        expect(await nearest(300)).toBe(256)
        expect(await nearest(2 ** 40)).toBe(2 ** 32)
        expect(await nearest(2 ** 53 - 1)).toBe(2 ** 53 - 1)
        expect(await nearest(0)).toBeUndefined()
      })

      test('a range with nothing in it, or with crossed bounds, yields nothing', async () => {
        const { storage } = await filled()
        const empty = `${SPACE_A}:x:`
        expect(await collect(storage.keys({ gte: empty, lt: end(empty) }))).toEqual([])
        expect(await collect(storage.entries({ gte: empty, lt: end(empty), reverse: true }))).toEqual([])
        expect(await collect(storage.keys({ gte: SPACE_B, lt: SPACE_A }))).toEqual([])
        expect(await collect(storage.keys({ gt: 'k', lt: 'k' }))).toEqual([])
      })

      test('an empty storage lists nothing', async () => {
        const storage = await fresh()
        expect(await collect(storage.keys({}))).toEqual([])
        expect(await collect(storage.entries({ reverse: true }))).toEqual([])
      })

      test('deleted keys leave ranges', async () => {
        const { storage, all } = await filled()
        const gone = [storeKeys.event(SPACE_A, EVENT_IDS[1] as string), storeKeys.run(SPACE_A, AUTHOR, 256)]
        await storage.write(gone.map((key) => ({ type: 'del', key })))
        const rest = all.filter((key) => !gone.includes(key))
        await expectRange(storage, rest, {})
        await expectRange(storage, rest, { gte: storeKeys.runPrefix(SPACE_A, AUTHOR), lt: end(storeKeys.runPrefix(SPACE_A, AUTHOR)), reverse: true })
      })

      test('breaking out of an iteration early leaves the storage usable', async () => {
        const { storage, all } = await filled()
        for await (const key of storage.keys({})) {
          expect(key).toBe(sorted(all)[0])
          break
        }
        for await (const [key] of storage.entries({ reverse: true })) {
          expect(key).toBe(sorted(all).at(-1))
          break
        }
        for await (const batch of storage.valueBatches({})) {
          expect(hex(batch[0])).toBe(hex(valueFor(sorted(all)[0] as string)))
          break
        }
        await storage.write([{ type: 'put', key: 'after-break', value: valueFor('after-break') }])
        expect(hex(await storage.get('after-break'))).toBe(hex(valueFor('after-break')))
        await expectRange(storage, [...all, 'after-break'], {})
      })
    })

    describe('compaction', () => {
      test('compact keeps every live value, keeps deletions deleted and leaves other ranges alone', async () => {
        const storage = await fresh()
        const prefix = storeKeys.eventPrefix(SPACE_A)
        const other = storeKeys.eventPrefix(SPACE_B)
        const count = 600
        const key = (space: string, i: number): string => storeKeys.event(space, i.toString(16).padStart(64, '0'))
        const live = new Map<string, Uint8Array>()
        for (let round = 0; round < 3; round++) {
          const writes: StorageWrite[] = []
          for (let i = 0; i < count; i++) {
            for (const space of [SPACE_A, SPACE_B]) {
              const value = patternBytes(1024, round * 100_000 + i + (space === SPACE_B ? 50_000 : 0))
              writes.push({ type: 'put', key: key(space, i), value })
              live.set(key(space, i), value)
            }
          }
          await storage.write(writes)
        }
        const deletions: StorageWrite[] = []
        for (let i = 0; i < count; i += 3) {
          deletions.push({ type: 'del', key: key(SPACE_A, i) })
          live.delete(key(SPACE_A, i))
        }
        await storage.write(deletions)
        await storage.compact(prefix, end(prefix))
        await storage.compact(key(SPACE_B, 10), key(SPACE_B, 20))
        const listed = await collect(storage.entries({}))
        expect(listed.map(([k]) => k)).toEqual(sorted([...live.keys()]))
        for (const [k, value] of listed) expect(hex(value), k).toBe(hex(live.get(k)))
        expect(await collect(storage.keys({ gte: other, lt: end(other) }))).toHaveLength(count)
      })

      test('compacting a range that holds nothing, or an empty storage, is harmless', async () => {
        const empty = await fresh()
        await empty.compact(`${SPACE_A}:e:`, end(`${SPACE_A}:e:`))
        expect(await collect(empty.keys({}))).toEqual([])
        const { storage, all } = await filled()
        await storage.compact(`${SPACE_A}:x:`, end(`${SPACE_A}:x:`))
        await expectRange(storage, all, {})
      })
    })

    describe('closing', () => {
      test('close resolves', async () => {
        const storage = await fresh()
        await storage.write([{ type: 'put', key: 'k', value: bytesOf(1) }])
        await expect(storage.close()).resolves.toBeUndefined()
      })

      test('get on a closed storage fails with a StorageError', async () => {
        const storage = await fresh()
        await storage.close()
        await expectStorageError(storage.get('k'))
      })

      test('getMany on a closed storage fails with a StorageError, for a few keys and for many', async () => {
        const storage = await fresh()
        await storage.close()
        await expectStorageError(storage.getMany(['k']))
        await expectStorageError(storage.getMany(Array.from({ length: 20 }, (_, i) => `k${i}`)))
      })

      test('write on a closed storage fails with a StorageError', async () => {
        const storage = await fresh()
        await storage.close()
        await expectStorageError(storage.write([{ type: 'put', key: 'k', value: bytesOf(1) }]))
      })

      test('entries on a closed storage fails with a StorageError', async () => {
        const storage = await fresh()
        await storage.close()
        await expectStorageError((async () => collect(storage.entries({})))())
      })

      test('keys on a closed storage fails with a StorageError', async () => {
        const storage = await fresh()
        await storage.close()
        await expectStorageError((async () => collect(storage.keys({})))())
      })
    })

    const reopen = options.reopen
    if (reopen) {
      describe('persistence', () => {
        test('everything written before close is there after reopening, and nothing deleted', async () => {
          const { storage, all } = await filled()
          const gone = storeKeys.event(SPACE_A, EVENT_IDS[4] as string)
          const big = patternBytes(256 * 1024, 3)
          await storage.write([{ type: 'del', key: gone }, { type: 'put', key: 'big', value: big }])
          await storage.close()
          const again = await reopen(storage)
          handles.push(again)
          const rest = [...all.filter((key) => key !== gone)]
          expect(await collect(again.keys({}))).toEqual(sorted([...rest, 'big']))
          expect(hex(await again.get('big'))).toBe(hex(big))
          await expectRange(again, rest, { gte: `${SPACE_A}:`, lt: end(`${SPACE_A}:`) })
        })

        test('a writeDerived batch and the writes around it survive reopening, newest value winning', async () => {
          const storage = await fresh()
          await storage.write([{ type: 'put', key: 'k', value: bytesOf(1) }])
          await storage.writeDerived([{ type: 'put', key: 'k', value: bytesOf(2) }, { type: 'put', key: 'd', value: bytesOf(5) }])
          await storage.write([{ type: 'put', key: 'j', value: bytesOf(3) }])
          await storage.close()
          const again = await reopen(storage)
          handles.push(again)
          expect((await again.getMany(['k', 'd', 'j'])).map(hex)).toEqual(['02', '05', '03'])
        })

        test('compacted data survives reopening', async () => {
          const { storage, all } = await filled()
          await storage.write([{ type: 'del', key: storeKeys.meta(SPACE_A) }])
          await storage.compact(`${SPACE_A}:`, end(`${SPACE_A}:`))
          await storage.close()
          const again = await reopen(storage)
          handles.push(again)
          await expectRange(again, all.filter((key) => key !== storeKeys.meta(SPACE_A)), {})
        })
      })
    }

    test('lists no known failure that names no test', () => {
      expect([...known].filter((title) => !used.has(title))).toEqual([])
      return Promise.resolve()
    })
  })
}

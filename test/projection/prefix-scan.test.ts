import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { LevelLogStorage } from '../../src/log/level-storage.js'
import type { LogStorage } from '../../src/log/storage.js'
import { compareBytes, scanPrefixes } from '../../src/projection/prefix-scan.js'
import { escapeKeyPart, KEY_RANGE_END } from '../../src/projection/projection-keys.js'
import { countingStorage } from '../helpers/counting-storage.js'

const BASE = 'space:q:h:'

/** Counts the range reads (iterators) opened on `inner`. */
/** What one range read per prefix gives (the reads the scan replaces). */
async function perPrefix(storage: LogStorage, parts: readonly string[]): Promise<Map<string, [string, Uint8Array][]>> {
  const out = new Map<string, [string, Uint8Array][]>()
  for (const part of new Set(parts)) {
    const prefix = `${BASE}${part}:`
    const entries: [string, Uint8Array][] = []
    for await (const entry of storage.entries({ gte: prefix, lt: `${prefix}${KEY_RANGE_END}` })) entries.push(entry)
    if (entries.length > 0) out.set(part, entries)
  }
  return out
}

async function storeOf(records: ReadonlyMap<string, number>): Promise<LogStorage> {
  const storage = await LevelLogStorage.openMemory()
  const writes = [...records].flatMap(([part, count]) => Array.from({ length: count }, (_, i) => ({ type: 'put' as const, key: `${BASE}${part}:${String(i).padStart(4, '0')}`, value: Uint8Array.of(i) })))
  // Keys around the family, which no prefix may pick up.
  writes.push({ type: 'put', key: 'space:q:g:x', value: Uint8Array.of(1) }, { type: 'put', key: 'space:q:i:x', value: Uint8Array.of(2) })
  await storage.write(writes)
  return storage
}

// Ids with the characters that order differently in UTF-16 and UTF-8 (past U+FFFF), escaped
// ones (':' '%'), and ids that are prefixes of others ('a' and 'ab': 'a:' and 'ab:' are not).
const idChar = fc.constantFrom('a', 'b', 'z', ':', '%', '\u00e9', '\ue000', '\uffff', '\u{1F600}', '\u{10FFFF}')
const id = fc.array(idChar, { minLength: 1, maxLength: 4 }).map((chars) => escapeKeyPart(chars.join('')))

describe('scanPrefixes', () => {
  it('compares strings as their UTF-8 bytes', () => {
    fc.assert(fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (a, b) => {
      expect(Math.sign(compareBytes(a, b))).toBe(Math.sign(Buffer.compare(Buffer.from(a), Buffer.from(b))))
    }))
    expect(compareBytes('\uffff', '\u{1F600}')).toBeLessThan(0)
    expect(compareBytes('\u{1F600}', '\ue000')).toBeGreaterThan(0)
  })

  it('gives each prefix exactly what a range read of it gives, keys or entries', async () => {
    await fc.assert(fc.asyncProperty(
      fc.uniqueArray(fc.tuple(id, fc.integer({ min: 0, max: 40 })), { selector: ([part]) => part, maxLength: 40 }),
      fc.array(id, { maxLength: 30 }),
      async (stored, extra) => {
        const storage = await storeOf(new Map(stored))
        // Wanted: a random half of what is stored, ids stored under nothing, and duplicates.
        const wanted = [...stored.filter((_, i) => i % 2 === 0).map(([part]) => part), ...extra]
        const expected = await perPrefix(storage, wanted)
        expect(await scanPrefixes(storage, BASE, wanted, true)).toEqual(expected)
        const keys = await scanPrefixes(storage, BASE, wanted, false)
        expect(keys).toEqual(new Map([...expected].map(([part, entries]) => [part, entries.map(([key]) => key)])))
        // Told the prefixes are spread: one range each, the same answers.
        expect(await scanPrefixes(storage, BASE, wanted, true, { sparse: true })).toEqual(expected)
        expect(await scanPrefixes(storage, BASE, wanted, false, { sparse: true })).toEqual(keys)
      },
    ), { numRuns: 150 })
  })

  it('reads many dense prefixes with a few iterators, and sparse ones one range each', async () => {
    const parts = Array.from({ length: 1000 }, (_, i) => `ep_${String(i).padStart(5, '0')}`)
    const storage = await storeOf(new Map(parts.map((part) => [part, 3])))
    const dense = countingStorage(storage)
    const wanted = parts.slice(0, 600)
    const found = await scanPrefixes(dense.storage, BASE, wanted, true)
    expect(found).toEqual(await perPrefix(storage, wanted))
    // 32 runs of 19 prefixes (run concurrently), one iterator each: one range read per prefix was 600.
    expect(dense.ranges()).toBe(32)

    // Every 50th record: 147 keys of other records between two wanted ones, so each run falls back.
    const sparse = countingStorage(storage)
    const few = parts.filter((_, i) => i % 50 === 0)
    expect(await scanPrefixes(sparse.storage, BASE, few, false)).toEqual(new Map([...await perPrefix(storage, few)].map(([part, entries]) => [part, entries.map(([key]) => key)])))
    expect(sparse.ranges()).toBe(few.length)

    // A handful (a local forget's batch): one range each, reading only their own keys, not a
    // scan that reads past them into other records before it falls back.
    const handful = countingStorage(storage)
    const three = [parts[0], parts[500], parts[999]] as string[]
    expect(await scanPrefixes(handful.storage, BASE, three, true)).toEqual(await perPrefix(storage, three))
    expect({ ranges: handful.ranges(), keys: handful.entriesRead() }).toEqual({ ranges: 3, keys: 9 })
  })

  it('keeps at most 64 single-prefix reads open at once, however many sparse prefixes there are', async () => {
    const parts = Array.from({ length: 5000 }, (_, i) => `ep_${String(i).padStart(5, '0')}`)
    const storage = await storeOf(new Map(parts.map((part) => [part, 3])))
    const counting = countingStorage(storage)
    // Every 10th: 27 keys of other records between two wanted ones, so all 32 runs fall back.
    const scattered = parts.filter((_, i) => i % 10 === 0)
    expect(await scanPrefixes(counting.storage, BASE, scattered, true)).toEqual(await perPrefix(storage, scattered))
    expect(counting.ranges()).toBe(scattered.length)
    // 64 single reads and the 32 runs' own scans; one read per prefix at once was 500.
    expect(counting.mostOpen()).toBeLessThanOrEqual(64 + 32)

    // Told they are spread: no scan, one range read per prefix, 64 at a time.
    const told = countingStorage(storage)
    expect(await scanPrefixes(told.storage, BASE, scattered, true, { sparse: true })).toEqual(await perPrefix(storage, scattered))
    expect({ ranges: told.ranges(), entries: told.entriesRead(), mostOpen: told.mostOpen() }).toEqual({ ranges: 500, entries: 1500, mostOpen: 64 })
  })
})

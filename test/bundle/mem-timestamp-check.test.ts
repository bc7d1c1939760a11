/**
 * The canonical-timestamp fast path agrees with projection's RFC 3339 parser on every string of
 * the canonical shape, so skipping the parser never accepts a timestamp it would refuse.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { canonicalTimestampMs, isCanonicalTimestamp } from '../../src/bundle/mem/timestamp-check.js'
import { parseTimestamp } from '../../src/projection/kinds.js'

function parses(text: string): boolean {
  try {
    parseTimestamp(text)
    return true
  } catch {
    return false
  }
}

const two = (max: number) => fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, '0'))

describe('canonical timestamp fast path', () => {
  it('agrees with parseTimestamp on every YYYY-MM-DDTHH:MM:SSZ string', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 9999 }), two(13), two(32), two(25), two(61), two(61), (year, month, day, hour, minute, second) => {
        const text = `${String(year).padStart(4, '0')}-${month}-${day}T${hour}:${minute}:${second}Z`
        expect(isCanonicalTimestamp(text), text).toBe(parses(text))
        // Its instant, where it gives one, is the parser's.
        const ms = canonicalTimestampMs(text)
        if (ms !== undefined) expect(ms, text).toBe(parseTimestamp(text))
        else if (isCanonicalTimestamp(text)) expect(second).toBe('60')
      }),
      { numRuns: 5000 },
    )
  })

  it('accepts leap days and leap seconds only where they exist', () => {
    expect(isCanonicalTimestamp('2024-02-29T23:59:60Z')).toBe(true)
    expect(isCanonicalTimestamp('2023-02-29T00:00:00Z')).toBe(false)
    expect(isCanonicalTimestamp('1900-02-29T00:00:00Z')).toBe(false)
    expect(isCanonicalTimestamp('2000-02-29T00:00:00Z')).toBe(true)
  })

  it('leaves every other form to the parser', () => {
    for (const text of ['2024-03-09T16:00:00.5Z', '2024-03-09T16:00:00+02:00', '2024-03-09t16:00:00Z', '2024-03-09T16:00:00z', '2024-3-09T16:00:00Z', ' 2024-03-09T16:00:00Z']) {
      expect(isCanonicalTimestamp(text), text).toBe(false)
    }
  })
})

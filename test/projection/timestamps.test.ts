/**
 * Record timestamps (spec §3): RFC 3339 in, whole-second UTC `Z` out, fractions truncated.
 * Expected values are written out by hand or computed with Date, never by the code under test.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { InputError } from '../../src/errors.js'
import { formatTimestamp, normalizeTimestamp, parseTimestamp } from '../../src/projection/kinds.js'

function codeOf(run: () => unknown): string | undefined {
  try {
    run()
  } catch (error) {
    if (error instanceof InputError) return error.code
    throw error
  }
  return undefined
}

const two = (n: number): string => String(n).padStart(2, '0')

/** Normalizing as the regular expression and Date do it, without the canonical-form shortcut. */
function normalizeSlowly(value: string): string {
  return formatTimestamp(parseTimestamp(value, 'at'), 'at')
}

describe('normalizeTimestamp', () => {
  it('gives what parsing and formatting give for any text of the canonical shape (its shortcut changes nothing)', () => {
    const digits = (length: number) => fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: length, maxLength: length })
    // Random digits in every place (impossible months, days, hours and leap seconds included),
    // and now and then a wrong separator or a lower-case letter.
    const shaped = fc.tuple(digits(4), digits(2), digits(2), digits(2), digits(2), digits(2), fc.constantFrom('T', 'T', 'T', 't', ' '), fc.constantFrom('Z', 'Z', 'Z', 'z', '+'))
      .map(([year, month, day, hour, minute, second, t, z]) => `${year}-${month}-${day}${t}${hour}:${minute}:${second}${z}`)
    const plausible = fc.date({ min: new Date('0000-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true })
      .map((date) => date.toISOString().slice(0, 19) + 'Z')
    fc.assert(fc.property(fc.oneof(shaped, plausible), (value) => {
      const slow = codeOf(() => normalizeSlowly(value)) ?? normalizeSlowly(value)
      const fast = codeOf(() => normalizeTimestamp(value, 'at')) ?? normalizeTimestamp(value, 'at')
      expect(fast, value).toBe(slow)
    }), { numRuns: 3000 })
  })

  it.each([
    ['2023-11-14T22:13:20Z', '2023-11-14T22:13:20Z'],
    ['2023-11-14t22:13:20z', '2023-11-14T22:13:20Z'],
    ['2023-11-14T22:13:20.999999Z', '2023-11-14T22:13:20Z'],
    ['2023-11-15T00:13:20.75+02:00', '2023-11-14T22:13:20Z'],
    ['2023-11-14T20:43:20-01:30', '2023-11-14T22:13:20Z'],
    ['2023-12-31T23:30:00-00:45', '2024-01-01T00:15:00Z'],
    ['2024-03-01T00:30:00+01:00', '2024-02-29T23:30:00Z'],
    ['2023-11-14T22:13:20+00:00', '2023-11-14T22:13:20Z'],
    ['2023-11-14T22:13:20-00:00', '2023-11-14T22:13:20Z'],
    ['1969-12-31T23:59:59.5Z', '1969-12-31T23:59:59Z'],
    ['0000-01-01T00:00:00Z', '0000-01-01T00:00:00Z'],
    ['0005-06-07T08:09:10Z', '0005-06-07T08:09:10Z'],
    ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59Z'],
    ['2016-12-31T23:59:60Z', '2016-12-31T23:59:59Z'],
    ['2000-02-29T12:00:00Z', '2000-02-29T12:00:00Z'],
  ])('normalizes %s to %s', (input, expected) => {
    expect(normalizeTimestamp(input, 'episode.eventTime')).toBe(expected)
  })

  it.each([
    ['a date without a time', '2023-11-14'],
    ['no offset', '2023-11-14T22:13:20'],
    ['a space instead of T', '2023-11-14 22:13:20Z'],
    ['month 13', '2023-13-01T00:00:00Z'],
    ['February 29 of a common year', '2023-02-29T00:00:00Z'],
    ['February 29 of 1900', '1900-02-29T00:00:00Z'],
    ['April 31', '2023-04-31T00:00:00Z'],
    ['day 0', '2023-04-00T00:00:00Z'],
    ['hour 24', '2023-11-14T24:00:00Z'],
    ['minute 60', '2023-11-14T23:60:00Z'],
    ['second 61', '2023-11-14T23:59:61Z'],
    ['an offset of 24 hours', '2023-11-14T22:13:20+24:00'],
    ['an offset without a colon', '2023-11-14T22:13:20+0200'],
    ['a dot without digits', '2023-11-14T22:13:20.Z'],
    ['a five-digit year', '12023-11-14T22:13:20Z'],
    ['before year 0000 in UTC', '0000-01-01T00:30:00+01:00'],
    ['after year 9999 in UTC', '9999-12-31T23:30:00-01:00'],
    ['a trailing newline', '2023-11-14T22:13:20Z\n'],
    ['an empty string', ''],
    ['a huge string', `2023-11-14T22:13:20.${'9'.repeat(100_000)}Z`],
    ['Unix seconds as text', '1700000000'],
  ])('refuses %s with BAD_TIMESTAMP naming the field', (_name, input) => {
    try {
      normalizeTimestamp(input, 'fact.tValidFrom')
      expect.unreachable('accepted a bad timestamp')
    } catch (error) {
      expect(error).toBeInstanceOf(InputError)
      expect((error as InputError).code).toBe('BAD_TIMESTAMP')
      expect((error as InputError).where).toEqual({ field: 'fact.tValidFrom' })
      expect((error as InputError).message.length).toBeLessThan(300)
    }
  })

  it.each([[1700000000], [null], [undefined], [new Date(0)], [['2023-11-14T22:13:20Z']]])('refuses the non-string %s with WRONG_TYPE', (value) => {
    expect(codeOf(() => normalizeTimestamp(value))).toBe('WRONG_TYPE')
  })

  it('any instant written with any offset and fraction normalizes to the same UTC second', () => {
    // Instants within years 0001–9998, so the local time of any offset still has four year digits.
    fc.assert(fc.property(
      fc.integer({ min: -62_135_500_000, max: 253_402_200_000 }),
      fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 }),
      fc.option(fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 1, maxLength: 12 }), { nil: undefined }),
      (seconds, offsetMinutes, fraction) => {
        const local = new Date(seconds * 1000 + offsetMinutes * 60_000).toISOString().slice(0, 19)
        const sign = offsetMinutes < 0 ? '-' : '+'
        const offset = `${sign}${two(Math.floor(Math.abs(offsetMinutes) / 60))}:${two(Math.abs(offsetMinutes) % 60)}`
        const text = `${local}${fraction === undefined ? '' : `.${fraction}`}${offset}`
        expect(normalizeTimestamp(text)).toBe(new Date(seconds * 1000).toISOString().slice(0, 19) + 'Z')
        expect(parseTimestamp(text)).toBe(seconds * 1000)
      },
    ))
  })
})

describe('formatTimestamp', () => {
  it('truncates to the second toward the past', () => {
    expect(formatTimestamp(Date.UTC(2023, 10, 14, 22, 13, 20, 999))).toBe('2023-11-14T22:13:20Z')
    expect(formatTimestamp(-1)).toBe('1969-12-31T23:59:59Z')
    expect(formatTimestamp(0)).toBe('1970-01-01T00:00:00Z')
  })

  it.each([[Number.NaN], [Number.POSITIVE_INFINITY], [8.64e15], [-62_167_219_200_001], ['0'], [10n]])('refuses %s with BAD_TIMESTAMP', (value) => {
    expect(codeOf(() => formatTimestamp(value as number))).toBe('BAD_TIMESTAMP')
  })
})

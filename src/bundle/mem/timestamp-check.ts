/**
 * A fast check of the canonical timestamp form `YYYY-MM-DDTHH:MM:SSZ` (spec notes §3), which
 * nearly every bundle timestamp has: digits and ranges read straight from the characters, no
 * regular expression and no Date. Other RFC 3339 forms go to projection's parseTimestamp.
 *
 * Invariant: true only for a real calendar date and time of day (a leap second `:60` allowed,
 * as parseTimestamp allows it), so the fast path never accepts what parseTimestamp refuses.
 */

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

function digitsAt(text: string, start: number, count: number): number {
  let value = 0
  for (let i = start; i < start + count; i++) {
    const digit = text.charCodeAt(i) - 48
    if (digit < 0 || digit > 9) return -1
    value = value * 10 + digit
  }
  return value
}

/** Year, month, day, hour, minute and second of a canonical timestamp, or undefined for any other text. */
function canonicalParts(text: string): readonly [number, number, number, number, number, number] | undefined {
  if (text.length !== 20 || text[4] !== '-' || text[7] !== '-' || text[10] !== 'T' || text[13] !== ':' || text[16] !== ':' || text[19] !== 'Z') return undefined
  const year = digitsAt(text, 0, 4)
  const month = digitsAt(text, 5, 2)
  const day = digitsAt(text, 8, 2)
  if (year < 0 || month < 1 || month > 12 || day < 1) return undefined
  const isLeap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  if (day > (month === 2 && isLeap ? 29 : (DAYS_IN_MONTH[month - 1] as number))) return undefined
  const hour = digitsAt(text, 11, 2)
  const minute = digitsAt(text, 14, 2)
  const second = digitsAt(text, 17, 2)
  if (!(hour >= 0 && hour <= 23 && minute >= 0 && minute <= 59 && second >= 0 && second <= 60)) return undefined
  return [year, month, day, hour, minute, second]
}

/**
 * True for the canonical form `YYYY-MM-DDTHH:MM:SSZ` with a real date and time, checked without
 * a regular expression or a Date (most bundle timestamps; parseTimestamp takes the rest).
 */
export function isCanonicalTimestamp(text: string): boolean {
  return canonicalParts(text) !== undefined
}

/**
 * The instant (ms since the epoch) of a canonical timestamp without a leap second, or undefined
 * (parseTimestamp takes the rest): what orders most bundle timestamps, without parsing.
 */
export function canonicalTimestampMs(text: string): number | undefined {
  const parts = canonicalParts(text)
  if (parts === undefined || parts[5] === 60) return undefined
  const [year, month, day, hour, minute, second] = parts
  // setUTCFullYear keeps years 0–99 as written (Date.UTC would read them as 1900–1999).
  const date = new Date(0)
  date.setUTCFullYear(year, month - 1, day)
  date.setUTCHours(hour, minute, second, 0)
  return date.getTime()
}

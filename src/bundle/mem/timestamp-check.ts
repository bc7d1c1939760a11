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

/**
 * True for the canonical form `YYYY-MM-DDTHH:MM:SSZ` with a real date and time, checked without
 * a regular expression or a Date (most bundle timestamps; parseTimestamp takes the rest).
 */
export function isCanonicalTimestamp(text: string): boolean {
  if (text.length !== 20 || text[4] !== '-' || text[7] !== '-' || text[10] !== 'T' || text[13] !== ':' || text[16] !== ':' || text[19] !== 'Z') return false
  const year = digitsAt(text, 0, 4)
  const month = digitsAt(text, 5, 2)
  const day = digitsAt(text, 8, 2)
  if (year < 0 || month < 1 || month > 12 || day < 1) return false
  const isLeap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  if (day > (month === 2 && isLeap ? 29 : (DAYS_IN_MONTH[month - 1] as number))) return false
  const hour = digitsAt(text, 11, 2)
  const minute = digitsAt(text, 14, 2)
  const second = digitsAt(text, 17, 2)
  return hour >= 0 && hour <= 23 && minute >= 0 && minute <= 59 && second >= 0 && second <= 60
}

/**
 * Small text and time rules the adapters share with the PM reference adapters (Python): code
 * point slicing, Python's `str.strip()`, summaries, and a lenient timestamp reader.
 *
 * Invariant: these reproduce the Python reference's results exactly on the inputs the spec and
 * fixtures cover (slices count code points, never UTF-16 units; `strip` removes exactly what
 * Python's `str.isspace` calls whitespace), so ids and summaries match byte for byte.
 */
import { formatTimestamp } from '../../projection/index.js'

/** Episode summaries derived by the adapters hold at most this many code points (spec §10). */
export const SUMMARY_CODE_POINTS = 120

/** The first `count` code points of `text` (Python `text[:count]`), never splitting a surrogate pair. */
export function firstCodePoints(text: string, count = SUMMARY_CODE_POINTS): string {
  if (text.length <= count) return text
  let out = ''
  let seen = 0
  for (const character of text) {
    if (seen === count) break
    out += character
    seen++
  }
  return out
}

// Python's str.isspace: \t\n\v\f\r, \x1c-\x1f, space, \x85, \xa0, U+1680, U+2000-U+200A,
// U+2028, U+2029, U+202F, U+205F, U+3000. (JS trim() differs: it strips U+FEFF and keeps \x1c-\x1f and \x85.)
const PY_SPACE = '\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000'
const PY_STRIP = new RegExp(`^[${PY_SPACE}]+|[${PY_SPACE}]+$`, 'g')
const PY_SPACE_RUN = new RegExp(`[${PY_SPACE}]+`)
const PY_LEADING = new RegExp(`^[${PY_SPACE}]+`)

/** Python `str.strip()`. */
export function pyStrip(text: string): string {
  return text.replace(PY_STRIP, '')
}

/** Python `str.lstrip()`. */
export function pyStripStart(text: string): string {
  return text.replace(PY_LEADING, '')
}

/** Python `str.split()` with no argument: split on whitespace runs, no empty parts. */
export function pySplitWords(text: string): string[] {
  const stripped = pyStrip(text)
  return stripped === '' ? [] : stripped.split(PY_SPACE_RUN)
}

/** The first line of the stripped text, at most 120 code points (transfer and Engram summaries). */
export function firstLineSummary(text: string): string {
  const stripped = pyStrip(text)
  const cut = stripped.indexOf('\n')
  return firstCodePoints(cut === -1 ? stripped : stripped.slice(0, cut))
}

const LOOSE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,]\d+)?)?)?(?:([Zz])|([+-])(\d{2}):?(\d{2})?)?$/

function daysIn(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31
}

/**
 * Milliseconds of a timestamp as Python's `datetime.fromisoformat` reads it (the PM reference's
 * lenient parse): a date alone, or a date and time with `T` or a space, optional seconds and
 * fraction, `Z` or an offset (`+02:00`, `+0200`, `+02`); no zone means UTC. Undefined when the
 * text is not such a timestamp or falls outside years 0000–9999.
 */
export function parseLooseTime(text: string): number | undefined {
  const match = LOOSE_TIME.exec(text.trim())
  if (match === null) return undefined
  const [, y, mo, d, hour, mi = '0', s = '0', , sign, offsetHours, offsetMinutes = '0'] = match
  if (hour === undefined && (sign !== undefined || match[7] !== undefined)) return undefined
  const h = hour ?? '0'
  const year = Number(y)
  const month = Number(mo)
  const day = Number(d)
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return undefined
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return undefined
  const date = new Date(0)
  date.setUTCFullYear(year, month - 1, day)
  date.setUTCHours(Number(h), Number(mi), Number(s), 0)
  let ms = date.getTime()
  if (sign !== undefined) {
    if (Number(offsetHours) > 23 || Number(offsetMinutes) > 59) return undefined
    ms -= (sign === '-' ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes)) * 60_000
  }
  try {
    formatTimestamp(ms)
  } catch {
    return undefined
  }
  return ms
}

/** `parseLooseTime` of a string value, formatted as whole-second UTC; undefined for anything else. */
export function looseTimestamp(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '') return undefined
  const ms = parseLooseTime(value)
  return ms === undefined ? undefined : formatTimestamp(ms)
}

/** A UTC instant from parts, or undefined when they are no date (Python `datetime` refuses year 0). */
export function utcDate(year: number, month: number, day: number, hour = 0, minute = 0, second = 0): number | undefined {
  if (year < 1 || year > 9999 || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined
  const date = new Date(0)
  date.setUTCFullYear(year, month - 1, day)
  date.setUTCHours(hour, minute, second, 0)
  return date.getUTCMonth() === month - 1 && date.getUTCDate() === day ? date.getTime() : undefined
}

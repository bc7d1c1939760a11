/**
 * Record timestamps (Portable Memory spec §3): RFC 3339 in, whole-second UTC `Z` out.
 *
 * Invariant: every timestamp a record holds is `YYYY-MM-DDTHH:MM:SSZ` with a year in
 * 0000–9999, so two replicas given the same instant in different spellings store the same
 * bytes, and string order is time order.
 *
 * Readers accept what RFC 3339 §5.6 `date-time` allows (and what JSON Schema `format:
 * date-time` checks): `T` or `t`, fractions of any length, `Z`/`z` or a `±hh:mm` offset.
 * Fractions are truncated, never rounded (spec §3). A leap second (`:60`) is accepted and held
 * at `:59` of the same minute, which keeps its order relative to the seconds around it.
 */
import { describeType, describeValue } from '../assert.js'
import { InputError } from '../errors.js'

/** Longer text cannot be a timestamp anyone means; refusing it early bounds the work. */
export const MAX_TIMESTAMP_LENGTH = 64

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/

const MS_PER_MINUTE = 60_000
/** 0000-01-01T00:00:00Z (Date.UTC would read year 0 as 1900) and 9999-12-31T23:59:59.999Z. */
const MIN_MS = -62_167_219_200_000
const MAX_MS = 253_402_300_799_999
/** The last instant a timestamp can hold (9999-12-31T23:59:59.999Z). */
export const LAST_TIMESTAMP_MS = MAX_MS

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31
}

/** The last second formatted: a batch of writes formats the same "now" once per record. */
let lastFormatted = { seconds: Number.NaN, text: '' }

function badTimestamp(message: string, field: string): never {
  throw new InputError('BAD_TIMESTAMP', message, { field })
}

/**
 * Formats an instant in milliseconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ`, truncating to
 * the second (toward the past, so 1969-12-31T23:59:59.5Z gives …:59Z).
 * @throws InputError BAD_TIMESTAMP (not a finite number, or outside years 0000–9999)
 */
export function formatTimestamp(ms: number, field = 'timestamp'): string {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) badTimestamp(`expected milliseconds since the epoch, got ${describeValue(ms)}`, field)
  const seconds = Math.floor(ms / 1000) * 1000
  if (seconds === lastFormatted.seconds) return lastFormatted.text
  if (seconds < MIN_MS || seconds > MAX_MS) badTimestamp(`${describeValue(ms)} ms is outside the years 0000–9999`, field)
  const text = new Date(seconds).toISOString().slice(0, 19) + 'Z'
  lastFormatted = { seconds, text }
  return text
}

const DIGIT_0 = 0x30

/** The number the ASCII digits at `start`…`end` (exclusive) spell, or -1 when one is not a digit. */
function digitsAt(value: string, start: number, end: number): number {
  let out = 0
  for (let i = start; i < end; i++) {
    const digit = value.charCodeAt(i) - DIGIT_0
    if (digit < 0 || digit > 9) return -1
    out = out * 10 + digit
  }
  return out
}

/**
 * Whether `value` is already canonical: `YYYY-MM-DDTHH:MM:SSZ`, a calendar date, a time of day
 * and no leap second. Normalizing such a value gives it back, so most stored and imported
 * timestamps skip the regular expression and the Date round trip.
 */
function isCanonicalTimestamp(value: string): boolean {
  if (value.length !== 20 || value[4] !== '-' || value[7] !== '-' || value[10] !== 'T' || value[13] !== ':' || value[16] !== ':' || value[19] !== 'Z') return false
  const year = digitsAt(value, 0, 4)
  const month = digitsAt(value, 5, 7)
  const day = digitsAt(value, 8, 10)
  const hour = digitsAt(value, 11, 13)
  const minute = digitsAt(value, 14, 16)
  const second = digitsAt(value, 17, 19)
  return year >= 0 && month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month) &&
    hour >= 0 && hour <= 23 && minute >= 0 && minute <= 59 && second >= 0 && second <= 59
}

/**
 * Parses an RFC 3339 timestamp to milliseconds since the epoch (whole seconds: the fraction is
 * dropped before the offset is applied, which is the same as truncating in UTC because offsets
 * are whole minutes).
 * @throws InputError WRONG_TYPE, BAD_TIMESTAMP
 */
export function parseTimestamp(value: unknown, field = 'timestamp'): number {
  if (typeof value !== 'string') {
    throw new InputError('WRONG_TYPE', `expected an RFC 3339 timestamp string, got ${describeType(value)}`, { field })
  }
  if (value.length > MAX_TIMESTAMP_LENGTH) badTimestamp(`a timestamp of ${value.length} characters is too long`, field)
  const match = RFC3339.exec(value)
  if (match === null) badTimestamp(`expected RFC 3339 such as 2023-11-14T22:13:20Z, got ${describeValue(value)}`, field)
  const [, yearText, monthText, dayText, hourText, minuteText, secondText, zulu, sign, offsetHourText, offsetMinuteText] = match
  const year = Number(yearText)
  const month = Number(monthText)
  const day = Number(dayText)
  const hour = Number(hourText)
  const minute = Number(minuteText)
  const second = Math.min(Number(secondText), 59)
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) badTimestamp(`${describeValue(value)} is not a calendar date`, field)
  if (hour > 23 || minute > 59 || Number(secondText) > 60) badTimestamp(`${describeValue(value)} is not a time of day`, field)
  let offsetMinutes = 0
  if (zulu === undefined) {
    const offsetHours = Number(offsetHourText)
    const offsetMins = Number(offsetMinuteText)
    if (offsetHours > 23 || offsetMins > 59) badTimestamp(`${describeValue(value)} has an impossible UTC offset`, field)
    offsetMinutes = (sign === '-' ? -1 : 1) * (offsetHours * 60 + offsetMins)
  }
  const date = new Date(0)
  date.setUTCFullYear(year, month - 1, day)
  date.setUTCHours(hour, minute, second, 0)
  const ms = date.getTime() - offsetMinutes * MS_PER_MINUTE
  if (ms < MIN_MS || ms > MAX_MS) badTimestamp(`${describeValue(value)} falls outside the years 0000–9999 in UTC`, field)
  return ms
}

/**
 * Normalizes an RFC 3339 timestamp to the canonical whole-second UTC form, e.g.
 * `2023-11-15T00:13:20.75+02:00` → `2023-11-14T22:13:20Z`.
 * @throws InputError WRONG_TYPE (not a string), BAD_TIMESTAMP
 */
export function normalizeTimestamp(value: unknown, field = 'timestamp'): string {
  if (typeof value === 'string' && isCanonicalTimestamp(value)) return value
  return formatTimestamp(parseTimestamp(value, field), field)
}

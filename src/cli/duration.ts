/**
 * Durations on the command line: `90s`, `30m`, `12h`, `7d`, `2w`, or several parts together
 * (`1h30m`). A bare number is refused rather than guessed at (seconds? ms?).
 *
 * Invariant: the result is a whole, positive number of milliseconds; anything else is a usage
 * error naming the flag. Upper bounds are the engine's to enforce (a token lives at most ten
 * years), so the CLI and the library cannot disagree about them.
 */
import { usageError } from './operand-args.js'

const UNIT_MS: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }
const DURATION = /^(?:\d{1,9}[smhdw])+$/
const PART = /(\d{1,9})([smhdw])/g

/** @throws InputError BAD_DURATION (a usage error) */
export function parseDuration(text: string, flag: string): number {
  const value = text.trim().toLowerCase()
  if (!DURATION.test(value)) {
    throw usageError('BAD_DURATION', `expected a duration like 90s, 30m, 12h, 7d, 2w or 1h30m, got "${text}"`, { flag })
  }
  let ms = 0
  for (const [, amount, unit] of value.matchAll(PART)) ms += Number(amount) * (UNIT_MS[unit as string] as number)
  if (ms <= 0) throw usageError('BAD_DURATION', `a duration must be longer than zero, got "${text}"`, { flag })
  // Past 2^53 ms (285,000 years) the sum is no longer exact: no limit takes it, and saying so beats an engine's "not an integer".
  if (!Number.isSafeInteger(ms)) throw usageError('BAD_DURATION', `a duration of "${text}" is longer than anything takes`, { flag })
  return ms
}

/** "2d 3h", "45m", "12s": the largest two units, for messages. */
export function formatDuration(ms: number): string {
  const parts: string[] = []
  let rest = Math.max(0, Math.round(ms / 1000)) * 1000
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`)
      rest %= size
    }
  }
  return parts.length === 0 ? '0s' : parts.slice(0, 2).join(' ')
}

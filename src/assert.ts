/**
 * Asserters for validation at the edges (API calls, decoders, files, frames, CLI flags).
 * Each takes the value and a label naming where it came from, throws an `InputError` with a
 * stable code when it is wrong, and returns the value narrowed. Inner code trusts what these
 * returned and does not check again.
 */
import { InputError, type ErrorLocation } from './errors.js'

const HEX_RE = /^[0-9a-f]*$/

/** A short, safe rendering of a value for an error message (never huge, never throws). */
export function describeValue(value: unknown, maxLength = 64): string {
  let text: string
  if (typeof value === 'string') text = JSON.stringify(value.length > maxLength ? value.slice(0, maxLength) : value)
  else if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint' || value === null || value === undefined) text = String(value)
  else return describeType(value)
  return text.length > maxLength + 2 ? `${text.slice(0, maxLength)}…` : text
}

export function describeType(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  if (value instanceof Uint8Array) return 'bytes'
  return typeof value
}

function fail(code: string, message: string, label: string | ErrorLocation): never {
  throw new InputError(code, message, typeof label === 'string' ? { field: label } : label)
}

export function assertString(value: unknown, label: string | ErrorLocation): string {
  if (typeof value !== 'string') fail('WRONG_TYPE', `expected a string, got ${describeType(value)}`, label)
  return value
}

export function assertNonEmptyString(value: unknown, label: string | ErrorLocation): string {
  const text = assertString(value, label)
  if (text.length === 0) fail('EMPTY', 'must not be empty', label)
  return text
}

export function assertBoolean(value: unknown, label: string | ErrorLocation): boolean {
  if (typeof value !== 'boolean') fail('WRONG_TYPE', `expected a boolean, got ${describeType(value)}`, label)
  return value
}

export function assertNumber(value: unknown, label: string | ErrorLocation): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    fail('WRONG_TYPE', `expected a finite number, got ${describeType(value)}`, label)
  }
  return value
}

/** A safe integer within [min, max]. */
export function assertInteger(
  value: unknown,
  label: string | ErrorLocation,
  min = Number.MIN_SAFE_INTEGER,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    fail('WRONG_TYPE', `expected an integer, got ${describeType(value)} ${describeValue(value)}`, label)
  }
  if (value < min || value > max) fail('OUT_OF_RANGE', `${value} is outside [${min}, ${max}]`, label)
  return value
}

export function assertBytes(value: unknown, label: string | ErrorLocation, length?: number): Uint8Array {
  if (!(value instanceof Uint8Array)) fail('WRONG_TYPE', `expected bytes, got ${describeType(value)}`, label)
  if (length !== undefined && value.length !== length) {
    fail('WRONG_LENGTH', `expected ${length} bytes, got ${value.length}`, label)
  }
  return value
}

/** Lowercase hex of an exact number of bytes. */
export function assertHex(value: unknown, label: string | ErrorLocation, byteLength?: number): string {
  const text = assertString(value, label)
  if (!HEX_RE.test(text) || text.length % 2 !== 0) fail('BAD_HEX', 'expected lowercase hex', label)
  if (byteLength !== undefined && text.length !== byteLength * 2) {
    fail('WRONG_LENGTH', `expected ${byteLength * 2} hex characters, got ${text.length}`, label)
  }
  return text
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value) as unknown
  return proto === Object.prototype || proto === null
}

export function assertObject(value: unknown, label: string | ErrorLocation): Record<string, unknown> {
  if (!isPlainObject(value)) fail('WRONG_TYPE', `expected an object, got ${describeType(value)}`, label)
  return value
}

/** An array without holes (`forEach` and `map` skip holes, which would hide bad input). */
export function assertArray(value: unknown, label: string | ErrorLocation): unknown[] {
  if (!Array.isArray(value)) fail('WRONG_TYPE', `expected an array, got ${describeType(value)}`, label)
  for (let i = 0; i < value.length; i++) {
    if (!(i in value)) fail('WRONG_TYPE', `array has a hole at index ${i}`, label)
  }
  return value
}

/** An options object: undefined becomes {}, unknown keys are refused (a typo must not be ignored). */
export function assertOptions(value: unknown, allowed: readonly string[], label: string): Record<string, unknown> {
  if (value === undefined) return {}
  const options = assertObject(value, label)
  assertKnownKeys(options, allowed, label)
  return options
}

/** Refuses keys outside `allowed`, so a typo in an option is an error rather than ignored. */
export function assertKnownKeys(
  value: Record<string, unknown>,
  allowed: readonly string[],
  label: string,
): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) fail('UNKNOWN_FIELD', `unknown field ${describeValue(key)}`, `${label}.${key.slice(0, 64)}`)
  }
}

export function assertOneOf<T extends string>(value: unknown, choices: readonly T[], label: string | ErrorLocation): T {
  const text = assertString(value, label)
  if (!(choices as readonly string[]).includes(text)) {
    fail('BAD_VALUE', `expected one of ${choices.join(', ')}, got ${describeValue(text)}`, label)
  }
  return text as T
}

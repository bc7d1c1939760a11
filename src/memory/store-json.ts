/**
 * Reads the JSON values the memory store keeps (conversations, agent state) at the API edge,
 * under the rules of memory-store.ts, and checks the names (session, user and agent ids, keys).
 *
 * Invariant: a value this returns serializes with `canonicalJson` and reads back with
 * `parseJson` deep-equal to itself; that is what makes the store lossless. Everything is
 * checked before the store writes anything, and each refusal names the offending member
 * (`conversation.messages[3].content`).
 */
import { assertArray, assertString, describeType } from '../assert.js'
import { InputError, LimitError } from '../errors.js'
import type { JsonValue } from '../log/index.js'
import { MAX_NAME_LENGTH } from './memory-store.js'

/** Nesting limit: canonical JSON's MAX_JSON_DEPTH (the log refuses deeper values). */
export const MAX_STORE_JSON_DEPTH = 256
/** Doubles that are integers in (2^53 - 1, 10^16) print as digits, which read back as bigint. */
const DIGITS_LIMIT = 1e16
/** Keys are cut to this many characters in error locations, and locations stop growing here. */
const MAX_LABEL_KEY_LENGTH = 64
const MAX_LABEL_LENGTH = 256

export function memberLabel(parent: string, key: string | number): string {
  if (parent.length > MAX_LABEL_LENGTH) return parent.endsWith('…') ? parent : `${parent}…`
  if (typeof key === 'number') return `${parent}[${key}]`
  return `${parent}.${key.length > MAX_LABEL_KEY_LENGTH ? `${key.slice(0, MAX_LABEL_KEY_LENGTH)}…` : key}`
}

/** Defines an own data property, so a `__proto__` key stays data. */
function setOwn(target: Record<string, JsonValue>, key: string, value: JsonValue): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

function readNumber(value: number, label: string): number {
  if (!Number.isFinite(value)) throw new InputError('NOT_JSON', `${String(value)} has no JSON form`, { field: label })
  if (Number.isInteger(value) && Math.abs(value) > Number.MAX_SAFE_INTEGER && Math.abs(value) < DIGITS_LIMIT) {
    throw new InputError('UNSAFE_INTEGER', 'an integer beyond 2^53 - 1 must be a bigint', { field: label })
  }
  return value === 0 ? 0 : value
}

/**
 * A deep, plain copy of a JSON value (the rules in memory-store.ts).
 * @throws InputError NOT_JSON, BAD_STRING, UNSAFE_INTEGER, WRONG_TYPE (array holes);
 *   LimitError TOO_DEEP (also what a cycle gives)
 */
export function readStoreJson(value: unknown, label: string, depth = 0): JsonValue {
  switch (typeof value) {
    case 'string':
      if (!value.isWellFormed()) throw new InputError('BAD_STRING', 'the string holds a lone surrogate, which has no UTF-8 form', { field: label })
      return value
    case 'boolean':
      return value
    case 'number':
      return readNumber(value, label)
    case 'bigint':
      return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value
    case 'object': {
      if (value === null) return null
      if (depth >= MAX_STORE_JSON_DEPTH) throw new LimitError('TOO_DEEP', `nesting deeper than ${MAX_STORE_JSON_DEPTH}`, { field: label })
      if (Array.isArray(value)) {
        const items = assertArray(value, label)
        return items.map((item, i) => {
          if (item === undefined) throw new InputError('NOT_JSON', 'undefined is not a JSON value', { field: memberLabel(label, i) })
          return readStoreJson(item, memberLabel(label, i), depth + 1)
        })
      }
      const proto = Object.getPrototypeOf(value) as unknown
      if (proto !== Object.prototype && proto !== null) {
        const name = (value as { constructor?: { name?: unknown } }).constructor?.name
        throw new InputError('NOT_JSON', `${typeof name === 'string' ? name.slice(0, 64) : 'object'} is not a JSON value`, { field: label })
      }
      const out: Record<string, JsonValue> = {}
      for (const key of Object.keys(value)) {
        const descriptor = Object.getOwnPropertyDescriptor(value, key)
        const where = memberLabel(label, key)
        if (descriptor === undefined) continue
        if (!('value' in descriptor)) throw new InputError('NOT_JSON', 'an accessor property is not JSON data', { field: where })
        if (!key.isWellFormed()) throw new InputError('BAD_STRING', 'the key holds a lone surrogate, which has no UTF-8 form', { field: where })
        if (descriptor.value !== undefined) setOwn(out, key, readStoreJson(descriptor.value, where, depth + 1))
      }
      return out
    }
    default:
      throw new InputError('NOT_JSON', `${describeType(value)} is not a JSON value`, { field: label })
  }
}

/**
 * A session, user or agent id, or a state key: a non-empty well-formed string of at most
 * MAX_NAME_LENGTH code units. Any other character is allowed: callers bring ids from elsewhere.
 * @throws InputError WRONG_TYPE, EMPTY, BAD_STRING, TOO_LONG
 */
export function readName(value: unknown, label: string): string {
  const text = assertString(value, label)
  if (text.length === 0) throw new InputError('EMPTY', 'must not be empty', { field: label })
  if (text.length > MAX_NAME_LENGTH) throw new InputError('TOO_LONG', `${text.length} characters, over ${MAX_NAME_LENGTH}`, { field: label })
  if (!text.isWellFormed()) throw new InputError('BAD_STRING', 'the string holds a lone surrogate, which has no UTF-8 form', { field: label })
  return text
}

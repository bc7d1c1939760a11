/**
 * Reads field values of records from outside input (the API edge, bundle lines), one
 * `FieldType` at a time, and episode extension values as plain JSON.
 *
 * Invariant: what comes out is fresh, plain JSON that `canonicalJson` accepts: well-formed
 * strings, finite numbers, hole-free arrays, plain objects built with own properties (so a key
 * named `__proto__` stays data), no accessors and nothing the caller can still mutate. Every
 * refusal names the offending field (`episode.actors[2]`) and stays short whatever the input.
 */
import { assertArray, assertBoolean, assertObject, assertString, describeType, describeValue } from '../assert.js'
import { InputError, LimitError } from '../errors.js'
import { RESERVED_KEY } from '../crdt/own-keys.js'
import type { JsonValue } from '../log/index.js'
import type { FieldSpec } from './kind-table.js'
import { normalizeTimestamp } from './timestamps.js'

/** Nesting limit of extension values: the log's canonical JSON limit (MAX_JSON_DEPTH, which log/index does not export). */
export const MAX_EXT_DEPTH = 256
/** Field names and keys are cut to this many characters in error locations. */
const MAX_LABEL_KEY_LENGTH = 64
/** A location deeper than this stops growing (a path through 256 nested objects stays short). */
const MAX_LABEL_LENGTH = 256

function extendLabel(parent: string, suffix: string): string {
  if (parent.length > MAX_LABEL_LENGTH) return parent.endsWith('…') ? parent : `${parent}…`
  return parent + suffix
}

/** `episode.summary`, with an over-long name cut so the error stays short. */
export function fieldLabel(parent: string, key: string): string {
  return extendLabel(parent, `.${key.length > MAX_LABEL_KEY_LENGTH ? `${key.slice(0, MAX_LABEL_KEY_LENGTH)}…` : key}`)
}

/** `episode.actors[2]`. */
export function indexLabel(parent: string, index: number): string {
  return extendLabel(parent, `[${index}]`)
}

/** Defines an own, enumerable data property: `target['__proto__'] = x` would set the prototype instead. */
/** @throws InputError RESERVED_KEY: stored state keeps keys in objects (crdt/own-keys.ts), where this one is not data */
export function refuseReservedKey(label: string): never {
  throw new InputError('RESERVED_KEY', `${RESERVED_KEY} cannot be a key or a set element`, { field: label })
}

export function setOwn<T>(target: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

/**
 * The own enumerable entries of a plain object, read once each. Accessor properties are refused:
 * a getter could run code or answer differently on each read.
 * @throws InputError NOT_JSON, BAD_STRING (a key with a lone surrogate)
 */
export function ownEntries(object: Record<string, unknown>, label: string): [string, unknown][] {
  const entries: [string, unknown][] = []
  for (const key of Object.keys(object)) {
    const descriptor = Object.getOwnPropertyDescriptor(object, key)
    if (descriptor === undefined) continue
    // The label is built only for a refusal: this runs for every field of every record written.
    if (!('value' in descriptor)) throw new InputError('NOT_JSON', 'an accessor property is not JSON data', { field: fieldLabel(label, key) })
    if (!key.isWellFormed()) throw new InputError('BAD_STRING', 'the key holds a lone surrogate, which has no UTF-8 form', { field: fieldLabel(label, key) })
    if (key === RESERVED_KEY) refuseReservedKey(fieldLabel(label, key))
    entries.push([key, descriptor.value])
  }
  return entries
}

/** @throws InputError WRONG_TYPE, BAD_STRING */
export function readString(value: unknown, label: string): string {
  const text = assertString(value, label)
  if (!text.isWellFormed()) throw new InputError('BAD_STRING', 'the string holds a lone surrogate, which has no UTF-8 form', { field: label })
  return text
}

/** @throws InputError WRONG_TYPE, OUT_OF_RANGE */
export function readInteger(value: unknown, label: string, minimum?: number): number {
  if (typeof value === 'bigint') throw new InputError('OUT_OF_RANGE', 'integers beyond 2^53 - 1 are not supported here', { field: label })
  if (typeof value !== 'number') throw new InputError('WRONG_TYPE', `expected an integer, got ${describeType(value)}`, { field: label })
  if (!Number.isFinite(value)) throw new InputError('OUT_OF_RANGE', `expected a finite integer, got ${String(value)}`, { field: label })
  if (!Number.isInteger(value)) throw new InputError('WRONG_TYPE', `expected an integer, got ${describeValue(value)}`, { field: label })
  if (!Number.isSafeInteger(value)) throw new InputError('OUT_OF_RANGE', `${describeValue(value)} is beyond 2^53 - 1`, { field: label })
  if (minimum !== undefined && value < minimum) throw new InputError('OUT_OF_RANGE', `${value} is below the minimum ${minimum}`, { field: label })
  return value === 0 ? 0 : value
}

/** A finite number (PM leaves the ranges of confidence, importance and weight open). @throws InputError WRONG_TYPE, OUT_OF_RANGE */
export function readNumber(value: unknown, label: string): number {
  if (typeof value === 'bigint') throw new InputError('OUT_OF_RANGE', 'integers beyond 2^53 - 1 are not supported here', { field: label })
  if (typeof value !== 'number') throw new InputError('WRONG_TYPE', `expected a number, got ${describeType(value)}`, { field: label })
  if (!Number.isFinite(value)) throw new InputError('OUT_OF_RANGE', `expected a finite number, got ${String(value)}`, { field: label })
  return value === 0 ? 0 : value
}

/**
 * A list of strings. For add-wins sets (`isSet`) duplicates are dropped, keeping the first
 * occurrence, because a set cannot hold them after a merge anyway.
 * @throws InputError WRONG_TYPE, BAD_STRING
 */
export function readStringList(value: unknown, label: string, isSet: boolean): string[] {
  const items = assertArray(value, label)
  const out: string[] = []
  const seen = isSet ? new Set<string>() : undefined
  for (let i = 0; i < items.length; i++) {
    const item = readString(items[i], indexLabel(label, i))
    if (seen !== undefined) {
      // A set keeps its elements as keys (add-wins-set.ts).
      if (item === RESERVED_KEY) refuseReservedKey(indexLabel(label, i))
      if (seen.has(item)) continue
      seen.add(item)
    }
    out.push(item)
  }
  return out
}

/** An object of string → string (episode.metadata: PM refuses any other value type). @throws InputError WRONG_TYPE, BAD_STRING, NOT_JSON */
export function readStringMap(value: unknown, label: string): Record<string, string> {
  const object = assertObject(value, label)
  const out: Record<string, string> = {}
  for (const [key, item] of ownEntries(object, label)) setOwn(out, key, readString(item, fieldLabel(label, key)))
  return out
}

/**
 * One field value, checked against its `FieldType` and normalized (timestamps to whole-second
 * UTC, -0 to 0, sets deduplicated).
 * @throws InputError WRONG_TYPE, BAD_STRING, BAD_TIMESTAMP, OUT_OF_RANGE, NOT_JSON
 */
export function readFieldValue(field: FieldSpec, value: unknown, label: string): JsonValue {
  switch (field.type) {
    case 'string':
      return readString(value, label)
    case 'timestamp':
      return normalizeTimestamp(value, label)
    case 'integer':
      return readInteger(value, label, field.minimum)
    case 'number':
      return readNumber(value, label)
    case 'boolean':
      return assertBoolean(value, label)
    case 'string[]':
      return readStringList(value, label, field.merge === 'set')
    case 'string-map':
      return readStringMap(value, label)
  }
}

/**
 * Any plain JSON value (episode extensions), deep-copied. Object members that are `undefined`
 * are skipped, as `canonicalJson` skips them; `undefined` in an array is refused.
 * @throws InputError NOT_JSON, BAD_STRING; LimitError TOO_DEEP (also what a cycle gives)
 */
export function readJsonValue(value: unknown, label: string, depth = 0): JsonValue {
  switch (typeof value) {
    case 'string':
      return readString(value, label)
    case 'boolean':
    case 'bigint':
      return value
    case 'number':
      if (!Number.isFinite(value)) throw new InputError('NOT_JSON', `${String(value)} has no JSON form`, { field: label })
      return value === 0 ? 0 : value
    case 'object': {
      if (value === null) return null
      if (depth >= MAX_EXT_DEPTH) throw new LimitError('TOO_DEEP', `nesting deeper than ${MAX_EXT_DEPTH}`, { field: label })
      if (Array.isArray(value)) {
        const items = assertArray(value, label)
        const out: JsonValue[] = []
        for (let i = 0; i < items.length; i++) {
          const item = items[i]
          if (item === undefined) throw new InputError('NOT_JSON', 'undefined is not a JSON value', { field: indexLabel(label, i) })
          out.push(readJsonValue(item, indexLabel(label, i), depth + 1))
        }
        return out
      }
      const proto = Object.getPrototypeOf(value) as unknown
      if (proto !== Object.prototype && proto !== null) {
        const name = (value as { constructor?: { name?: unknown } }).constructor?.name
        throw new InputError('NOT_JSON', `${typeof name === 'string' ? name.slice(0, 64) : 'object'} is not a JSON value`, { field: label })
      }
      const out: Record<string, JsonValue> = {}
      for (const [key, item] of ownEntries(value as Record<string, unknown>, label)) {
        if (item !== undefined) setOwn(out, key, readJsonValue(item, fieldLabel(label, key), depth + 1))
      }
      return out
    }
    default:
      throw new InputError('NOT_JSON', `${typeof value} is not a JSON value`, { field: label })
  }
}

/** A fresh copy of a JSON value the table holds (defaults), so no record shares an array or object. */
export function copyJson(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(copyJson)
  if (value !== null && typeof value === 'object') {
    const out: Record<string, JsonValue> = {}
    for (const [key, item] of Object.entries(value)) setOwn(out, key, copyJson(item))
    return out
  }
  return value
}

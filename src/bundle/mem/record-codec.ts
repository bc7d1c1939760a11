/**
 * Strict decoding of one bundle row (a record of a Portable Memory kind, a tombstone, an audit
 * row) from parsed JSON, as spec notes §3 and §6–§8 require: a wrong-typed field invalidates
 * the row, `null` means absent for optional fields, an int token is accepted for a float field
 * and an integral float for an int field. Writers run the same decoder on what they are given,
 * so a bundle this codec writes always reads back.
 *
 * Invariant: a decoded row is fresh plain JSON that `canonicalJson` accepts, holding only the
 * kind's fields with values as given (timestamps are checked as RFC 3339 but never rewritten;
 * numbers keep their value, so their shortest form). Episodes also keep every unknown key (the
 * `ext` of §8), which can never collide with a native key; other rows drop unknown keys and
 * report them in `dropped` so the caller can warn.
 */
import { describeType, describeValue } from '../../assert.js'
import { InputError, LimitError } from '../../errors.js'
import { RESERVED_KEY } from '../../crdt/own-keys.js'
import type { JsonValue } from '../../log/index.js'
import { kindSpec, parseTimestamp, RECORD_KINDS, type FieldType, type RecordKind } from '../../projection/kinds.js'
import { isCanonicalTimestamp } from './timestamp-check.js'
import type { JsonObject } from './types.js'

/** Nesting limit of unknown values (the log's canonical JSON limit). */
const MAX_VALUE_DEPTH = 256
/** Swift's `Int` (the reference's integer type) is 64-bit signed. */
const MIN_INT64 = -(2n ** 63n)
const MAX_INT64 = 2n ** 63n - 1n

type RuleType = FieldType | 'derived'

interface FieldRule {
  readonly type: RuleType
  readonly required: boolean
  readonly minimum?: number
  /** Filled in when absent (tombstone `derived`, whose keys the reference reader defaults). */
  readonly fill?: () => JsonValue
}

interface RowRules {
  readonly fields: ReadonlyMap<string, FieldRule>
  /** Unknown keys are kept (episode `ext`) rather than dropped. */
  readonly keepsUnknown: boolean
}

/** A decoded row and the unknown keys it lost. */
export interface DecodedRow {
  readonly record: JsonObject
  readonly dropped: readonly string[]
}

const rule = (type: RuleType, required = true, minimum?: number): FieldRule =>
  minimum === undefined ? { type, required } : { type, required, minimum }

function kindRules(kind: RecordKind): RowRules {
  const spec = kindSpec(kind)
  const fields = new Map<string, FieldRule>()
  // Cairn's own extension fields (`tags`, and `contextID` outside episodes) are not in the PM
  // schemas: in a bundle they are unknown keys like any other vendor's.
  for (const field of Object.values(spec.fields)) {
    if (field.extension !== true) fields.set(field.name, rule(field.type, field.required, field.minimum))
  }
  return { fields, keepsUnknown: spec.hasExt }
}

const KIND_RULES = new Map<RecordKind, RowRules>(RECORD_KINDS.map((kind) => [kind, kindRules(kind)]))

const emptyList = (): JsonValue => []
const DERIVED_RULES: RowRules = {
  fields: new Map<string, FieldRule>([
    ['sentenceIDs', { type: 'string[]', required: false, fill: emptyList }],
    ['factIDs', { type: 'string[]', required: false, fill: emptyList }],
    ['edgeIDs', { type: 'string[]', required: false, fill: emptyList }],
    ['entityIDs', { type: 'string[]', required: false, fill: emptyList }],
    ['chunkIDs', { type: 'string[]', required: false, fill: emptyList }],
    ['episodeLinkCount', { type: 'integer', required: false, minimum: 0, fill: () => 0 }],
    ['embeddingCacheKeys', { type: 'string[]', required: false, fill: emptyList }],
    // Cairn's addition (memory-model §1.7): cascaded records of other kinds; absent when none.
    ['recordIDs', { type: 'string[]', required: false }],
  ]),
  keepsUnknown: false,
}

const TOMBSTONE_RULES: RowRules = {
  fields: new Map<string, FieldRule>([
    ['id', rule('string')],
    ['op', rule('string')],
    ['targetKind', rule('string')],
    ['targetID', rule('string')],
    ['deletedAt', rule('timestamp')],
    ['actor', rule('string')],
    ['derived', { type: 'derived', required: false, fill: () => ({}) }],
    ['reason', rule('string', false)],
    ['signature', rule('string', false)],
  ]),
  keepsUnknown: false,
}

const AUDIT_RULES: RowRules = {
  fields: new Map<string, FieldRule>([
    ['ts', rule('timestamp')],
    ['actor', rule('string')],
    ['op', rule('string')],
    ['targetID', rule('string')],
    ['reason', rule('string', false)],
  ]),
  keepsUnknown: false,
}

/** The tombstone operations (§7). */
export const TOMBSTONE_OPS = ['delete', 'redact'] as const

function wrongType(expected: string, value: unknown, field: string): never {
  throw new InputError('WRONG_TYPE', `expected ${expected}, got ${describeType(value)} ${describeValue(value, 24)}`, { field })
}

// Labels (`episode.actors[2]`) are built only when something is refused: building one per field
// of every row was a large share of decoding time and garbage on 100k-row bundles.
function at(label: string, key: string | number): string {
  return typeof key === 'number' ? `${label}[${key}]` : `${label}.${key}`
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value) as unknown
  return proto === Object.prototype || proto === null
}

function setOwn(target: JsonObject, key: string, value: JsonValue): void {
  // `target['__proto__'] = x` would set the prototype; a key named so must stay data. Plain
  // assignment otherwise: defineProperty on every key sends objects to slow dictionary mode.
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
  else target[key] = value
}

/**
 * Own enumerable data entries. Accessors are refused (a getter could answer differently each
 * read); rows fresh from the JSON parser have none, so `isParsed` skips that check.
 */
function ownEntries(object: Record<string, unknown>, label: string, isParsed: boolean): [string, unknown][] {
  const keys = Object.keys(object)
  const entries: [string, unknown][] = new Array(keys.length)
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string
    if (!isParsed) {
      const descriptor = Object.getOwnPropertyDescriptor(object, key)
      if (descriptor !== undefined && !('value' in descriptor)) throw new InputError('NOT_JSON', 'an accessor property is not JSON data', { field: at(label, key) })
    }
    if (!key.isWellFormed()) throw new InputError('BAD_STRING', 'a key holds a lone surrogate, which has no UTF-8 form', { field: label })
    // Cairn keeps keys in objects (crdt/own-keys.ts): this one could not be stored as data.
    if (key === RESERVED_KEY) throw new InputError('RESERVED_KEY', `${RESERVED_KEY} cannot be a key`, { field: at(label, key) })
    entries[i] = [key, object[key]]
  }
  return entries
}

function readString(value: unknown, label: string, key: string | number): string {
  if (typeof value !== 'string') wrongType('a string', value, at(label, key))
  if (!value.isWellFormed()) throw new InputError('BAD_STRING', 'a string holds a lone surrogate, which has no UTF-8 form', { field: at(label, key) })
  return value
}

function readStringList(value: unknown, label: string, key: string): string[] {
  if (!Array.isArray(value)) wrongType('an array of strings', value, at(label, key))
  const out: string[] = new Array(value.length)
  for (let i = 0; i < value.length; i++) {
    if (!(i in value)) wrongType('an array without holes', undefined, at(at(label, key), i))
    const item: unknown = value[i]
    out[i] = typeof item === 'string' && item.isWellFormed() ? item : readString(item, at(label, key), i)
  }
  return out
}

function readStringMap(value: unknown, label: string, key: string, isParsed: boolean): JsonObject {
  if (!isPlainObject(value)) wrongType('an object of strings', value, at(label, key))
  const out: JsonObject = {}
  const field = at(label, key)
  // Spec §3: metadata values must be strings.
  for (const [name, item] of ownEntries(value, field, isParsed)) setOwn(out, name, readString(item, field, name))
  return out
}

function readInteger(value: unknown, field: string, minimum: number | undefined): number | bigint {
  let result: number | bigint
  if (typeof value === 'number' && Number.isInteger(value)) {
    if (!Number.isSafeInteger(value)) throw new InputError('OUT_OF_RANGE', `${describeValue(value)} is not exact as a double; write it as an integer token`, { field })
    result = value === 0 ? 0 : value
  } else if (typeof value === 'bigint') {
    if (value < MIN_INT64 || value > MAX_INT64) throw new InputError('OUT_OF_RANGE', `${value} is outside the 64-bit signed range`, { field })
    result = value
  } else wrongType('an integer', value, field)
  if (minimum !== undefined && result < minimum) throw new InputError('OUT_OF_RANGE', `${result} is below the minimum ${minimum}`, { field })
  return result
}

function readNumber(value: unknown, field: string): number | bigint {
  if (typeof value === 'bigint') return value
  if (typeof value !== 'number' || !Number.isFinite(value)) wrongType('a finite number', value, field)
  return value === 0 ? 0 : value
}

function readField(fieldRule: FieldRule, value: unknown, label: string, key: string, dropped: string[], isParsed: boolean): JsonValue {
  switch (fieldRule.type) {
    case 'string':
      return typeof value === 'string' && value.isWellFormed() ? value : readString(value, label, key)
    case 'timestamp':
      // Checked as RFC 3339 (fractions and offsets allowed, §3), kept as given.
      if (typeof value === 'string' && isCanonicalTimestamp(value)) return value
      parseTimestamp(readString(value, label, key), at(label, key))
      return value as string
    case 'integer':
      return readInteger(value, at(label, key), fieldRule.minimum)
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) && value !== 0 ? value : readNumber(value, at(label, key))
    case 'boolean':
      if (typeof value !== 'boolean') wrongType('a boolean', value, at(label, key))
      return value
    case 'string[]':
      return readStringList(value, label, key)
    case 'string-map':
      return readStringMap(value, label, key, isParsed)
    case 'derived': {
      const derived = decodeRow(DERIVED_RULES, value, at(label, key), isParsed)
      for (const name of derived.dropped) dropped.push(`${key}.${name}`)
      return derived.record
    }
  }
}

/**
 * A deep copy of any JSON value (episode `ext`), refusing what has no JSON form.
 * @throws InputError NOT_JSON, BAD_STRING; LimitError TOO_DEEP
 */
export function copyJsonValue(value: unknown, field: string, depth = 0): JsonValue {
  switch (typeof value) {
    case 'string':
      if (!value.isWellFormed()) throw new InputError('BAD_STRING', 'a string holds a lone surrogate, which has no UTF-8 form', { field })
      return value
    case 'boolean':
    case 'bigint':
      return value
    case 'number':
      if (!Number.isFinite(value)) throw new InputError('NOT_JSON', `${String(value)} has no JSON form`, { field })
      return value
    case 'object': {
      if (value === null) return null
      if (depth >= MAX_VALUE_DEPTH) throw new LimitError('TOO_DEEP', `nesting deeper than ${MAX_VALUE_DEPTH}`, { field })
      if (Array.isArray(value)) {
        const out: JsonValue[] = []
        for (let i = 0; i < value.length; i++) {
          if (!(i in value) || value[i] === undefined) throw new InputError('NOT_JSON', 'an array holds undefined or a hole', { field: at(field, i) })
          out.push(copyJsonValue(value[i], at(field, i), depth + 1))
        }
        return out
      }
      if (!isPlainObject(value)) throw new InputError('NOT_JSON', `${describeType(value)} is not a JSON value`, { field })
      const out: JsonObject = {}
      for (const [key, item] of ownEntries(value, field, false)) {
        if (item !== undefined) setOwn(out, key, copyJsonValue(item, at(field, key), depth + 1))
      }
      return out
    }
    default:
      throw new InputError('NOT_JSON', `${typeof value} is not a JSON value`, { field })
  }
}

function decodeRow(rules: RowRules, value: unknown, label: string, isParsed: boolean): DecodedRow {
  if (!isPlainObject(value)) wrongType('an object', value, label)
  const record: JsonObject = {}
  const dropped: string[] = []
  let found = 0
  for (const [key, raw] of ownEntries(value, label, isParsed)) {
    if (raw === undefined) continue
    const fieldRule = rules.fields.get(key)
    if (fieldRule === undefined) {
      if (rules.keepsUnknown) setOwn(record, key, copyJsonValue(raw, at(label, key)))
      else dropped.push(key)
    } else if (raw !== null) {
      record[key] = readField(fieldRule, raw, label, key, dropped, isParsed)
      found++
    } else if (fieldRule.required) {
      wrongType(`a ${fieldRule.type}`, raw, at(label, key))
    }
  }
  // Every field present (the usual case) needs no second look.
  if (found !== rules.fields.size) {
    for (const [name, fieldRule] of rules.fields) {
      if (Object.hasOwn(record, name)) continue
      if (fieldRule.fill !== undefined) record[name] = readField(fieldRule, fieldRule.fill(), label, name, dropped, true)
      else if (fieldRule.required) throw new InputError('MISSING_FIELD', 'required', { field: at(label, name) })
    }
  }
  return { record, dropped }
}

/**
 * Decodes one record of a Portable Memory kind.
 * @throws InputError WRONG_TYPE, MISSING_FIELD, BAD_TIMESTAMP, BAD_STRING, OUT_OF_RANGE, NOT_JSON; LimitError TOO_DEEP
 */
export function decodeRecord(kind: RecordKind, value: unknown, label: string = kind): DecodedRow {
  return decodeRow(KIND_RULES.get(kind) as RowRules, value, label, false)
}

/** decodeRecord for a value fresh from parseJson, which holds no accessors (the bundle readers). */
export function decodeParsedRecord(kind: RecordKind, value: unknown): DecodedRow {
  return decodeRow(KIND_RULES.get(kind) as RowRules, value, kind, true)
}

/**
 * Decodes one tombstone. A missing `derived` block, or missing keys in it, are filled with
 * empty values as the reference reader does, so every written tombstone has all 7 keys.
 * @throws InputError as decodeRecord, and BAD_VALUE for an `op` other than delete or redact
 */
export function decodeTombstone(value: unknown, label = 'tombstone'): DecodedRow {
  const decoded = decodeRow(TOMBSTONE_RULES, value, label, false)
  const op = decoded.record.op as string
  if (!(TOMBSTONE_OPS as readonly string[]).includes(op)) {
    throw new InputError('BAD_VALUE', `expected one of ${TOMBSTONE_OPS.join(', ')}, got ${describeValue(op)}`, { field: `${label}.op` })
  }
  return decoded
}

/**
 * Decodes one audit-log row `{ts, actor, op, targetID, reason?}`.
 * @throws InputError as decodeRecord
 */
export function decodeAuditRow(value: unknown, label = 'audit'): DecodedRow {
  return decodeRow(AUDIT_RULES, value, label, false)
}

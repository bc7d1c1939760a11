/**
 * Canonical JSON (Portable Memory spec §3), the only text form Cairn ever hashes or signs.
 *
 * Invariant: one value has exactly one serialization. Keys are sorted recursively by Unicode
 * code point (not UTF-16 code unit, which is what `Array.prototype.sort` uses); there is no
 * whitespace; strings escape only `"`, `\` and U+0000–U+001F; numbers follow the reference
 * implementation (integral doubles below 1e16 as integers, everything else in Python `repr`
 * form, which is shortest round-trip digits); integers beyond 2^53 travel as `bigint` and are
 * exact through UInt64. Absent optional fields are omitted (`undefined` members are skipped),
 * never written as `null`.
 */
import { InputError, LimitError } from '../errors.js'

/** A JSON value as Cairn reads and writes it: integers beyond 2^53 are `bigint`. */
export type JsonValue = null | boolean | number | bigint | string | JsonValue[] | { [key: string]: JsonValue }
/** A JSON object (the one definition every part uses). */
export type JsonObject = { [key: string]: JsonValue }

/** Nesting deeper than this is refused; it also stops cycles. */
export const MAX_JSON_DEPTH = 256

/** Compares two strings by Unicode code point. */
export function compareCodePoints(a: string, b: string): number {
  const length = Math.min(a.length, b.length)
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x !== y) {
      // Surrogates (D800–DFFF) encode code points >= 0x10000, which sort after E000–FFFF.
      const cx = x >= 0xd800 && x <= 0xdfff ? x + 0x2800 : x
      const cy = y >= 0xd800 && y <= 0xdfff ? y + 0x2800 : y
      return cx - cy
    }
  }
  return a.length - b.length
}

/** Number text per the reference exporter (Python float repr, integers below 1e16 as digits). */
export function canonicalNumber(value: number, path = '$'): string {
  if (!Number.isFinite(value)) {
    throw new InputError('NOT_FINITE', `${String(value)} has no JSON form`, { path })
  }
  const magnitude = Math.abs(value)
  if (Number.isInteger(value) && magnitude < 1e16) return value === 0 ? '0' : String(value)
  // Between 1e-4 and 1e16 the exponent below is in [-4, 15] and the answer is String(value);
  // skipping toExponential halves the cost for the common fractions (confidence scores).
  if (magnitude >= 1e-4 && magnitude < 1e16) return String(value)
  const [mantissa = '', exponentText = '0'] = value.toExponential().split('e')
  const exponent = Number(exponentText)
  if (exponent < -4 || exponent >= 16) {
    const sign = exponent < 0 ? '-' : '+'
    const digits = String(Math.abs(exponent)).padStart(2, '0')
    return `${mantissa}e${sign}${digits}`
  }
  return String(value)
}

function canonicalString(value: string, trail: Trail): string {
  // Fast path, same bytes: a string holding nothing JSON.stringify escapes (U+0000-U+001F, `"`,
  // `\`) and no surrogate is its own quoted form. Skipping isWellFormed + JSON.stringify made
  // canonical JSON of a ~300-byte memory record ~20% faster (6.0 -> 4.7 µs, bench/README.md).
  let isPlain = true
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i)
    if (code < 0x20 || code === 0x22 || code === 0x5c || (code >= 0xd800 && code <= 0xdfff)) {
      isPlain = false
      break
    }
  }
  if (isPlain) return '"' + value + '"'
  if (!value.isWellFormed()) {
    throw new InputError('BAD_STRING', 'string holds a lone surrogate, which has no UTF-8 form', { path: pathOf(trail) })
  }
  return JSON.stringify(value)
}

function isObjectLike(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown
  return proto === Object.prototype || proto === null
}

/** Where the serializer is, as a list of keys and indexes; turned into a path only on error. */
type Trail = (string | number)[]

function pathOf(trail: Trail): string {
  let path = '$'
  for (const step of trail) path += typeof step === 'number' ? `[${step}]` : `.${step}`
  return path
}

function isSortedByCodePoint(keys: readonly string[]): boolean {
  for (let i = 1; i < keys.length; i++) if (compareCodePoints(keys[i - 1] as string, keys[i] as string) > 0) return false
  return true
}

// The trail is kept as an array rather than a path string built per value: building strings for
// every key made serialization ~2x slower, and the path is only needed for an error message.
function serialize(value: unknown, trail: Trail): string {
  switch (typeof value) {
    case 'string':
      return canonicalString(value, trail)
    case 'number':
      if (Number.isInteger(value) && value < 1e16 && value > -1e16) return value === 0 ? '0' : String(value)
      return canonicalNumber(value, pathOf(trail))
    case 'bigint':
      return value.toString()
    case 'boolean':
      return value ? 'true' : 'false'
    case 'object': {
      if (value === null) return 'null'
      if (trail.length >= MAX_JSON_DEPTH) {
        throw new LimitError('TOO_DEEP', `nesting deeper than ${MAX_JSON_DEPTH}`, { path: pathOf(trail) })
      }
      if (Array.isArray(value)) {
        let out = '['
        for (let i = 0; i < value.length; i++) {
          trail.push(i)
          const item: unknown = value[i]
          if (item === undefined) throw new InputError('NOT_JSON', 'array holds undefined', { path: pathOf(trail) })
          if (i > 0) out += ','
          out += serialize(item, trail)
          trail.pop()
        }
        return out + ']'
      }
      if (!isObjectLike(value)) {
        const name = (value as { constructor?: { name?: string } }).constructor?.name ?? 'object'
        throw new InputError('NOT_JSON', `${name} is not a JSON value`, { path: pathOf(trail) })
      }
      const record = value as Record<string, unknown>
      const keys = Object.keys(record)
      if (!isSortedByCodePoint(keys)) keys.sort(compareCodePoints)
      let out = '{'
      let first = true
      for (let i = 0; i < keys.length; i++) {
        const key = keys[i] as string
        const item = record[key]
        if (item === undefined) continue
        trail.push(key)
        out += (first ? '' : ',') + canonicalString(key, trail) + ':' + serialize(item, trail)
        trail.pop()
        first = false
      }
      return out + '}'
    }
    default:
      throw new InputError('NOT_JSON', `${typeof value} is not a JSON value`, { path: pathOf(trail) })
  }
}

/**
 * Serializes a JSON value canonically.
 * @throws InputError NOT_JSON, NOT_FINITE, BAD_STRING; LimitError TOO_DEEP
 */
export function canonicalJson(value: unknown): string {
  if (value === undefined) throw new InputError('NOT_JSON', 'undefined is not a JSON value', { path: '$' })
  return serialize(value, [])
}

const textEncoder = new TextEncoder()

/** Canonical JSON as UTF-8 bytes: what gets hashed. */
export function canonicalJsonBytes(value: unknown): Uint8Array {
  return textEncoder.encode(canonicalJson(value))
}

// Only a run of 16+ digits can be an integer beyond 2^53, and only a 3-digit exponent can
// overflow to Infinity; anything else parses exactly natively.
const NEEDS_CAREFUL_PARSE = /\d{16}|[eE][+]?\d{3}/
/** Only a number with a 3-digit exponent can overflow a double to ±Infinity. */
const LONG_EXPONENT = /[eE][+]?\d{3}/
/** An integer part of 16+ digits (a run inside a fraction cannot exceed 2^53). */
const LONG_INTEGER = /(?<![.\d])\d{16}/
const NUMBER_TOKEN = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y
const INTEGER_TOKEN = /^-?(?:0|[1-9]\d*)$/
const STRING_TOKEN = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y
const WHITESPACE = /[ \t\n\r]*/y

function positionOf(text: string, index: number): string {
  let line = 1
  let column = 1
  for (let i = 0; i < index && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++
      column = 1
    } else column++
  }
  return `line ${line} column ${column}`
}

class BigIntJsonParser {
  private index = 0
  constructor(private readonly text: string) {}

  parse(): JsonValue {
    const value = this.value(0)
    this.skipWhitespace()
    if (this.index !== this.text.length) this.fail('unexpected text after the value')
    return value
  }

  private fail(message: string): never {
    throw new InputError('BAD_JSON', `${message} at ${positionOf(this.text, this.index)}`)
  }

  private skipWhitespace(): void {
    WHITESPACE.lastIndex = this.index
    WHITESPACE.exec(this.text)
    this.index = WHITESPACE.lastIndex
  }

  private value(depth: number): JsonValue {
    if (depth > MAX_JSON_DEPTH) throw new LimitError('TOO_DEEP', `nesting deeper than ${MAX_JSON_DEPTH}`)
    this.skipWhitespace()
    const char = this.text[this.index]
    if (char === '{') return this.object(depth)
    if (char === '[') return this.array(depth)
    if (char === '"') return this.string()
    if (this.text.startsWith('true', this.index)) return this.literal('true', true)
    if (this.text.startsWith('false', this.index)) return this.literal('false', false)
    if (this.text.startsWith('null', this.index)) return this.literal('null', null)
    return this.number()
  }

  private literal<T>(token: string, value: T): T {
    this.index += token.length
    return value
  }

  private number(): number | bigint {
    NUMBER_TOKEN.lastIndex = this.index
    const match = NUMBER_TOKEN.exec(this.text)
    if (!match) this.fail('expected a JSON value')
    this.index = NUMBER_TOKEN.lastIndex
    const token = match[0]
    if (INTEGER_TOKEN.test(token)) {
      const asNumber = Number(token)
      return Number.isSafeInteger(asNumber) ? asNumber : BigInt(token)
    }
    const value = Number(token)
    if (!Number.isFinite(value)) {
      this.index -= token.length
      this.fail('number is too large for a double')
    }
    return value
  }

  private string(): string {
    STRING_TOKEN.lastIndex = this.index
    const match = STRING_TOKEN.exec(this.text)
    if (!match) this.fail('malformed string')
    this.index = STRING_TOKEN.lastIndex
    return JSON.parse(match[0]) as string
  }

  private array(depth: number): JsonValue[] {
    this.index++
    const items: JsonValue[] = []
    this.skipWhitespace()
    if (this.text[this.index] === ']') {
      this.index++
      return items
    }
    for (;;) {
      items.push(this.value(depth + 1))
      this.skipWhitespace()
      const char = this.text[this.index++]
      if (char === ']') return items
      if (char !== ',') {
        this.index--
        this.fail('expected "," or "]"')
      }
    }
  }

  private object(depth: number): { [key: string]: JsonValue } {
    this.index++
    const record: { [key: string]: JsonValue } = {}
    this.skipWhitespace()
    if (this.text[this.index] === '}') {
      this.index++
      return record
    }
    for (;;) {
      this.skipWhitespace()
      if (this.text[this.index] !== '"') this.fail('expected a string key')
      const key = this.string()
      this.skipWhitespace()
      if (this.text[this.index++] !== ':') {
        this.index--
        this.fail('expected ":"')
      }
      const item = this.value(depth + 1)
      // Own property even for "__proto__", as JSON.parse does.
      Object.defineProperty(record, key, { value: item, enumerable: true, writable: true, configurable: true })
      this.skipWhitespace()
      const char = this.text[this.index++]
      if (char === '}') return record
      if (char !== ',') {
        this.index--
        this.fail('expected "," or "}"')
      }
    }
  }
}

/**
 * Whether `text` holds more than `limit` opening brackets, in strings or not: nesting deeper than
 * `limit` needs that many, and counting them with indexOf is ~10x faster than the scan below
 * (a 800-character bundle line: ~0.2 against ~1.9 µs).
 */
function opensMoreThan(text: string, limit: number): boolean {
  let count = 0
  for (let i = text.indexOf('{'); i !== -1; i = text.indexOf('{', i + 1)) if (++count > limit) return true
  for (let i = text.indexOf('['); i !== -1; i = text.indexOf('[', i + 1)) if (++count > limit) return true
  return false
}

/** True when brackets nest deeper than MAX_JSON_DEPTH (then the careful parser refuses it). */
function nestsDeeperThanLimit(text: string): boolean {
  if (text.length <= MAX_JSON_DEPTH * 2 || !opensMoreThan(text, MAX_JSON_DEPTH)) return false
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (inString) {
      if (code === 0x5c) i++
      else if (code === 0x22) inString = false
    } else if (code === 0x22) inString = true
    else if (code === 0x5b || code === 0x7b) {
      if (++depth > MAX_JSON_DEPTH) return true
    } else if (code === 0x5d || code === 0x7d) depth--
  }
  return false
}

/**
 * Parses JSON text strictly (RFC 8259), returning integers beyond 2^53 as `bigint` so they
 * survive a round trip through `canonicalJson` exactly.
 * @throws InputError BAD_JSON with the line and column; LimitError TOO_DEEP
 */
export function parseJson(text: string): JsonValue {
  if (typeof text !== 'string') throw new InputError('WRONG_TYPE', 'parseJson takes a string')
  if (!NEEDS_CAREFUL_PARSE.test(text) && !nestsDeeperThanLimit(text)) {
    try {
      return JSON.parse(text) as JsonValue
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error)
      const at = /position (\d+)/.exec(detail)
      const where = at?.[1] !== undefined ? ` at ${positionOf(text, Number(at[1]))}` : ''
      throw new InputError('BAD_JSON', `${detail.replace(/ in JSON at position \d+.*$/, '')}${where}`)
    }
  }
  // The rules above also match hex text such as a body's salt ("…e123…") and float artifacts
  // such as 0.5700000000000001, which sent about half of real event bodies to the careful parser
  // (~12 µs instead of ~2.6 µs, bench/README.md). Without a long integer, JSON.parse gives the
  // careful parser's value unless a number overflowed; a parse failure or an overflow still goes
  // to the careful parser, so values and errors are unchanged.
  if (!LONG_INTEGER.test(text) && !nestsDeeperThanLimit(text)) {
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      value = undefined
    }
    if (value !== undefined && (!LONG_EXPONENT.test(text) || !holdsNonFinite(value))) return value as JsonValue
  }
  return new BigIntJsonParser(text).parse()
}

/** True when a parsed value holds a number that overflowed to ±Infinity. */
function holdsNonFinite(value: unknown): boolean {
  if (typeof value === 'number') return !Number.isFinite(value)
  if (typeof value !== 'object' || value === null) return false
  for (const item of Array.isArray(value) ? value : Object.values(value)) if (holdsNonFinite(item)) return true
  return false
}

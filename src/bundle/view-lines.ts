/**
 * The `.mem` line of a stored view, cut from the view's own bytes. The projection stores each
 * view as canonical JSON (UTF-8), and a record's PM line is canonical JSON of the same object
 * without `kind`, without the internal id of composite-key kinds and without the Cairn extension
 * fields a kind without `ext` has no place for (toPortable). Removing members from a canonical
 * object leaves it canonical (keys stay sorted, nothing else moves), so the line is the view's
 * bytes with those members left out: no parse, no check, no serialization per record, which
 * was about half of an export's time.
 *
 * Invariant: a line cut here equals `canonicalJson(decodeRecord(kind, toPortable(view)).record)`,
 * what the codec writes for the parsed view (a fast-check property holds the two equal), so a
 * bundle written this way reads back. Each kept value is checked against its field's type as
 * cheaply as the bytes allow (a string starts with a quote, a timestamp is in the form the codec
 * keeps, an integer is exact and above its minimum, lists and maps hold strings; an episode's
 * unknown key holds one JSON value). A view that fails any of it — a `null` (the codec drops
 * it), a wrong type (a raw event from a peer can carry one), a key its kind does not have, a
 * required field missing — gets undefined, and the caller takes the codec's path, which writes
 * or refuses it as it always did.
 */
import { parseJson, type JsonValue } from '../log/index.js'
import { BACKSLASH, CLOSE_BRACE, CLOSE_BRACKET, COLON, COMMA, OPEN_BRACE, OPEN_BRACKET, QUOTE } from '../log/json-codes.js'
import { kindSpec, RECORD_KINDS, isRecordKind, type FieldSpec, type RecordKind } from '../projection/index.js'
import { isCanonicalTimestamp } from './mem/timestamp-check.js'
import { extensionFieldsOf } from './portable-records.js'

/** What a kind's line keeps and needs, worked out once per kind. */
interface KindLineRules {
  /** Top-level keys left out of the line. */
  readonly dropped: ReadonlySet<string>
  /** The fields the line may hold, by name. */
  readonly fields: ReadonlyMap<string, FieldSpec>
  /** Whether other keys may be there too (episodes keep unknown keys as `ext`). */
  readonly keepsUnknown: boolean
  readonly required: readonly string[]
}

const RULES = new Map<RecordKind, KindLineRules>(RECORD_KINDS.map((kind) => {
  const spec = kindSpec(kind)
  const dropped = new Set(['kind', ...extensionFieldsOf(kind), ...(spec.keyFields !== undefined ? ['id'] : [])])
  const fields = Object.values(spec.fields).filter((field) => !dropped.has(field.name) && field.extension !== true)
  return [kind, {
    dropped,
    fields: new Map(fields.map((field) => [field.name, field])),
    keepsUnknown: spec.hasExt,
    required: fields.filter((field) => field.required).map((field) => field.name),
  }]
}))

/**
 * One stored view, its top-level members located: its `.mem` line and the few values an export
 * reads, without parsing the rest. A class, not closures per view: an export makes one per record.
 */
export class ViewLine {
  private constructor(
    private readonly bytes: Buffer,
    private readonly keys: readonly string[],
    /** Per member: where `"key":value` starts, where its value starts, and where it ends. */
    private readonly starts: readonly number[],
    private readonly valueStarts: readonly number[],
    private readonly ends: readonly number[],
    readonly kind: RecordKind,
    /** The record's id (Cairn's; for composite-key kinds the derived one). */
    readonly id: string,
    private readonly shape: Shape,
  ) {}

  /**
   * The view stored as `bytes`, or undefined when the codec's path must decide (see the header).
   * @param bytes canonical JSON of a view, as the projection stores it
   */
  static of(stored: Uint8Array): ViewLine | undefined {
    const bytes = Buffer.isBuffer(stored) ? stored : Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength)
    const keys: string[] = []
    const starts: number[] = []
    const valueStarts: number[] = []
    const ends: number[] = []
    if (!locateMembers(bytes, keys, starts, valueStarts, ends)) return undefined
    const kindAt = keys.indexOf('kind')
    const idAt = keys.indexOf('id')
    if (kindAt < 0 || idAt < 0) return undefined
    const kind = stringAt(bytes, valueStarts[kindAt] as number, ends[kindAt] as number)
    const id = stringAt(bytes, valueStarts[idAt] as number, ends[idAt] as number)
    if (!isRecordKind(kind) || typeof id !== 'string') return undefined
    const shape = shapeOf(kind, keys)
    if (shape === undefined) return undefined
    for (let i = 0; i < keys.length; i++) {
      const rule = shape.rules[i] as MemberRule
      if (rule === DROPPED) continue
      if (rule === UNKNOWN ? !isJsonValue(bytes, valueStarts[i] as number, ends[i] as number) : !holdsType(bytes, valueStarts[i] as number, ends[i] as number, rule)) return undefined
    }
    return new ViewLine(bytes, keys, starts, valueStarts, ends, kind, id, shape)
  }

  /** A top-level value of the view, parsed (undefined when absent). */
  value(key: string): JsonValue | undefined {
    const i = this.keys.indexOf(key)
    return i < 0 ? undefined : stringAt(this.bytes, this.valueStarts[i] as number, this.ends[i] as number)
  }

  /**
   * The PM line, canonical JSON without the trailing newline. Kept members are copied a run at a
   * time (the commas between neighbours come with them): two or three copies per view, not one
   * per member.
   */
  line(arena?: LineArena): Buffer {
    const { runs } = this.shape
    // "{" and "}", and a comma between runs.
    let length = runs.length === 0 ? 2 : 1
    for (let r = 0; r < runs.length; r += 2) length += (this.ends[runs[r + 1] as number] as number) - (this.starts[runs[r] as number] as number) + 1
    const line = arena !== undefined ? arena.take(length) : Buffer.allocUnsafe(length)
    let at = 0
    line[at++] = OPEN_BRACE
    for (let r = 0; r < runs.length; r += 2) {
      if (r > 0) line[at++] = COMMA
      const start = this.starts[runs[r] as number] as number
      const end = this.ends[runs[r + 1] as number] as number
      at += this.bytes.copy(line, at, start, end)
    }
    line[at++] = CLOSE_BRACE
    return line
  }
}

/** What a member's key makes of it: left out of the line, a field checked for its type, or an unknown key kept as any JSON value (an episode's ext). */
type MemberRule = FieldSpec | typeof DROPPED | typeof UNKNOWN
const DROPPED = 0
const UNKNOWN = 1

/** The layout of views with one list of keys: each member's rule, and the kept members as runs. */
interface Shape {
  readonly keys: readonly string[]
  readonly rules: readonly MemberRule[]
  /** Pairs of member indexes, first and last of each run of kept members. */
  readonly runs: readonly number[]
}

/**
 * The last shape seen per kind. Views of a kind mostly share their keys, so the rules and runs
 * are worked out once, not per view (recentKeyEnd hands back the same key strings, so the
 * comparison is cheap).
 */
const lastShapes = new Map<RecordKind, Shape>()

/** The shape of a view of `kind` with these keys; undefined when its kind lacks a key or a required field is missing. */
function shapeOf(kind: RecordKind, keys: readonly string[]): Shape | undefined {
  const last = lastShapes.get(kind)
  if (last !== undefined && last.keys.length === keys.length && last.keys.every((key, i) => key === keys[i])) return last
  const shape = newShape(RULES.get(kind) as KindLineRules, keys)
  if (shape !== undefined) lastShapes.set(kind, shape)
  return shape
}

function newShape(rules: KindLineRules, keys: readonly string[]): Shape | undefined {
  const memberRules: MemberRule[] = []
  const runs: number[] = []
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string
    const rule = rules.dropped.has(key) ? DROPPED : rules.fields.get(key) ?? (rules.keepsUnknown ? UNKNOWN : undefined)
    if (rule === undefined) return undefined
    memberRules.push(rule)
    if (rule === DROPPED) continue
    if (i > 0 && memberRules[i - 1] !== DROPPED) runs[runs.length - 1] = i
    else runs.push(i, i)
  }
  for (const name of rules.required) if (!keys.includes(name)) return undefined
  return { keys: [...keys], rules: memberRules, runs }
}

/**
 * Room for many lines in a few large buffers. An export holds every line until the end; one small
 * buffer each (100k of them) made the garbage collector run far more often, because each is
 * memory outside the heap that V8 counts towards its next collection.
 */
export class LineArena {
  private slab = Buffer.alloc(0)
  private used = 0

  constructor(private readonly slabBytes = 4 << 20) {}

  /** `length` bytes of fresh room (not zeroed), valid as long as the caller holds them. */
  take(length: number): Buffer {
    if (this.used + length > this.slab.length) {
      this.slab = Buffer.allocUnsafe(Math.max(this.slabBytes, length))
      this.used = 0
    }
    const room = this.slab.subarray(this.used, this.used + length)
    this.used += length
    return room
  }
}

const ZERO = 0x30
const NINE = 0x39
const MINUS = 0x2d
const PLUS = 0x2b
const DOT = 0x2e
const LOWER_E = 0x65

/** Index past the digits from `at` (at itself when there are none). */
function digitsEnd(bytes: Buffer, at: number, end: number): number {
  while (at < end && (bytes[at] as number) >= ZERO && (bytes[at] as number) <= NINE) at++
  return at
}

/**
 * Whether [start, end) is a JSON number in canonical JSON's form (`-?(0|[1-9]\d*)(\.\d+)?(e[+-]?\d+)?`)
 * that is not zero unless written `0`: the codec writes a negative zero, and a value too small
 * for a double, as `0`.
 */
function isCanonicalNumber(bytes: Buffer, start: number, end: number): boolean {
  let i = start
  if (bytes[i] === MINUS) i++
  const integerStart = i
  if (bytes[i] === ZERO) i++
  else if ((bytes[i] as number) > ZERO && (bytes[i] as number) <= NINE) i = digitsEnd(bytes, i + 1, end)
  else return false
  const integerEnd = i
  if (bytes[i] === DOT) {
    const fractionEnd = digitsEnd(bytes, i + 1, end)
    if (fractionEnd === i + 1) return false
    i = fractionEnd
  }
  const mantissaEnd = i
  if (bytes[i] === LOWER_E) {
    i++
    if (bytes[i] === PLUS || bytes[i] === MINUS) i++
    const exponentEnd = digitsEnd(bytes, i, end)
    if (exponentEnd === i) return false
    i = exponentEnd
  }
  if (i !== end) return false
  // An integer of more than 15 digits may be beyond 2^53, kept exact (a bigint): an import
  // refuses those in number fields, so the export's checks must see it (checkImportRules).
  if (mantissaEnd === integerEnd && integerEnd === end && integerEnd - integerStart > 15) return false
  // A plain decimal of up to 20 characters with a non-zero digit is never zero as a double;
  // anything longer, or with an exponent, is read to be sure.
  if (mantissaEnd === end && end - start <= 20) {
    if (end - start === 1) return true
    for (let j = integerStart; j < end; j++) if (j !== integerEnd && bytes[j] !== ZERO) return true
    return false
  }
  return Number(asciiText(bytes, start, end)) !== 0
}

/**
 * The value of [start, end) when it is an integer the codec takes as it is — no fraction or
 * exponent, no negative zero, at most 15 digits so it is exact as a double — else undefined.
 */
function exactInteger(bytes: Buffer, start: number, end: number): number | undefined {
  const negative = bytes[start] === MINUS
  const digits = negative ? start + 1 : start
  if (end - digits < 1 || end - digits > 15) return undefined
  if (bytes[digits] === ZERO) return end - start === 1 ? 0 : undefined
  let value = 0
  for (let i = digits; i < end; i++) {
    const digit = (bytes[i] as number) - ZERO
    if (digit < 0 || digit > 9) return undefined
    value = value * 10 + digit
  }
  return negative ? -value : value
}

/** Whether [start, end) parses as one JSON value (an episode's unknown key, which the codec keeps as it is). */
function isJsonValue(bytes: Buffer, start: number, end: number): boolean {
  return end > start && parseOrUndefined(bytes, start, end) !== undefined
}

/**
 * Whether the value in [start, end) is one the codec takes for `field` as it is, so the cut line
 * is the codec's: the right JSON type, a timestamp in the form the codec keeps without parsing, an
 * integer exact and above its minimum, lists and maps of strings. Anything else (including a
 * `null`, which the codec drops) is left to the codec, which writes or refuses it itself.
 */
function holdsType(bytes: Buffer, start: number, end: number, field: FieldSpec): boolean {
  if (end <= start) return false
  const first = bytes[start] as number
  switch (field.type) {
    case 'string':
      return first === QUOTE && end - start >= 2
    case 'timestamp':
      // The canonical form is 20 ASCII characters; any other byte fails its digit or separator checks.
      return end - start === 22 && first === QUOTE && isCanonicalTimestamp(asciiText(bytes, start + 1, end - 1))
    case 'number':
      return isCanonicalNumber(bytes, start, end)
    case 'integer': {
      const value = exactInteger(bytes, start, end)
      return value !== undefined && (field.minimum === undefined || value >= field.minimum)
    }
    case 'boolean':
      return end - start === 4 ? first === 0x74 && bytes[start + 1] === 0x72 && bytes[start + 2] === 0x75 && bytes[start + 3] === 0x65
        : end - start === 5 && first === 0x66 && bytes[start + 1] === 0x61 && bytes[start + 2] === 0x6c && bytes[start + 3] === 0x73 && bytes[start + 4] === 0x65
    case 'string[]': {
      if (first !== OPEN_BRACKET) return false
      if (end - start === 2) return bytes[start + 1] === CLOSE_BRACKET
      const value = parseOrUndefined(bytes, start, end)
      return Array.isArray(value) && value.every((item) => typeof item === 'string')
    }
    case 'string-map': {
      if (first !== OPEN_BRACE) return false
      if (end - start === 2) return bytes[start + 1] === CLOSE_BRACE
      const value = parseOrUndefined(bytes, start, end)
      return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.values(value).every((item) => typeof item === 'string')
    }
  }
}

/** The JSON value in [start, end), or undefined when it is not one. */
function parseOrUndefined(bytes: Buffer, start: number, end: number): JsonValue | undefined {
  try {
    return parseJson(bytes.toString('utf8', start, end))
  } catch {
    return undefined
  }
}

/** True when [start, end) holds only ASCII bytes and no backslash. */
function isPlainAscii(bytes: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const byte = bytes[i] as number
    if (byte >= 0x80 || byte === BACKSLASH) return false
  }
  return true
}

/**
 * ASCII bytes as a string. Buffer's own latin1Slice skips toString's encoding dispatch, a tenth of
 * an export's time when every key of every view goes through it; toString where it is missing.
 */
const asciiText: (bytes: Buffer, start: number, end: number) => string =
  typeof (Buffer.prototype as { latin1Slice?: unknown }).latin1Slice === 'function'
    ? (bytes, start, end) => (bytes as Buffer & { latin1Slice(start: number, end: number): string }).latin1Slice(start, end)
    : (bytes, start, end) => bytes.toString('latin1', start, end)

/** The JSON value in [start, end): a plain string straight from its bytes, anything else parsed. */
function stringAt(bytes: Buffer, start: number, end: number): JsonValue {
  if (bytes[start] === QUOTE && isPlainAscii(bytes, start + 1, end - 1)) return asciiText(bytes, start + 1, end - 1)
  return parseJson(bytes.toString('utf8', start, end))
}

/** Index just past the string that starts at `at` (a quote). */
function stringEnd(bytes: Uint8Array, at: number): number {
  // Short strings (keys, ids, times) byte by byte; past that, Buffer's native search finds the
  // next quote, which closes the string unless an odd run of backslashes escapes it.
  const scanned = Math.min(bytes.length, at + 1 + SHORT_STRING)
  let i = at + 1
  while (i < scanned) {
    const byte = bytes[i] as number
    if (byte === BACKSLASH) i += 2
    else if (byte === QUOTE) return i + 1
    else i++
  }
  for (;;) {
    const quote = (bytes as Buffer).indexOf(QUOTE, i)
    if (quote < 0) return -1
    let backslashes = 0
    while (quote - backslashes - 1 > at && bytes[quote - backslashes - 1] === BACKSLASH) backslashes++
    if (backslashes % 2 === 0) return quote + 1
    i = quote + 1
  }
}

/** Strings up to this many bytes are scanned in JavaScript; longer ones with a native search. */
const SHORT_STRING = 24

/** Index just past the value that starts at `at`, or -1 when the bytes end first. */
function valueEnd(bytes: Uint8Array, at: number): number {
  let depth = 0
  let i = at
  while (i < bytes.length) {
    const byte = bytes[i] as number
    if (byte === QUOTE) {
      i = stringEnd(bytes, i)
      if (i < 0) return -1
      if (depth === 0) return i
      continue
    }
    if (byte === OPEN_BRACE || byte === OPEN_BRACKET) depth++
    else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      if (depth === 0) return i
      depth--
      if (depth === 0) return i + 1
    } else if (byte === COMMA && depth === 0) return i
    i++
  }
  return -1
}

/**
 * The keys seen at each member position of the views read last: views of a kind share their keys,
 * so a key is mostly the string already held there and no new one is made (an export reads
 * ~18 keys per view).
 */
const recentKeys: string[] = []

/**
 * Index just past the key that starts at `start` (a quote) when it is the key held for member
 * `position`, else -1. Held keys are plain (newKeyAt), so bytes equal to one are plain too: no
 * escape, no multi-byte character, and no quote, which would end the key inside the held one.
 */
function recentKeyEnd(bytes: Buffer, start: number, position: number): number {
  const recent = recentKeys[position]
  if (recent === undefined) return -1
  const close = start + 1 + recent.length
  if (close >= bytes.length || bytes[close] !== QUOTE) return -1
  for (let i = 0; i < recent.length; i++) if (recent.charCodeAt(i) !== bytes[start + 1 + i]) return -1
  return close + 1
}

/** The key whose quoted bytes are [start, end), member `position` of its object, held for the next view when it is plain. */
function newKeyAt(bytes: Buffer, start: number, end: number, position: number): JsonValue {
  const key = stringAt(bytes, start, end)
  if (typeof key === 'string' && position < 64 && isPlainKey(key)) recentKeys[position] = key
  return key
}

/**
 * Printable ASCII without a quote or a backslash: a key JSON writes as its own bytes. Only such
 * keys are held, so a held key can never match bytes that hold an escape or the end of a key
 * (an escaped key such as `a":1,"b` would otherwise match two members of a later view).
 */
function isPlainKey(key: string): boolean {
  for (let i = 0; i < key.length; i++) {
    const code = key.charCodeAt(i)
    if (code < 0x20 || code > 0x7e || code === QUOTE || code === BACKSLASH) return false
  }
  return true
}

/** Fills the member arrays from a canonical JSON object; false when the bytes are not one. */
function locateMembers(bytes: Buffer, keys: string[], starts: number[], valueStarts: number[], ends: number[]): boolean {
  if (bytes[0] !== OPEN_BRACE || bytes[bytes.length - 1] !== CLOSE_BRACE) return false
  let i = 1
  if (bytes[i] === CLOSE_BRACE) return i === bytes.length - 1
  for (;;) {
    if (bytes[i] !== QUOTE) return false
    const position = keys.length
    let keyEnd = recentKeyEnd(bytes, i, position)
    let key: JsonValue
    if (keyEnd >= 0) key = recentKeys[position] as string
    else {
      keyEnd = stringEnd(bytes, i)
      if (keyEnd < 0) return false
      key = newKeyAt(bytes, i, keyEnd, position)
    }
    if (bytes[keyEnd] !== COLON || typeof key !== 'string') return false
    const end = valueEnd(bytes, keyEnd + 1)
    if (end < 0) return false
    keys.push(key)
    starts.push(i)
    valueStarts.push(keyEnd + 1)
    ends.push(end)
    if (bytes[end] === CLOSE_BRACE) return end === bytes.length - 1
    if (bytes[end] !== COMMA) return false
    i = end + 1
  }
}

/**
 * The event: a small header with no user content, and a body with the operation.
 *
 *   header = { author, bodyHash, bodySize, clock: { logical, wall }, deps, kind, prev?, seq,
 *              space?, v }
 *   body   = { data, op, salt }
 *   id     = SHA-256(canonical JSON bytes of the header)
 *
 * Invariants kept here: a header or body is accepted only in canonical form (decoding and
 * re-encoding gives the same bytes), so every implementation derives the same id; `space` is
 * absent exactly on a genesis event (whose id becomes the space id); `prev` is absent exactly at
 * seq 1; `deps` is sorted and unique. The byte format is documented in docs/log-format.md.
 */
import { assertArray, assertInteger, assertObject, assertOneOf, assertString } from '../assert.js'
import { InputError, LimitError, VerifyError } from '../errors.js'
import { utf8Decode, utf8Encode } from './bytes.js'
import { canonicalJson, canonicalNumber, parseJson, type JsonValue } from './canonical-json.js'
import { scanCanonicalString, scanCanonicalValue } from './canonical-scan.js'
import type { Hlc } from './hlc.js'
import { assertAuthorKey, assertEventId, assertSpaceId, type AuthorKey, type EventId, type SpaceId } from './ids.js'

export const LOG_FORMAT_VERSION = 1
/** A body larger than this is refused (1 MiB). */
export const MAX_BODY_BYTES = 1024 * 1024
/** A header naming more dependencies than this is refused. */
export const MAX_DEPS = 1024
/** Operation names are short identifiers such as `memory.create`. */
export const MAX_OP_LENGTH = 128
export const SALT_BYTES = 16

/** Control events (genesis, grant, revoke) always travel with their bodies and are never erased. */
export type EventKind = 'control' | 'data'
export const EVENT_KINDS: readonly EventKind[] = ['control', 'data']

export interface EventHeader {
  readonly v: 1
  /** Absent only on a genesis event. */
  readonly space?: SpaceId
  readonly author: AuthorKey
  readonly seq: number
  /** Absent only at seq 1. */
  readonly prev?: EventId
  /** Heads of other authors that were new to the author; sorted, unique. */
  readonly deps: readonly EventId[]
  readonly clock: Hlc
  readonly kind: EventKind
  /** Lowercase hex SHA-256 of the body's canonical bytes. */
  readonly bodyHash: string
  readonly bodySize: number
}

export interface EventBody {
  readonly op: string
  readonly data: JsonValue
  /** 16 random bytes (hex) so a body hash cannot be confirmed by guessing its content. */
  readonly salt: string
}

/** An event as it is shipped and ingested: the exact bytes that are hashed and signed. */
export interface EventEnvelope {
  readonly id: EventId
  /** Canonical JSON bytes of the header. */
  readonly header: Uint8Array
  /** Canonical JSON bytes of the body; absent when erased or outside a peer's scope. */
  readonly body?: Uint8Array
  /** Ed25519 signature over `eventSignable(id)`; present on the newest event of each range. */
  readonly signature?: Uint8Array
}

const HEX64 = /^[0-9a-f]{64}$/
const HEX_SALT = /^[0-9a-f]{32}$/

function jsonString(text: string): string {
  return JSON.stringify(text)
}

/**
 * Canonical JSON of a header, written field by field in code-point key order. Equal to
 * `canonicalJson(header)` (a property test checks this) but several times faster, and the
 * header is on every hot path.
 */
export function encodeHeader(header: EventHeader): string {
  let deps = '['
  for (let i = 0; i < header.deps.length; i++) deps += (i > 0 ? ',"' : '"') + header.deps[i] + '"'
  deps += ']'
  return (
    '{"author":"' + header.author +
    '","bodyHash":"' + header.bodyHash +
    '","bodySize":' + header.bodySize +
    ',"clock":{"logical":' + canonicalNumber(header.clock.logical) +
    ',"wall":' + canonicalNumber(header.clock.wall) +
    '},"deps":' + deps +
    ',"kind":' + jsonString(header.kind) +
    (header.prev !== undefined ? ',"prev":"' + header.prev + '"' : '') +
    ',"seq":' + header.seq +
    (header.space !== undefined ? ',"space":"' + header.space + '"' : '') +
    ',"v":' + header.v + '}'
  )
}

const HEADER_KEYS = new Set(['author', 'bodyHash', 'bodySize', 'clock', 'deps', 'kind', 'prev', 'seq', 'space', 'v'])

/**
 * Validates a parsed header's fields. Does not check canonical form; `decodeHeader` does.
 * @throws InputError naming the field
 */
export function validateHeader(value: unknown): EventHeader {
  const raw = assertObject(value, 'header')
  for (const key of Object.keys(raw)) {
    if (!HEADER_KEYS.has(key)) throw new InputError('UNKNOWN_FIELD', `unknown header field "${key}"`, { field: `header.${key}` })
  }
  if (raw.v !== LOG_FORMAT_VERSION) {
    throw new InputError('UNSUPPORTED_VERSION', `header version ${String(raw.v)} is not ${LOG_FORMAT_VERSION}`, { field: 'header.v' })
  }
  const author = assertAuthorKey(raw.author, 'header.author')
  const seq = assertInteger(raw.seq, 'header.seq', 1)
  const space = raw.space === undefined ? undefined : assertSpaceId(raw.space, 'header.space')
  const prev = raw.prev === undefined ? undefined : assertEventId(raw.prev, 'header.prev')
  if ((seq === 1) !== (prev === undefined)) {
    throw new InputError('BAD_PREV', 'prev must be absent at seq 1 and present after it', { field: 'header.prev' })
  }
  const depsRaw = assertArray(raw.deps, 'header.deps')
  if (depsRaw.length > MAX_DEPS) throw new LimitError('TOO_MANY_DEPS', `more than ${MAX_DEPS} deps`, { field: 'header.deps' })
  const deps: EventId[] = []
  for (let i = 0; i < depsRaw.length; i++) {
    const dep = assertEventId(depsRaw[i], `header.deps[${i}]`)
    if (i > 0 && dep <= (deps[i - 1] as string)) {
      throw new InputError('BAD_DEPS', 'deps must be sorted and unique', { field: `header.deps[${i}]` })
    }
    deps.push(dep)
  }
  if (space === undefined && (seq !== 1 || deps.length > 0)) {
    throw new InputError('BAD_GENESIS', 'an event without a space must be a genesis: seq 1, no deps', { field: 'header.space' })
  }
  const clockRaw = assertObject(raw.clock, 'header.clock')
  for (const key of Object.keys(clockRaw)) {
    if (key !== 'wall' && key !== 'logical') {
      throw new InputError('UNKNOWN_FIELD', `unknown clock field "${key}"`, { field: `header.clock.${key}` })
    }
  }
  const clock: Hlc = {
    wall: assertInteger(clockRaw.wall, 'header.clock.wall', 0),
    logical: assertInteger(clockRaw.logical, 'header.clock.logical', 0),
  }
  const kind = assertOneOf(raw.kind, EVENT_KINDS, 'header.kind')
  const bodyHash = assertString(raw.bodyHash, 'header.bodyHash')
  if (!HEX64.test(bodyHash)) throw new InputError('BAD_HEX', 'bodyHash must be 64 lowercase hex characters', { field: 'header.bodyHash' })
  const bodySize = assertInteger(raw.bodySize, 'header.bodySize', 0, MAX_BODY_BYTES)
  const header: { -readonly [K in keyof EventHeader]: EventHeader[K] } = {
    v: LOG_FORMAT_VERSION, author, seq, deps, clock, kind, bodyHash, bodySize,
  }
  if (space !== undefined) header.space = space
  if (prev !== undefined) header.prev = prev
  return header
}

// The canonical header text, exactly: one match both parses a header and proves its bytes are the
// canonical form (key order, no whitespace, no leading zeros), ~4x cheaper than parse + re-encode.
const CANONICAL_HEADER = new RegExp(
  '^\\{"author":"([0-9a-f]{64})","bodyHash":"([0-9a-f]{64})","bodySize":(0|[1-9][0-9]{0,15}),' +
  '"clock":\\{"logical":(0|[1-9][0-9]{0,15}),"wall":(0|[1-9][0-9]{0,15})\\},' +
  '"deps":\\[((?:"[0-9a-f]{64}")(?:,"[0-9a-f]{64}")*)?\\],"kind":"(control|data)"' +
  '(?:,"prev":"([0-9a-f]{64})")?,"seq":([1-9][0-9]{0,15})(?:,"space":"([0-9a-f]{64})")?,"v":1\\}$',
)

/** The fast path of decodeHeader; undefined when the text is not a valid canonical header. */
function parseCanonicalHeader(text: string): EventHeader | undefined {
  const match = CANONICAL_HEADER.exec(text)
  if (!match) return undefined
  const [, author, bodyHash, bodySize, logical, wall, depsText, kind, prev, seq, space] = match
  const numbers = [Number(bodySize), Number(logical), Number(wall), Number(seq)]
  if (!numbers.every(Number.isSafeInteger) || (numbers[0] as number) > MAX_BODY_BYTES) return undefined
  const deps = depsText ? depsText.slice(1, -1).split('","') as EventId[] : []
  if (deps.length > MAX_DEPS) return undefined
  for (let i = 1; i < deps.length; i++) if ((deps[i] as string) <= (deps[i - 1] as string)) return undefined
  const seqNumber = numbers[3] as number
  if ((seqNumber === 1) !== (prev === undefined)) return undefined
  if (space === undefined && (seqNumber !== 1 || deps.length > 0)) return undefined
  const header: { -readonly [K in keyof EventHeader]: EventHeader[K] } = {
    v: LOG_FORMAT_VERSION,
    author: author as AuthorKey,
    seq: seqNumber,
    deps,
    clock: { wall: numbers[2] as number, logical: numbers[1] as number },
    kind: kind as EventKind,
    bodyHash: bodyHash as string,
    bodySize: numbers[0] as number,
  }
  if (space !== undefined) header.space = space as SpaceId
  if (prev !== undefined) header.prev = prev as EventId
  return header
}

/**
 * Decodes header bytes, refusing anything but the canonical encoding of a valid header.
 * @throws VerifyError BAD_HEADER naming the field and, when known, the claimed event id
 */
export function decodeHeader(bytes: Uint8Array | string, claimedId?: string): EventHeader {
  const where = claimedId !== undefined ? { event: claimedId } : {}
  let text: string
  let header: EventHeader
  try {
    text = typeof bytes === 'string' ? bytes : utf8Decode(bytes)
    const fast = parseCanonicalHeader(text)
    if (fast) return fast
    header = validateHeader(JSON.parse(text))
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error)
    throw new VerifyError('BAD_HEADER', `header does not decode: ${detail}`, where, { cause: error })
  }
  if (encodeHeader(header) !== text) throw new VerifyError('BAD_HEADER', 'header is not in canonical form', where)
  return header
}

export function encodeBody(body: EventBody): string {
  return canonicalJson({ data: body.data, op: body.op, salt: body.salt })
}

export function encodeBodyBytes(body: EventBody): Uint8Array {
  return utf8Encode(encodeBody(body))
}

/**
 * A body whose `data` is parsed from its canonical text on first read, then kept. The log itself
 * never reads the data of a data event (only control bodies, whose data it authorizes), so a
 * store that only keeps or forwards events never pays for the parse. `data` is an own,
 * enumerable property, so spreading, cloning and serializing the body see it as usual.
 */
export function lazyBody(op: string, salt: string, dataText: string): EventBody {
  let parsed = false
  let data: JsonValue = null
  return {
    op,
    get data(): JsonValue {
      if (!parsed) {
        data = parseJson(dataText)
        parsed = true
      }
      return data
    },
    salt,
  }
}

const BODY_DATA_PREFIX = '{"data":'
const BODY_OP_INFIX = ',"op":'
const BODY_SALT_INFIX = ',"salt":"'

/**
 * The body of `text` when one scan proves it canonical and well formed; undefined when it
 * cannot (the full decode then decides and names what is wrong).
 */
function decodeCanonicalBody(text: string): EventBody | undefined {
  if (!text.startsWith(BODY_DATA_PREFIX)) return undefined
  const dataEnd = scanCanonicalValue(text, BODY_DATA_PREFIX.length, 1)
  if (dataEnd < 0 || !text.startsWith(BODY_OP_INFIX, dataEnd)) return undefined
  const opStart = dataEnd + BODY_OP_INFIX.length
  const opEnd = scanCanonicalString(text, opStart)
  if (opEnd < 0) return undefined
  const op = text.slice(opStart + 1, opEnd - 1)
  if (op.length === 0 || op.length > MAX_OP_LENGTH || op.includes('\\')) return undefined
  const saltStart = opEnd + BODY_SALT_INFIX.length
  if (text.length !== saltStart + 2 * SALT_BYTES + 2 || !text.startsWith(BODY_SALT_INFIX, opEnd) || !text.endsWith('"}')) return undefined
  const salt = text.slice(saltStart, saltStart + 2 * SALT_BYTES)
  if (!HEX_SALT.test(salt)) return undefined
  return lazyBody(op, salt, text.slice(BODY_DATA_PREFIX.length, dataEnd))
}

/**
 * Decodes body bytes (already checked against the header's hash), refusing non-canonical forms.
 * @throws VerifyError BAD_BODY
 */
export function decodeBody(bytes: Uint8Array, eventId?: string): EventBody {
  const where = eventId !== undefined ? { event: eventId } : {}
  let body: EventBody
  let text: string
  try {
    text = utf8Decode(bytes)
    const scanned = decodeCanonicalBody(text)
    if (scanned) return scanned
    const raw = assertObject(parseJson(text), 'body')
    for (const key of Object.keys(raw)) {
      if (key !== 'op' && key !== 'data' && key !== 'salt') {
        throw new InputError('UNKNOWN_FIELD', `unknown body field "${key}"`, { field: `body.${key}` })
      }
    }
    const op = assertString(raw.op, 'body.op')
    if (op.length === 0 || op.length > MAX_OP_LENGTH) throw new InputError('BAD_OP', `op must be 1..${MAX_OP_LENGTH} characters`, { field: 'body.op' })
    const salt = assertString(raw.salt, 'body.salt')
    if (!HEX_SALT.test(salt)) throw new InputError('BAD_SALT', 'salt must be 32 lowercase hex characters', { field: 'body.salt' })
    if (!('data' in raw)) throw new InputError('MISSING_FIELD', 'body has no data', { field: 'body.data' })
    body = { op, data: raw.data as JsonValue, salt }
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error)
    throw new VerifyError('BAD_BODY', `body does not decode: ${detail}`, where, { cause: error })
  }
  if (encodeBody(body) !== text) throw new VerifyError('BAD_BODY', 'body is not in canonical form', where)
  return body
}

/** True for the first event of a space, whose id is the space id. */
export function isGenesisHeader(header: EventHeader): boolean {
  return header.space === undefined
}

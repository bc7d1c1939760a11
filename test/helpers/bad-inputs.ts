/**
 * Garbage for every entry point (STYLE.md: "Feed every entry point test/helpers/bad-inputs.ts").
 * Two lists: `badValues()`, values of every shape that are wrong almost everywhere, and
 * `badEnvelopes(...)`, envelope-shaped objects built from real events with one thing broken,
 * for ingest. Everything is rebuilt on each call (so no test sees another's mutations) and
 * seeded (so random bytes are the same on every run).
 *
 * Ids are computed here with node:crypto, never with the code under test.
 */
import { createHash } from 'node:crypto'
import { SeededRandom } from './seeded-random.js'

export interface BadInput {
  /** Unique, stable, readable: it names the test case. */
  readonly name: string
  readonly value: unknown
}

const HUGE_STRING_BYTES = 4 * 1024 * 1024

function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex')
}

function nested(depth: number, leaf: unknown, wrap: (inner: unknown) => unknown): unknown {
  let value = leaf
  for (let i = 0; i < depth; i++) value = wrap(value)
  return value
}

function cyclic(): Record<string, unknown> {
  const value: Record<string, unknown> = { op: 'note' }
  value.self = value
  return value
}

/** An object whose only way to `op` is through its prototype. */
function inheritedOp(): unknown {
  return Object.create({ op: 'note', data: 1 }) as unknown
}

class NotPlain {
  readonly op = 'note'
  readonly data = 1
}

/**
 * Values of every shape: primitives, strange numbers, near-miss strings, arrays, objects with
 * wrong-typed fields, prototype tricks, bytes of the wrong length, non-JSON objects.
 */
export function badValues(seed = 1): BadInput[] {
  const random = new SeededRandom(seed)
  const hex64 = 'ab'.repeat(32)
  const list: BadInput[] = [
    // Primitives and strange numbers.
    { name: 'undefined', value: undefined },
    { name: 'null', value: null },
    { name: 'true', value: true },
    { name: 'false', value: false },
    { name: 'zero', value: 0 },
    { name: 'negative zero', value: -0 },
    { name: 'minus one', value: -1 },
    { name: 'a fraction', value: 1.5 },
    { name: 'NaN', value: Number.NaN },
    { name: 'Infinity', value: Number.POSITIVE_INFINITY },
    { name: '-Infinity', value: Number.NEGATIVE_INFINITY },
    { name: '2^53', value: 2 ** 53 },
    { name: 'MAX_VALUE', value: Number.MAX_VALUE },
    { name: 'a bigint', value: 12n },
    { name: 'a symbol', value: Symbol('garbage') },
    { name: 'a function', value: () => 'garbage' },
    // Strings near the shapes the API expects.
    { name: 'empty string', value: '' },
    { name: 'a space', value: ' ' },
    { name: 'the string "null"', value: 'null' },
    { name: 'the string "1"', value: '1' },
    { name: 'uppercase hex id', value: hex64.toUpperCase() },
    { name: 'hex id one char short', value: hex64.slice(1) },
    { name: 'hex id one char long', value: `${hex64}a` },
    { name: '64 non-hex chars', value: 'zz'.repeat(32) },
    { name: 'hex id with a trailing newline', value: `${hex64}\n` },
    { name: 'hex id with a leading space', value: ` ${hex64.slice(1)}` },
    { name: 'hex id with a NUL', value: `${hex64.slice(0, 63)}\u0000` },
    { name: '64 NULs', value: '\u0000'.repeat(64) },
    { name: 'a lone surrogate', value: '\ud800' },
    { name: 'a path traversal', value: '../../etc/passwd' },
    { name: 'a reserved op name', value: 'space.genesis' },
    { name: 'JSON text of an entry', value: '{"op":"note","data":1}' },
    { name: 'a huge string', value: 'a'.repeat(HUGE_STRING_BYTES) },
    { name: 'a huge hex string', value: 'ab'.repeat(HUGE_STRING_BYTES / 2) },
    // Arrays.
    { name: 'an empty array', value: [] },
    { name: 'an array of null', value: [null] },
    { name: 'an array of undefined', value: [undefined] },
    { name: 'an array of numbers', value: [1, 2, 3] },
    { name: 'a sparse array', value: new Array(3) },
    { name: 'nested empty arrays', value: [[[]]] },
    { name: 'an array of uppercase ids', value: [hex64.toUpperCase()] },
    { name: 'an array of short ids', value: [hex64.slice(2)] },
    { name: 'an array of a huge string', value: ['a'.repeat(HUGE_STRING_BYTES)] },
    { name: 'an array of objects', value: [{}, { op: 5 }] },
    { name: 'an array 100k long', value: Array.from({ length: 100_000 }, (_, i) => i) },
    { name: 'an array nested 10k deep', value: nested(10_000, [], (inner) => [inner]) },
    // Objects with wrong-typed or missing fields.
    { name: 'an empty object', value: {} },
    { name: 'a null-prototype empty object', value: Object.create(null) as unknown },
    { name: 'op is a number', value: { op: 5 } },
    { name: 'op is null', value: { op: null } },
    { name: 'op is an array', value: { op: ['note'] } },
    { name: 'op is empty', value: { op: '' } },
    { name: 'op is too long', value: { op: 'x'.repeat(129) } },
    { name: 'op is reserved', value: { op: 'space.grant', data: { author: hex64, rights: ['admin'] } } },
    { name: 'op is huge', value: { op: 'x'.repeat(HUGE_STRING_BYTES) } },
    { name: 'data is NaN', value: { op: 'note', data: Number.NaN } },
    { name: 'data is Infinity', value: { op: 'note', data: Number.POSITIVE_INFINITY } },
    { name: 'data is a function', value: { op: 'note', data: () => 1 } },
    { name: 'data is a symbol', value: { op: 'note', data: Symbol('x') } },
    { name: 'data is a Date', value: { op: 'note', data: new Date(0) } },
    { name: 'data is a Map', value: { op: 'note', data: new Map([['a', 1]]) } },
    { name: 'data is bytes', value: { op: 'note', data: new Uint8Array(4) } },
    { name: 'data holds undefined in an array', value: { op: 'note', data: [1, undefined] } },
    { name: 'data holds a lone surrogate', value: { op: 'note', data: { text: 'a\udc00b' } } },
    { name: 'data has a lone surrogate key', value: { op: 'note', data: { '\ud800': 1 } } },
    { name: 'data is a class instance', value: { op: 'note', data: new NotPlain() } },
    { name: 'data is cyclic', value: cyclic() },
    { name: 'data is nested 10k deep', value: { op: 'note', data: nested(10_000, 1, (inner) => ({ a: inner })) } },
    { name: 'data is over the body limit', value: { op: 'note', data: 'x'.repeat(1024 * 1024 + 1) } },
    { name: 'data has a toJSON method', value: { op: 'note', data: { toJSON: () => 'sneaky' } } },
    { name: 'id and header of the wrong types', value: { id: 5, header: 'header' } },
    { name: 'header is a string', value: { id: hex64, header: '{"v":1}' } },
    { name: 'header is an array of numbers', value: { id: hex64, header: [123, 125] } },
    { name: 'fields are nested junk', value: { id: { id: hex64 }, header: { header: [] }, body: [[]], signature: { 0: 1 } } },
    // Prototype tricks.
    { name: 'a __proto__ literal', value: { __proto__: { op: 'note', data: 1 } } as unknown },
    { name: 'an own __proto__ key holding an entry', value: JSON.parse('{"__proto__":{"op":"note","data":1}}') as unknown },
    { name: 'an own __proto__ key holding an envelope', value: JSON.parse(`{"__proto__":{"id":"${hex64}","header":[1]}}`) as unknown },
    { name: 'an inherited op', value: inheritedOp() },
    { name: 'a class instance', value: new NotPlain() },
    { name: 'a Date', value: new Date(0) },
    { name: 'a Map', value: new Map([['op', 'note']]) },
    { name: 'a Set', value: new Set(['note']) },
    { name: 'a boxed string', value: Object('note') as unknown },
    { name: 'a RegExp', value: /note/ },
    { name: 'an Error', value: new Error('garbage') },
    // Bytes.
    { name: 'empty bytes', value: new Uint8Array(0) },
    { name: '31 random bytes', value: random.bytes(31) },
    { name: '33 random bytes', value: random.bytes(33) },
    { name: '64 random bytes', value: random.bytes(64) },
    { name: '1000 random bytes', value: random.bytes(1000) },
    { name: 'a random Buffer', value: Buffer.from(random.bytes(100)) },
    { name: 'a Uint16Array of 16', value: new Uint16Array(16) },
    { name: 'a Uint8ClampedArray of 32', value: new Uint8ClampedArray(32) },
    { name: 'an Int8Array of 32', value: new Int8Array(32) },
    { name: 'an ArrayBuffer of 32', value: new ArrayBuffer(32) },
    { name: 'a DataView of 32', value: new DataView(new ArrayBuffer(32)) },
  ]
  const names = new Set(list.map((input) => input.name))
  if (names.size !== list.length) throw new Error('bad-inputs: duplicate names')
  return list
}

/** The envelope shape, as the test sees it (no import of src types, so nothing is trusted). */
export interface RawEnvelope {
  readonly id: string
  readonly header: Uint8Array
  readonly body?: Uint8Array
  readonly signature?: Uint8Array
}

function reidentified(header: Uint8Array, rest: Omit<RawEnvelope, 'id' | 'header'> = {}): RawEnvelope {
  return { id: sha256Hex(header), header, ...rest }
}

function withoutSignature({ signature: _signature, ...rest }: RawEnvelope): RawEnvelope {
  return rest
}

/**
 * Envelope-shaped garbage built from real events: each breaks exactly one thing.
 * @param unsigned an event with a body that does not carry the signature of its segment
 * @param signed an event with a body that carries a valid signature
 * @param foreign a signed event of another space
 */
export function badEnvelopes(unsigned: RawEnvelope, signed: RawEnvelope, foreign: RawEnvelope, seed = 2): BadInput[] {
  const random = new SeededRandom(seed)
  const encoder = new TextEncoder()
  const headerText = new TextDecoder().decode(unsigned.header)
  const body = unsigned.body as Uint8Array
  const list: BadInput[] = [
    { name: 'envelope: header truncated, id kept', value: { ...unsigned, header: unsigned.header.subarray(0, unsigned.header.length - 1) } },
    { name: 'envelope: header truncated, id recomputed', value: reidentified(unsigned.header.subarray(0, unsigned.header.length - 1), { body }) },
    { name: 'envelope: empty header, id recomputed', value: reidentified(new Uint8Array(0)) },
    { name: 'envelope: random header, id recomputed', value: reidentified(random.bytes(200)) },
    { name: 'envelope: header not UTF-8, id recomputed', value: reidentified(Uint8Array.of(0x7b, 0xff, 0xfe, 0x7d)) },
    { name: 'envelope: header is JSON but no header', value: reidentified(encoder.encode('{"a":1}')) },
    { name: 'envelope: header with whitespace, id recomputed', value: reidentified(encoder.encode(headerText.replace(',', ', ')), { body }) },
    { name: 'envelope: header with an own __proto__ field', value: reidentified(encoder.encode(headerText.replace('{', '{"__proto__":{"seq":1},')), { body }) },
    { name: 'envelope: header with an unknown version', value: reidentified(encoder.encode(headerText.replace('"v":1}', '"v":2}')), { body }) },
    { name: 'envelope: header over the size limit', value: reidentified(encoder.encode(`{"pad":"${'x'.repeat(81 * 1024)}"}`)) },
    { name: 'envelope: id uppercase', value: { ...unsigned, id: unsigned.id.toUpperCase() } },
    { name: 'envelope: id of another event', value: { ...unsigned, id: signed.id } },
    { name: 'envelope: body truncated', value: { ...unsigned, body: body.subarray(0, body.length - 1) } },
    { name: 'envelope: body of another event', value: { ...unsigned, body: signed.body } },
    { name: 'envelope: body of random bytes', value: { ...unsigned, body: random.bytes(body.length) } },
    { name: 'envelope: body over the size limit', value: { ...unsigned, body: new Uint8Array(1024 * 1024 + 1) } },
    { name: 'envelope: body is a string', value: { ...unsigned, body: new TextDecoder().decode(body) } },
    { name: 'envelope: signature of 63 bytes', value: { ...signed, signature: (signed.signature as Uint8Array).subarray(0, 63) } },
    { name: 'envelope: signature of random bytes', value: { ...unsigned, signature: random.bytes(64) } },
    { name: 'envelope: signature of another event', value: { ...unsigned, signature: signed.signature } },
    { name: 'envelope: signature flipped', value: { ...signed, signature: Uint8Array.from(signed.signature as Uint8Array, (byte, i) => (i === 0 ? byte ^ 1 : byte)) } },
    { name: 'envelope: signature is an array', value: { ...signed, signature: Array.from(signed.signature as Uint8Array) } },
    { name: 'envelope: from another space', value: foreign },
    { name: 'envelope: inherited fields', value: Object.create(signed) as unknown },
    { name: 'envelope: signed event with its signature removed', value: withoutSignature(signed) },
  ]
  return list
}

/**
 * Deterministic CBOR (RFC 8949 §4.2.1, "core deterministic encoding") of JSON values: the
 * binary form of a `.pam.cbor` artifact.
 *
 * Invariant: one JSON value has exactly one encoding, and it is the one the strict decoder
 * (`cbor-decode.ts`) accepts. The byte rules:
 * - null f6, false f4, true f5; no other simple values, no tags, no byte strings;
 * - a `number` that is a safe integer (|n| ≤ 2^53 − 1, −0 counts as 0) and every `bigint` in
 *   [−2^64, 2^64 − 1] is an integer (major type 0 or 1) in the shortest head;
 * - any other finite `number` is the shortest of binary16 (f9), binary32 (fa), binary64 (fb)
 *   that holds it exactly (preferred serialization, §4.2.2 is not applied);
 * - strings are UTF-8 text (major 3); arrays major 4; objects major 5 with text keys only,
 *   sorted by the bytewise order of their encodings, which for text keys is: shorter UTF-8
 *   first, then bytewise. Object members that are `undefined` are skipped, as in canonical JSON;
 * - every length is definite.
 *
 * Why not cbor-x: it writes integers above 2^32 as binary64, has no binary16 and does not sort
 * keys, so it cannot produce this form (checked with cbor-x 1.6.9).
 */
import { describeType } from '../../assert.js'
import { InputError, LimitError } from '../../errors.js'
import type { JsonValue } from '../../log/index.js'
import { halfBitsOf } from './cbor-float.js'

/** Nesting deeper than this is refused, as for canonical JSON (MAX_JSON_DEPTH). */
export const MAX_CBOR_DEPTH = 256

const TWO_POW_64 = 1n << 64n
const textEncoder = new TextEncoder()

class ByteWriter {
  private bytes = new Uint8Array(1024)
  private view = new DataView(this.bytes.buffer)
  length = 0

  private reserve(extra: number): void {
    if (this.length + extra <= this.bytes.length) return
    let size = this.bytes.length * 2
    while (size < this.length + extra) size *= 2
    const grown = new Uint8Array(size)
    grown.set(this.bytes.subarray(0, this.length))
    this.bytes = grown
    this.view = new DataView(grown.buffer)
  }

  byte(value: number): void {
    this.reserve(1)
    this.bytes[this.length++] = value
  }

  uint16(value: number): void {
    this.reserve(2)
    this.view.setUint16(this.length, value)
    this.length += 2
  }

  uint32(value: number): void {
    this.reserve(4)
    this.view.setUint32(this.length, value)
    this.length += 4
  }

  uint64(value: bigint): void {
    this.reserve(8)
    this.view.setBigUint64(this.length, value)
    this.length += 8
  }

  float32(value: number): void {
    this.reserve(4)
    this.view.setFloat32(this.length, value)
    this.length += 4
  }

  float64(value: number): void {
    this.reserve(8)
    this.view.setFloat64(this.length, value)
    this.length += 8
  }

  append(bytes: Uint8Array): void {
    this.reserve(bytes.length)
    this.bytes.set(bytes, this.length)
    this.length += bytes.length
  }

  result(): Uint8Array {
    return this.bytes.slice(0, this.length)
  }
}

/** A head: major type and argument in the shortest form (RFC 8949 §3, §4.2.1). */
function writeHead(writer: ByteWriter, major: number, argument: number | bigint): void {
  const top = major << 5
  if (typeof argument === 'bigint' && argument < 0x100000000n) argument = Number(argument)
  if (typeof argument === 'number' && argument < 24) writer.byte(top | argument)
  else if (argument < 0x100) {
    writer.byte(top | 24)
    writer.byte(Number(argument))
  } else if (argument < 0x10000) {
    writer.byte(top | 25)
    writer.uint16(Number(argument))
  } else if (argument < 0x100000000) {
    writer.byte(top | 26)
    writer.uint32(Number(argument))
  } else {
    writer.byte(top | 27)
    writer.uint64(BigInt(argument))
  }
}

function pathOf(trail: readonly (string | number)[]): string {
  let path = '$'
  for (const step of trail) path += typeof step === 'number' ? `[${step}]` : `.${step}`
  return path
}

function utf8(text: string, trail: (string | number)[]): Uint8Array {
  if (!text.isWellFormed()) {
    throw new InputError('BAD_STRING', 'string holds a lone surrogate, which has no UTF-8 form', { path: pathOf(trail) })
  }
  return textEncoder.encode(text)
}

/** Bytewise order of the encoded keys: for text keys, shorter UTF-8 first, then bytewise. */
function compareKeyBytes(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) return a.length - b.length
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return (a[i] as number) - (b[i] as number)
  return 0
}

function writeNumber(writer: ByteWriter, value: number, trail: (string | number)[]): void {
  if (!Number.isFinite(value)) throw new InputError('NOT_FINITE', `${String(value)} has no JSON form`, { path: pathOf(trail) })
  if (Number.isSafeInteger(value)) {
    if (value >= 0) writeHead(writer, 0, value)
    else writeHead(writer, 1, -1 - value)
    return
  }
  const half = halfBitsOf(value)
  if (half !== undefined) {
    writer.byte(0xf9)
    writer.uint16(half)
  } else if (Math.fround(value) === value) {
    writer.byte(0xfa)
    writer.float32(value)
  } else {
    writer.byte(0xfb)
    writer.float64(value)
  }
}

function writeValue(writer: ByteWriter, value: unknown, trail: (string | number)[]): void {
  switch (typeof value) {
    case 'string': {
      const bytes = utf8(value, trail)
      writeHead(writer, 3, bytes.length)
      writer.append(bytes)
      return
    }
    case 'number':
      writeNumber(writer, value, trail)
      return
    case 'bigint':
      if (value >= 0n && value < TWO_POW_64) writeHead(writer, 0, value)
      else if (value < 0n && value >= -TWO_POW_64) writeHead(writer, 1, -1n - value)
      else throw new InputError('OUT_OF_RANGE', 'an integer beyond 64 bits has no CBOR integer form', { path: pathOf(trail) })
      return
    case 'boolean':
      writer.byte(value ? 0xf5 : 0xf4)
      return
    case 'object':
      break
    default:
      throw new InputError('NOT_JSON', `${typeof value} is not a JSON value`, { path: pathOf(trail) })
  }
  if (value === null) {
    writer.byte(0xf6)
    return
  }
  if (trail.length >= MAX_CBOR_DEPTH) throw new LimitError('TOO_DEEP', `nesting deeper than ${MAX_CBOR_DEPTH}`, { path: pathOf(trail) })
  if (Array.isArray(value)) {
    writeHead(writer, 4, value.length)
    for (let i = 0; i < value.length; i++) {
      trail.push(i)
      const item: unknown = value[i]
      if (item === undefined) throw new InputError('NOT_JSON', 'array holds undefined', { path: pathOf(trail) })
      writeValue(writer, item, trail)
      trail.pop()
    }
    return
  }
  const proto = Object.getPrototypeOf(value) as unknown
  if (proto !== Object.prototype && proto !== null) {
    throw new InputError('NOT_JSON', `${describeType(value)} ${(value as { constructor?: { name?: string } }).constructor?.name ?? ''} is not a JSON value`.trim(), { path: pathOf(trail) })
  }
  const record = value as Record<string, unknown>
  const members: { key: string; bytes: Uint8Array }[] = []
  for (const key of Object.keys(record)) if (record[key] !== undefined) members.push({ key, bytes: utf8(key, trail) })
  members.sort((a, b) => compareKeyBytes(a.bytes, b.bytes))
  writeHead(writer, 5, members.length)
  for (const { key, bytes } of members) {
    writeHead(writer, 3, bytes.length)
    writer.append(bytes)
    trail.push(key)
    writeValue(writer, record[key], trail)
    trail.pop()
  }
}

/**
 * The deterministic CBOR encoding of a JSON value.
 * @throws InputError NOT_JSON, NOT_FINITE, BAD_STRING, OUT_OF_RANGE (naming the JSON path);
 *   LimitError TOO_DEEP
 */
export function encodeCbor(value: JsonValue): Uint8Array {
  const writer = new ByteWriter()
  writeValue(writer, value, [])
  return writer.result()
}

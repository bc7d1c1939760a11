/**
 * Strict decoding of deterministic CBOR into JSON values: the reader of `.pam.cbor` payloads.
 *
 * Invariant: a value is returned only when the bytes are exactly `encodeCbor` of that value, so
 * one artifact has one binary form and two readers can never see different artifacts in the
 * same bytes. Everything else is refused with an InputError naming the JSON path and offset:
 * - TRUNCATED: the data ends inside an item;
 * - BAD_CBOR: reserved or indefinite lengths, byte strings, tags, simple values other than
 *   false/true/null, NaN or infinities, non-text map keys, duplicate keys, invalid UTF-8;
 * - TRAILING_BYTES: bytes after the top-level item;
 * - NOT_CANONICAL: well-formed but not deterministic (a longer head than needed, a wider float
 *   than needed, a float holding a safe integer, keys out of order).
 * LimitError TOO_DEEP past MAX_CBOR_DEPTH.
 */
import { InputError, LimitError } from '../../errors.js'
import type { JsonValue } from '../../log/index.js'
import { encodeCbor, MAX_CBOR_DEPTH } from './cbor-encode.js'
import { halfToNumber } from './cbor-float.js'

const textDecoder = new TextDecoder('utf-8', { fatal: true })
type Trail = (string | number)[]

function pathOf(trail: Trail): string {
  let path = '$'
  for (const step of trail) path += typeof step === 'number' ? `[${step}]` : `.${step}`
  return path
}

class CborReader {
  private offset = 0
  private readonly view: DataView

  constructor(private readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  }

  read(): JsonValue {
    const value = this.value([])
    if (this.offset !== this.bytes.length) {
      throw new InputError('TRAILING_BYTES', `${this.bytes.length - this.offset} bytes follow the artifact at offset ${this.offset}`, { path: '$' })
    }
    return value
  }

  private fail(code: string, message: string, trail: Trail, at = this.offset): never {
    throw new InputError(code, `${message} at offset ${at}`, { path: pathOf(trail) })
  }

  private need(count: number, trail: Trail): void {
    if (this.bytes.length - this.offset < count) this.fail('TRUNCATED', `data ends ${count - (this.bytes.length - this.offset)} bytes short`, trail)
  }

  /** The argument of a head with additional information `info`; numbers beyond 2^53 stay bigint. */
  private argument(info: number, trail: Trail): number | bigint {
    if (info < 24) return info
    const at = this.offset
    switch (info) {
      case 24:
        this.need(1, trail)
        return this.view.getUint8(this.offset++)
      case 25:
        this.need(2, trail)
        this.offset += 2
        return this.view.getUint16(at)
      case 26:
        this.need(4, trail)
        this.offset += 4
        return this.view.getUint32(at)
      case 27: {
        this.need(8, trail)
        this.offset += 8
        const big = this.view.getBigUint64(at)
        return big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big
      }
      case 31:
        return this.fail('BAD_CBOR', 'indefinite lengths are not deterministic CBOR', trail, at - 1)
      default:
        return this.fail('BAD_CBOR', `reserved additional information ${info}`, trail, at - 1)
    }
  }

  /** A length that must fit in what is left (each item takes at least `minimumItemBytes`). */
  private length(info: number, minimumItemBytes: number, trail: Trail): number {
    const count = this.argument(info, trail)
    if (typeof count === 'bigint' || count * minimumItemBytes > this.bytes.length - this.offset) {
      this.fail('TRUNCATED', `a length of ${String(count)} runs past the end of the data`, trail)
    }
    return count
  }

  private text(info: number, trail: Trail): string {
    const byteLength = this.length(info, 1, trail)
    const start = this.offset
    this.offset += byteLength
    try {
      return textDecoder.decode(this.bytes.subarray(start, this.offset))
    } catch {
      return this.fail('BAD_CBOR', 'text is not valid UTF-8', trail, start)
    }
  }

  private value(trail: Trail): JsonValue {
    if (trail.length > MAX_CBOR_DEPTH) throw new LimitError('TOO_DEEP', `nesting deeper than ${MAX_CBOR_DEPTH}`, { path: pathOf(trail) })
    this.need(1, trail)
    const start = this.offset
    const initial = this.view.getUint8(this.offset++)
    const major = initial >> 5
    const info = initial & 0x1f
    switch (major) {
      case 0:
        return this.argument(info, trail)
      case 1: {
        const n = this.argument(info, trail)
        if (typeof n === 'number' && n < Number.MAX_SAFE_INTEGER) return -1 - n
        return -1n - BigInt(n)
      }
      case 2:
        return this.fail('BAD_CBOR', 'byte strings are not JSON values', trail, start)
      case 3:
        return this.text(info, trail)
      case 4: {
        const count = this.length(info, 1, trail)
        const items: JsonValue[] = []
        for (let i = 0; i < count; i++) {
          trail.push(i)
          items.push(this.value(trail))
          trail.pop()
        }
        return items
      }
      case 5:
        return this.map(info, trail)
      case 6:
        return this.fail('BAD_CBOR', 'tags are not JSON values', trail, start)
      default:
        return this.simple(info, trail, start)
    }
  }

  private map(info: number, trail: Trail): { [key: string]: JsonValue } {
    const count = this.length(info, 2, trail)
    const record: { [key: string]: JsonValue } = {}
    for (let i = 0; i < count; i++) {
      this.need(1, trail)
      const keyStart = this.offset
      const initial = this.view.getUint8(this.offset++)
      if (initial >> 5 !== 3) this.fail('BAD_CBOR', 'map keys must be text', trail, keyStart)
      const key = this.text(initial & 0x1f, trail)
      if (Object.hasOwn(record, key)) this.fail('BAD_CBOR', `duplicate key ${JSON.stringify(key.slice(0, 64))}`, trail, keyStart)
      trail.push(key)
      // Own property even for "__proto__", as JSON.parse does.
      Object.defineProperty(record, key, { value: this.value(trail), enumerable: true, writable: true, configurable: true })
      trail.pop()
    }
    return record
  }

  private simple(info: number, trail: Trail, start: number): JsonValue {
    let value: number
    switch (info) {
      case 20:
        return false
      case 21:
        return true
      case 22:
        return null
      case 25:
        this.need(2, trail)
        value = halfToNumber(this.view.getUint16(this.offset))
        this.offset += 2
        break
      case 26:
        this.need(4, trail)
        value = this.view.getFloat32(this.offset)
        this.offset += 4
        break
      case 27:
        this.need(8, trail)
        value = this.view.getFloat64(this.offset)
        this.offset += 8
        break
      default:
        return this.fail('BAD_CBOR', `simple value ${info} is not a JSON value`, trail, start)
    }
    if (!Number.isFinite(value)) this.fail('BAD_CBOR', 'NaN and infinities are not JSON numbers', trail, start)
    return value
  }
}

function firstDifference(a: Uint8Array, b: Uint8Array): number {
  const length = Math.min(a.length, b.length)
  for (let i = 0; i < length; i++) if (a[i] !== b[i]) return i
  return length
}

/**
 * Decodes deterministic CBOR holding one JSON value.
 * @throws InputError TRUNCATED, BAD_CBOR, TRAILING_BYTES, NOT_CANONICAL; LimitError TOO_DEEP
 */
export function decodeCbor(bytes: Uint8Array): JsonValue {
  const value = new CborReader(bytes).read()
  // One check covers every deterministic-encoding rule: the value's own encoding must be these
  // bytes. It costs one more encode, which is cheaper than checking each rule while reading.
  const canonical = encodeCbor(value)
  if (canonical.length !== bytes.length || firstDifference(canonical, bytes) !== bytes.length) {
    throw new InputError('NOT_CANONICAL', `not deterministic CBOR (RFC 8949 §4.2.1): first differs at offset ${firstDifference(canonical, bytes)}`, { path: '$' })
  }
  return value
}

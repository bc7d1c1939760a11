import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { decodeCbor, encodeCbor } from '../../../src/bundle/pam/index.js'
import { InputError } from '../../../src/errors.js'
import { canonicalJson, type JsonValue } from '../../../src/log/index.js'
import { jsonValue } from './pam-arbitraries.js'
import { codeOf } from '../../helpers/error-code.js'

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex')
const bytes = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'hex'))

// RFC 8949 Appendix A, copied by hand: the encodings a JSON value can have. Its integral floats
// (1.0, 100000.0, 65504.0) are integers in JSON, so nearby fractions stand in, encoded by hand.
const RFC_8949_VECTORS: readonly [JsonValue, string][] = [
  [0, '00'], [1, '01'], [10, '0a'], [23, '17'], [24, '1818'], [25, '1819'], [100, '1864'], [1000, '1903e8'],
  [1000000, '1a000f4240'], [1000000000000, '1b000000e8d4a51000'], [18446744073709551615n, '1bffffffffffffffff'],
  [-18446744073709551616n, '3bffffffffffffffff'], [-1, '20'], [-10, '29'], [-100, '3863'], [-1000, '3903e7'],
  [1.1, 'fb3ff199999999999a'], [1.5, 'f93e00'], [100000.5, 'fa47c35040'], [3.4028234663852886e38, 'fa7f7fffff'],
  [1.0e300, 'fb7e37e43c8800759c'], [5.960464477539063e-8, 'f90001'], [0.00006103515625, 'f90400'], [-4.1, 'fbc010666666666666'],
  [65504.5, 'fa477fe080'], [-0.5, 'f9b800'],
  [false, 'f4'], [true, 'f5'], [null, 'f6'],
  ['', '60'], ['a', '6161'], ['IETF', '6449455446'], ['"\\', '62225c'], ['\u00fc', '62c3bc'], ['\u6c34', '63e6b0b4'], ['\ud800\udd51', '64f0908591'],
  [[], '80'], [[1, 2, 3], '83010203'], [[1, [2, 3], [4, 5]], '8301820203820405'],
  [Array.from({ length: 25 }, (_, i) => i + 1), '98190102030405060708090a0b0c0d0e0f101112131415161718181819'],
  [{}, 'a0'], [{ a: 1, b: [2, 3] }, 'a26161016162820203'], [['a', { b: 'c' }], '826161a161626163'],
  [{ a: 'A', b: 'B', c: 'C', d: 'D', e: 'E' }, 'a56161614161626142616361436164614461656145'],
]

describe('deterministic CBOR', () => {
  for (const [value, encoded] of RFC_8949_VECTORS) {
    it(`encodes ${canonicalJson(value).slice(0, 40)} as RFC 8949 Appendix A writes it and reads it back`, () => {
      expect(hex(encodeCbor(value))).toBe(encoded)
      expect(canonicalJson(decodeCbor(bytes(encoded)))).toBe(canonicalJson(value))
    })
  }

  it('sorts map keys shorter first, then bytewise (RFC 8949 §4.2.1), whatever the insertion order', () => {
    // {"b":1,"aa":2,"a":3,"é":4}: "a" 61 and "b" 62 (1 byte) before "aa" 6161 and "é" c3a9 (2 bytes).
    expect(hex(encodeCbor({ b: 1, aa: 2, a: 3, 'é': 4 }))).toBe('a4' + '616103' + '616201' + '62616102' + '62c3a904')
  })

  it('writes safe integers as integers, other integral numbers as the shortest exact float', () => {
    expect(hex(encodeCbor(2 ** 53 - 1))).toBe('1b001fffffffffffff')
    expect(hex(encodeCbor(2 ** 60))).toBe('fa5d800000')
    expect(hex(encodeCbor(-0))).toBe('00')
  })

  it('round trips every JSON value and re-encodes to identical bytes', () => {
    fc.assert(fc.property(jsonValue, (value) => {
      const encoded = encodeCbor(value)
      const decoded = decodeCbor(encoded)
      expect(canonicalJson(decoded)).toBe(canonicalJson(value))
      expect(hex(encodeCbor(decoded))).toBe(hex(encoded))
    }), { numRuns: 400 })
  })

  it('refuses every strict prefix of an encoding as truncated', () => {
    fc.assert(fc.property(jsonValue, (value) => {
      const encoded = encodeCbor(value)
      for (let cut = 0; cut < encoded.length; cut++) expect(codeOf(() => decodeCbor(encoded.subarray(0, cut)))).toBe('TRUNCATED')
    }), { numRuns: 100 })
  })

  const refusals: readonly [string, string, string][] = [
    ['a longer head than needed', '1817', 'NOT_CANONICAL'],
    ['a float holding a safe integer', 'f93c00', 'NOT_CANONICAL'],
    ['a double where a half is exact', 'fb3ff8000000000000', 'NOT_CANONICAL'],
    ['map keys out of order', 'a2616201616101', 'NOT_CANONICAL'],
    ['a duplicate key', 'a2616101616102', 'BAD_CBOR'],
    ['an indefinite-length array', '9f01ff', 'BAD_CBOR'],
    ['reserved additional information', '1c', 'BAD_CBOR'],
    ['a byte string', '4401020304', 'BAD_CBOR'],
    ['a tag', 'c11a514b67b0', 'BAD_CBOR'],
    ['undefined', 'f7', 'BAD_CBOR'],
    ['NaN', 'f97e00', 'BAD_CBOR'],
    ['infinity', 'f97c00', 'BAD_CBOR'],
    ['a non-text map key', 'a10102', 'BAD_CBOR'],
    ['invalid UTF-8', '62c328', 'BAD_CBOR'],
    ['bytes after the value', '0000', 'TRAILING_BYTES'],
    ['nothing at all', '', 'TRUNCATED'],
    ['a length beyond the data', '7b00000000ffffffff61', 'TRUNCATED'],
  ]
  for (const [name, encoded, code] of refusals) {
    it(`refuses ${name} with ${code}`, () => {
      expect(codeOf(() => decodeCbor(bytes(encoded)))).toBe(code)
    })
  }

  it('refuses nesting deeper than the limit on both sides', () => {
    let deep: JsonValue = 1
    for (let i = 0; i < 300; i++) deep = [deep]
    expect(codeOf(() => encodeCbor(deep))).toBe('TOO_DEEP')
    expect(codeOf(() => decodeCbor(new Uint8Array(300).fill(0x81)))).toBe('TOO_DEEP')
  })

  it('refuses values JSON cannot hold, naming the path', () => {
    expect(() => encodeCbor({ a: [1, Number.NaN] } as unknown as JsonValue)).toThrow(/NOT_FINITE.*\$\.a\[1\]/)
    expect(codeOf(() => encodeCbor({ a: new Date(0) } as unknown as JsonValue))).toBe('NOT_JSON')
    expect(codeOf(() => encodeCbor('\ud800'))).toBe('BAD_STRING')
    expect(codeOf(() => encodeCbor(1n << 64n))).toBe('OUT_OF_RANGE')
  })

  it('keeps a "__proto__" key as data, never as a prototype', () => {
    const decoded = decodeCbor(bytes('a1695f5f70726f746f5f5f01')) as Record<string, unknown>
    expect(Object.getPrototypeOf(decoded)).toBe(Object.prototype)
    expect(Object.keys(decoded)).toEqual(['__proto__'])
    expect(() => decodeCbor(bytes('62c328'))).toThrow(InputError)
  })
})

import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { canonicalJson, compareCodePoints, MAX_JSON_DEPTH, parseJson, type JsonValue } from '../../src/log/canonical-json.js'
import { conformancePath } from '../helpers/conformance.js'
import { codeOf } from '../helpers/error-code.js'

interface Vector { name: string; input: JsonValue; canonical: string; sha256: string }

const vectorFile = parseJson(readFileSync(conformancePath('vectors', 'canonical-json.json'), 'utf8')) as unknown as { vectors: Vector[] }

describe('canonical JSON golden vectors', () => {
  it('has all 26 vectors', () => {
    expect(vectorFile.vectors).toHaveLength(26)
  })

  for (const vector of vectorFile.vectors) {
    it(`matches "${vector.name}" byte for byte and by sha256`, () => {
      const text = canonicalJson(vector.input)
      expect(text).toBe(vector.canonical)
      expect(createHash('sha256').update(text, 'utf8').digest('hex')).toBe(vector.sha256)
    })
  }
})

describe('canonicalJson', () => {
  it('sorts keys by code point, not UTF-16 code unit', () => {
    // U+1F600 is above U+FF01 as a code point but below it as a UTF-16 code unit.
    expect(canonicalJson({ '😀': 1, '！': 2, a: 3 })).toBe('{"a":3,"！":2,"😀":1}')
    expect(compareCodePoints('😀', '！')).toBeGreaterThan(0)
  })

  it('writes numbers the way the reference exporter does', () => {
    expect(canonicalJson([1e16, 1e-5, 1e-7, 1.5e-7, 0.0001, 123.456, -0, 1e21, 2.5e300, -1e-10])).toBe(
      '[1e+16,1e-05,1e-07,1.5e-07,0.0001,123.456,0,1e+21,2.5e+300,-1e-10]',
    )
    expect(canonicalJson(9999999999999998)).toBe('9999999999999998')
    expect(canonicalJson(18446744073709551615n)).toBe('18446744073709551615')
    expect(canonicalJson(-9223372036854775808n)).toBe('-9223372036854775808')
  })

  it('escapes only quote, backslash and control characters', () => {
    expect(canonicalJson('a/b\u007f\u2028"\\\b\f\n\r\t\u0000\u001f')).toBe('"a/b\u007f\u2028\\"\\\\\\b\\f\\n\\r\\t\\u0000\\u001f"')
  })

  it('omits undefined members and keeps null ones', () => {
    expect(canonicalJson({ a: undefined, b: null })).toBe('{"b":null}')
  })

  it('refuses values JSON cannot hold, naming where they are', () => {
    expect(codeOf(() => canonicalJson({ a: [1, Number.NaN] }))).toBe('NOT_FINITE')
    expect(() => canonicalJson({ a: [1, Number.NaN] })).toThrow('$.a[1]')
    expect(codeOf(() => canonicalJson({ a: Infinity }))).toBe('NOT_FINITE')
    expect(codeOf(() => canonicalJson({ s: 'x\ud800' }))).toBe('BAD_STRING')
    expect(codeOf(() => canonicalJson([undefined]))).toBe('NOT_JSON')
    expect(codeOf(() => canonicalJson(undefined))).toBe('NOT_JSON')
    expect(codeOf(() => canonicalJson({ d: new Date(0) }))).toBe('NOT_JSON')
    expect(codeOf(() => canonicalJson({ m: new Map() }))).toBe('NOT_JSON')
    expect(codeOf(() => canonicalJson({ f: () => 1 }))).toBe('NOT_JSON')
    expect(codeOf(() => canonicalJson(new Uint8Array(2)))).toBe('NOT_JSON')
  })

  it('refuses cycles and excessive nesting', () => {
    const cycle: Record<string, unknown> = {}
    cycle.self = cycle
    expect(codeOf(() => canonicalJson(cycle))).toBe('TOO_DEEP')
    let deep: unknown = 1
    for (let i = 0; i < 300; i++) deep = [deep]
    expect(codeOf(() => canonicalJson(deep))).toBe('TOO_DEEP')
  })

  it('parses nesting up to MAX_JSON_DEPTH and refuses one level more, however the text is padded', () => {
    const nested = (depth: number, pad: string): string => `${'['.repeat(depth)}"${pad}"${']'.repeat(depth)}`
    const pad = 'x'.repeat(600)
    expect(codeOf(() => parseJson(nested(MAX_JSON_DEPTH, '')))).toBeUndefined()
    expect(codeOf(() => parseJson(nested(MAX_JSON_DEPTH, pad)))).toBeUndefined()
    expect(codeOf(() => parseJson(nested(MAX_JSON_DEPTH + 1, '')))).toBe('TOO_DEEP')
    expect(codeOf(() => parseJson(nested(MAX_JSON_DEPTH + 1, pad)))).toBe('TOO_DEEP')
    // Brackets inside strings count for nothing: many of them in a shallow value parse.
    const bracketsInText = { a: '[{'.repeat(400), b: [{ c: 1 }] }
    expect(parseJson(JSON.stringify(bracketsInText))).toEqual(bracketsInText)
  })

  it('is a fixed point of parse then serialize, for any JSON value', () => {
    const value = fc.jsonValue()
    fc.assert(fc.property(value, (json) => {
      const text = canonicalJson(json)
      expect(canonicalJson(parseJson(text))).toBe(text)
      expect(canonicalJson(JSON.parse(text))).toBe(text)
    }), { numRuns: 300 })
  })

  it('keeps integers of any size up to UInt64 exact through a round trip', () => {
    fc.assert(fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }), (n) => {
      const text = canonicalJson({ n })
      const parsed = parseJson(text) as { n: number | bigint }
      expect(BigInt(parsed.n)).toBe(n)
      expect(canonicalJson(parsed)).toBe(text)
    }), { numRuns: 300 })
  })

  it('orders keys the same as a code-point sort of their UTF-8 bytes', () => {
    fc.assert(fc.property(fc.dictionary(fc.string({ unit: 'grapheme' }), fc.integer()), (object) => {
      // The keys in the order the text has them. Not Object.keys of a parsed copy: JavaScript
      // lists integer-like keys ("0") first whatever their order in the text. The values are
      // integers, so every string token followed by ':' is a key.
      const keys = [...canonicalJson(object).matchAll(/"(?:[^"\\]|\\.)*"(?=:)/g)].map((match) => JSON.parse(match[0]) as string)
      const byBytes = [...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
      expect(keys).toEqual(byBytes)
    }), { numRuns: 200 })
    expect(canonicalJson({ 0: 0, '': 0 })).toBe('{"":0,"0":0}')
  })
})

describe('parseJson', () => {
  it('returns bigint for integers beyond 2^53 and numbers otherwise', () => {
    expect(parseJson('[9007199254740991,9007199254740993,18446744073709551615,1.5,-0]')).toEqual([
      9007199254740991, 9007199254740993n, 18446744073709551615n, 1.5, -0,
    ])
  })

  it('keeps a __proto__ key as an own property', () => {
    const value = parseJson('{"__proto__":{"x":1},"big":12345678901234567890}') as Record<string, unknown>
    expect(Object.keys(value)).toEqual(['__proto__', 'big'])
    expect(({} as Record<string, unknown>).x).toBeUndefined()
  })

  it('refuses malformed JSON with a line and column', () => {
    for (const text of ['{"a":1,}', '[1 2]', '{"a" 1}', '"\u0001"', '01', '{"a":12345678901234567890,}', 'nul', '']) {
      expect(codeOf(() => parseJson(text))).toBe('BAD_JSON')
    }
    expect(() => parseJson('{\n  "a": 12345678901234567890,\n  x\n}')).toThrow(/line 3 column 3/)
  })

  it('refuses a number too large for a double, whatever else the text holds', () => {
    // A hex-like "e123" or a 16-digit fraction sends text down the second path; an overflow
    // still has to be found there.
    for (const text of ['1e400', '[1E+999]', '{"a":"e123","b":-1e309}', '{"a":0.1234567890123456,"b":2e308}']) {
      expect(codeOf(() => parseJson(text))).toBe('BAD_JSON')
    }
    expect(parseJson('{"a":"e123","b":1e-400,"c":0.1234567890123456}')).toEqual({ a: 'e123', b: 0, c: 0.1234567890123456 })
  })
})

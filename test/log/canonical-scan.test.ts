/**
 * The canonical scanner must never disagree with the full check (parse, serialize, compare):
 * whatever it calls canonical is canonical, and the body decoded from a scan equals the body
 * decoded the long way. It may say "don't know" (-1), and for the forms Cairn writes every day
 * it must not (or the fast path would be dead code).
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { canonicalJson, parseJson } from '../../src/log/canonical-json.js'
import { isProvablyCanonical, scanCanonicalValue } from '../../src/log/canonical-scan.js'
import { decodeBody, encodeBody } from '../../src/log/event.js'
import { CairnError } from '../../src/errors.js'

const utf8 = new TextEncoder()

/** The full check: the text parses and re-serializes to itself. */
function isCanonical(text: string): boolean {
  try {
    return canonicalJson(parseJson(text)) === text
  } catch {
    return false
  }
}

/** JSON values including the awkward parts: floats, escapes, surrogates, unsorted keys. */
const awkwardJson = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null), fc.boolean(),
    fc.integer({ min: -1e15, max: 1e15 }),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.constantFrom(0.57, 0.1, 1e-5, 1e16, 1e21, -0, 123456789012345, 9007199254740993n, 2n ** 63n),
    fc.string({ unit: 'binary' }),
    fc.constantFrom('', '"', '\\', '\u0000', '\u001f', '\b\t\n\f\r', '\u2028', '😀', 'é', '\ud800'),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.string({ unit: 'binary', maxLength: 4 }), tie('value'), { maxKeys: 4 }),
  ),
})).value

/** Texts near canonical ones: other serializations and single-character edits. */
const candidateText = fc.oneof(
  awkwardJson.map((value) => { try { return canonicalJson(value) } catch { return '"x"' } }),
  awkwardJson.map((value) => JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? Number(v) : v)) ?? 'null'),
  awkwardJson.map((value) => JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? Number(v) : v), 1) ?? 'null'),
  fc.tuple(awkwardJson, fc.nat(), fc.constantFrom('', ' ', '"', '\\', ',', '}', ']', '0', '-', '.', 'e', 'u', '\u0001', '\u001f', '{', '[')).map(([value, at, insert]) => {
    let text: string
    try { text = canonicalJson(value) } catch { text = '{}' }
    const i = at % (text.length + 1)
    return text.slice(0, i) + insert + text.slice(i + (at % 2))
  }),
)

describe('scanCanonicalValue', () => {
  it('never calls a text canonical that the full check refuses', () => {
    fc.assert(fc.property(candidateText, (text) => {
      if (isProvablyCanonical(text)) expect(isCanonical(text)).toBe(true)
    }), { numRuns: 3000 })
  })

  it('proves the canonical text of plain records, which is what the fast path is for', () => {
    const plain = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.constant(null), fc.boolean(), fc.integer({ min: -1e14, max: 1e14 }),
        fc.double({ noNaN: true, noDefaultInfinity: true, min: 1e-3, max: 1e14 }),
        fc.string({ unit: 'grapheme' }),
        fc.array(tie('value'), { maxLength: 4 }),
        fc.dictionary(fc.string({ unit: 'grapheme-ascii', maxLength: 6 }).filter((key) => !/["\\]/.test(key)), tie('value'), { maxKeys: 4 }),
      ),
    })).value
    fc.assert(fc.property(plain, (value) => {
      expect(isProvablyCanonical(canonicalJson(value))).toBe(true)
    }), { numRuns: 1000 })
  })

  it('stops at the end of the value and leaves what follows to the caller', () => {
    expect(scanCanonicalValue('{"a":[1,2.5,"x"]},"op"', 0)).toBe(17)
    expect(scanCanonicalValue('[1,2]]', 0)).toBe(5)
  })

  it('says "don\'t know" for what it leaves to the full check, even when canonical', () => {
    for (const text of ['1e+16', '1e-05', '12345678901234567', '{"\\u0001":1}']) {
      expect(isCanonical(text)).toBe(true)
      expect(isProvablyCanonical(text)).toBe(false)
    }
  })

  it('refuses the usual non-canonical forms', () => {
    for (const text of ['{"b":1,"a":2}', '{"a":1,"a":1}', '{ "a":1}', '1.0', '-0', '0.50', '01', '"\\/"', '"\\u001F"', '"\\u0041"', '"\\ud800"', '"\u0001"', '[1,]', 'tru', '']) {
      expect(isProvablyCanonical(text)).toBe(false)
    }
  })
})

describe('decodeBody fast path', () => {
  const body = fc.record({
    data: awkwardJson,
    op: fc.oneof(fc.constantFrom('memory.create', 'x', 'a"b', 'é'), fc.string({ minLength: 1, maxLength: 130 })),
    salt: fc.oneof(fc.stringMatching(/^[0-9a-f]{32}$/), fc.constantFrom('ABCDEF0123456789abcdef0123456789', '00', '')),
  })

  it('decodes exactly what the full decode does, and refuses what it refuses', () => {
    fc.assert(fc.property(body, fc.boolean(), (raw, reorder) => {
      let text: string
      try {
        text = reorder ? JSON.stringify({ op: raw.op, data: raw.data, salt: raw.salt }) : canonicalJson(raw)
      } catch {
        return
      }
      let expected: unknown
      try {
        const parsed = parseJson(text) as { op: unknown; data: unknown; salt: unknown }
        const ok = typeof parsed.op === 'string' && parsed.op.length >= 1 && parsed.op.length <= 128 &&
          typeof parsed.salt === 'string' && /^[0-9a-f]{32}$/.test(parsed.salt) && canonicalJson(parsed) === text
        expected = ok ? parsed : 'refused'
      } catch {
        expected = 'refused'
      }
      let actual: unknown
      try {
        const decoded = decodeBody(utf8.encode(text))
        actual = { data: decoded.data, op: decoded.op, salt: decoded.salt }
        expect(encodeBody(decoded)).toBe(text)
      } catch (error) {
        expect(error).toBeInstanceOf(CairnError)
        actual = 'refused'
      }
      expect(actual).toEqual(expected)
    }), { numRuns: 2000 })
  })

  it('reads the data when asked, once, as an own enumerable property', () => {
    const text = canonicalJson({ data: { text: 'coffee', n: 1 }, op: 'memory.create', salt: '0123456789abcdef0123456789abcdef' })
    const decoded = decodeBody(utf8.encode(text))
    expect(decoded.data).toBe(decoded.data)
    expect({ ...decoded }).toEqual({ op: 'memory.create', data: { n: 1, text: 'coffee' }, salt: '0123456789abcdef0123456789abcdef' })
    expect(JSON.parse(JSON.stringify(decoded))).toEqual({ ...decoded })
  })
})

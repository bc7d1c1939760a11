import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { CairnError } from '../../src/errors.js'
import { canonicalJson } from '../../src/log/canonical-json.js'
import { decodeBody, decodeHeader, encodeBody, encodeHeader, MAX_DEPS, type EventHeader } from '../../src/log/event.js'
import { utf8Encode } from '../../src/log/bytes.js'

const hex64 = fc.stringMatching(/^[0-9a-f]{64}$/)
const safeNat = fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER })

const header: fc.Arbitrary<EventHeader> = fc
  .record({
    author: hex64,
    seq: fc.oneof(fc.constant(1), fc.integer({ min: 2, max: Number.MAX_SAFE_INTEGER })),
    prev: hex64,
    space: hex64,
    deps: fc.uniqueArray(hex64, { maxLength: 5 }),
    clock: fc.record({ wall: safeNat, logical: safeNat }),
    kind: fc.constantFrom('control' as const, 'data' as const),
    bodyHash: hex64,
    bodySize: fc.integer({ min: 0, max: 1024 * 1024 }),
    genesis: fc.boolean(),
  })
  .map(({ seq, prev, space, deps, genesis, ...rest }) => {
    const isGenesis = genesis && seq === 1
    return {
      v: 1 as const,
      ...rest,
      seq,
      deps: isGenesis ? [] : [...deps].sort(),
      ...(seq > 1 ? { prev } : {}),
      ...(isGenesis ? {} : { space }),
    } as unknown as EventHeader
  })

function codeOf(run: () => unknown): string | undefined {
  try {
    run()
  } catch (error) {
    return error instanceof CairnError ? error.code : String(error)
  }
  return undefined
}

describe('event header bytes', () => {
  it('encodeHeader writes exactly the canonical JSON of the header', () => {
    fc.assert(fc.property(header, (value) => {
      expect(encodeHeader(value)).toBe(canonicalJson(value))
    }), { numRuns: 500 })
  })

  it('decodeHeader inverts encodeHeader, from text and from bytes', () => {
    fc.assert(fc.property(header, (value) => {
      const text = encodeHeader(value)
      expect(decodeHeader(text)).toEqual(value)
      expect(decodeHeader(utf8Encode(text))).toEqual(value)
    }), { numRuns: 500 })
  })

  it('refuses every non-canonical spelling of a valid header', () => {
    fc.assert(fc.property(header, fc.nat(), (value, pick) => {
      const text = encodeHeader(value)
      const variants = [
        text.replace('{"author"', '{ "author"'),
        text.replace(',"seq":', ', "seq":'),
        text.replace(`"seq":${value.seq}`, `"seq":0${value.seq}`),
        text.replace(`"seq":${value.seq}`, `"seq":${value.seq}.0`),
        text.replace('"v":1}', '"v":1.0}'),
        text.replace(/"kind":"(control|data)",/, '').replace('"deps":', `"kind":"${value.kind}","deps":`),
        JSON.stringify(JSON.parse(text), null, 1),
        text.replace(/"bodyHash":"([0-9a-f])/, (_m, c: string) => `"bodyHash":"${c.toUpperCase() === c ? 'A' : c.toUpperCase()}`),
      ].filter((variant) => variant !== text)
      const variant = variants[pick % variants.length] as string
      expect(codeOf(() => decodeHeader(variant))).toBe('BAD_HEADER')
    }), { numRuns: 500 })
  })

  it('refuses headers that break the chain rules', () => {
    const base = { v: 1, author: 'a'.repeat(64), seq: 2, prev: 'b'.repeat(64), space: 'c'.repeat(64), deps: [], clock: { wall: 1, logical: 0 }, kind: 'data', bodyHash: 'd'.repeat(64), bodySize: 10 } as const
    const cases: Record<string, unknown> = {
      'prev at seq 1': { ...base, seq: 1 },
      'no prev after seq 1': { ...base, prev: undefined },
      'unsorted deps': { ...base, deps: ['f'.repeat(64), 'e'.repeat(64)] },
      'duplicate deps': { ...base, deps: ['e'.repeat(64), 'e'.repeat(64)] },
      'too many deps': { ...base, deps: Array.from({ length: MAX_DEPS + 1 }, (_, i) => i.toString(16).padStart(64, '0')) },
      'a genesis with deps': { ...base, seq: 1, prev: undefined, space: undefined, deps: ['e'.repeat(64)] },
      'an unknown kind': { ...base, kind: 'other' },
      'an unknown field': { ...base, extra: 1 },
      'a body over the limit': { ...base, bodySize: 1024 * 1024 + 1 },
      'an unsafe seq': { ...base, seq: 2 ** 53 },
      'version 2': { ...base, v: 2 },
    }
    for (const [name, value] of Object.entries(cases)) {
      expect(codeOf(() => decodeHeader(canonicalJson(value))), name).toBe('BAD_HEADER')
    }
  })
})

describe('event body bytes', () => {
  it('decodeBody inverts encodeBody and refuses other spellings', () => {
    fc.assert(fc.property(fc.string({ minLength: 1, maxLength: 20 }), fc.jsonValue(), fc.stringMatching(/^[0-9a-f]{32}$/), (op, data, salt) => {
      const text = encodeBody({ op, data: data as never, salt })
      expect(canonicalJson(decodeBody(utf8Encode(text)))).toBe(text)
      expect(codeOf(() => decodeBody(utf8Encode(`${text} `)))).toBe('BAD_BODY')
      expect(codeOf(() => decodeBody(utf8Encode(JSON.stringify({ salt, op, data }, null, 1))))).toBe('BAD_BODY')
    }), { numRuns: 300 })
  })
})

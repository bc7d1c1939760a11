/**
 * Lines cut from stored views (src/bundle/view-lines.ts): the bytes of canonical JSON with
 * members left out must be exactly the line the codec writes for the parsed view, whatever the
 * keys and values hold (escapes, nesting, "kind" inside nested objects, non-ASCII); a view the
 * cut cannot vouch for (a top-level null, a key its kind lacks, a required field missing,
 * bytes that are not one canonical object) is left to the codec.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { decodeRecord } from '../../src/bundle/mem/record-codec.js'
import { toPortable } from '../../src/bundle/portable-records.js'
import { ViewLine } from '../../src/bundle/view-lines.js'
import { canonicalJson, parseJson, type JsonValue } from '../../src/log/index.js'
import { kindSpec, type RecordView } from '../../src/projection/index.js'

const episode = {
  accessCount: 0, actors: ['user'], categories: [], confidence: 0.7, details: 'Tea at "the lab" \\ café ☕\nnext line', eventTime: '2026-01-01T00:00:00Z',
  extractionState: 'done', id: 'ep_1', importance: 0.5, ingestionTime: '2026-01-01T00:00:00Z', kind: 'episode', lifecycleState: 'HOT',
  mentionTime: '2026-01-01T00:00:00Z', metadata: { kind: 'nested "kind"', '': 'empty key' }, pinned: false, sensitivity: 'low', sourceType: 'note',
  summary: 'Tea', vaultRefs: [],
}
const entity = { aliases: [], canonicalName: 'Ada', id: 'ent_ada', kind: 'entity', sensitivity: 'low', summary: '', tags: ['t'], type: 'person', updatedAt: '2026-01-01T00:00:00Z' }
const factLink = { createdAt: '2026-01-01T00:00:00Z', dstFactID: 'fact_2', id: 'flk_0123456789abcdef', kind: 'factLink', linkType: 'refines', srcFactID: 'fact_1', tags: ['x'] }

const bytesOf = (view: object): Buffer => Buffer.from(canonicalJson(view), 'utf8')
const codecLine = (view: object): string => canonicalJson(decodeRecord((view as RecordView).kind, toPortable(view as RecordView)).record)

describe('ViewLine', () => {
  it.each([['an episode', episode], ['an entity (its tags left out)', entity], ['a composite-key kind (its internal id left out)', factLink]])('cuts %s to the codec\'s line', (_name, view) => {
    const cut = ViewLine.of(bytesOf(view))
    expect(cut?.line().toString('utf8')).toBe(codecLine(view))
    expect(cut?.value('metadata')).toEqual((view as Record<string, unknown>).metadata)
  })

  it('an episode with any unknown keys and values (its ext) cuts to the codec\'s line, and reads every value back', () => {
    const known = new Set(Object.keys(kindSpec('episode').fields))
    const key = fc.string({ maxLength: 12 }).filter((name) => !known.has(name) && name !== 'kind' && name !== '__proto__')
    const value = fc.jsonValue({ maxDepth: 3 }).filter((item) => item !== null && !JSON.stringify(item).includes('"__proto__":'))
    fc.assert(fc.property(fc.dictionary(key, value, { maxKeys: 6 }), (ext) => {
      const view: Record<string, unknown> = { ...episode }
      for (const [name, item] of Object.entries(ext)) Object.defineProperty(view, name, { value: item, enumerable: true, writable: true, configurable: true })
      const cut = ViewLine.of(bytesOf(view))
      expect(cut).toBeDefined()
      expect(cut?.line().toString('utf8')).toBe(codecLine(view))
      for (const name of Object.keys(ext)) expect(cut?.value(name)).toEqual(parseJson(canonicalJson(view[name] as JsonValue)))
    }), { numRuns: 300 })
  })

  it('long strings full of quotes, backslashes and line breaks end where they end', () => {
    const text = fc.string({ minLength: 0, maxLength: 120, size: 'max', unit: fc.constantFrom('a', '"', '\\', 'é', '\n', ' ') })
    fc.assert(fc.property(text, text, (details, summary) => {
      const view = { ...episode, details, summary, zzNote: details }
      const cut = ViewLine.of(bytesOf(view))
      expect(cut?.line().toString('utf8')).toBe(codecLine(view))
      expect(cut?.value('zzNote')).toBe(details)
    }), { numRuns: 300 })
  })

  it('a key is never mistaken for the key held from an earlier view at its position', () => {
    // "Ã©" is two code units whose values equal the two UTF-8 bytes of "é"; "a\\b" has an escape.
    for (const key of ['Ã©', 'é', 'a\\b', 'a\\c', 'ab', 'Ã©']) {
      const view = { ...episode, [`zz${key}`]: key }
      const cut = ViewLine.of(bytesOf(view))
      expect(cut?.value(`zz${key}`), key).toBe(key)
      expect(cut?.line().toString('utf8')).toBe(codecLine(view))
    }
  })

  it('numbers, integers and booleans are cut as they are exactly when the codec keeps them so', () => {
    const number = fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }), fc.constantFrom(0, -0, 1, -1, 0.5, 1e-7, 5e-324, 1e21, 123456789012345680000, -2284690239202610, 999_999_999_999_999))
    const integer = fc.oneof(fc.integer({ min: -5, max: 1_000 }), fc.constantFrom(0, -0, 999_999_999_999_999, 1_000_000_000_000_000, Number.MAX_SAFE_INTEGER))
    fc.assert(fc.property(number, number, integer, fc.boolean(), (confidence, importance, accessCount, pinned) => {
      const view = { ...episode, confidence, importance, accessCount, pinned }
      const cut = ViewLine.of(bytesOf(view))
      // The view's own text of each value, and whether the codec writes that same text.
      const written = (value: number | boolean): string => canonicalJson(value)
      const plainInteger = Number.isSafeInteger(accessCount) && accessCount >= 0 && Math.abs(accessCount) < 1e15
      // A number written as an integer of more than 15 digits may be an exact integer beyond
      // 2^53, which an import refuses in a number field: the export must parse it to check.
      const longInteger = (value: number): boolean => /^-?\d{16,}$/.test(written(value))
      if (longInteger(confidence) || longInteger(importance)) expect(cut).toBeUndefined()
      if (Object.is(confidence, -0) || Object.is(importance, -0) || !plainInteger || longInteger(confidence) || longInteger(importance)) {
        if (cut !== undefined) expect(cut.line().toString('utf8')).toBe(codecLine(view))
        return
      }
      // Every value here is one the codec keeps as written, so the cut must take it.
      expect(cut, `${written(confidence)} ${written(importance)} ${written(accessCount)}`).toBeDefined()
      expect(cut?.line().toString('utf8')).toBe(codecLine(view))
    }), { numRuns: 500 })
  })

  it('a key held from an earlier view never spans two members of a later one', () => {
    // The earlier view's escaped key holds, as text, the bytes of two members of the later view.
    const pairs: [Record<string, unknown>, Record<string, unknown>][] = [
      [{ ...episode, ['contextID":"ctx_x","cz']: 1 }, { ...episode, contextID: 'ctx_x', cz: 1 }],
      [{ ...episode, ['zz":null,"zzb']: 1 }, { ...episode, zz: null, zzb: 1 }],
      [{ ...episode, ['zz":"soon","zzb']: 1 }, { ...episode, zz: 'soon', zzb: 1 }],
    ]
    for (const [earlier, later] of pairs) {
      expect(ViewLine.of(bytesOf(earlier))?.line().toString('utf8')).toBe(codecLine(earlier))
      const cut = ViewLine.of(bytesOf(later))
      if (cut === undefined) continue
      expect(cut.line().toString('utf8')).toBe(codecLine(later))
      for (const key of Object.keys(later)) expect(cut.value(key), key).toEqual(later[key])
    }
    ViewLine.of(bytesOf({ ...episode, ['contextID":"ctx_x","cz']: 1 }))
    expect(ViewLine.of(bytesOf({ ...episode, contextID: 'ctx_x', cz: 1 }))?.value('contextID')).toBe('ctx_x')
  })

  it.each([
    ['a top-level null', { ...entity, summary: null }],
    ['a key the kind does not have', { ...entity, vendorScore: 3 }],
    ['a required field missing', (({ canonicalName: _name, ...rest }) => rest)(entity)],
    ['an unknown kind', { ...entity, kind: 'vendorThing' }],
    ['no id', (({ id: _id, ...rest }) => rest)(entity)],
    // Values of the wrong type (a peer's raw event can carry them): the codec refuses or converts them.
    ['a number for a string', { ...entity, canonicalName: 42 }],
    ['a timestamp the codec would have to parse', { ...entity, updatedAt: 'yesterday' }],
    ['a timestamp with an offset', { ...entity, updatedAt: '2026-01-01T01:00:00+01:00' }],
    ['a list that holds a number', { ...entity, aliases: ['Ada', 1] }],
    ['a string for a list', { ...entity, aliases: 'Ada' }],
    ['a string for a number', { ...episode, importance: 'high' }],
    ['an integer below its minimum', { ...episode, accessCount: -1 }],
    ['a fraction for an integer', { ...episode, accessCount: 1.5 }],
    ['a string for a boolean', { ...episode, pinned: 'yes' }],
    ['a map that holds a number', { ...episode, metadata: { a: 1 } }],
  ])('leaves a view with %s to the codec', (_name, view) => {
    expect(ViewLine.of(bytesOf(view))).toBeUndefined()
  })

  it.each([
    ['a member without a value', '{"aliases":[],"canonicalName":,"id":"ent_1","kind":"entity","sensitivity":"low","summary":"","type":"person","updatedAt":"2026-01-01T00:00:00Z"}'],
    ['a list closed by a brace', '{"aliases":["a"},"canonicalName":"A","id":"ent_1","kind":"entity","sensitivity":"low","summary":"","type":"person","updatedAt":"2026-01-01T00:00:00Z"}'],
    ['an unknown key of an episode without a value', canonicalJson(episode).replace('"vaultRefs":[]', '"vaultRefs":[],"zz":')],
    ['a negative zero', canonicalJson(episode).replace('"importance":0.5', '"importance":-0')],
    ...['-0.0', '0.000', '0e5', '1e-400', '01', '1.', '.5', '-', '+1', '1e', '1e+', '1E5', '0x10', 'Infinity', '1.5.2', '1-2', '"0.5"', 'true', '0.5x'].map(
      (text) => [`the number ${text}`, canonicalJson(episode).replace('"importance":0.5', `"importance":${text}`)]),
    ...['-0', '01', '1.0', '1e3', '-', '1234567890123456', '-1', '"3"', 'null'].map(
      (text) => [`the integer ${text}`, canonicalJson(episode).replace('"accessCount":0', `"accessCount":${text}`)]),
    ...['True', 'tru', 'trux', 'tRue', 'falsey', 'falsx', 'fAlse', '1', '"true"', 'nul'].map((text) => [`the boolean ${text}`, canonicalJson(episode).replace('"pinned":false', `"pinned":${text}`)]),
    ...['"2026-01-01T00:00:00"', '"2026-02-30T00:00:00Z"', '"2026\\u002d01-01T00:00:00Z"', '"2026-01-01T00:00:00.000Z"', '"٢٠٢٦-01-01T00:00:00Z"', '20260101'].map(
      (text) => [`the timestamp ${text}`, canonicalJson(episode).replace('"eventTime":"2026-01-01T00:00:00Z"', `"eventTime":${text}`)]),
  ])('leaves bytes with %s to the codec', (_name, text) => {
    expect(ViewLine.of(Buffer.from(text, 'utf8'))).toBeUndefined()
  })

  it.each([['nothing', ''], ['an array', '[]'], ['a truncated object', '{"id":"ent_1","kind":"entity"'], ['a string value left open', '{"id":"ent_1,"kind":"entity"}'], ['text after the object', '{"id":"ent_1","kind":"entity"}x']])('refuses %s', (_name, text) => {
    expect(ViewLine.of(Buffer.from(text, 'utf8'))).toBeUndefined()
  })
})

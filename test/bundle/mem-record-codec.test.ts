/**
 * Strict row decoding (spec notes §3, §6–§8): a wrong-typed field invalidates the row and the
 * error names the field; null means absent for optional fields; ints pass for floats and
 * integral floats for ints; unknown keys are kept on episodes and dropped elsewhere.
 */
import { describe, expect, it } from 'vitest'
import { decodeAuditRow, decodeRecord, decodeTombstone } from '../../src/bundle/mem/index.js'
import { CairnError } from '../../src/errors.js'
import { RECORD_KINDS, kindSpec } from '../../src/projection/kinds.js'
import { EMPTY_DERIVED, episode, T, tombstone } from './helpers/mem-records.js'

function refusal(run: () => unknown): { code: string; field: string | undefined } | undefined {
  try {
    run()
  } catch (error) {
    if (!(error instanceof CairnError)) throw error
    return { code: error.code, field: error.where.field }
  }
  return undefined
}

describe('row decoding', () => {
  it('accepts a complete row and returns a copy', () => {
    const input = episode('ep_1', { metadata: { a: 'b' }, actors: ['user'] })
    const { record, dropped } = decodeRecord('episode', input)
    expect(record).toEqual(input)
    expect(record.actors).not.toBe(input.actors)
    expect(dropped).toEqual([])
  })

  const cases: [string, Record<string, unknown>, string, string][] = [
    ['a float in an int field', { accessCount: 1.5 }, 'WRONG_TYPE', 'episode.accessCount'],
    ['a negative count', { accessCount: -1 }, 'OUT_OF_RANGE', 'episode.accessCount'],
    ['an integer beyond 64 bits', { accessCount: 2n ** 70n }, 'OUT_OF_RANGE', 'episode.accessCount'],
    ['an inexact double in an int field', { accessCount: 2 ** 60 }, 'OUT_OF_RANGE', 'episode.accessCount'],
    ['a string in a number field', { confidence: '0.5' }, 'WRONG_TYPE', 'episode.confidence'],
    ['Infinity in a number field', { confidence: Number.POSITIVE_INFINITY }, 'WRONG_TYPE', 'episode.confidence'],
    ['a number as a metadata value', { metadata: { a: 1 } }, 'WRONG_TYPE', 'episode.metadata.a'],
    ['a number in a string list', { actors: ['a', 1] }, 'WRONG_TYPE', 'episode.actors[1]'],
    ['a string for a boolean', { pinned: 'false' }, 'WRONG_TYPE', 'episode.pinned'],
    ['a timestamp that is not RFC 3339', { eventTime: 'yesterday' }, 'BAD_TIMESTAMP', 'episode.eventTime'],
    ['a date without a time', { eventTime: '2024-03-09' }, 'BAD_TIMESTAMP', 'episode.eventTime'],
    ['null in a required field', { summary: null }, 'WRONG_TYPE', 'episode.summary'],
    ['a lone surrogate', { details: 'a\ud800' }, 'BAD_STRING', 'episode.details'],
    ['a function in ext', { vendor: () => 1 }, 'NOT_JSON', 'episode.vendor'],
    ['a Date in ext', { vendor: new Date(0) }, 'NOT_JSON', 'episode.vendor'],
    ['a hole in an ext array', { vendor: [1, , 3] }, 'NOT_JSON', 'episode.vendor[1]'],
  ]
  for (const [name, change, code, field] of cases) {
    it(`refuses ${name}, naming ${field}`, () => {
      expect(refusal(() => decodeRecord('episode', { ...episode('ep_1'), ...change }))).toEqual({ code, field })
    })
  }

  it('refuses a missing required field and a row that is not an object', () => {
    const { details: _details, ...rest } = episode('ep_1')
    expect(refusal(() => decodeRecord('episode', rest))).toEqual({ code: 'MISSING_FIELD', field: 'episode.details' })
    expect(refusal(() => decodeRecord('entity', [1]))).toMatchObject({ code: 'WRONG_TYPE' })
    expect(refusal(() => decodeRecord('entity', null))).toMatchObject({ code: 'WRONG_TYPE' })
  })

  it('refuses accessor properties, which could answer differently on each read', () => {
    const row = episode('ep_1')
    Object.defineProperty(row, 'vendor', { get: () => 1, enumerable: true })
    expect(refusal(() => decodeRecord('episode', row))).toMatchObject({ code: 'NOT_JSON' })
  })

  it('accepts ints for floats, integral floats for ints, int64 bigints, and timestamps as given', () => {
    const { record } = decodeRecord('episode', episode('ep_1', { confidence: 1, accessCount: 2.0, importance: 12345678901234567890n, eventTime: '2024-03-09T18:00:00.25+02:00' }))
    expect([record.confidence, record.accessCount, record.importance, record.eventTime]).toEqual([1, 2, 12345678901234567890n, '2024-03-09T18:00:00.25+02:00'])
    expect(decodeRecord('core', { id: 'human', content: '', charBudget: 2n ** 62n, version: 1 }).record.charBudget).toBe(2n ** 62n)
  })

  it('treats null in an optional field as absent', () => {
    const { record } = decodeRecord('episode', episode('ep_1', { sourceID: null, contextID: null, vendorNull: null }))
    expect('sourceID' in record || 'contextID' in record).toBe(false)
    expect(record.vendorNull).toBeNull()
  })

  it('keeps keys named like Object.prototype members as data, and refuses __proto__ naming where', () => {
    const row = JSON.parse(JSON.stringify(episode('ep_1')).replace('{', '{"constructor":{"x":1},"toString":"s",')) as Record<string, unknown>
    const { record } = decodeRecord('episode', row)
    expect(record.constructor).toEqual({ x: 1 })
    expect(record.toString).toBe('s')
    expect(Object.getPrototypeOf(record)).toBe(Object.prototype)
    const reserved = JSON.parse(JSON.stringify(episode('ep_1')).replace('{', '{"__proto__":{"x":1},')) as Record<string, unknown>
    expect(refusal(() => decodeRecord('episode', reserved))).toEqual({ code: 'RESERVED_KEY', field: 'episode.__proto__' })
  })

  it('keeps unknown keys on episodes only, and drops Cairn tags and contextID elsewhere', () => {
    expect(decodeRecord('episode', episode('ep_1', { tags: ['x'] })).record.tags).toEqual(['x'])
    for (const kind of RECORD_KINDS.filter((name) => name !== 'episode')) {
      const row: Record<string, unknown> = {}
      for (const field of Object.values(kindSpec(kind).fields)) if (field.required && field.extension !== true) row[field.name] = sample(field.type)
      const { record, dropped } = decodeRecord(kind, { ...row, tags: ['x'], vendorScore: 1 })
      expect(record, kind).toEqual(row)
      expect([...dropped].sort(), kind).toEqual(['tags', 'vendorScore'])
    }
  })

  it('decodes tombstones: op delete or redact, the derived block completed, unknown keys dropped', () => {
    const { record, dropped } = decodeTombstone({ ...tombstone('tomb_1', 'ep_1'), derived: { factIDs: ['f'], extra: 1 }, vendor: 'x', reason: null })
    expect(record).toEqual({ ...tombstone('tomb_1', 'ep_1'), derived: { ...EMPTY_DERIVED, factIDs: ['f'] } })
    expect([...dropped].sort()).toEqual(['derived.extra', 'vendor'])
    const { derived: _derived, ...noDerived } = tombstone('tomb_2', 'ep_2')
    expect(decodeTombstone(noDerived).record.derived).toEqual(EMPTY_DERIVED)
    expect(refusal(() => decodeTombstone(tombstone('t', 'e', { op: 'erase' })))).toEqual({ code: 'BAD_VALUE', field: 'tombstone.op' })
    expect(refusal(() => decodeTombstone(tombstone('t', 'e', { derived: { episodeLinkCount: -1 } })))).toEqual({ code: 'OUT_OF_RANGE', field: 'tombstone.derived.episodeLinkCount' })
    expect(refusal(() => decodeTombstone(tombstone('t', 'e', { signature: 7 })))).toEqual({ code: 'WRONG_TYPE', field: 'tombstone.signature' })
  })

  it('decodes audit rows', () => {
    expect(decodeAuditRow({ ts: T, actor: 'a', op: 'create', targetID: 'ep_1', reason: 'r' }).record).toEqual({ ts: T, actor: 'a', op: 'create', targetID: 'ep_1', reason: 'r' })
    expect(refusal(() => decodeAuditRow({ ts: 5, actor: 'a', op: 'create', targetID: 'ep_1' }))).toEqual({ code: 'WRONG_TYPE', field: 'audit.ts' })
  })
})

function sample(type: string): unknown {
  switch (type) {
    case 'timestamp': return T
    case 'integer': return 3
    case 'number': return 0.25
    case 'boolean': return true
    case 'string[]': return ['a']
    case 'string-map': return { k: 'v' }
    default: return 'text'
  }
}

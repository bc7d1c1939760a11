/**
 * Record ids: which ids a kind accepts, random ids, and composite-key ids. Golden composite ids
 * are computed here with node:crypto, never by the code under test.
 */
import { createHash } from 'node:crypto'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { InputError } from '../../src/errors.js'
import { newRecordId, readRecordId, recordIdFor, validateCreate, type RecordKind } from '../../src/projection/kinds.js'

const sha256Hex = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex')

function refusal(run: () => unknown): InputError {
  try {
    run()
  } catch (error) {
    if (error instanceof InputError) return error
    throw error
  }
  throw new Error('expected an InputError, but the call succeeded')
}

const context = { nowMs: Date.UTC(2024, 0, 1), randomHex: (bytes: number) => 'f0'.repeat(bytes) }

describe('record ids', () => {
  it('derives composite ids as prefix + 24 hex of SHA-256 over the canonical JSON array of the key', () => {
    expect(recordIdFor('factLink', { srcFactID: 'fact_1', dstFactID: 'fact_2', linkType: 'refines', createdAt: 'x' }))
      .toBe(`fl_${sha256Hex('["fact_1","fact_2","refines"]').slice(0, 24)}`)
    expect(recordIdFor('episodeLink', { linkType: 'follows', dstEpisodeID: 'ep_2', srcEpisodeID: 'ep_1' }))
      .toBe(`el_${sha256Hex('["ep_1","ep_2","follows"]').slice(0, 24)}`)
    expect(recordIdFor('category', { name: 'Work', description: 'anything' })).toBe(`cat_${sha256Hex('["Work"]').slice(0, 24)}`)
    expect(recordIdFor('preference', { key: 'ключ "q"', value: 'v' })).toBe(`pref_${sha256Hex('["ключ \\"q\\""]').slice(0, 24)}`)
  })

  it('gives equal composite ids for equal keys and different ids otherwise', () => {
    const key = fc.string({ unit: 'grapheme', maxLength: 12 })
    // The ends are fact ids (validateCreate checks them as such); any text after the prefix.
    const end = key.filter((text) => !/[\u0000-\u001f\u007f]/.test(text)).map((text) => `fact_${text}`)
    fc.assert(fc.property(fc.tuple(end, end, key), fc.tuple(end, end, key), ([a, b, c], [x, y, z]) => {
      const first = recordIdFor('factLink', { srcFactID: a, dstFactID: b, linkType: c })
      const again = validateCreate('factLink', { linkType: c, srcFactID: a, dstFactID: b, createdAt: '2024-01-01T00:00:00Z' }, context).id
      const other = recordIdFor('factLink', { srcFactID: x, dstFactID: y, linkType: z })
      expect(again).toBe(first)
      expect(other === first).toBe(a === x && b === y && c === z)
    }))
    // Concatenation would make these equal; the JSON array keeps the boundaries.
    expect(recordIdFor('factLink', { srcFactID: 'a|b', dstFactID: 'c', linkType: 't' }))
      .not.toBe(recordIdFor('factLink', { srcFactID: 'a', dstFactID: 'b|c', linkType: 't' }))
    // The same key value in two kinds gives two records.
    expect(recordIdFor('category', { name: 'x' }).slice(4)).toBe(recordIdFor('preference', { key: 'x', value: 'y' }).slice(5))
    expect(recordIdFor('category', { name: 'x' })).not.toBe(recordIdFor('preference', { key: 'x', value: 'y' }))
  })

  it('returns the id of id\'d kinds and of core blocks as given', () => {
    expect(recordIdFor('episode', { id: 'ep_1' })).toBe('ep_1')
    expect(recordIdFor('core', { id: 'human' })).toBe('human')
    expect(refusal(() => recordIdFor('episode', {})).code).toBe('MISSING_FIELD')
    expect(refusal(() => recordIdFor('category', {})).where).toEqual({ field: 'category.name' })
  })

  it('makes random ids as the kind prefix and 16 hex characters from 8 random bytes', () => {
    const requested: number[] = []
    const randomHex = (bytes: number): string => {
      requested.push(bytes)
      return '0123456789abcdef'
    }
    expect(newRecordId('episode', randomHex)).toBe('ep_0123456789abcdef')
    expect(newRecordId('secretRef', randomHex)).toBe('sec_0123456789abcdef')
    expect(requested).toEqual([8, 8])
    const prefixes: Partial<Record<RecordKind, string>> = {
      episode: 'ep_', entity: 'ent_', edge: 'edge_', fact: 'fact_', chunk: 'chk_', resource: 'res_', procedure: 'proc_',
      context: 'ctx_', community: 'com_', secretRef: 'sec_',
    }
    for (const [kind, prefix] of Object.entries(prefixes)) expect(newRecordId(kind as RecordKind, randomHex)).toBe(`${prefix}0123456789abcdef`)
  })

  it('refuses random ids for core blocks (a name is needed) and composite-key kinds (derived)', () => {
    expect(refusal(() => newRecordId('core', () => '00'.repeat(8)))).toMatchObject({ code: 'MISSING_FIELD', where: { field: 'core.id' } })
    for (const kind of ['factLink', 'episodeLink', 'category', 'preference'] as const) {
      expect(refusal(() => newRecordId(kind, () => '00'.repeat(8))).code).toBe('DERIVED_ID')
    }
  })

  it('refuses randomness that is not 16 lowercase hex characters', () => {
    expect(refusal(() => newRecordId('episode', () => 'ABCDEF0123456789')).code).toBe('BAD_HEX')
    expect(refusal(() => newRecordId('episode', () => '00')).code).toBe('WRONG_LENGTH')
    expect(refusal(() => newRecordId('episode', (() => 42) as unknown as () => string)).code).toBe('WRONG_TYPE')
  })

  it('accepts ids without their own prefix, as imported bundles carry them', () => {
    for (const id of ['ep_0001', 'tx_34ae29f0cbd63418a690fea2', 'ENG-2026-0131-001', 'eng_abc', 'epx_abc', 'mem0:42']) {
      expect(readRecordId('episode', id)).toBe(id)
    }
    expect(readRecordId('core', 'persona')).toBe('persona')
  })

  it('refuses ids with another kind\'s prefix, and empty, over-long or control-character ids', () => {
    const cases: [RecordKind, unknown, string][] = [
      ['fact', 'ent_1', 'BAD_ID'],
      ['episode', 'fact_1', 'BAD_ID'],
      ['entity', 'edge_1', 'BAD_ID'],
      ['episode', 'tomb_1', 'BAD_ID'],
      ['episode', 'cat_1', 'BAD_ID'],
      ['core', 'ep_human', 'BAD_ID'],
      ['episode', '', 'BAD_ID'],
      ['episode', `ep_${'a'.repeat(300)}`, 'BAD_ID'],
      ['episode', 'ep_1\n', 'BAD_ID'],
      ['episode', 'ep_\u0000', 'BAD_ID'],
      ['episode', 'ep_\ud800', 'BAD_STRING'],
      ['episode', 12, 'WRONG_TYPE'],
    ]
    for (const [kind, id, code] of cases) {
      const error = refusal(() => validateCreate(kind, { ...minimalFor(kind), id }, context))
      expect(error.code).toBe(code)
      expect(error.where).toEqual({ field: `${kind}.id` })
      expect(error.message.length).toBeLessThan(300)
    }
  })

  it('refuses a parent named by an empty id, another kind\'s id or a control character, naming the field', () => {
    const cases: [RecordKind, Record<string, unknown>, string][] = [
      ['fact', { episodeID: '', subject: 'u', predicate: 'p', object: 'o' }, 'fact.episodeID'],
      ['fact', { episodeID: 'fact_1', subject: 'u', predicate: 'p', object: 'o' }, 'fact.episodeID'],
      ['edge', { srcEntityID: '', dstEntityID: 'ent_b', edgeType: 'knows' }, 'edge.srcEntityID'],
      ['edge', { srcEntityID: 'ent_a', dstEntityID: 'ep_b', edgeType: 'knows' }, 'edge.dstEntityID'],
      ['chunk', { resourceID: 'res_1\n', position: 0, text: 't' }, 'chunk.resourceID'],
      ['factLink', { srcFactID: '', dstFactID: 'fact_b', linkType: 'derived_from' }, 'factLink.srcFactID'],
      ['episodeLink', { srcEpisodeID: 'ep_a', dstEpisodeID: 'ent_b', linkType: 'derived_from' }, 'episodeLink.dstEpisodeID'],
    ]
    for (const [kind, input, field] of cases) expect(refusal(() => validateCreate(kind, input, context)), field).toMatchObject({ code: 'BAD_ID', where: { field } })
    // Ids from other systems, without the kind's prefix, are fine (as for the record's own id).
    expect(validateCreate('fact', { episodeID: 'mem0:42', subject: 'u', predicate: 'p', object: 'o' }, context).fields.episodeID).toBe('mem0:42')
  })
})

function minimalFor(kind: RecordKind): Record<string, unknown> {
  switch (kind) {
    case 'episode':
      return { summary: 's' }
    case 'entity':
      return { type: 'person', canonicalName: 'Ada' }
    case 'fact':
      return { episodeID: 'ep_1', subject: 'a', predicate: 'b', object: 'c' }
    case 'core':
      return {}
    default:
      throw new Error(`no minimal input for ${kind} in this file`)
  }
}

/**
 * validatePatch: which operation each merge class takes, what is immutable, map keys, episode
 * extensions, conflicts inside one patch, and garbage. The allowed operations per field are
 * written here from the design decisions, not read from the table under test.
 */
import { describe, expect, it } from 'vitest'
import { RECORD_KINDS, kindSpec, validatePatch, type RecordKind } from '../../src/projection/kinds.js'
import { badValues } from '../helpers/bad-inputs.js'
import { refusal } from '../helpers/error-code.js'

const EMPTY = { set: {}, unset: [], add: {}, remove: {}, increment: {}, ext: {}, unsetExt: [] }

describe('patch rules', () => {
  it('sets and unsets lww fields, normalizing values', () => {
    expect(validatePatch('fact', { set: { confidence: 0.9, eventTime: '2023-11-15T00:13:20.5+02:00' }, unset: ['speaker'] })).toEqual({
      ...EMPTY, set: { confidence: 0.9, eventTime: '2023-11-14T22:13:20Z' }, unset: ['speaker'],
    })
    expect(validatePatch('procedure', { set: { steps: ['b', 'a', 'b'] } }).set).toEqual({ steps: ['b', 'a', 'b'] })
    expect(validatePatch('episode', { set: { speaker: null } })).toEqual({ ...EMPTY, unset: ['speaker'] })
  })

  it('refuses unsetting a required field, and setting it to null', () => {
    expect(refusal(() => validatePatch('episode', { unset: ['summary'] }))).toMatchObject({ code: 'REQUIRED_FIELD', where: { field: 'episode.summary' } })
    expect(refusal(() => validatePatch('episode', { set: { summary: null } }))).toMatchObject({ code: 'WRONG_TYPE', where: { field: 'episode.summary' } })
  })

  it('merges map fields per key, and unsets keys as metadata.<key>', () => {
    expect(validatePatch('episode', { set: { metadata: { a: '1', 'b.c': '2', gone: null } }, unset: ['metadata.old', 'metadata.x.y'] })).toEqual({
      ...EMPTY, set: { metadata: { a: '1', 'b.c': '2' } }, unset: ['metadata.gone', 'metadata.old', 'metadata.x.y'],
    })
    expect(refusal(() => validatePatch('episode', { set: { metadata: { a: 1 } } }))).toMatchObject({ code: 'WRONG_TYPE', where: { field: 'episode.metadata.a' } })
    expect(refusal(() => validatePatch('episode', { set: { metadata: 'a=1' } }))).toMatchObject({ code: 'WRONG_TYPE', where: { field: 'episode.metadata' } })
    expect(refusal(() => validatePatch('episode', { unset: ['metadata'] }))).toMatchObject({ code: 'WRONG_OPERATION', where: { field: 'episode.metadata' } })
  })

  it('adds and removes set members, deduplicated', () => {
    expect(validatePatch('episode', { add: { actors: ['ada', 'ada'], tags: ['t'] }, remove: { categories: ['old'] } })).toEqual({
      ...EMPTY, add: { actors: ['ada'], tags: ['t'] }, remove: { categories: ['old'] },
    })
    expect(validatePatch('edge', { add: { evidenceEpisodeIDs: ['ep_1'] } }).add).toEqual({ evidenceEpisodeIDs: ['ep_1'] })
    expect(refusal(() => validatePatch('episode', { add: { actors: ['a', 5] } }))).toMatchObject({ code: 'WRONG_TYPE', where: { field: 'episode.actors[1]' } })
  })

  it('increments counters by integers that may be negative', () => {
    expect(validatePatch('procedure', { increment: { successCount: 2, failureCount: -1 } }).increment).toEqual({ successCount: 2, failureCount: -1 })
    expect(validatePatch('episode', { increment: { accessCount: 1 } }).increment).toEqual({ accessCount: 1 })
    for (const amount of [1.5, '1', null, true]) {
      expect(refusal(() => validatePatch('episode', { increment: { accessCount: amount } }))).toMatchObject({ code: 'WRONG_TYPE', where: { field: 'episode.accessCount' } })
    }
    expect(refusal(() => validatePatch('episode', { increment: { accessCount: 2 ** 53 } })).code).toBe('OUT_OF_RANGE')
  })

  it('applies each operation exactly to the fields whose merge class takes it', () => {
    const identity = new Set(['id', 'srcFactID', 'dstFactID', 'srcEpisodeID', 'dstEpisodeID', 'linkType', 'name', 'key'])
    const sets = new Set(['episode.actors', 'episode.categories', 'episode.vaultRefs', 'entity.aliases', 'edge.evidenceEpisodeIDs', 'community.memberEntityIDs'])
    const counters = new Set(['episode.accessCount', 'procedure.successCount', 'procedure.failureCount'])
    const system = new Set(['fact.tValidTo', 'fact.supersededBy', 'edge.tValidTo', 'edge.supersededBy'])
    const expectedCode = (kind: RecordKind, name: string, operation: 'set' | 'add' | 'increment'): string | undefined => {
      const label = `${kind}.${name}`
      const isKey = identity.has(name) && (name === 'id' || ['factLink', 'episodeLink', 'category', 'preference'].includes(kind))
      if (isKey || system.has(label)) return 'IMMUTABLE_FIELD'
      if (label === 'core.content') return 'TEXT_FIELD'
      const merge = sets.has(label) || name === 'tags' ? 'set' : counters.has(label) ? 'counter' : label === 'episode.metadata' ? 'map' : 'lww'
      const takes = { set: ['lww', 'map'], add: ['set'], increment: ['counter'] }[operation]
      return takes.includes(merge) ? undefined : 'WRONG_OPERATION'
    }
    const valueFor = (kind: RecordKind, name: string, operation: 'set' | 'add' | 'increment'): unknown => {
      if (operation === 'add') return ['m']
      if (operation === 'increment') return 1
      switch (kindSpec(kind).fields[name]?.type) {
        case 'timestamp': return '2024-01-01T00:00:00Z'
        case 'integer': return 1
        case 'number': return 0.5
        case 'boolean': return true
        case 'string[]': return ['m']
        case 'string-map': return { k: 'v' }
        default: return name === 'preview' ? '****' : 'v'
      }
    }
    let checked = 0
    for (const kind of RECORD_KINDS) {
      for (const name of Object.keys(kindSpec(kind).fields)) {
        for (const operation of ['set', 'add', 'increment'] as const) {
          const code = expectedCode(kind, name, operation)
          const run = () => validatePatch(kind, { [operation]: { [name]: valueFor(kind, name, operation) } })
          if (code === undefined) expect(run()[operation], `${operation} ${kind}.${name}`).toHaveProperty([name])
          else expect(refusal(run), `${operation} ${kind}.${name}`).toMatchObject({ code, where: { field: `${kind}.${name}` } })
          checked++
        }
      }
    }
    expect(checked).toBeGreaterThan(250)
  })

  it('never patches identity or system fields, and sends collaborative text to the text API', () => {
    const cases: [RecordKind, object, string, string][] = [
      ['episode', { set: { id: 'ep_2' } }, 'IMMUTABLE_FIELD', 'episode.id'],
      ['factLink', { set: { linkType: 'x' } }, 'IMMUTABLE_FIELD', 'factLink.linkType'],
      ['category', { set: { name: 'x' } }, 'IMMUTABLE_FIELD', 'category.name'],
      ['preference', { unset: ['key'] }, 'IMMUTABLE_FIELD', 'preference.key'],
      ['fact', { set: { tValidTo: '2024-01-01T00:00:00Z' } }, 'IMMUTABLE_FIELD', 'fact.tValidTo'],
      ['edge', { unset: ['supersededBy'] }, 'IMMUTABLE_FIELD', 'edge.supersededBy'],
      ['core', { set: { content: 'x' } }, 'TEXT_FIELD', 'core.content'],
      ['core', { unset: ['content'] }, 'TEXT_FIELD', 'core.content'],
    ]
    for (const [kind, patch, code, field] of cases) expect(refusal(() => validatePatch(kind, patch))).toMatchObject({ code, where: { field } })
    expect(refusal(() => validatePatch('core', { set: { content: 'x' } })).message).toMatch(/text API/)
  })

  it('keeps unknown episode keys as ext and refuses unknown fields elsewhere', () => {
    expect(validatePatch('episode', { set: { vendorScore: 0.5, blob: { a: [1] } }, unset: ['vendorOld'] })).toEqual({
      ...EMPTY, ext: { vendorScore: 0.5, blob: { a: [1] } }, unsetExt: ['vendorOld'],
    })
    expect(refusal(() => validatePatch('fact', { set: { vendorScore: 1 } }))).toMatchObject({ code: 'UNKNOWN_FIELD', where: { field: 'fact.vendorScore' } })
    expect(refusal(() => validatePatch('fact', { unset: ['vendorScore'] }))).toMatchObject({ code: 'UNKNOWN_FIELD', where: { field: 'fact.vendorScore' } })
    expect(refusal(() => validatePatch('episode', { add: { vendorList: ['x'] } }))).toMatchObject({ code: 'UNKNOWN_FIELD', where: { field: 'episode.vendorList' } })
    // Names on Object.prototype are not fields.
    expect(validatePatch('episode', { set: { constructor: 'x' } }).ext).toEqual({ constructor: 'x' })
    expect(refusal(() => validatePatch('fact', { set: { toString: 'x' } }))).toMatchObject({ code: 'UNKNOWN_FIELD', where: { field: 'fact.toString' } })
    // `kind` is the record's kind, not an extension (a bundle refuses such a field too).
    expect(refusal(() => validatePatch('episode', { set: { kind: 'fact' } }))).toMatchObject({ code: 'RESERVED_KEY', where: { field: 'episode.kind' } })
    expect(refusal(() => validatePatch('episode', { unset: ['kind'] }))).toMatchObject({ code: 'RESERVED_KEY', where: { field: 'episode.kind' } })
  })

  it('refuses a patch that contradicts itself or changes nothing', () => {
    expect(refusal(() => validatePatch('fact', { set: { speaker: 'a' }, unset: ['speaker'] }))).toMatchObject({ code: 'CONFLICTING_PATCH', where: { field: 'fact.speaker' } })
    expect(refusal(() => validatePatch('episode', { set: { metadata: { k: 'v' } }, unset: ['metadata.k'] }))).toMatchObject({ code: 'CONFLICTING_PATCH', where: { field: 'episode.metadata.k' } })
    expect(refusal(() => validatePatch('episode', { set: { vendor: 1 }, unset: ['vendor'] }))).toMatchObject({ code: 'CONFLICTING_PATCH', where: { field: 'episode.vendor' } })
    expect(refusal(() => validatePatch('episode', { add: { actors: ['a', 'b'] }, remove: { actors: ['b'] } }))).toMatchObject({ code: 'CONFLICTING_PATCH', where: { field: 'episode.actors' } })
    for (const patch of [{}, { set: {} }, { add: { actors: [] } }, { increment: { accessCount: 0 } }, { set: { speaker: undefined } }]) {
      expect(refusal(() => validatePatch('episode', patch))).toMatchObject({ code: 'EMPTY_PATCH', where: { field: 'patch' } })
    }
  })

  it('refuses unmasked secret previews in patches too', () => {
    expect(refusal(() => validatePatch('secretRef', { set: { preview: 'sk-abcdefghijklmnop' } }))).toMatchObject({ code: 'UNMASKED_SECRET', where: { field: 'secretRef.preview' } })
    expect(validatePatch('secretRef', { set: { preview: 'sk-****mnop' } }).set).toEqual({ preview: 'sk-****mnop' })
  })

  it('refuses unknown operations and malformed operation values', () => {
    expect(refusal(() => validatePatch('episode', { sett: { summary: 'x' } }))).toMatchObject({ code: 'UNKNOWN_FIELD', where: { field: 'patch.sett' } })
    expect(refusal(() => validatePatch('episode', { unset: 'speaker' }))).toMatchObject({ code: 'WRONG_TYPE', where: { field: 'patch.unset' } })
    expect(refusal(() => validatePatch('episode', { unset: [5] }))).toMatchObject({ code: 'WRONG_TYPE', where: { field: 'patch.unset[0]' } })
    expect(refusal(() => validatePatch('episode', { add: ['actors'] }))).toMatchObject({ code: 'WRONG_TYPE', where: { field: 'patch.add' } })
    expect(refusal(() => validatePatch('vendorThing' as RecordKind, { set: { a: '1' } })).code).toBe('UNKNOWN_KIND')
  })

  it('refuses every bad value as a patch, and as a value to set, briefly', () => {
    const isText = (value: unknown): boolean => typeof value === 'string' && value.isWellFormed()
    for (const bad of badValues()) {
      expect(refusal(() => validatePatch('episode', bad.value)).message.length, bad.name).toBeLessThan(600)
      if (isText(bad.value) || bad.value === undefined) continue
      expect(refusal(() => validatePatch('episode', { set: { summary: bad.value } })).message.length, bad.name).toBeLessThan(600)
      if (!(typeof bad.value === 'number' && Number.isSafeInteger(bad.value) && bad.value !== 0)) {
        expect(refusal(() => validatePatch('procedure', { increment: { successCount: bad.value } })).message.length, bad.name).toBeLessThan(600)
      }
    }
  })
})

/**
 * The record-kind table against the Portable Memory conformance data: the JSON Schemas, the
 * fixture bundles (every record line must validate and come back byte for byte), random valid
 * and wrong-typed inputs (fast-check), and the garbage of test/helpers/bad-inputs.ts.
 * Schemas and fixtures are read where they live (conformancePath), never copied.
 */
import { readdirSync, readFileSync } from 'node:fs'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { CairnError, InputError } from '../../src/errors.js'
import { canonicalJson, parseJson } from '../../src/log/canonical-json.js'
import { RECORD_KINDS, isRecordKind, kindSpec, recordIdFor, validateCreate, type FieldSpec, type RecordKind } from '../../src/projection/kinds.js'
import { badValues } from '../helpers/bad-inputs.js'
import { conformancePath } from '../helpers/conformance.js'
import { loadPortableMemorySchema, schemaErrors, type JsonSchema } from '../helpers/json-schema.js'
import { MINIMAL_INPUTS, fixedContext } from '../helpers/record-inputs.js'
import { refusal } from '../helpers/error-code.js'

const SCHEMAS = Object.fromEntries(RECORD_KINDS.map((kind) => [kind, loadPortableMemorySchema(kind)])) as Record<RecordKind, JsonSchema>
const propertiesOf = (kind: RecordKind): Record<string, JsonSchema> => ({ ...SCHEMAS[kind].properties })
/** The Cairn extensions, as the schema would write them: optional, so null is allowed and means absent. */
const EXTENSIONS: Record<string, JsonSchema> = { tags: { type: ['array', 'null'], items: { type: 'string' } }, contextID: { type: ['string', 'null'] } }

const fieldsOf = (kind: RecordKind): FieldSpec[] => Object.values(kindSpec(kind).fields)
const nameAll = (predicate: (field: FieldSpec) => boolean): string[] =>
  RECORD_KINDS.flatMap((kind) => fieldsOf(kind).filter(predicate).map((field) => `${kind}.${field.name}`)).sort()

describe('the kind table', () => {
  it('holds exactly the 15 PM kinds, the record schemas of the conformance data', () => {
    const schemaNames = readdirSync(conformancePath('Schemas')).map((file) => file.replace('.schema.json', ''))
    const recordSchemas = schemaNames.filter((name) => !['log', 'manifest', 'tombstone'].includes(name)).sort()
    expect([...RECORD_KINDS].sort()).toEqual(recordSchemas)
    expect(new Set(RECORD_KINDS).size).toBe(15)
  })

  it('recognizes the kinds and nothing else', () => {
    for (const kind of RECORD_KINDS) expect(isRecordKind(kind)).toBe(true)
    for (const value of ['vendorThing', 'Episode', 'episodes', 'constructor', '__proto__', 'toString', 'tombstone', '', 5, null, undefined, {}]) {
      expect(isRecordKind(value)).toBe(false)
    }
    expect(kindSpec('episode').fields.constructor).toBeUndefined()
    expect(refusal(() => kindSpec('vendorThing' as RecordKind))).toMatchObject({ code: 'UNKNOWN_KIND', where: { field: 'kind' } })
    expect(refusal(() => validateCreate('constructor' as RecordKind, {}, fixedContext)).code).toBe('UNKNOWN_KIND')
  })

  it('declares every schema property with its schema type and required flag, and only the Cairn extensions besides', () => {
    const schemaOf = (field: FieldSpec): JsonSchema => {
      const nullable = (type: string): string | string[] => (field.required ? type : [type, 'null'])
      switch (field.type) {
        case 'timestamp':
          return { type: nullable('string'), format: 'date-time' }
        case 'integer':
          return field.minimum === undefined ? { type: nullable('integer') } : { type: nullable('integer'), minimum: field.minimum }
        case 'string[]':
          return { type: 'array', items: { type: 'string' } }
        case 'string-map':
          return { type: 'object', additionalProperties: { type: 'string' } }
        default:
          return { type: nullable(field.type) }
      }
    }
    for (const kind of RECORD_KINDS) {
      const schema = SCHEMAS[kind]
      const native = fieldsOf(kind).filter((field) => field.extension !== true)
      expect(native.map((field) => field.name).sort(), kind).toEqual(Object.keys(propertiesOf(kind)).sort())
      expect(native.filter((field) => field.required).map((field) => field.name).sort(), kind).toEqual([...(schema.required ?? [])].sort())
      for (const field of native) {
        const { description: _description, ...property } = propertiesOf(kind)[field.name] as JsonSchema & { description?: string }
        expect(schemaOf(field), `${kind}.${field.name}`).toEqual(property)
      }
      const extensions = fieldsOf(kind).filter((field) => field.extension === true)
      expect(extensions.map((field) => field.name).sort()).toEqual(kind === 'episode' ? ['tags'] : ['contextID', 'tags'])
      expect(extensions.every((field) => !field.required)).toBe(true)
    }
  })

  it('uses the merge classes decided in the design', () => {
    const idKinds = RECORD_KINDS.filter((kind) => !['factLink', 'episodeLink', 'category', 'preference'].includes(kind))
    expect(nameAll((field) => field.merge === 'identity')).toEqual([
      ...idKinds.map((kind) => `${kind}.id`),
      'factLink.srcFactID', 'factLink.dstFactID', 'factLink.linkType',
      'episodeLink.srcEpisodeID', 'episodeLink.dstEpisodeID', 'episodeLink.linkType',
      'category.name', 'preference.key',
    ].sort())
    expect(nameAll((field) => field.merge === 'set')).toEqual([
      'episode.actors', 'episode.categories', 'episode.vaultRefs', 'entity.aliases', 'edge.evidenceEpisodeIDs',
      'community.memberEntityIDs', ...RECORD_KINDS.map((kind) => `${kind}.tags`),
    ].sort())
    expect(nameAll((field) => field.merge === 'counter')).toEqual(['episode.accessCount', 'procedure.failureCount', 'procedure.successCount'])
    expect(nameAll((field) => field.merge === 'map')).toEqual(['episode.metadata'])
    expect(nameAll((field) => field.merge === 'text')).toEqual(['core.content'])
    expect(nameAll((field) => field.system === true)).toEqual(['edge.supersededBy', 'edge.tValidTo', 'fact.supersededBy', 'fact.tValidTo'])
    expect(kindSpec('procedure').fields.steps?.merge).toBe('lww')
    for (const kind of ['fact', 'edge'] as const) expect(kindSpec(kind).fields.tValidFrom?.merge).toBe('lww')
  })

  it('declares id prefixes, composite keys, parents, text fields and valid time', () => {
    const summary = Object.fromEntries(RECORD_KINDS.map((kind) => {
      const spec = kindSpec(kind)
      return [kind, [spec.idPrefix ?? null, spec.keyFields ?? null, spec.parents.map((parent) => `${parent.field}→${parent.kind}`), spec.textFields, spec.validTime ?? null]]
    }))
    const time = { from: 'tValidFrom', to: 'tValidTo' }
    expect(summary).toEqual({
      episode: ['ep_', null, [], ['summary', 'details'], null],
      entity: ['ent_', null, [], ['canonicalName', 'aliases', 'summary'], null],
      edge: ['edge_', null, ['srcEntityID→entity', 'dstEntityID→entity'], ['edgeType'], time],
      fact: ['fact_', null, ['episodeID→episode'], ['text', 'subject', 'predicate', 'object'], time],
      factLink: ['fl_', ['srcFactID', 'dstFactID', 'linkType'], ['srcFactID→fact', 'dstFactID→fact'], [], null],
      episodeLink: ['el_', ['srcEpisodeID', 'dstEpisodeID', 'linkType'], ['srcEpisodeID→episode', 'dstEpisodeID→episode'], [], null],
      resource: ['res_', null, [], ['title', 'summary'], null],
      chunk: ['chk_', null, ['resourceID→resource'], ['text'], null],
      core: [null, null, [], ['content'], null],
      procedure: ['proc_', null, [], ['name', 'triggerPattern', 'steps'], null],
      context: ['ctx_', null, [], ['label'], null],
      community: ['com_', null, [], ['label', 'summary'], null],
      category: ['cat_', ['name'], [], ['name', 'description'], null],
      preference: ['pref_', ['key'], [], ['key', 'value'], null],
      secretRef: ['sec_', null, [], ['label'], null],
    })
    expect(RECORD_KINDS.filter((kind) => kindSpec(kind).hasExt)).toEqual(['episode'])
  })
})

describe('fixtures', () => {
  const bundles = [
    ...readdirSync(conformancePath('fixtures')).filter((name) => name.endsWith('.mem')).map((name) => `fixtures/${name}`),
    'vectors/signed.mem',
  ]
  const noDefaults = { nowMs: Date.UTC(2001, 0, 1), randomHex: (): string => { throw new Error('a fixture record needed a random id') } }

  it('validates every record line of every bundle and gives it back byte for byte, vendor keys included', () => {
    expect(bundles).toEqual(expect.arrayContaining(['fixtures/sample.mem', 'fixtures/sample-1.1.mem', 'vectors/signed.mem']))
    const unknownKinds: string[] = []
    let lines = 0
    let linesWithExt = 0
    for (const bundle of bundles) {
      for (const file of readdirSync(conformancePath(bundle, 'items'))) {
        const kind = file.replace(/\.jsonl$/, '')
        const text = readFileSync(conformancePath(bundle, 'items', file), 'utf8')
        if (!isRecordKind(kind)) {
          unknownKinds.push(kind)
          continue
        }
        for (const line of text.split('\n').filter((item) => item !== '')) {
          const record = parseJson(line) as Record<string, unknown>
          const result = validateCreate(kind, record, noDefaults)
          expect(canonicalJson({ ...result.fields, ...result.ext }), `${bundle} ${kind}`).toBe(line)
          expect(result.id).toBe(kindSpec(kind).keyFields === undefined ? record.id : recordIdFor(kind, record))
          for (const key of Object.keys(result.ext)) expect(kindSpec(kind).fields[key]).toBeUndefined()
          lines++
          if (Object.keys(result.ext).length > 0) linesWithExt++
        }
      }
    }
    expect(unknownKinds).toEqual(['vendorThing'])
    expect(lines).toBeGreaterThanOrEqual(19)
    expect(linesWithExt).toBe(2)
  })

  it('validates the adapter fixtures\' expected episodes too, and derives each of their summaries', () => {
    for (const file of ['fixtures/engram/expected-episode.jsonl', 'fixtures/transfer/expected-episode.jsonl', 'fixtures/sample-1.1.mem/items/episode.jsonl']) {
      for (const line of readFileSync(conformancePath(file), 'utf8').split('\n').filter((item) => item !== '')) {
        const { summary, ...rest } = parseJson(line) as Record<string, unknown>
        expect(canonicalJson(validateCreate('episode', { summary, ...rest }, noDefaults).fields)).toBe(line)
        expect(validateCreate('episode', rest, noDefaults).fields.summary, file).toBe(summary)
      }
    }
  })
})

describe('JSON Schema validity', () => {
  it('the schema checker itself refuses what the schemas forbid', () => {
    const good = validateCreate('episode', MINIMAL_INPUTS.episode, fixedContext).fields
    expect(schemaErrors(SCHEMAS.episode, good)).toEqual([])
    const { summary: _summary, ...withoutSummary } = good
    expect(schemaErrors(SCHEMAS.episode, withoutSummary)).toEqual(['$: missing required summary'])
    expect(schemaErrors(SCHEMAS.episode, { ...good, accessCount: -1 })).toHaveLength(1)
    expect(schemaErrors(SCHEMAS.episode, { ...good, accessCount: 1.5 })).toHaveLength(1)
    expect(schemaErrors(SCHEMAS.episode, { ...good, metadata: { a: 1 } })).toHaveLength(1)
    expect(schemaErrors(SCHEMAS.episode, { ...good, eventTime: '2023-02-29T00:00:00Z' })).toHaveLength(1)
    expect(schemaErrors(SCHEMAS.episode, { ...good, speaker: null })).toEqual([])
    expect(schemaErrors(SCHEMAS.episode, { ...good, actors: [1] })).toHaveLength(1)
    expect(() => schemaErrors({ oneOf: [] } as JsonSchema, 1)).toThrow(/unsupported keyword/)
  })

  it('a create with only the minimum input gives a record the kind\'s schema accepts', () => {
    for (const kind of RECORD_KINDS) {
      const { fields } = validateCreate(kind, MINIMAL_INPUTS[kind], fixedContext)
      expect(schemaErrors(SCHEMAS[kind], fields), kind).toEqual([])
    }
  })

  it('each field of the minimum input is needed: leaving it out is MISSING_FIELD naming it', () => {
    for (const kind of RECORD_KINDS) {
      for (const name of Object.keys(MINIMAL_INPUTS[kind])) {
        const input: Record<string, unknown> = { ...MINIMAL_INPUTS[kind] }
        delete input[name]
        expect(refusal(() => validateCreate(kind, input, fixedContext)), `${kind}.${name}`).toMatchObject({ code: 'MISSING_FIELD', where: { field: `${kind}.${name}` } })
      }
    }
  })

  it('random valid inputs of every kind give schema-valid records that keep what was given', () => {
    for (const kind of RECORD_KINDS) {
      fc.assert(fc.property(validSample(kind), ({ input, expected, absent, ext }) => {
        const result = validateCreate(kind, input, fixedContext)
        expect(schemaErrors(SCHEMAS[kind], result.fields)).toEqual([])
        for (const [name, value] of Object.entries(expected)) expect(result.fields[name], `${kind}.${name}`).toEqual(value)
        for (const name of absent) expect(Object.hasOwn(result.fields, name), `${kind}.${name}`).toBe(false)
        expect(canonicalJson(result.ext)).toBe(canonicalJson(ext))
      }), { numRuns: 60 })
    }
  })

  it('random wrong-typed fields are refused, naming exactly that field', () => {
    const cases = fc.constantFrom(...RECORD_KINDS).chain((kind) =>
      fc.constantFrom(...Object.keys({ ...propertiesOf(kind), ...EXTENSIONS })).chain((name) =>
        fc.constantFrom(...wrongValues(kind, name)).map(([value, code]) => ({ kind, name, value, code }))))
    fc.assert(fc.property(cases, ({ kind, name, value, code }) => {
      const error = refusal(() => validateCreate(kind, { ...MINIMAL_INPUTS[kind], [name]: value }, fixedContext))
      expect(error).toBeInstanceOf(InputError)
      expect(error.where).toEqual({ field: `${kind}.${name}` })
      expect(error.code).toBe(code)
    }), { numRuns: 500 })
  })
})

describe('bad input', () => {
  const MAX_MESSAGE_LENGTH = 600

  function expectRefused(run: () => unknown, label: string): void {
    let error: CairnError
    try {
      error = refusal(run)
    } catch (failure) {
      throw new Error(`${label}: ${String(failure)}`)
    }
    expect(error.message.length, label).toBeLessThan(MAX_MESSAGE_LENGTH)
  }

  it('refuses every bad value as the whole input of every kind, briefly', () => {
    for (const kind of RECORD_KINDS) {
      for (const bad of badValues()) expectRefused(() => validateCreate(kind, bad.value, fixedContext), `${kind}: ${bad.name}`)
    }
  })

  it('refuses every bad value as a field value unless the field rightly takes it', () => {
    const isText = (value: unknown): boolean => typeof value === 'string' && value.isWellFormed()
    const isPlain = (value: unknown): value is object =>
      value !== null && typeof value === 'object' && !Array.isArray(value) && [Object.prototype, null].includes(Object.getPrototypeOf(value))
    const accepts: Record<string, (value: unknown) => boolean> = {
      'episode.summary': isText,
      'episode.importance': (value) => typeof value === 'number' && Number.isFinite(value),
      'episode.pinned': (value) => typeof value === 'boolean',
      'episode.actors': (value) => Array.isArray(value) && Object.keys(value).length === value.length && value.every(isText),
      'episode.metadata': (value) => isPlain(value) && Object.values(value).every(isText),
      'chunk.position': (value) => value === 0 || value === -0,
      'fact.tValidFrom': () => false,
    }
    for (const [label, isAccepted] of Object.entries(accepts)) {
      const [kind, name] = label.split('.') as [RecordKind, string]
      for (const bad of badValues()) {
        if (bad.value === undefined || (bad.value === null && !kindSpec(kind).fields[name]?.required)) continue
        if (isAccepted(bad.value)) continue
        expectRefused(() => validateCreate(kind, { ...MINIMAL_INPUTS[kind], [name]: bad.value }, fixedContext), `${label}: ${bad.name}`)
      }
    }
  })

  it('refuses every bad value as the context', () => {
    for (const bad of badValues()) expectRefused(() => validateCreate('episode', MINIMAL_INPUTS.episode, bad.value as never), bad.name)
    expect(refusal(() => validateCreate('episode', MINIMAL_INPUTS.episode, { nowMs: 0, randomHex: 'ab' as never })).where).toEqual({ field: 'context.randomHex' })
  })
})

// ---- Generators. ----

const PREFIXES: Partial<Record<RecordKind, string>> = {
  episode: 'ep_', entity: 'ent_', edge: 'edge_', fact: 'fact_', chunk: 'chk_', resource: 'res_', procedure: 'proc_', context: 'ctx_', community: 'com_', secretRef: 'sec_',
}
const text = fc.string({ unit: 'grapheme', maxLength: 16 })
/** Set elements and map keys: __proto__ is refused as one (crdt/own-keys.ts), and fast-check likes to try it. */
const keyText = text.filter((value) => value !== '__proto__')
const hex = fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 1, maxLength: 16 })
const two = (n: number): string => String(n).padStart(2, '0')

/** [input, expected]: an instant written with a random offset and fraction, and its UTC second. */
const timestamp: fc.Arbitrary<[string, string]> = fc.tuple(
  fc.integer({ min: -62_135_500_000, max: 253_402_200_000 }),
  fc.integer({ min: -1439, max: 1439 }),
  fc.option(fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 1, maxLength: 9 }), { nil: undefined }),
).map(([seconds, offset, fraction]) => {
  const local = new Date(seconds * 1000 + offset * 60_000).toISOString().slice(0, 19)
  const zone = offset === 0 ? 'Z' : `${offset < 0 ? '-' : '+'}${two(Math.floor(Math.abs(offset) / 60))}:${two(Math.abs(offset) % 60)}`
  return [`${local}${fraction === undefined ? '' : `.${fraction}`}${zone}`, new Date(seconds * 1000).toISOString().slice(0, 19) + 'Z']
})

function valueOf(kind: RecordKind, name: string, property: JsonSchema): fc.Arbitrary<[unknown, unknown]> {
  const same = <T>(arbitrary: fc.Arbitrary<T>): fc.Arbitrary<[unknown, unknown]> => arbitrary.map((value) => [value, value])
  if (name === 'id') return kind === 'core' ? same(fc.constantFrom('human', 'persona', 'project')) : same(hex.map((digits) => `${PREFIXES[kind]}${digits}`))
  // A parent is named by an id of its kind (validateCreate refuses an empty one or another kind's).
  const parent = kindSpec(kind).parents.find((candidate) => candidate.field === name)
  if (parent) return same(hex.map((digits) => `${PREFIXES[parent.kind]}${digits}`))
  if (kind === 'secretRef' && name === 'preview') {
    return same(fc.tuple(fc.string({ maxLength: 4 }), fc.constantFrom('***', '••••', '*•*'), fc.string({ maxLength: 4 })).map((parts) => parts.join('')))
  }
  const types = typeof property.type === 'string' ? [property.type] : property.type ?? []
  if (types.includes('string')) return property.format === 'date-time' ? timestamp : same(text)
  if (types.includes('integer')) return same(fc.integer({ min: property.minimum ?? -(2 ** 40), max: 2 ** 40 }))
  if (types.includes('number')) return fc.double({ noNaN: true, noDefaultInfinity: true }).map((value) => [value, value === 0 ? 0 : value])
  if (types.includes('boolean')) return same(fc.boolean())
  if (types.includes('array')) return same(fc.uniqueArray(keyText, { maxLength: 4 }))
  if (types.includes('object')) return same(fc.dictionary(keyText, text, { maxKeys: 4 }))
  throw new Error(`no generator for ${kind}.${name}`)
}

interface Sample {
  input: Record<string, unknown>
  expected: Record<string, unknown>
  absent: string[]
  ext: Record<string, unknown>
}

/** Random valid input from the schema: required fields without a default always, others sometimes, null where the schema allows it. */
function validSample(kind: RecordKind): fc.Arbitrary<Sample> {
  const schema = SCHEMAS[kind]
  const properties = { ...propertiesOf(kind), ...(kind === 'episode' ? { tags: EXTENSIONS.tags } : EXTENSIONS) }
  const parts = Object.entries(properties).map(([name, property]) => {
    const isNullable = Array.isArray(property?.type) && property.type.includes('null')
    const mustGive = (schema.required ?? []).includes(name) && kindSpec(kind).fields[name]?.default === undefined
    const given = valueOf(kind, name, property as JsonSchema).map(([input, expected]) => ({ name, mode: 'given' as const, input, expected }))
    if (mustGive) return given
    return fc.oneof(given, fc.constant({ name, mode: 'left out' as const }), ...(isNullable ? [fc.constant({ name, mode: 'null' as const })] : []))
  })
  const extension = kind === 'episode' ? fc.dictionary(fc.constantFrom('vendorScore', 'x-vendor', 'constructor', 'summaryNote'), fc.jsonValue({ maxDepth: 3 }).filter((value) => !JSON.stringify(value).includes('"__proto__":')), { maxKeys: 3 }) : fc.constant({})
  return fc.tuple(fc.tuple(...parts), extension)
    .filter(([chosen]) => kind !== 'episode' || chosen.some((part) => (part.name === 'summary' || part.name === 'details') && part.mode === 'given'))
    .map(([chosen, ext]) => {
      const sample: Sample = { input: {}, expected: {}, absent: [], ext: ext as Record<string, unknown> }
      for (const part of chosen) {
        if (part.mode === 'given') {
          sample.input[part.name] = part.input
          sample.expected[part.name] = part.expected
        } else if (part.mode === 'null') {
          sample.input[part.name] = null
          sample.absent.push(part.name)
        } else if (!(schema.required ?? []).includes(part.name)) sample.absent.push(part.name)
      }
      for (const [key, value] of Object.entries(ext)) Object.defineProperty(sample.input, key, { value, enumerable: true, writable: true, configurable: true })
      return sample
    })
}

/** Values of the wrong type (or range) for a field, with the code each must be refused with. */
function wrongValues(kind: RecordKind, name: string): [unknown, string][] {
  const property = ({ ...propertiesOf(kind), ...EXTENSIONS })[name] as JsonSchema
  const types = typeof property.type === 'string' ? [property.type] : property.type ?? []
  const notNull: [unknown, string][] = types.includes('null') ? [] : [[null, 'WRONG_TYPE']]
  const common: [unknown, string][] = [...notNull, [() => 1, 'WRONG_TYPE'], [new Date(0), 'WRONG_TYPE'], [Symbol('s'), 'WRONG_TYPE']]
  if (types.includes('string')) {
    const base: [unknown, string][] = [...common, [5, 'WRONG_TYPE'], [true, 'WRONG_TYPE'], [{}, 'WRONG_TYPE'], [['x'], 'WRONG_TYPE'], ['a\ud800', 'BAD_STRING']]
    if (property.format !== 'date-time') return base
    return [...base.filter(([value]) => typeof value !== 'string'), ['yesterday', 'BAD_TIMESTAMP'], ['2023-02-29T00:00:00Z', 'BAD_TIMESTAMP'], ['2023-11-14T22:13:20', 'BAD_TIMESTAMP']]
  }
  if (types.includes('integer')) {
    const range: [unknown, string][] = property.minimum === undefined ? [] : [[-1, 'OUT_OF_RANGE']]
    return [...common, ...range, ['1', 'WRONG_TYPE'], [true, 'WRONG_TYPE'], [1.5, 'WRONG_TYPE'], [Number.NaN, 'OUT_OF_RANGE'], [Number.POSITIVE_INFINITY, 'OUT_OF_RANGE'], [2 ** 53, 'OUT_OF_RANGE'], [10n ** 20n, 'OUT_OF_RANGE']]
  }
  if (types.includes('number')) return [...common, ['0.5', 'WRONG_TYPE'], [false, 'WRONG_TYPE'], [[], 'WRONG_TYPE'], [Number.NaN, 'OUT_OF_RANGE'], [Number.NEGATIVE_INFINITY, 'OUT_OF_RANGE']]
  if (types.includes('boolean')) return [...common, ['true', 'WRONG_TYPE'], [0, 'WRONG_TYPE'], [1, 'WRONG_TYPE'], [[], 'WRONG_TYPE']]
  if (types.includes('array')) return [...common, ['a', 'WRONG_TYPE'], [{}, 'WRONG_TYPE'], [5, 'WRONG_TYPE'], [new Array(2), 'WRONG_TYPE'], [new Set(['a']), 'WRONG_TYPE']]
  if (types.includes('object')) return [...common, ['a', 'WRONG_TYPE'], [[], 'WRONG_TYPE'], [5, 'WRONG_TYPE'], [new Map(), 'WRONG_TYPE']]
  throw new Error(`no wrong values for ${kind}.${name}`)
}

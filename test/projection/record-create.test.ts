/**
 * validateCreate: the documented defaults (written out here in full, per kind), summary and
 * fact-text derivation, episode extensions, masked secret previews, null and undefined, and
 * the normalizations (timestamps, -0, set duplicates).
 */
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { canonicalJson } from '../../src/log/canonical-json.js'
import { RECORD_KINDS, deriveSummary, validateCreate, type RecordKind } from '../../src/projection/kinds.js'
import { MINIMAL_INPUTS, NOW_TEXT, RANDOM_HEX, fixedContext } from '../helpers/record-inputs.js'
import { refusal } from '../helpers/error-code.js'

const NOW = NOW_TEXT
const keyId = (prefix: string, values: string[]): string => prefix + createHash('sha256').update(JSON.stringify(values)).digest('hex').slice(0, 24)

const create = (kind: RecordKind, input: Record<string, unknown>) => validateCreate(kind, input, fixedContext)

const EXPECTED: Record<RecordKind, [string, Record<string, unknown>]> = {
  episode: [`ep_${RANDOM_HEX}`, {
    id: `ep_${RANDOM_HEX}`, eventTime: NOW, mentionTime: NOW, ingestionTime: NOW, sourceType: 'note', actors: [], summary: 'Met Ada at the lab',
    details: 'Met Ada at the lab', sensitivity: 'low', metadata: {}, categories: [], importance: 0.5, confidence: 0.7, lifecycleState: 'HOT',
    extractionState: 'done', accessCount: 0, pinned: false, vaultRefs: [],
  }],
  entity: [`ent_${RANDOM_HEX}`, { id: `ent_${RANDOM_HEX}`, type: 'person', canonicalName: 'Ada', aliases: [], summary: '', sensitivity: 'low', updatedAt: NOW }],
  edge: [`edge_${RANDOM_HEX}`, {
    id: `edge_${RANDOM_HEX}`, srcEntityID: 'ent_ada', dstEntityID: 'ent_lab', edgeType: 'works_at', tValidFrom: NOW, ingestionTime: NOW, confidence: 0.7,
    evidenceEpisodeIDs: [],
  }],
  fact: [`fact_${RANDOM_HEX}`, {
    id: `fact_${RANDOM_HEX}`, episodeID: 'ep_1', subject: 'Ada', predicate: 'likes', object: 'tea', text: 'Ada likes tea', tValidFrom: NOW,
    confidence: 0.7, importance: 0.5, createdAt: NOW,
  }],
  factLink: [keyId('fl_', ['fact_1', 'fact_2', 'refines']), { srcFactID: 'fact_1', dstFactID: 'fact_2', linkType: 'refines', createdAt: NOW }],
  episodeLink: [keyId('el_', ['ep_1', 'ep_2', 'follows']), { srcEpisodeID: 'ep_1', dstEpisodeID: 'ep_2', linkType: 'follows', weight: 1 }],
  resource: [`res_${RANDOM_HEX}`, {
    id: `res_${RANDOM_HEX}`, uri: 'file:///notes.pdf', mimeType: 'application/pdf', contentHash: 'sha256:00ff', title: 'Notes', summary: '', created: NOW,
    modified: NOW,
  }],
  chunk: [`chk_${RANDOM_HEX}`, { id: `chk_${RANDOM_HEX}`, resourceID: 'res_1', position: 0, text: 'First chunk.', sensitivity: 'low' }],
  core: ['human', { id: 'human', content: '', charBudget: 2000, version: 1 }],
  procedure: [`proc_${RANDOM_HEX}`, {
    id: `proc_${RANDOM_HEX}`, name: 'deploy', triggerPattern: 'deploy *', steps: [], successCount: 0, failureCount: 0, enabled: true,
  }],
  context: [`ctx_${RANDOM_HEX}`, { id: `ctx_${RANDOM_HEX}`, label: 'Work', archived: false, createdAt: NOW }],
  community: [`com_${RANDOM_HEX}`, { id: `com_${RANDOM_HEX}`, label: 'Lab team', summary: '', memberEntityIDs: [] }],
  category: [keyId('cat_', ['Work']), { name: 'Work', description: '' }],
  preference: [keyId('pref_', ['units']), { key: 'units', value: 'metric' }],
  secretRef: [`sec_${RANDOM_HEX}`, {
    id: `sec_${RANDOM_HEX}`, label: 'GitHub token', sensitivity: 'high', category: 'api-key', preview: 'ghp_••••abcd',
    encryptionMetadata: 'aes-256-gcm/keychain', createdAt: NOW,
  }],
}

describe('defaults', () => {
  it.each(RECORD_KINDS)('fills every documented default of a minimal %s', (kind) => {
    const [id, fields] = EXPECTED[kind]
    const result = create(kind, MINIMAL_INPUTS[kind])
    expect(result).toEqual({ id, fields, ext: {} })
  })

  it('gives every record its own default arrays and objects', () => {
    const first = create('episode', MINIMAL_INPUTS.episode)
    ;(first.fields.actors as string[]).push('mallory')
    ;(first.fields.metadata as Record<string, string>).k = 'v'
    expect(create('episode', MINIMAL_INPUTS.episode).fields).toMatchObject({ actors: [], metadata: {} })
  })

  it('keeps given values over defaults, normalized', () => {
    const { fields } = create('episode', {
      summary: 's', eventTime: '2023-11-15T00:13:20.5+02:00', importance: -0, actors: ['a', 'b', 'a'], accessCount: 3, pinned: true,
    })
    expect(fields).toMatchObject({ eventTime: '2023-11-14T22:13:20Z', mentionTime: NOW, actors: ['a', 'b'], accessCount: 3, pinned: true })
    expect(Object.is(fields.importance, 0)).toBe(true)
    expect(create('procedure', { ...MINIMAL_INPUTS.procedure, steps: ['a', 'b', 'a'] }).fields.steps).toEqual(['a', 'b', 'a'])
  })

  it('accepts the Cairn extensions tags and contextID on every kind, absent unless given', () => {
    for (const kind of RECORD_KINDS) {
      const { fields } = create(kind, { ...MINIMAL_INPUTS[kind], tags: ['x', 'y', 'x'], contextID: 'ctx_work' })
      expect(fields, kind).toMatchObject({ tags: ['x', 'y'], contextID: 'ctx_work' })
      expect(Object.keys(create(kind, MINIMAL_INPUTS[kind]).fields), kind).not.toContain('tags')
    }
    const episode = create('episode', { ...MINIMAL_INPUTS.episode, tags: ['t'], categories: ['c'] }).fields
    expect([episode.tags, episode.categories]).toEqual([['t'], ['c']])
  })

  it('requires a core block name and never invents one', () => {
    expect(refusal(() => create('core', {}))).toMatchObject({ code: 'MISSING_FIELD', where: { field: 'core.id' } })
    expect(create('core', { id: 'persona', content: 'I am terse.' }).fields).toEqual({ id: 'persona', content: 'I am terse.', charBudget: 2000, version: 1 })
  })
})

describe('derived fields', () => {
  it('derives the summary as the first line of details, at most 120 code points, counting an emoji as one', () => {
    const emojiAt119 = `${'x'.repeat(119)}😀tail`
    expect(create('episode', { details: emojiAt119 }).fields.summary).toBe(`${'x'.repeat(119)}😀`)
    expect(`${'x'.repeat(119)}😀`.length).toBe(121)
    const emojiAt120 = `${'x'.repeat(120)}😀`
    expect(create('episode', { details: emojiAt120 }).fields.summary).toBe('x'.repeat(120))
    expect(create('episode', { details: '😀'.repeat(200) }).fields.summary).toBe('😀'.repeat(120))
    expect(create('episode', { details: 'Tone: direct, no filler, no emoji.\nException: emoji are fine in casual chats.' }).fields)
      .toMatchObject({ summary: 'Tone: direct, no filler, no emoji.', details: 'Tone: direct, no filler, no emoji.\nException: emoji are fine in casual chats.' })
  })

  it('trims the details before taking the first line, and cuts at \\r as well as \\n', () => {
    expect(deriveSummary('  \n first line \nsecond')).toBe('first line ')
    expect(deriveSummary('windows line\r\nnext')).toBe('windows line')
    expect(deriveSummary('')).toBe('')
  })

  it('derives details from the summary, and needs one of the two', () => {
    expect(create('episode', { summary: 'only a summary' }).fields.details).toBe('only a summary')
    expect(create('episode', { summary: 's', details: 'd' }).fields).toMatchObject({ summary: 's', details: 'd' })
    expect(refusal(() => create('episode', {}))).toMatchObject({ code: 'MISSING_FIELD', where: { field: 'episode.summary' } })
    expect(refusal(() => create('episode', { summary: undefined, details: undefined })).code).toBe('MISSING_FIELD')
  })

  it('derives a fact\'s text from its triple when absent, and keeps a given text', () => {
    expect(create('fact', { ...MINIMAL_INPUTS.fact, predicate: '' }).fields.text).toBe('Ada tea')
    expect(create('fact', { ...MINIMAL_INPUTS.fact, text: 'Ada drinks tea daily' }).fields.text).toBe('Ada drinks tea daily')
    expect(refusal(() => create('fact', { episodeID: 'ep_1', text: 'no triple' }))).toMatchObject({ code: 'MISSING_FIELD', where: { field: 'fact.subject' } })
  })
})

describe('unknown data', () => {
  it('returns unknown episode keys as ext, deep-copied, never shadowing a native key', () => {
    const vendor = { nested: [1, { deep: true }], big: 18446744073709551615n }
    const input = JSON.parse('{"summary":"s","constructor":{"x":1}}') as Record<string, unknown>
    Object.assign(input, { vendorScore: 0.92, vendor, kind: 'episode' })
    const result = create('episode', input)
    expect(canonicalJson(result.ext)).toBe('{"constructor":{"x":1},"kind":"episode","vendor":{"big":18446744073709551615,"nested":[1,{"deep":true}]},"vendorScore":0.92}')
    vendor.nested.push(2)
    expect((result.ext.vendor as { nested: unknown[] }).nested).toHaveLength(2)
    expect(Object.getPrototypeOf(result.ext)).toBe(Object.prototype)
    expect(Object.keys(result.fields)).not.toContain('vendorScore')
  })

  it('refuses unknown keys on every other kind, naming the key', () => {
    for (const kind of RECORD_KINDS.filter((item) => item !== 'episode')) {
      expect(refusal(() => create(kind, { ...MINIMAL_INPUTS[kind], vendorScore: 1 }))).toMatchObject({ code: 'UNKNOWN_FIELD', where: { field: `${kind}.vendorScore` } })
    }
    expect(refusal(() => create('category', { name: 'x', id: 'cat_1' }))).toMatchObject({ code: 'UNKNOWN_FIELD', where: { field: 'category.id' } })
    expect(refusal(() => create('entity', { ...MINIMAL_INPUTS.entity, ['k'.repeat(10_000)]: 1 })).message.length).toBeLessThan(300)
  })

  it('refuses extension values that are not plain JSON, naming where', () => {
    const cases: [unknown, string, string][] = [
      [() => 1, 'NOT_JSON', 'episode.x'],
      [new Date(0), 'NOT_JSON', 'episode.x'],
      [Number.NaN, 'NOT_JSON', 'episode.x'],
      [{ a: [1, undefined] }, 'NOT_JSON', 'episode.x.a[1]'],
      [{ a: new Array(2) }, 'WRONG_TYPE', 'episode.x.a'],
      [{ 'a\udc00': 1 }, 'BAD_STRING', 'episode.x.a\udc00'],
      [Object.defineProperty({}, 'g', { get: () => 1, enumerable: true }), 'NOT_JSON', 'episode.x.g'],
    ]
    for (const [value, code, field] of cases) expect(refusal(() => create('episode', { summary: 's', x: value }))).toMatchObject({ code, where: { field } })
    let deep: unknown = 1
    for (let i = 0; i < 10_000; i++) deep = { a: deep }
    const error = refusal(() => create('episode', { summary: 's', x: deep }))
    expect(error.code).toBe('TOO_DEEP')
    expect(error.message.length).toBeLessThan(600)
    expect(create('episode', { summary: 's', x: { a: undefined, b: null } }).ext).toEqual({ x: { b: null } })
  })

  it('names the element of a list or the key of a map that is wrong', () => {
    expect(refusal(() => create('episode', { summary: 's', actors: ['a', 5] }))).toMatchObject({ code: 'WRONG_TYPE', where: { field: 'episode.actors[1]' } })
    expect(refusal(() => create('episode', { summary: 's', metadata: { ok: 'v', bad: 1 } }))).toMatchObject({ code: 'WRONG_TYPE', where: { field: 'episode.metadata.bad' } })
    expect(create('episode', { summary: 's', metadata: { constructor: 'v', toString: 'w' } }).fields.metadata).toEqual({ constructor: 'v', toString: 'w' })
    // Stored state keeps keys and set elements in objects, where __proto__ is not data.
    const cases: [Record<string, unknown>, string][] = [
      [{ summary: 's', metadata: JSON.parse('{"__proto__":"v"}') as unknown }, 'episode.metadata.__proto__'],
      [JSON.parse('{"summary":"s","__proto__":{"x":1}}') as Record<string, unknown>, 'episode.__proto__'],
      [{ summary: 's', tags: ['a', '__proto__'] }, 'episode.tags[1]'],
      [{ summary: 's', ext: { deep: JSON.parse('{"__proto__":1}') as unknown } }, 'episode.ext.deep.__proto__'],
    ]
    for (const [input, field] of cases) {
      expect(refusal(() => create('episode', input)), field).toMatchObject({ code: 'RESERVED_KEY', where: { field } })
    }
  })
})

describe('null and undefined', () => {
  it('treats null as absent where the schema allows null, and refuses it elsewhere', () => {
    const { fields } = create('fact', { ...MINIMAL_INPUTS.fact, tValidTo: null, speaker: null, contextID: null, tags: null })
    expect(Object.keys(fields).filter((name) => ['tValidTo', 'speaker', 'contextID', 'tags'].includes(name))).toEqual([])
    expect(Object.values(fields)).not.toContain(null)
    expect(refusal(() => create('fact', { ...MINIMAL_INPUTS.fact, confidence: null }))).toMatchObject({ code: 'WRONG_TYPE', where: { field: 'fact.confidence' } })
    expect(refusal(() => create('fact', { ...MINIMAL_INPUTS.fact, subject: null }))).toMatchObject({ code: 'WRONG_TYPE', where: { field: 'fact.subject' } })
  })

  it('treats undefined members as absent, so defaults still apply', () => {
    expect(create('episode', { summary: 's', sourceType: undefined, id: undefined }).fields).toMatchObject({ sourceType: 'note', id: `ep_${RANDOM_HEX}` })
  })
})

describe('secret previews', () => {
  const secret = (preview: string) => () => create('secretRef', { ...MINIMAL_INPUTS.secretRef, preview })

  it.each(['', 'abcd', '12345678', '😀😀😀😀😀😀😀😀', '***', 'sk-****abcd', '••••••••••••1234', 'abc*•*defghijkl'])('accepts the masked or short preview %j', (preview) => {
    expect(secret(preview)().fields.preview).toBe(preview)
  })

  it.each(['123456789', 'sk-abcdefghijklmnop', 'sk-**abcdefghijk', 'a*b*c*d*e*f', '😀😀😀😀😀😀😀😀😀'])('refuses the unmasked preview %j without repeating it', (preview) => {
    const error = refusal(secret(preview))
    expect(error).toMatchObject({ code: 'UNMASKED_SECRET', where: { field: 'secretRef.preview' } })
    expect(error.message).not.toContain(preview)
  })
})

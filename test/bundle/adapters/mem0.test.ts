/**
 * mem0 adapter: the list and wrapped export forms mapped field by field (spec §10), graph
 * relations, metadata precedence, ids, and refusals that name the file and JSON path.
 */
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { parseMem0 } from '../../../src/bundle/adapters/index.js'
import { NOW, episode, fixedOptions, metadataOf, refusal, sample, sampleJson, unmatchedLeaves } from './helpers.js'

const h = (...parts: string[]): string => createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 24)
const parse = (json: unknown) => parseMem0({ json, path: 'mem0.json' }, fixedOptions())

describe('mem0 list form', () => {
  const result = parseMem0({ files: [sample('mem0/list.json')] }, fixedOptions())

  it('maps a memory with user metadata field by field', () => {
    const fields = episode(result, '3c90c3cc-0d44-4b50-8888-8dd25736052a')
    expect(fields).toMatchObject({
      sourceID: '3c90c3cc-0d44-4b50-8888-8dd25736052a', sourceType: 'text', actors: ['alice'],
      eventTime: '2024-07-20T17:15:30Z', ingestionTime: '2024-07-20T17:15:30Z', mentionTime: '2024-08-01T16:00:00Z',
      summary: 'Prefers oat milk in coffee ☕ and no sugar', details: 'Prefers oat milk in coffee ☕ and no sugar',
      categories: ['food', 'preferences'], importance: 0.5, confidence: 0.7, lifecycleState: 'HOT', extractionState: 'done',
      sensitivity: 'low', pinned: false, accessCount: 0, vaultRefs: [],
    })
    expect(fields.speaker).toBeUndefined()
    expect(fields.contextID).toBeUndefined()
    expect(metadataOf(fields)).toEqual({
      source: 'onboarding-chat', confidence_hint: '0.9', verified: '1', tags: '["diet","coffee"]', nested: '{"flags":[false,null],"step":3}',
      mem0_id: '3c90c3cc-0d44-4b50-8888-8dd25736052a', mem0_hash: 'a1b2c3d4e5f60718293a4b5c6d7e8f90', mem0_user_id: 'alice',
      mem0_created_at: '2024-07-20T10:15:30.123456-07:00', mem0_updated_at: '2024-08-01T09:00:00-07:00', mem0_score: '0.87', mem0_immutable: '0',
    })
  })

  it('maps role, agent, actor, run and expiration', () => {
    const fields = episode(result, '9a1f2e3d-4c5b-6a79-8f0e-1d2c3b4a5968')
    expect(fields).toMatchObject({
      sourceType: 'chat', speaker: 'user', actors: ['alice', 'travel-planner', 'alice@example.com'], contextID: 'run-2024-09-14',
      expirationDate: '2025-12-31T00:00:00Z', eventTime: '2024-09-14T08:00:00Z', mentionTime: '2024-09-14T08:00:00Z',
    })
    expect(metadataOf(fields)).toMatchObject({
      mem0_role: 'user', mem0_agent_id: 'travel-planner', mem0_actor_id: 'alice@example.com', mem0_run_id: 'run-2024-09-14',
      mem0_attributed_to: 'user', mem0_expiration_date: '2025-12-31', mem0_memory_type: 'semantic', mem0_owner: '{"org":"acme","project":"trips"}',
    })
  })

  it('reads `text`, keeps an unparseable time in metadata and warns, and never makes an empty user id an actor', () => {
    const fields = episode(result, 'c0ffee00-1111-2222-3333-444455556666')
    expect(fields).toMatchObject({ details: 'Allergic to peanuts (severe).', speaker: 'assistant', actors: [], eventTime: NOW, ingestionTime: NOW })
    expect(metadataOf(fields).mem0_created_at).toBe('not a date')
    expect(result.warnings).toEqual([{ code: 'BAD_TIME', message: expect.any(String) as string, where: { file: 'mem0/list.json', path: '$[2].created_at' } }])
  })

  it('cuts the summary at 120 code points without splitting a surrogate pair', () => {
    const fields = episode(result, '5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9')
    const summary = fields.summary as string
    expect([...summary]).toHaveLength(120)
    expect(summary.endsWith('😀')).toBe(true)
    expect((fields.details as string).startsWith(summary)).toBe(true)
  })

  it('drops nothing: every string and number of the export is in a field or metadata value', () => {
    expect(unmatchedLeaves(sampleJson('mem0/list.json'), result.records)).toEqual([])
  })

  it('is deterministic', () => {
    expect(parseMem0({ files: [sample('mem0/list.json')] }, fixedOptions())).toEqual(result)
  })
})

describe('mem0 wrapped form with graph relations', () => {
  const result = parseMem0({ files: [sample('mem0/wrapped.json')] }, fixedOptions())

  it('reads the results list and treats null times as absent', () => {
    const fields = episode(result, 'e5b1a0c2-7d7e-4f0a-9a57-0c1f7b6d2e11')
    expect(fields).toMatchObject({ eventTime: '2025-03-03T02:45:12Z', mentionTime: '2025-03-03T02:45:12Z', categories: ['sports', 'goals'] })
    expect(fields.expirationDate).toBeUndefined()
    expect(metadataOf(fields)).toMatchObject({ priority: '2', mem0_hash: '5d41402abc4b2a76b9719d911017c592' })
    expect(metadataOf(episode(result, '0b9f6c1e-55aa-4d3e-8a21-3f4e5d6c7b8a')).mem0_organization_id).toBe('org_42')
  })

  it('turns relations into entities, edges and carrier episodes (target or destination)', () => {
    const entities = result.records.filter((record) => record.kind === 'entity').map((record) => record.fields.canonicalName)
    expect(entities).toEqual(['bob', 'clara', 'nurse', 'lyon'])
    const edges = result.records.filter((record) => record.kind === 'edge')
    expect(edges.map((edge) => edge.fields.edgeType)).toEqual(['sibling_of', 'works_as', 'lives_in'])
    const worksAs = edges[1]?.fields as Record<string, unknown>
    expect(worksAs).toMatchObject({ id: `edge_${h('mem0', 'edge', 'clara', 'works_as', 'nurse')}`, srcEntityID: `ent_${h('mem0', 'entity', 'clara')}`, dstEntityID: `ent_${h('mem0', 'entity', 'nurse')}` })
    const carrier = episode(result, (worksAs.evidenceEpisodeIDs as string[])[0] as string)
    expect(carrier).toMatchObject({ details: 'clara works_as nurse', sourceType: 'note' })
    expect(metadataOf(carrier)).toMatchObject({ mem0_destination: 'nurse', mem0_weight: '0.8', cairn_derived: `["ent_${h('mem0', 'entity', 'nurse')}"]` })
  })

  it('drops nothing', () => {
    expect(unmatchedLeaves(sampleJson('mem0/wrapped.json'), result.records)).toEqual([])
  })

  it('reports envelope keys that are not memories', () => {
    const wrapped = parse({ results: [{ id: 'm1', memory: 'x' }], count: 1, next: null })
    expect(wrapped.warnings.map((warning) => warning.code)).toEqual(['ROOT_KEYS_NOT_IMPORTED'])
  })
})

describe('mem0 ids and metadata precedence', () => {
  it('gives a memory without an id the injected random id', () => {
    expect(parse([{ memory: 'no id here' }]).records[0]?.id).toBe('ep_0000000000000001')
  })

  it('replaces an id Cairn cannot use by a hash id and keeps the original in mem0_id', () => {
    const result = parse([{ id: 'ent_42', memory: 'looks like an entity id' }])
    expect(result.records[0]?.id).toBe(`ep_${h('mem0', 'ent_42')}`)
    expect(metadataOf(result.records[0]?.fields as Record<string, unknown>).mem0_id).toBe('ent_42')
    expect(result.warnings[0]?.code).toBe('UNUSABLE_ID')
  })

  it('lets provenance win over a same-named user metadata key, and says so', () => {
    const result = parse([{ id: 'm1', memory: 'x', metadata: { mem0_id: 'forged' } }])
    expect(metadataOf(result.records[0]?.fields as Record<string, unknown>).mem0_id).toBe('m1')
    expect(result.warnings[0]?.code).toBe('METADATA_CONFLICT')
  })

  it('keeps the text keys that lost to `memory`', () => {
    const result = parse([{ id: 'm1', memory: 'first', text: 'second', data: { blob: 1 } }])
    expect(metadataOf(result.records[0]?.fields as Record<string, unknown>)).toMatchObject({ mem0_text: 'second', mem0_data: '{"blob":1}' })
  })

  it('folds an exact repeat and keeps a different memory under a taken id', () => {
    const result = parse([{ id: 'm1', memory: 'a' }, { id: 'm1', memory: 'a' }, { id: 'm1', memory: 'b' }])
    expect(result.records).toHaveLength(2)
    expect(metadataOf(result.records[1]?.fields as Record<string, unknown>).mem0_duplicate_of).toBe('m1')
    expect(result.warnings.map((warning) => warning.code)).toEqual(['DUPLICATE_ID'])
  })

  it('skips a memory without text, with a warning', () => {
    const result = parse([{ id: 'm1', memory: '   ' }])
    expect(result.records).toEqual([])
    expect(result.warnings[0]).toMatchObject({ code: 'EMPTY_MEMORY', where: { path: '$[0]' } })
  })
})

describe('mem0 refusals', () => {
  it.each([
    ['a scalar root', 42, 'WRONG_TYPE', '$'],
    ['a wrapper without a list', { total: 0 }, 'MISSING_FIELD', '$'],
    ['an item that is not an object', [{ memory: 'ok' }, 'text'], 'WRONG_TYPE', '$[1]'],
    ['a number among categories', [{ memory: 'ok', categories: ['a', 5] }], 'WRONG_TYPE', '$[0].categories[1]'],
    ['metadata that is a list', [{ memory: 'ok', metadata: ['a'] }], 'WRONG_TYPE', '$[0].metadata'],
    ['a numeric user_id', [{ memory: 'ok', user_id: 7 }], 'WRONG_TYPE', '$[0].user_id'],
    ['relations that are not a list', { results: [{ memory: 'ok' }], relations: {} }, 'WRONG_TYPE', '$.relations'],
    ['a relation without a target', { results: [], relations: [{ source: 'a', relationship: 'b' }] }, 'MISSING_FIELD', '$.relations[0]'],
  ])('refuses %s, naming the path', (_name, json, code, path) => {
    const error = refusal(() => parse(json))
    expect(error.code).toBe(code)
    expect(error.where).toMatchObject({ file: 'mem0.json', path })
  })

  it('refuses truncated JSON, naming the file and line', () => {
    const error = refusal(() => parseMem0({ files: [{ path: 'export.json', content: '[\n  {"memory": "a"},\n  {"memory": "b"' }] }, fixedOptions()))
    expect(error.code).toBe('BAD_JSON')
    expect(error.where).toEqual({ file: 'export.json', line: 3 })
  })
})

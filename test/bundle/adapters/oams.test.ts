/**
 * OAMS adapter: memory objects mapped field by field (docs/memory-model.md §4.1), namespace
 * contexts, envelopes, pipelines, embeddings left out on purpose, and refusals naming the line.
 */
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { parseOams } from '../../../src/bundle/adapters/index.js'
import { SAMPLES, byId, episode, fixedOptions, metadataOf, refusal, sample, unmatchedLeaves } from './helpers.js'

const h = (...parts: string[]): string => createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 24)
const carrier = (id: string): string => `ep_${h('oams', id)}`
const lines = (): unknown[] => readFileSync(path.join(SAMPLES, 'oams/memories.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as unknown)

describe('OAMS memory JSONL', () => {
  const result = parseOams({ files: [sample('oams/memories.jsonl')] }, fixedOptions())
  const planner = `ctx_${h('oams-namespace', 'agent:planner')}`

  it('maps a memory field by field, keeping converted metadata whole', () => {
    const fields = episode(result, carrier('0190b2c4-7e5f-7a1b-9c3d-4e5f6a7b8c9d'))
    expect(fields).toMatchObject({
      details: "The user's fiscal year starts in April.", confidence: 0.92, contextID: planner, sourceType: 'note',
      eventTime: '2026-05-02T07:15:00Z', mentionTime: '2026-05-02T07:15:00Z', ingestionTime: '2026-05-02T07:15:00Z',
    })
    expect(metadataOf(fields)).toEqual({
      source: 'email', verified: '1', score: '3', tags: '["finance"]',
      oams_metadata: '{"ignored":null,"score":3,"source":"email","tags":["finance"],"verified":true}',
      oams_id: '0190b2c4-7e5f-7a1b-9c3d-4e5f6a7b8c9d', oams_namespace: 'agent:planner', oams_created_at: '2026-05-02T09:15:00.500+02:00',
    })
    expect(byId(result).get(planner)?.fields).toMatchObject({ label: 'agent:planner', archived: false })
  })

  it('leaves the embedding out but records its size, and keeps unknown keys (an oams_ key keeps its name)', () => {
    expect(metadataOf(episode(result, carrier('0190b2c4-7e5f-7a1b-9c3d-000000000002'))).oams_embedding_dim).toBe('4')
    expect(metadataOf(episode(result, carrier('m-3')))).toMatchObject({ repo: 'acme/web', oams_vendor_score: '0.4', oams_version: '0.1' })
    expect(result.warnings).toEqual([{ code: 'EMBEDDINGS_NOT_STORED', message: expect.any(String) as string, where: { file: 'oams/memories.jsonl' } }])
  })

  it('maps an envelope to an import episode that is its carriers\' source, with view tags and the TTL', () => {
    const memory = episode(result, carrier('env-1'))
    const agent = 'did:key:z6MkpTHR8VNsBxYAAWHut2Geadd9jSwuBV8xRoAnwWsdvktH'
    expect(memory).toMatchObject({ actors: [agent], tags: ['oams-view'], expirationDate: '2023-11-15T22:13:20Z', confidence: 0.8 })
    const envelope = episode(result, memory.sourceID as string)
    expect(envelope).toMatchObject({ sourceType: 'event', actors: [agent], expirationDate: '2023-11-15T22:13:20Z' })
    expect(metadataOf(envelope)).toMatchObject({ oams_scope: 'read', oams_ttl: '86400', oams_target_agents: '["https://agents.example.com/reviewer"]', oams_audit: '{"hops":1,"signed":false}', oams_payload_ids: '["env-1"]' })
  })

  it('maps a pipeline to derived_from links from each output to each input', () => {
    const links = result.records.filter((record) => record.kind === 'episodeLink').map((record) => record.fields)
    expect(links).toEqual([
      { srcEpisodeID: carrier('m-3'), dstEpisodeID: carrier('0190b2c4-7e5f-7a1b-9c3d-4e5f6a7b8c9d'), linkType: 'derived_from', weight: 1 },
      { srcEpisodeID: carrier('m-3'), dstEpisodeID: carrier('0190b2c4-7e5f-7a1b-9c3d-000000000002'), linkType: 'derived_from', weight: 1 },
    ])
    const pipeline = result.records.find((record) => record.kind === 'episode' && metadataOf(record.fields).oams_pipeline !== undefined)
    expect(JSON.parse(metadataOf(pipeline?.fields as Record<string, unknown>).oams_pipeline as string).audit_log.reason).toBe('nightly consolidation')
  })

  it('drops nothing but the embedding', () => {
    expect(unmatchedLeaves(lines(), result.records)).toEqual(['$[1].embedding[0]', '$[1].embedding[1]', '$[1].embedding[2]'])
  })

  it('marks the carriers of a ttl 0 envelope ephemeral, and warns', () => {
    const ephemeral = parseOams({ json: [{ source_agent: 'a', scope: 'mirror', ttl: 0, payload: [{ id: 'x', namespace: 'n', content: 'c', confidence: 1, created_at: '2026-01-01T00:00:00Z' }] }] }, fixedOptions())
    expect(metadataOf(episode(ephemeral, carrier('x'))).cairn_ephemeral).toBe('1')
    expect(episode(ephemeral, carrier('x')).tags).toBeUndefined()
    expect(ephemeral.warnings.map((warning) => warning.code)).toEqual(['EPHEMERAL_ENVELOPE'])
  })
})

describe('OAMS refusals', () => {
  const parse = (content: string) => parseOams({ files: [{ path: 'memories.jsonl', content }] }, fixedOptions())
  const memory = { id: 'a', namespace: 'n', content: 'c', confidence: 0.5, created_at: '2026-01-01T00:00:00Z' }

  it.each(['id', 'namespace', 'content', 'confidence', 'created_at'])('refuses a memory without %s, naming the field and line', (field) => {
    const { [field]: _dropped, ...rest } = memory as Record<string, unknown>
    const error = refusal(() => parse(`${JSON.stringify(memory)}\n${JSON.stringify(rest)}\n`))
    expect(error.code).toBe('MISSING_FIELD')
    expect(error.where).toEqual({ file: 'memories.jsonl', line: 2, path: `$.${field}` })
  })

  it('refuses a string confidence, a created_at that is no time, and a truncated line', () => {
    expect(refusal(() => parse(JSON.stringify({ ...memory, confidence: 'high' }))).where).toEqual({ file: 'memories.jsonl', line: 1, path: '$.confidence' })
    expect(refusal(() => parse(JSON.stringify({ ...memory, created_at: 'yesterday' }))).code).toBe('BAD_TIMESTAMP')
    expect(refusal(() => parse(`${JSON.stringify(memory)}\n{"id": "b", "content":`)).where).toEqual({ file: 'memories.jsonl', line: 2 })
  })
})

/**
 * OpenMemory adapter: the relational memories.json and the logical memories.jsonl(.gz), mapped
 * field by field; categories, states, the import episode, and refusals.
 */
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { gzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { parseOpenMemory } from '../../../src/bundle/adapters/index.js'
import { SAMPLES, episode, fixedOptions, metadataOf, refusal, sample, sampleJson, unmatchedLeaves } from './helpers.js'

const h = (...parts: string[]): string => createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 24)
const memoryId = (id: string): string => `ep_${h('openmemory', id)}`

describe('OpenMemory memories.json', () => {
  const result = parseOpenMemory({ files: [sample('openmemory/memories.json')] }, fixedOptions())
  const importId = `ep_${h('openmemory', 'export', 'dana')}`

  it('maps an active memory with its app, categories and metadata', () => {
    const fields = episode(result, memoryId('m1000000-0000-4000-8000-00000000000a'))
    expect(fields).toMatchObject({
      details: 'Uses Rust for the ingestion service and TypeScript for the dashboard', sourceType: 'text', actors: ['dana'], sourceID: importId,
      eventTime: '2025-01-12T14:20:05Z', ingestionTime: '2025-01-12T14:20:05Z', mentionTime: '2025-01-15T08:00:00Z',
      categories: ['work'], lifecycleState: 'HOT',
    })
    expect(metadataOf(fields)).toMatchObject({
      source_app: 'openmemory', mcp_client: 'cursor', attempts: '2', mem0_id: 'm1000000-0000-4000-8000-00000000000a', mem0_app: 'cursor',
      mem0_app_id: 'a1a1a1a1-b2b2-4c3c-8d4d-e5e5e5e5e5e5', mem0_state: 'active', mem0_created_at: '2025-01-12T14:20:05.731000+00:00',
    })
  })

  it('maps archived and deleted states, deleted_at and the state history', () => {
    const archived = episode(result, memoryId('m1000000-0000-4000-8000-00000000000b'))
    expect(archived).toMatchObject({ lifecycleState: 'ARCHIVED', categories: ['preferences', 'work'] })
    expect(metadataOf(archived).mem0_archived_at).toBe('2025-01-25T12:00:00+00:00')
    expect(JSON.parse(metadataOf(archived).mem0_status_history as string)).toHaveLength(1)
    const deleted = episode(result, memoryId('m1000000-0000-4000-8000-00000000000c'))
    expect(deleted).toMatchObject({ lifecycleState: 'ARCHIVED', deletedAt: '2025-01-02T00:00:00Z', categories: [] })
  })

  it('writes the categories as category records and the export as an import episode', () => {
    expect(result.records.filter((record) => record.kind === 'category').map((record) => record.fields)).toEqual([
      { name: 'work', description: 'Job, projects and tools' }, { name: 'preferences', description: '' },
    ])
    const meta = metadataOf(episode(result, importId))
    expect(JSON.parse(meta.mem0_user as string)).toMatchObject({ name: 'Dana Ólafsdóttir', email: 'dana@example.org' })
    expect(Object.keys(meta)).toEqual(['mem0_user', 'mem0_apps', 'mem0_categories', 'mem0_access_controls', 'mem0_export_meta', 'mem0_memory_categories'])
    // The one memory_categories row that category_ids does not repeat is kept.
    expect(JSON.parse(meta.mem0_memory_categories as string)).toEqual([{ category_id: 'c1000000-0000-4000-8000-000000000002', memory_id: 'm1000000-0000-4000-8000-00000000000c' }])
  })

  it('drops nothing', () => {
    expect(unmatchedLeaves(sampleJson('openmemory/memories.json'), result.records)).toEqual([])
  })
})

describe('OpenMemory memories.jsonl', () => {
  it('reads plain and gzipped lines alike', () => {
    const plain = parseOpenMemory({ files: [sample('openmemory/memories.jsonl')] }, fixedOptions())
    const gz = parseOpenMemory({ files: [{ path: 'memories.jsonl.gz', content: gzipSync(readFileSync(path.join(SAMPLES, 'openmemory/memories.jsonl'))) }] }, fixedOptions())
    expect(gz.records).toEqual(plain.records)
    const paused = episode(plain, memoryId('m1000000-0000-4000-8000-00000000000d'))
    expect(paused).toMatchObject({ lifecycleState: 'COLD', details: 'Wants PR reviews within 24h — "no exceptions"', actors: [] })
    expect(paused.sourceID).toBeUndefined()
    expect(metadataOf(episode(plain, memoryId('m1000000-0000-4000-8000-00000000000a'))).mem0_app).toBe('cursor')
    const lines = readFileSync(path.join(SAMPLES, 'openmemory/memories.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as unknown)
    expect(unmatchedLeaves(lines, plain.records)).toEqual([])
  })

  it('refuses a bad line, naming the file and line', () => {
    const error = refusal(() => parseOpenMemory({ files: [{ path: 'memories.jsonl', content: '{"id":"a","content":"x"}\n{"id":"b",' }] }, fixedOptions()))
    expect(error).toMatchObject({ code: 'BAD_JSON', where: { file: 'memories.jsonl', line: 2 } })
  })

  it('refuses corrupt gzip', () => {
    const error = refusal(() => parseOpenMemory({ files: [{ path: 'memories.jsonl.gz', content: new Uint8Array([0x1f, 0x8b, 1, 2, 3]) }] }, fixedOptions()))
    expect(error).toMatchObject({ code: 'BAD_GZIP', where: { file: 'memories.jsonl.gz' } })
  })

  it('refuses a memory without an id, naming the line', () => {
    const error = refusal(() => parseOpenMemory({ files: [{ path: 'memories.jsonl', content: '{"content":"x"}\n' }] }, fixedOptions()))
    expect(error).toMatchObject({ code: 'MISSING_FIELD', where: { file: 'memories.jsonl', line: 1 } })
  })

  it('refuses a wrong-typed state in the dump, naming its path', () => {
    const error = refusal(() => parseOpenMemory({ json: { memories: [{ id: 'a', content: 'x', state: 3 }] } }, fixedOptions()))
    expect(error).toMatchObject({ code: 'WRONG_TYPE', where: { path: '$.memories[0].state' } })
  })
})

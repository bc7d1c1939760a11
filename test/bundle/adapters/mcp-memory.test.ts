/**
 * MCP memory server adapter: entities, relations and their carriers from memory.jsonl, line
 * order, dangling endpoints, read_graph output, unknown lines, and refusals naming the line.
 */
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { MAX_LINE_BYTES, parseMcpMemory } from '../../../src/bundle/adapters/index.js'
import { SAMPLES, byId, episode, fixedOptions, metadataOf, refusal, sample, unmatchedLeaves } from './helpers.js'

const h = (...parts: string[]): string => createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 24)
const entity = (name: string): string => `ent_${h('mcp', 'entity', name)}`
const lines = (): unknown[] => readFileSync(path.join(SAMPLES, 'mcp-memory/memory.jsonl'), 'utf8').split('\n').map((line) => JSON.parse(line) as unknown)

describe('MCP memory graph', () => {
  const result = parseMcpMemory({ files: [sample('mcp-memory/memory.jsonl')] }, fixedOptions())

  it('maps an entity to an entity record and a carrier episode', () => {
    expect(byId(result).get(entity('Alice_Nguyen'))?.fields).toMatchObject({ type: 'person', canonicalName: 'Alice_Nguyen', aliases: [] })
    const carrier = episode(result, `ep_${h('mcp', 'entity', 'Alice_Nguyen')}`)
    expect(carrier).toMatchObject({
      summary: 'Alice_Nguyen: Works at Nimbus Labs', categories: ['person'], sourceType: 'note',
      details: 'Works at Nimbus Labs\nSpeaks Vietnamese and Français\nPrefers async standups\nand written agendas',
    })
    expect(metadataOf(carrier)).toEqual({
      mcp_type: 'entity', mcp_name: 'Alice_Nguyen', mcp_entityType: 'person', cairn_derived: `["${entity('Alice_Nguyen')}"]`,
      mcp_observations: '["Works at Nimbus Labs","Speaks Vietnamese and Français","Prefers async standups\\nand written agendas"]',
    })
    expect(episode(result, `ep_${h('mcp', 'entity', 'Nimbus Labs')}`)).toMatchObject({ details: 'Nimbus Labs', summary: 'Nimbus Labs' })
  })

  it('maps a relation to an edge evidenced by its carrier, reading entities first whatever the line order', () => {
    const edge = byId(result).get(`edge_${h('mcp', 'edge', 'Alice_Nguyen', 'mentors', 'Bob_Ito')}`)?.fields as Record<string, unknown>
    expect(edge).toMatchObject({ srcEntityID: entity('Alice_Nguyen'), dstEntityID: entity('Bob_Ito'), edgeType: 'mentors' })
    // Bob_Ito's entity line comes after the relation, yet his entity has his type.
    expect(byId(result).get(entity('Bob_Ito'))?.fields.type).toBe('person')
    const carrier = episode(result, (edge.evidenceEpisodeIDs as string[])[0] as string)
    expect(carrier).toMatchObject({ details: 'Alice_Nguyen mentors Bob_Ito', metadata: { mcp_type: 'relation', mcp_from: 'Alice_Nguyen', mcp_to: 'Bob_Ito', mcp_relationType: 'mentors' } })
  })

  it('creates an unknown entity for a dangling endpoint, with a warning naming the line', () => {
    expect(byId(result).get(entity('Carol'))?.fields).toMatchObject({ type: 'unknown', canonicalName: 'Carol' })
    expect(result.warnings).toEqual([{ code: 'DANGLING_RELATION', message: expect.any(String) as string, where: { file: 'mcp-memory/memory.jsonl', line: 6, path: '$' } }])
    const carrier = episode(result, `ep_${h('mcp', 'relation', 'Bob_Ito', 'reports_to', 'Carol')}`)
    expect(metadataOf(carrier)).toMatchObject({ mcp_since: '2025', cairn_derived: `["${entity('Carol')}"]` })
  })

  it('drops nothing', () => {
    expect(unmatchedLeaves(lines(), result.records)).toEqual([])
  })

  it('reads read_graph output the same as the file', () => {
    const untyped = (type: string): unknown[] => (lines() as { type: string }[]).filter((line) => line.type === type).map(({ type: _type, ...rest }) => rest)
    const [entities, relations] = [untyped('entity'), untyped('relation')]
    const graph = parseMcpMemory({ json: { entities, relations } }, fixedOptions())
    expect(graph.records.map((record) => record.id).sort()).toEqual(result.records.map((record) => record.id).sort())
  })

  it('keeps a line of another type whole, with a warning', () => {
    const other = parseMcpMemory({ files: [{ path: 'memory.jsonl', content: '{"type":"note","text":"hello"}\n' }] }, fixedOptions())
    expect(metadataOf(other.records[0]?.fields as Record<string, unknown>).mcp_raw).toBe('{"text":"hello","type":"note"}')
    expect(other.warnings[0]).toMatchObject({ code: 'UNKNOWN_LINE', where: { file: 'memory.jsonl', line: 1 } })
  })
})

describe('MCP memory refusals', () => {
  const parse = (content: string | Uint8Array) => parseMcpMemory({ files: [{ path: 'memory.jsonl', content }] }, fixedOptions())

  it.each([
    ['a truncated line', '{"type":"entity","name":"a","entityType":"x","observations":[]}\n{"type":"relation","from":"a"', 'BAD_JSON', 2],
    ['an entity without a name', '{"type":"entity","entityType":"x"}', 'MISSING_FIELD', 1],
    ['observations that are not strings', '\n{"type":"entity","name":"a","observations":[1]}', 'WRONG_TYPE', 2],
    ['a relation without relationType', '{"type":"relation","from":"a","to":"b"}', 'MISSING_FIELD', 1],
    ['a line that is not an object', '{"type":"entity","name":"a"}\n[1,2]', 'WRONG_TYPE', 2],
  ])('refuses %s, naming the line', (_name, content, code, line) => {
    const error = refusal(() => parse(content))
    expect(error.code).toBe(code)
    expect(error.where).toMatchObject({ file: 'memory.jsonl', line })
  })

  it('refuses a line longer than MAX_LINE_BYTES, naming it, and returns nothing', () => {
    const huge = `{"type":"entity","name":"a","entityType":"x","observations":[]}\n{"type":"entity","name":"b","observations":["${'x'.repeat(MAX_LINE_BYTES)}"]}\n`
    const error = refusal(() => parse(huge))
    expect(error).toMatchObject({ code: 'LINE_TOO_LONG', where: { file: 'memory.jsonl', line: 2 } })
  })
})

/**
 * Engram adapter beyond the fixture: input shapes, ids, clamping, skipped entries reported,
 * unusable ids kept, rendering synthesized engrams and PLUR episodes, and refusals.
 */
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { parseEngram, renderEngramYaml } from '../../../src/bundle/adapters/index.js'
import { readYaml } from '../../../src/bundle/adapters/yaml-subset.js'
import { NOW, fixedOptions, metadataOf, refusal } from './helpers.js'

const parse = (text: string) => parseEngram({ files: [{ path: 'engrams.yaml', content: text }] }, fixedOptions())
const sha = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 24)

describe('engram input shapes and ids', () => {
  it('accepts JSON, a single engram, a wrapped list and several documents', () => {
    const single = { id: 'ENG-X', status: 'active', type: 'behavioral', scope: 'global', statement: 's' }
    expect(parse(JSON.stringify(single)).records.map((record) => record.id)).toEqual(['ENG-X'])
    expect(parse(JSON.stringify({ engrams: [single] })).records.map((record) => record.id)).toEqual(['ENG-X'])
    expect(parseEngram({ json: single }, fixedOptions()).records.map((record) => record.id)).toEqual(['ENG-X'])
    expect(parse('---\n- id: A\n  statement: a\n---\n- id: B\n  statement: b\n').records.map((record) => record.id)).toEqual(['A', 'B'])
  })

  it('derives eng_ and epx_ ids from the text when there is none, folding exact repeats', () => {
    const result = parse('- statement: same text\n- statement: same text\n- statement: other\n')
    expect(result.records.map((record) => record.id)).toEqual([`eng_${sha('same text')}`, `eng_${sha('other')}`])
    const episodes = parse('episodes:\n  - timestamp: 2026-02-01T10:00:00Z\n    summary: did a thing\n')
    expect(episodes.records[0]?.id).toBe(`epx_${sha('2026-02-01T10:00:00Z\ndid a thing')}`)
  })

  it('clamps activation, ignores an out-of-range confidence, and keeps a non-string statement as JSON', () => {
    const result = parse('- id: A\n  statement: ok\n  activation: {retrieval_strength: 7, frequency: -2}\n  episodic: {confidence: 11}\n- id: B\n  statement: [not, text]\n')
    expect(result.records[0]?.fields).toMatchObject({ importance: 1, accessCount: 0, confidence: 0.7 })
    expect(metadataOf(result.records[0]?.fields as Record<string, unknown>).engram_activation).toBe('{"frequency":-2,"retrieval_strength":7}')
    expect(result.records[1]?.fields.details).toBe('["not","text"]')
  })

  it('reports what is neither an engram nor an episode instead of dropping it silently', () => {
    const result = parse("- statement: ''\n- 42\n- {title: nothing}\n- id: B\n  statement: b\n")
    expect(result.records.map((record) => record.id)).toEqual(['B'])
    expect(result.warnings.map((warning) => [warning.code, warning.where.path])).toEqual([['NOT_AN_ENGRAM', '$[1]'], ['NOT_AN_ENGRAM', '$[2]'], ['EMPTY_ENGRAM', '$[0]']])
    expect(parse('name: my pack\nengrams:\n  - id: A\n    statement: a\n').warnings.map((warning) => warning.code)).toEqual(['ROOT_KEYS_NOT_IMPORTED'])
  })

  it('replaces an id Cairn cannot use and keeps it as engram_id, which rendering restores', () => {
    const result = parse('- id: fact_42\n  statement: a claim\n')
    expect(result.records[0]?.id).toBe(`eng_${sha('a claim')}`)
    expect(metadataOf(result.records[0]?.fields as Record<string, unknown>).engram_id).toBe('fact_42')
    expect(renderEngramYaml(result.records.map((record) => record.fields))).toBe('- id: "fact_42"\n  statement: "a claim"\n')
  })

  it('reads created_at when there is no learned_at, and converts offsets to UTC', () => {
    const result = parse('- id: A\n  statement: s\n  created_at: "2026-04-01 09:30:00.5-03:30"\n  updated_at: 2026-04-02\n')
    expect(result.records[0]?.fields).toMatchObject({ eventTime: '2026-04-01T13:00:00Z', mentionTime: '2026-04-02T00:00:00Z', ingestionTime: NOW })
  })
})

describe('engram rendering', () => {
  it('synthesizes a valid engram from a plain episode', () => {
    const episode = {
      id: 'tx_1', details: 'Likes terse answers.', summary: 'Likes terse answers.', categories: ['Preferences'], eventTime: '2026-01-15T00:00:00Z',
      importance: 0.5, accessCount: 0, lifecycleState: 'COLD', pinned: true, metadata: {}, expirationDate: '2027-01-01T00:00:00Z',
    }
    const yaml = renderEngramYaml([episode])
    expect(readYaml(yaml, 'r.yaml')).toEqual([{
      id: 'tx_1', version: 2, status: 'dormant', type: 'terminological', scope: 'global', statement: 'Likes terse answers.', tags: ['Preferences'],
      pinned: true, activation: { frequency: 0, retrieval_strength: 0.5, storage_strength: 0.5 }, temporal: { learned_at: '2026-01-15', valid_until: '2027-01-01' },
      source: 'portable-memory',
    }])
  })

  it('renders PLUR episodes, wrapped lists and the empty list', () => {
    const episodes = parse('- id: EP-1\n  timestamp: 2026-02-01T10:00:00Z\n  summary: |\n    two\n    lines\n  agent: hermes\n  channel: slack\n').records.map((record) => record.fields)
    expect(renderEngramYaml(episodes, { kind: 'episodes' })).toBe('- id: "EP-1"\n  timestamp: "2026-02-01T10:00:00Z"\n  summary: |\n    two\n    lines\n  agent: "hermes"\n  channel: "slack"\n')
    expect(renderEngramYaml(episodes)).toBe('[]\n')
    expect(renderEngramYaml([], { wrapped: true })).toBe('engrams:\n  []\n')
  })
})

describe('engram refusals', () => {
  it('refuses malformed YAML and a scalar root, naming the file and line or path', () => {
    expect(refusal(() => parse('- id: A\n  statement: "open\n'))).toMatchObject({ code: 'BAD_YAML', where: { file: 'engrams.yaml', line: 2 } })
    expect(refusal(() => parse('just prose'))).toMatchObject({ code: 'WRONG_TYPE', where: { file: 'engrams.yaml', path: '$' } })
  })
})

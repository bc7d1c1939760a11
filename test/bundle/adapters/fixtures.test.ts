/**
 * The Portable Memory conformance fixtures, byte for byte (spec §11): transfer text parsed with
 * source chatgpt at 1700000000 s, and the engram files parsed in order (engrams, pack,
 * episodes), exported through an id-sorted store; rendering the engrams back to YAML.
 * The fixtures are read where they live, never copied.
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { parseEngram, parseTransfer, renderEngramYaml, type ImportedRecord } from '../../../src/bundle/adapters/index.js'
import { conformancePath } from '../../helpers/conformance.js'
import { NOW_MS, exportLines } from './helpers.js'

const fixture = (...parts: string[]): Buffer => readFileSync(conformancePath('fixtures', ...parts))

describe('transfer fixture', () => {
  const result = parseTransfer({ files: [{ path: 'sample-export.txt', content: fixture('transfer', 'sample-export.txt') }] }, { nowMs: NOW_MS, source: 'chatgpt' })

  it('reproduces expected-episode.jsonl byte for byte', () => {
    expect(Buffer.from(exportLines(result.records))).toEqual(fixture('transfer', 'expected-episode.jsonl'))
  })

  it('reports the repeated entry and the undated bracket instead of dropping them silently', () => {
    expect(result.warnings.map((warning) => [warning.code, warning.where.line])).toEqual([['UNDATED', 8], ['DUPLICATE_ENTRY', 20]])
  })
})

describe('engram fixture', () => {
  const parsed: ImportedRecord[] = []
  for (const name of ['engrams.yaml', 'pack.yaml', 'episodes.yaml']) {
    const result = parseEngram({ files: [{ path: name, content: fixture('engram', name) }] }, { nowMs: NOW_MS })
    expect(result.warnings).toEqual([])
    parsed.push(...result.records)
  }

  it('reproduces expected-episode.jsonl (7 lines) byte for byte', () => {
    const lines = exportLines(parsed)
    expect(lines.split('\n')).toHaveLength(8)
    expect(Buffer.from(lines)).toEqual(fixture('engram', 'expected-episode.jsonl'))
  })

  it('renders the engrams as expected-render.yaml byte for byte', () => {
    const engrams = parsed.filter((record) => (record.fields.metadata as Record<string, string>).engram_record === 'engram')
    expect(Buffer.from(renderEngramYaml(engrams.map((record) => record.fields)))).toEqual(fixture('engram', 'expected-render.yaml'))
  })

  it('reads its own rendering back to the same episodes', () => {
    const engrams = parsed.filter((record) => (record.fields.metadata as Record<string, string>).engram_record === 'engram')
    const rendered = renderEngramYaml(engrams.map((record) => record.fields))
    const again = parseEngram({ files: [{ path: 'rendered.yaml', content: rendered }] }, { nowMs: NOW_MS })
    expect(exportLines(again.records)).toBe(exportLines(engrams))
  })
})

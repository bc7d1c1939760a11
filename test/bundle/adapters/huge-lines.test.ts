/**
 * Every line-based source refuses a line over MAX_LINE_BYTES with the file and line named, and
 * returns nothing (no partial result), while whole-JSON sources read a long single-line file.
 */
import { describe, expect, it } from 'vitest'
import { ADAPTERS, MAX_LINE_BYTES, type SourceName } from '../../../src/bundle/adapters/index.js'
import { fixedOptions, refusal } from './helpers.js'

const long = 'x'.repeat(MAX_LINE_BYTES + 1)

const CASES: [SourceName, string, string][] = [
  ['transfer', 'paste.txt', `- [2026-01-01] - fine\n- ${long}\n`],
  ['claude-memory', 'MEMORY.md', `# Index\n\n${long}\n`],
  ['engram', 'engrams.yaml', `- id: A\n  statement: fine\n- id: B\n  statement: ${long}\n`],
  ['mcp-memory', 'memory.jsonl', `{"type":"entity","name":"a","entityType":"x","observations":[]}\n{"type":"entity","name":"${long}"}\n`],
  ['oams', 'memories.jsonl', `{"id":"a","namespace":"n","content":"c","confidence":1,"created_at":"2026-01-01T00:00:00Z"}\n{"id":"${long}"}\n`],
  ['openmemory', 'memories.jsonl', `{"id":"a","content":"fine"}\n{"id":"b","content":"${long}"}\n`],
]

describe('huge lines', () => {
  it.each(CASES)('%s refuses a line over MAX_LINE_BYTES, naming it', (source, file, content) => {
    const error = refusal(() => ADAPTERS[source].parse({ files: [{ path: file, content }] }, fixedOptions()))
    expect(error.code).toBe('LINE_TOO_LONG')
    expect(error.where).toMatchObject({ file, line: source === 'claude-memory' ? 3 : source === 'engram' ? 4 : 2 })
  })

  it('a whole-JSON source reads a long single-line file', () => {
    const memories = Array.from({ length: 20_000 }, (_, index) => ({ id: `m${index}`, memory: `memory number ${index} ${'y'.repeat(40)}` }))
    const text = JSON.stringify(memories)
    expect(text.length).toBeGreaterThan(MAX_LINE_BYTES)
    expect(ADAPTERS.mem0.parse({ files: [{ path: 'export.json', content: text }] }, fixedOptions()).records).toHaveLength(20_000)
  })
})

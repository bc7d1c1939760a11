/**
 * Claude memory files adapter: MEMORY.md and CLAUDE.md indexes, topic files with flat and nested
 * frontmatter, files without frontmatter, unusable names, empty files, input shapes, and the
 * raw frontmatter kept whenever the flat reader cannot hold it.
 */
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { parseClaudeMemory, type SourceFile } from '../../../src/bundle/adapters/index.js'
import { NOW, SAMPLES, episode, fixedOptions, metadataOf, refusal } from './helpers.js'

const h = (...parts: string[]): string => createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 24)
const FILES = ['MEMORY.md', 'CLAUDE.md', 'topics/user_role.md', 'topics/feedback_testing.md', 'topics/notes.md', 'topics/fact_checking.md', 'topics/empty.md']
const files = (): SourceFile[] => FILES.map((file) => ({ path: file, content: readFileSync(path.join(SAMPLES, 'claude-memory', file)) }))

describe('Claude memory files', () => {
  const result = parseClaudeMemory({ files: files() }, fixedOptions())

  it('maps the index files with claude_role=index and the first line as summary', () => {
    const memory = episode(result, 'MEMORY')
    expect(memory).toMatchObject({ summary: '# Memory index', sourceType: 'note', sourceID: 'MEMORY.md', categories: [], eventTime: NOW, ingestionTime: NOW })
    expect(memory.details).toBe(readFileSync(path.join(SAMPLES, 'claude-memory', 'MEMORY.md'), 'utf8').trim())
    expect(metadataOf(memory)).toEqual({ claude_path: 'MEMORY.md', claude_name: 'MEMORY', claude_role: 'index' })
    expect(metadataOf(episode(result, 'CLAUDE')).claude_role).toBe('index')
  })

  it('maps a topic file: name → id, description → summary, metadata.type → categories, nested keys kept', () => {
    const fields = episode(result, 'user-role')
    expect(fields).toMatchObject({
      summary: 'Senior data engineer; prefers plain SQL over ORMs', categories: ['user'], sourceID: 'topics/user_role.md',
      details: 'Senior data engineer at a logistics company (Rotterdam 🇳🇱).\nPrefers plain SQL and window functions over ORMs; reads EXPLAIN plans.',
    })
    expect(metadataOf(fields)).toEqual({
      claude_path: 'topics/user_role.md', claude_name: 'user-role', claude_type: 'user',
      claude_description: 'Senior data engineer; prefers plain SQL over ORMs', 'claude_metadata.created': '2026-01-04',
    })
  })

  it('unquotes a quoted value and keeps the raw frontmatter when a list or comment does not fit the flat reader', () => {
    const fields = episode(result, 'feedback_testing')
    expect(fields.summary).toBe('Integration tests must hit a real database, not mocks')
    const meta = metadataOf(fields)
    expect(meta.claude_type).toBe('feedback')
    expect(meta.claude_frontmatter).toContain('  - testing\n  - databases\n# added after the March incident')
  })

  it('uses the file stem for a file without frontmatter', () => {
    expect(episode(result, 'notes')).toMatchObject({ details: 'Loose note without frontmatter: the staging DB is reset every Sunday at 03:00 UTC.', metadata: { claude_path: 'topics/notes.md', claude_name: 'notes' } })
  })

  it('replaces a name that carries another kind\'s id prefix, and skips an empty file, with warnings', () => {
    const fields = episode(result, `ep_${h('claude', 'topics/fact_checking.md')}`)
    expect(metadataOf(fields).claude_name).toBe('fact_checking')
    expect(result.warnings.map((warning) => [warning.code, warning.where.file])).toEqual([['UNUSABLE_ID', 'topics/fact_checking.md'], ['EMPTY_FILE', 'topics/empty.md']])
    expect(result.records).toHaveLength(6)
  })

  it('drops nothing: every line of every non-empty file is in a field or metadata value', () => {
    const texts = result.records.flatMap((record) => [record.fields.details, ...Object.entries(record.fields.metadata as Record<string, string>).flat()]) as string[]
    const lines = files().flatMap((file) => Buffer.from(file.content).toString('utf8').split('\n')).map((line) => line.trim()).filter((line) => line !== '' && line !== '---')
    // A frontmatter line `key: "value"` must show its value; a parent line `key:` its key.
    const needle = (line: string): string => line.replace(/^([a-z_.]+):\s*("?)(.*?)\2$/, (_all, key: string, _quote, value: string) => value === '' ? key : value)
    expect(lines.filter((line) => !texts.some((text) => text.includes(needle(line))))).toEqual([])
  })

  it('keeps two CLAUDE.md files of different folders apart', () => {
    const both = parseClaudeMemory({ files: [{ path: 'CLAUDE.md', content: 'user rules' }, { path: 'project/CLAUDE.md', content: 'project rules' }] }, fixedOptions())
    expect(both.records.map((record) => record.fields.details)).toEqual(['user rules', 'project rules'])
    expect(metadataOf(both.records[1]?.fields as Record<string, unknown>).claude_duplicate_of).toBe('CLAUDE')
  })

  it('accepts [{path, content}], [path, content] pairs and {path: content}', () => {
    const expected = parseClaudeMemory({ files: [{ path: 'a.md', content: 'alpha' }] }, fixedOptions()).records
    expect(parseClaudeMemory({ json: [{ path: 'a.md', content: 'alpha' }] }, fixedOptions()).records).toEqual(expected)
    expect(parseClaudeMemory({ json: [['a.md', 'alpha']] }, fixedOptions()).records).toEqual(expected)
    expect(parseClaudeMemory({ json: { 'a.md': 'alpha' } }, fixedOptions()).records).toEqual(expected)
  })

  it('refuses an entry that is not a file, and invalid UTF-8, naming where', () => {
    expect(refusal(() => parseClaudeMemory({ json: [42], path: 'files.json' }, fixedOptions())).where).toEqual({ file: 'files.json', path: '$[0]' })
    const error = refusal(() => parseClaudeMemory({ files: [{ path: 'bad.md', content: new Uint8Array([0x61, 0x0a, 0x62, 0xff, 0x0a]) }] }, fixedOptions()))
    expect(error).toMatchObject({ code: 'BAD_UTF8', where: { file: 'bad.md', line: 2 } })
  })

  it('refuses a binary file (a NUL byte), naming the file and line, as bytes or as text', () => {
    const bytes = refusal(() => parseClaudeMemory({ files: [{ path: 'a.md', content: 'alpha' }, { path: 'bin.md', content: new Uint8Array([0x61, 0x0a, 0x62, 0x00, 0x00, 0x0a]) }] }, fixedOptions()))
    expect(bytes).toMatchObject({ code: 'BINARY_FILE', where: { file: 'bin.md', line: 2 } })
    expect(refusal(() => parseClaudeMemory({ files: [{ path: 'nul.md', content: '\0\0\0' }] }, fixedOptions()))).toMatchObject({ code: 'BINARY_FILE', where: { file: 'nul.md', line: 1 } })
  })
})

/**
 * Claude export adapter: conversations.json, projects.json and memories.json mapped field by
 * field, nothing dropped, and refusals that name the path.
 */
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { CHUNK_CODE_POINTS, chunkText } from '../../../src/bundle/adapters/claude-projects.js'
import { parseClaudeExport } from '../../../src/bundle/adapters/index.js'
import { NOW, episode, fixedOptions, metadataOf, refusal, sample, sampleJson, unmatchedLeaves } from './helpers.js'

const h = (...parts: string[]): string => createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 24)
const message = (uuid: string): string => `ep_${h('claude', 'message', uuid)}`

describe('Claude export conversations.json', () => {
  const result = parseClaudeExport({ files: [sample('claude-export/conversations.json')] }, fixedOptions())
  const conversation = '4b2a1c9e-0f3d-4a5b-8c7d-6e5f4a3b2c1d'
  const importId = `ep_${h('claude', 'conversation', conversation)}`

  it('maps a human message field by field', () => {
    const fields = episode(result, message('msg-0001'))
    expect(fields).toMatchObject({
      sourceType: 'chat', speaker: 'user', contextID: conversation, sourceID: importId, details: 'My starter peaks after ~6h at 24°C. When should I mix?',
      eventTime: '2025-03-01T08:00:01Z', mentionTime: '2025-03-01T08:00:01Z', ingestionTime: '2025-03-01T08:00:01Z',
    })
    expect(metadataOf(fields)).toMatchObject({
      claude_conversation_uuid: conversation, claude_conversation_name: 'Sourdough schedule', claude_message_uuid: 'msg-0001', claude_sender: 'human',
    })
    // Its content block carries timestamps and citations beyond the text, so it is kept whole.
    expect(JSON.parse(metadataOf(fields).claude_content as string)[0]).toMatchObject({ start_timestamp: '2025-03-01T08:00:01.000000Z', citations: [] })
  })

  it('takes the text blocks when `text` is empty, keeping thinking blocks in claude_content', () => {
    const fields = episode(result, message('msg-0002'))
    expect(fields).toMatchObject({ speaker: 'assistant', details: 'Feed at 22:00, mix at 04:00 — or retard in the fridge (4 °C) overnight.' })
    expect(metadataOf(fields).claude_content).toContain('"thinking":"User wants a schedule…"')
  })

  it('keeps attachments and files as canonical JSON', () => {
    const meta = metadataOf(episode(result, message('msg-0003')))
    expect(JSON.parse(meta.claude_attachments as string)).toEqual([{ extracted_content: '500 g flour\n350 g water\n100 g starter\n10 g salt', file_name: 'recipe.txt', file_size: 214, file_type: 'text/plain' }])
    expect(meta.claude_files).toBe('[{"file_name":"recipe.txt"}]')
    expect(meta.claude_content).toBeUndefined()
  })

  it('keeps each conversation on an import episode, falling back to its summary for a title', () => {
    expect(episode(result, importId)).toMatchObject({ sourceType: 'event', details: 'Sourdough schedule', eventTime: '2025-03-01T08:00:00Z', mentionTime: '2025-03-01T08:05:30Z', ingestionTime: NOW, contextID: conversation })
    const second = episode(result, `ep_${h('claude', 'conversation', '9d8c7b6a-5f4e-4d3c-2b1a-0f9e8d7c6b5a')}`)
    expect(second.details).toBe('Asked about Ω-notation')
    expect(metadataOf(second).claude_project).toBe('{"name":"Algorithms course","uuid":"proj-77"}')
    expect(metadataOf(episode(result, message('msg-0101'))).claude_index).toBe('0')
  })

  it('drops nothing', () => {
    expect(unmatchedLeaves(sampleJson('claude-export/conversations.json'), result.records)).toEqual([])
  })
})

describe('Claude export projects.json', () => {
  const result = parseClaudeExport({ files: [sample('claude-export/projects.json')] }, fixedOptions())
  const records = new Map(result.records.map((record) => [record.id, record]))
  const project = `ep_${h('claude', 'project', 'proj-77')}`
  const syllabus = `res_${h('claude', 'project-doc', 'proj-77', 'uuid', 'doc-0001')}`

  it('keeps each project on an import episode, its instructions on a note, both in its context', () => {
    expect(episode(result, project)).toMatchObject({
      sourceType: 'event', summary: 'Algorithms course', details: 'Notes and problem sets for the spring algorithms course.',
      contextID: 'proj-77', categories: ['claude_project'], eventTime: '2025-02-10T09:00:00Z', mentionTime: '2025-03-02T18:30:00Z',
    })
    const meta = metadataOf(episode(result, project))
    expect(meta).toMatchObject({ claude_uuid: 'proj-77', claude_creator: '{"full_name":"Ada L.","uuid":"acc-1111-2222"}' })
    expect(meta).toHaveProperty('claude_is_private')
    // What a resource has no field for (the documents' times as written) stays on the project.
    expect(JSON.parse(meta.claude_docs as string)[0]).toEqual({ created_at: '2025-02-10T09:05:00.000000+00:00', filename: 'syllabus.md', uuid: 'doc-0001' })
    expect(episode(result, `ep_${h('claude', 'project-instructions', 'proj-77')}`)).toMatchObject({
      sourceType: 'note', details: 'You are my teaching assistant. Answer with big-O first, then the proof sketch.', contextID: 'proj-77',
      categories: ['project_instructions'], sourceID: project,
    })
    // A project without a description or instructions: its name, and no instructions note.
    expect(episode(result, `ep_${h('claude', 'project', 'proj-88')}`).details).toBe('Garden')
    expect(records.has(`ep_${h('claude', 'project-instructions', 'proj-88')}`)).toBe(false)
  })

  it('maps each knowledge document to a resource and its content to chunks', () => {
    expect(records.get(syllabus)).toMatchObject({
      kind: 'resource',
      fields: {
        title: 'syllabus.md', mimeType: 'text/markdown', uri: 'claude-project:proj-77/doc-0001', created: '2025-02-10T09:05:00Z', contextID: 'proj-77',
        contentHash: createHash('sha256').update('# Syllabus\n\nWeek 1: asymptotics.\nWeek 2: divide and conquer.').digest('hex'),
      },
    })
    const chunk = result.records.find((record) => record.kind === 'chunk' && record.fields.resourceID === syllabus)
    expect(chunk?.fields).toMatchObject({ position: 0, text: '# Syllabus\n\nWeek 1: asymptotics.\nWeek 2: divide and conquer.', contextID: 'proj-77' })
    expect(records.get(`res_${h('claude', 'project-doc', 'proj-77', 'uuid', 'doc-0002')}`)?.fields.mimeType).toBe('text/csv')
  })

  it('declares each document whole: its resource and the parts its chunk ids are made of', () => {
    const grades = `res_${h('claude', 'project-doc', 'proj-77', 'uuid', 'doc-0002')}`
    expect(result.documents).toEqual([
      { resource: syllabus, chunkIdParts: ['claude', 'project-doc', syllabus] },
      { resource: grades, chunkIdParts: ['claude', 'project-doc', grades] },
    ])
    for (const document of result.documents ?? []) {
      const chunks = result.records.filter((record) => record.kind === 'chunk' && record.fields.resourceID === document.resource)
      expect(chunks.length).toBeGreaterThan(0)
      expect(chunks.map((chunk) => chunk.id)).toEqual(chunks.map((chunk) => `chk_${h(...document.chunkIdParts, String(chunk.fields.position))}`))
    }
  })

  it('drops nothing', () => {
    expect(unmatchedLeaves(sampleJson('claude-export/projects.json'), result.records)).toEqual([])
    expect(result.warnings).toEqual([])
  })

  it('cuts a long document into chunks at paragraph boundaries, in order, losing nothing', () => {
    const paragraph = (i: number): string => `Paragraph ${i}: ${'lorem ipsum '.repeat(60)}`
    const content = Array.from({ length: 40 }, (_, i) => paragraph(i)).join('\n\n')
    const long = { uuid: 'proj-long', name: 'Long', docs: [{ uuid: 'doc-long', filename: 'notes.txt', content, created_at: '2025-01-01T00:00:00Z' }] }
    const parsed = parseClaudeExport({ json: [long] }, fixedOptions())
    const chunks = parsed.records.filter((record) => record.kind === 'chunk').sort((a, b) => (a.fields.position as number) - (b.fields.position as number))
    expect(chunks.length).toBeGreaterThan(1)
    expect(chunks.map((chunk) => chunk.fields.text).join('')).toBe(content)
    for (const chunk of chunks) {
      expect(Array.from(chunk.fields.text as string).length).toBeLessThanOrEqual(CHUNK_CODE_POINTS)
      expect(chunk.fields.text as string).toMatch(/^Paragraph \d+:/)
    }
  })

  it('chunks any text into non-empty pieces within the limit that join back to it', () => {
    fc.assert(fc.property(fc.string({ unit: 'grapheme', maxLength: 300 }), fc.integer({ min: 1, max: 40 }), (text, limit) => {
      const pieces = chunkText(text, limit)
      expect(pieces.join('')).toBe(text)
      for (const piece of pieces) {
        expect(piece.length).toBeGreaterThan(0)
        expect(Array.from(piece).length).toBeLessThanOrEqual(limit)
      }
    }), { numRuns: 500 })
  })

  it('keeps copies of a document in two projects apart, each with its own chunks', () => {
    const copy = (project: string, content: string) => ({ uuid: project, name: project, docs: [{ uuid: 'd', filename: 'a.txt', content }] })
    const parsed = parseClaudeExport({ json: [copy('p1', 'one'), copy('p2', `two\n\n${'x'.repeat(9000)}`), { uuid: 'p3', name: 'p3', docs: [{ filename: 'b.txt', content: 'three' }, { uuid: '#0', filename: 'c.txt', content: 'four' }] }] }, fixedOptions())
    expect(parsed.warnings).toEqual([])
    const resources = parsed.records.filter((record) => record.kind === 'resource')
    expect(new Set(resources.map((record) => record.id)).size).toBe(4)
    for (const resource of resources) {
      const text = parsed.records.filter((record) => record.kind === 'chunk' && record.fields.resourceID === resource.id).map((record) => record.fields.text).join('')
      expect(createHash('sha256').update(text).digest('hex')).toBe(resource.fields.contentHash)
    }
  })

  it('takes an item with docs or prompt_template, even null, as a project; keeps whitespace-only instructions as written', () => {
    const parsed = parseClaudeExport({ json: [{ uuid: 'p', name: 'P', docs: null, prompt_template: '  \n' }] }, fixedOptions())
    const fields = episode(parsed, `ep_${h('claude', 'project', 'p')}`)
    expect(fields.categories).toEqual(['claude_project'])
    expect(metadataOf(fields).claude_prompt_template).toBe('  \n')
  })

  it('keeps a document key a resource has no field for on the project', () => {
    const parsed = parseClaudeExport({ json: [{ uuid: 'p', name: 'P', docs: [{ uuid: 'd', filename: 'a.txt', content: 'x', estimated_tokens: 3 }] }] }, fixedOptions())
    expect(JSON.parse(metadataOf(episode(parsed, `ep_${h('claude', 'project', 'p')}`)).claude_docs as string)).toEqual([{ estimated_tokens: 3, filename: 'a.txt', uuid: 'd' }])
    expect(parsed.warnings).toEqual([])
  })
})

describe('Claude export memories.json', () => {
  const result = parseClaudeExport({ files: [sample('claude-export/memories.json')] }, fixedOptions())
  const importId = `ep_${h('claude', 'memories', 'acc-1111-2222')}`

  it('maps the conversations memory and each project memory to notes', () => {
    const general = episode(result, `ep_${h('claude', 'memory', 'acc-1111-2222', 'conversations', '')}`)
    expect(general).toMatchObject({ sourceType: 'note', categories: ['conversations_memory'], sourceID: importId })
    expect(general.details).toContain('Dana is a backend engineer in Reykjavík.')
    const project = episode(result, `ep_${h('claude', 'memory', 'acc-1111-2222', 'project', 'proj-77')}`)
    expect(project).toMatchObject({ details: 'Course uses CLRS 4th edition; exams are open-book.', contextID: 'proj-77', categories: ['project_memory'] })
    expect(metadataOf(project)).toEqual({ claude_account_uuid: 'acc-1111-2222', claude_memory: 'project_memories', claude_project_uuid: 'proj-77' })
  })

  it('keeps the entry\'s other keys on an import episode and warns about the empty project memory', () => {
    expect(metadataOf(episode(result, importId)).claude_memory_files).toBe('[{"path":"/memories/diet.md","size":120}]')
    expect(result.warnings).toEqual([{ code: 'EMPTY_MEMORY', message: 'an empty memory; skipped', where: { file: 'claude-export/memories.json', path: '$[0].project_memories["proj-88"]' } }])
  })

  it('drops nothing', () => {
    expect(unmatchedLeaves(sampleJson('claude-export/memories.json'), result.records)).toEqual([])
  })
})

describe('Claude export refusals', () => {
  const parse = (json: unknown) => parseClaudeExport({ json, path: 'conversations.json' }, fixedOptions())

  it.each([
    ['a scalar root', 'nope', 'WRONG_TYPE', '$'],
    ['an entry of neither kind', [{ title: 'x' }], 'WRONG_TYPE', '$[0]'],
    ['a conversation without a uuid', [{ chat_messages: [] }], 'MISSING_FIELD', '$[0].uuid'],
    ['a message that is a string', [{ uuid: 'c', chat_messages: ['hi'] }], 'WRONG_TYPE', '$[0].chat_messages[0]'],
    ['a numeric sender', [{ uuid: 'c', chat_messages: [{ uuid: 'm', text: 'x', sender: 1 }] }], 'WRONG_TYPE', '$[0].chat_messages[0].sender'],
    ['project memories as a list', [{ conversations_memory: 'x', project_memories: ['a'] }], 'WRONG_TYPE', '$[0].project_memories'],
  ])('refuses %s, naming the path', (_name, json, code, path) => {
    const error = refusal(() => parse(json))
    expect(error.code).toBe(code)
    expect(error.where).toEqual({ file: 'conversations.json', path })
  })

  it('refuses truncated JSON, naming the line', () => {
    const error = refusal(() => parseClaudeExport({ files: [{ path: 'conversations.json', content: '[\n{"uuid": "c",\n"chat_messages": [\n' }] }, fixedOptions()))
    expect(error).toMatchObject({ code: 'BAD_JSON', where: { file: 'conversations.json', line: 4 } })
  })
})

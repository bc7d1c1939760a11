/**
 * Letta agent file adapter: the current `{agents, blocks}` form and the first flat agent schema;
 * core blocks, other blocks, messages, passages, import episodes, and refusals.
 */
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { parseLetta } from '../../../src/bundle/adapters/index.js'
import { NOW, byId, episode, fixedOptions, metadataOf, refusal, sample, sampleJson, unmatchedLeaves } from './helpers.js'

const h = (...parts: string[]): string => createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 24)

describe('Letta agent file (agents and blocks)', () => {
  const result = parseLetta({ files: [sample('letta/support-bot.af')] }, fixedOptions())
  const agentId = `ep_${h('letta', 'agent', 'support-bot')}`
  const contextId = `ctx_${h('letta', 'agent', 'support-bot')}`
  const fileId = `ep_${h('letta', 'file', 'support-bot')}`

  it('maps human and persona blocks to core blocks, with their other fields on the agent episode', () => {
    const records = byId(result)
    expect(records.get('human')?.fields).toEqual({ id: 'human', content: '\nName: Jonas Weiß\nPrefers German for phone calls.\n', charBudget: 5000, version: 1 })
    expect(records.get('persona')?.fields).toEqual({ id: 'persona', content: "I am Ada, the Ümlaut Shop's support agent. Friendly, brief.", charBudget: 2000, version: 1 })
    const meta = metadataOf(episode(result, agentId))
    expect(JSON.parse(meta.letta_block_persona as string)).toEqual({ description: 'Your persona.', id: 'block-1', label: 'persona', limit: 2000, metadata: { version: 3 }, read_only: true })
  })

  it('maps another block to a pinned episode in the agent context', () => {
    const fields = episode(result, `ep_${h('letta', 'support-bot', 'block', 'ticket_queue')}`)
    expect(fields).toMatchObject({ details: 'Open tickets: #4711 (shipping), #4712 (refund)', pinned: true, categories: ['ticket_queue'], contextID: contextId, sourceID: agentId })
    expect(metadataOf(fields)).toEqual({
      letta_record: 'block', letta_agent: 'support-bot', letta_label: 'ticket_queue', letta_limit: '1000', letta_read_only: '0',
      letta_description: 'Tickets in progress', letta_metadata: '{}', letta_id: 'block-2',
    })
  })

  it('maps messages with role, speaker, in-context flag and tool calls', () => {
    const chat = result.records.filter((record) => record.fields.sourceType === 'chat').map((record) => record.fields)
    expect(chat.map((fields) => [metadataOf(fields).letta_role, fields.speaker, metadataOf(fields).letta_in_context])).toEqual([
      ['system', undefined, '1'], ['user', 'user', '0'], ['assistant', 'assistant', '1'], ['tool', undefined, '1'],
    ])
    const user = chat[1] as Record<string, unknown>
    expect(user).toMatchObject({ details: 'Where is order #4711? Ich warte seit Montag.', eventTime: '2025-10-31T22:57:10Z', contextID: contextId, sourceID: agentId })
    expect(user.id).toBe(`ep_${h('letta', 'support-bot', 'message', '2025-10-31T22:57:10.000000+00:00', 'user', 'Where is order #4711? Ich warte seit Montag.')}`)
    expect(JSON.parse(metadataOf(chat[2] as Record<string, unknown>).letta_tool_calls as string)[0].function.name).toBe('send_message')
  })

  it('maps a passage to a note and reports its embedding as not imported', () => {
    const passage = result.records.find((record) => record.kind === 'episode' && metadataOf(record.fields).letta_record === 'passage')?.fields as Record<string, unknown>
    expect(passage).toMatchObject({ details: "Refunds over €500 need a manager's approval.", categories: ['policy'], eventTime: '2025-09-01T10:00:00Z', ingestionTime: NOW })
    expect(result.warnings.map((warning) => warning.code)).toEqual(['EMBEDDING_NOT_STORED', 'UNLISTED_BLOCKS'])
  })

  it('keeps the agent and the file on import episodes, and a block no agent lists under the file', () => {
    const agent = episode(result, agentId)
    expect(agent).toMatchObject({ sourceType: 'event', details: 'Answers order questions for the Ümlaut Shop', sourceID: fileId, contextID: contextId })
    expect(metadataOf(agent)).toMatchObject({ letta_system: '<base_instructions>\nYou are a helpful support agent.\n</base_instructions>', letta_timezone: 'Europe/Berlin', letta_tags: '["support","beta"]' })
    expect(metadataOf(episode(result, fileId))).toMatchObject({ letta_record: 'agent-file', letta_metadata: '{"exported_by":"letta 0.12.1"}' })
    expect(episode(result, `ep_${h('letta', '', 'block', 'faq')}`)).toMatchObject({ details: 'Shared FAQ draft', sourceID: fileId })
    expect(byId(result).get(contextId)?.fields).toEqual({ id: contextId, label: 'support-bot', archived: false, createdAt: NOW })
  })

  it('drops nothing but the passage embedding', () => {
    expect(unmatchedLeaves(sampleJson('letta/support-bot.af'), result.records)).toEqual([
      '$.agents[0].passages[0].embedding[0]', '$.agents[0].passages[0].embedding[1]', '$.agents[0].passages[0].embedding[2]',
    ])
  })
})

describe('Letta flat agent schema', () => {
  const result = parseLetta({ files: [sample('letta/research-buddy.af')] }, fixedOptions())

  it('reads core_memory, messages and in_context_message_indices', () => {
    expect(byId(result).get('human')?.fields.content).toBe('Name: Priya. Studies marine biology 🐙.')
    const chat = result.records.filter((record) => record.fields.sourceType === 'chat').map((record) => metadataOf(record.fields).letta_in_context)
    expect(chat).toEqual(['0', '1'])
    expect(episode(result, `ep_${h('letta', 'agent', 'Research Buddy')}`)).toMatchObject({ eventTime: '2025-02-10T12:00:00Z', mentionTime: '2025-02-12T08:30:00Z', details: 'Letta agent Research Buddy' })
    expect(unmatchedLeaves(sampleJson('letta/research-buddy.af'), result.records)).toEqual([])
  })

  it('keeps a second agent\'s differing core block on its import episode', () => {
    const both = parseLetta({ files: [sample('letta/support-bot.af'), sample('letta/research-buddy.af')] }, fixedOptions())
    expect(byId(both).get('human')?.fields.content).toBe('\nName: Jonas Weiß\nPrefers German for phone calls.\n')
    const kept = metadataOf(episode(both, `ep_${h('letta', 'agent', 'Research Buddy')}`)).letta_block_human as string
    expect(JSON.parse(kept).value).toBe('Name: Priya. Studies marine biology 🐙.')
    expect(both.warnings.filter((warning) => warning.code === 'CORE_BLOCK_TAKEN')).toHaveLength(2)
  })

  it('takes an assistant\'s send_message argument when its content has no text', () => {
    const result = parseLetta({ json: { agent_type: 'memgpt_agent', name: 'x', messages: [{ role: 'assistant', content: [], created_at: '2025-01-01T00:00:00Z',
      tool_calls: [{ function: { name: 'send_message', arguments: '{"message":"Hello there"}' } }] }] } }, fixedOptions())
    expect(result.records.find((record) => record.fields.sourceType === 'chat')?.fields.details).toBe('Hello there')
  })
})

describe('Letta refusals', () => {
  const parse = (json: unknown) => parseLetta({ json, path: 'agent.af' }, fixedOptions())

  it.each([
    ['a list root', [], 'WRONG_TYPE', '$'],
    ['an unknown object', { hello: 1 }, 'WRONG_TYPE', '$'],
    ['agents that are not a list', { agents: {} }, 'WRONG_TYPE', '$.agents'],
    ['a block without a label', { agents: [{ name: 'a', block_ids: ['b'] }], blocks: [{ id: 'b', value: 'v' }] }, 'MISSING_FIELD', '$.blocks[0].label'],
    ['a numeric block value', { agent_type: 'x', core_memory: [{ label: 'human', value: 5 }] }, 'WRONG_TYPE', '$.core_memory[0].value'],
    ['a message that is a string', { agent_type: 'x', messages: ['hi'] }, 'WRONG_TYPE', '$.messages[0]'],
  ])('refuses %s, naming the path', (_name, json, code, path) => {
    const error = refusal(() => parse(json))
    expect(error.code).toBe(code)
    expect(error.where).toEqual({ file: 'agent.af', path })
  })

  it('refuses truncated JSON, naming the line', () => {
    const error = refusal(() => parseLetta({ files: [{ path: 'agent.af', content: '{\n  "agents": [\n    {"name": "a",' }] }, fixedOptions()))
    expect(error).toMatchObject({ code: 'BAD_JSON', where: { file: 'agent.af', line: 3 } })
  })
})

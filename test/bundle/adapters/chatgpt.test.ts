/**
 * ChatGPT adapter: conversations.json mapped field by field, the current branch only (cycles and
 * dangling links refused with their node), turn order, the conversation's import episode, saved
 * memories, and refusals.
 */
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { parseChatGpt } from '../../../src/bundle/adapters/index.js'
import { NOW, episode, fixedOptions, leaves, metadataOf, refusal, sample, sampleJson, unmatchedLeaves } from './helpers.js'

const h = (...parts: string[]): string => createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 24)
const parse = (json: unknown) => parseChatGpt({ json, path: 'conversations.json' }, fixedOptions())

type Node = { id: string; parent: string | null; children: string[]; message: unknown }
function node(id: string, parent: string | null, role: string | null, text: string | null, time?: number, children: string[] = []): Node {
  const message = role === null ? null : { id, author: { role }, content: { content_type: 'text', parts: [text] }, ...(time === undefined ? {} : { create_time: time }) }
  return { id, parent, children, message }
}
function conversation(nodes: Node[], current: string | undefined, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { title: 't', conversation_id: 'c-1', mapping: Object.fromEntries(nodes.map((item) => [item.id, item])), ...(current === undefined ? {} : { current_node: current }), ...extra }
}

describe('ChatGPT conversations.json', () => {
  const result = parseChatGpt({ files: [sample('chatgpt/conversations.json')] }, fixedOptions())
  const conversationId = '6630f1a0-1111-2222-3333-444455556666'

  it('maps a user turn field by field', () => {
    const fields = episode(result, 'u-1')
    expect(fields).toMatchObject({
      sourceType: 'chat', sourceID: 'u-1', speaker: 'user', contextID: conversationId, actors: [],
      details: 'Plan 3 days in Kyōto for late May; I love temples and tea ceremonies.',
      eventTime: '2024-05-01T08:00:01Z', mentionTime: '2024-05-01T08:00:01Z', ingestionTime: '2024-05-01T08:00:01Z',
    })
    expect(metadataOf(fields)).toEqual({
      openai_conversation_id: conversationId, openai_conversation_title: 'Trip to Kyōto 🇯🇵', openai_message_id: 'u-1', openai_role: 'user',
      openai_create_time: '2024-05-01T08:00:01Z', openai_create_time_raw: '1714550401.5', openai_parent: 'sys-1',
      openai_metadata: '{"message_source":null,"request_id":"req-8f2","timestamp_":"absolute"}', openai_status: 'finished_successfully', openai_weight: '1',
    })
  })

  it('joins string parts with newlines and keeps the model and the update time', () => {
    expect(episode(result, 'a-2')).toMatchObject({ details: 'Day 1: Fushimi Inari at dawn.\nDay 2: Urasenke tea ceremony.\nDay 3: Arashiyama.', speaker: 'assistant' })
    expect(metadataOf(episode(result, 'a-2'))).toMatchObject({ openai_model: 'gpt-4o', openai_end_turn: '1' })
    expect(episode(result, 'a-4')).toMatchObject({ eventTime: '2024-05-01T08:01:55Z', mentionTime: '2024-05-01T08:03:20Z' })
  })

  it('keeps non-text parts, code content and the recipient', () => {
    expect(episode(result, 'u-2').details).toBe('Is this temple on the list? (photo attached)')
    expect(JSON.parse(metadataOf(episode(result, 'u-2')).openai_content as string).parts[0]).toMatchObject({ asset_pointer: 'file-service://file-AbC123' })
    expect(episode(result, 'a-3').details).toBe("print('Kinkaku-ji' in itinerary)")
    expect(metadataOf(episode(result, 'a-3'))).toMatchObject({ openai_recipient: 'python', openai_content: '{"content_type":"code","language":"python","text":"print(\'Kinkaku-ji\' in itinerary)"}' })
  })

  it('reads the current branch only, in time order, and counts what it leaves out', () => {
    const turns = result.records.filter((record) => record.fields.sourceType === 'chat' && record.fields.contextID === conversationId).map((record) => record.id)
    expect(turns).toEqual(['u-1', 'a-2', 'u-2', 'a-3', 'a-4'])
    expect(result.warnings).toEqual([{ code: 'MESSAGES_SKIPPED', message: 'messages not imported: 1 off the current branch, 2 system or tool', where: { file: 'chatgpt/conversations.json', path: '$[0]' } }])
  })

  it('keeps each conversation on an import episode', () => {
    const fields = episode(result, `ep_${h('openai', 'conversation', conversationId)}`)
    expect(fields).toMatchObject({ sourceType: 'event', details: 'Trip to Kyōto 🇯🇵', eventTime: '2024-05-01T08:00:00Z', mentionTime: '2024-05-01T10:00:00Z', ingestionTime: NOW })
    expect(metadataOf(fields)).toMatchObject({ openai_is_archived: '0', openai_safe_urls: '["https://www.urasenke.or.jp/"]', openai_current_node: 'a-4' })
  })

  it('drops nothing but the skipped turns, the default recipient and the integral times it stores formatted', () => {
    const input = sampleJson('chatgpt/conversations.json') as { mapping: Record<string, { message: { recipient?: string } | null }> }[]
    const skipped = new Set(['a-1', 'sys-1', 't-1', 'aaa-root', 'r'].flatMap((key) =>
      input.flatMap((conversation, index) => leaves(conversation.mapping[key], `$[${index}].mapping.${key}`).map((leaf) => leaf.path))))
    // A child list names nodes whose own parent link is kept (openai_parent), or skipped nodes.
    const unmatched = unmatchedLeaves(input, result.records).filter((at) => !skipped.has(at) && !/\.children\[\d+\]$/.test(at))
    const isDefaultRecipient = (at: string): boolean => at.endsWith('.message.recipient')
    expect(unmatched.filter(isDefaultRecipient).length).toBe(6)
    expect(unmatched.filter((at) => !isDefaultRecipient(at))).toEqual([
      '$[0].mapping.u-2.message.create_time', '$[0].mapping.a-3.message.create_time', '$[0].mapping.a-4.message.create_time',
      '$[1].mapping.q.message.create_time', '$[1].mapping.w.message.create_time',
    ])
    expect(metadataOf(episode(result, 'u-2')).openai_create_time).toBe('2024-05-01T08:01:40Z')
    expect(metadataOf(episode(result, 'u-2')).openai_parent).toBe('a-2')
    expect(unmatchedLeaves(input, result.records)).toContain('$[0].mapping.a-1.message.content.parts[0]')
  })
})

describe('ChatGPT branches and order', () => {
  it('sorts turns by create_time, then node key, with untimed turns last', () => {
    const result = parse(conversation([
      node('root', null, null, null, undefined, ['z']), node('z', 'root', 'user', 'later', 20, ['b']), node('b', 'z', 'assistant', 'untimed', undefined, ['a']),
      node('a', 'b', 'user', 'earlier', 10, ['c']), node('c', 'a', 'assistant', 'same time as a', 10),
    ], 'c'))
    expect(result.records.filter((record) => record.fields.sourceType === 'chat').map((record) => record.id)).toEqual(['a', 'c', 'z', 'b'])
  })

  it('reads the branch of the latest leaf when there is no current_node, and says so', () => {
    const result = parse(conversation([
      node('root', null, null, null, undefined, ['q']), node('q', 'root', 'user', 'question', 1, ['x', 'y']),
      node('x', 'q', 'assistant', 'old answer', 2), node('y', 'q', 'assistant', 'new answer', 3),
    ], undefined))
    expect(result.records.filter((record) => record.fields.sourceType === 'chat').map((record) => record.id)).toEqual(['q', 'y'])
    expect(result.warnings.map((warning) => warning.code)).toEqual(['NO_CURRENT_NODE', 'MESSAGES_SKIPPED'])
  })

  it('refuses a mapping whose parent links form a cycle, naming the node', () => {
    const error = refusal(() => parse([conversation([node('a', 'b', 'user', 'x', 1), node('b', 'a', 'assistant', 'y', 2)], 'a')]))
    expect(error.code).toBe('CYCLE')
    expect(error.where).toEqual({ file: 'conversations.json', path: '$[0].mapping.b.parent' })
  })

  it('refuses a parent or current_node that is not in the mapping', () => {
    expect(refusal(() => parse([conversation([node('a', 'ghost', 'user', 'x', 1)], 'a')])).where).toEqual({ file: 'conversations.json', path: '$[0].mapping.a.parent' })
    expect(refusal(() => parse([conversation([node('a', null, 'user', 'x', 1)], 'nope')])).where).toEqual({ file: 'conversations.json', path: '$[0].current_node' })
  })

  it('accepts one conversation or {conversations: [...]}', () => {
    const one = conversation([node('a', null, 'user', 'hi', 1)], 'a')
    expect(parse(one).records.map((record) => record.id)).toContain('a')
    expect(parse({ conversations: [one] }).records.map((record) => record.id)).toContain('a')
  })
})

describe('ChatGPT saved memories', () => {
  it('maps strings and objects to notes with injected random ids', () => {
    const result = parseChatGpt({ files: [sample('chatgpt/memories.json')] }, fixedOptions())
    expect(episode(result, 'ep_0000000000000001')).toMatchObject({ details: 'Prefers metric units.', sourceType: 'note', metadata: { openai_source: 'memory' } })
    expect(metadataOf(episode(result, 'mem-2'))).toEqual({ openai_source: 'memory', openai_memory_id: 'mem-2', openai_created_at: '2024-05-01' })
    expect(unmatchedLeaves(sampleJson('chatgpt/memories.json'), result.records)).toEqual([])
  })
})

describe('ChatGPT refusals', () => {
  it.each([
    ['a mapping node that is not an object', [{ mapping: { a: 5 }, current_node: 'a' }], '$[0].mapping.a'],
    ['a numeric role', [conversation([{ id: 'a', parent: null, children: [], message: { author: { role: 1 }, content: { parts: ['x'] } } }], 'a')], '$[0].mapping.a.message.author.role'],
    ['a string create_time', [conversation([{ id: 'a', parent: null, children: [], message: { author: { role: 'user' }, create_time: 'noon', content: { parts: ['x'] } } }], 'a')], '$[0].mapping.a.message.create_time'],
    ['a saved memory that is a number', [3], '$[0]'],
  ])('refuses %s, naming the path', (_name, json, path) => {
    const error = refusal(() => parse(json))
    expect(error.code).toBe('WRONG_TYPE')
    expect(error.where).toEqual({ file: 'conversations.json', path })
  })

  it('refuses truncated JSON, naming the line', () => {
    const error = refusal(() => parseChatGpt({ files: [{ path: 'conversations.json', content: '[{"title": "a",\n "mapping": {' }] }, fixedOptions()))
    expect(error).toMatchObject({ code: 'BAD_JSON', where: { file: 'conversations.json', line: 2 } })
  })
})

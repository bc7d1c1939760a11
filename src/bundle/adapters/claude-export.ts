/**
 * Claude data export adapter (claude.ai Settings → Privacy → Export data): `conversations.json`
 * → chat episodes, `memories.json` → note episodes, `projects.json` → project episodes and
 * document resources (claude-projects.ts). `users.json` (the account's name, email and phone)
 * is not memory and is not read. The spec has no Claude-export adapter; this
 * follows the PM adapters' conventions and docs/memory-model.md §1.4 and §5.
 *
 * Mapping:
 * - conversation → import episode `ep_` + H("claude", "conversation", uuid): name (else summary)
 *   → details; created_at/updated_at → event/mention time; contextID = uuid; every other key
 *   but `chat_messages` as `claude_<key>`.
 * - message → episode `ep_` + H("claude", "message", uuid): `text` (else the text blocks of
 *   `content` joined by "\n") → details; sender human → speaker user, assistant → assistant;
 *   created_at/updated_at → event and ingestion / mention time; contextID = the conversation
 *   uuid; sourceID = the conversation's import episode; metadata `claude_conversation_uuid`,
 *   `_conversation_name`, `_message_uuid`, `_sender`, `content` as canonical JSON when it holds
 *   more than the text (tool use, thinking, citations, timestamps), and every other key
 *   (attachments and files included, as canonical JSON) as `claude_<key>`.
 * - memories.json entry → `conversations_memory` as one episode (category
 *   `conversations_memory`) and each `project_memories[uuid]` as one (category
 *   `project_memory`, contextID = the project uuid), ids `ep_` + H("claude", "memory",
 *   account_uuid, "conversations" | "project", uuid); the entry's other keys go to an import
 *   episode `ep_` + H("claude", "memories", account_uuid).
 */
import { InputError } from '../../errors.js'
import { describeType } from '../../assert.js'
import { canonicalJson, type JsonValue } from '../../log/index.js'
import { addProject } from './claude-projects.js'
import { assertInput, hashId, ImportContext } from './import-context.js'
import { FieldReader, isObject, jsonDocuments, objectItems, type JsonObject } from './json-fields.js'
import { MetadataBuilder, metadataString } from './metadata.js'
import { firstCodePoints, looseTimestamp, pyStrip } from './text-values.js'
import type { AdapterInput, AdapterOptions, AdapterResult } from './types.js'

const SPEAKERS: Readonly<Record<string, string>> = { human: 'user', user: 'user', assistant: 'assistant' }
const MESSAGE_KEYS = new Set(['uuid', 'text', 'content', 'sender', 'created_at', 'updated_at'])
const MEMORY_KEYS = new Set(['conversations_memory', 'project_memories', 'account_uuid'])

function times(context: ImportContext, reader: FieldReader): { created?: string; updated?: string } {
  const out: { created?: string; updated?: string } = {}
  for (const [key, name] of [['created_at', 'created'], ['updated_at', 'updated']] as const) {
    const raw = reader.string(key)
    if (raw === undefined || raw === '') continue
    const value = looseTimestamp(raw)
    if (value === undefined) context.warn('BAD_TIME', `${JSON.stringify(raw.slice(0, 64))} is not a timestamp; kept in claude_${key}`, reader.where(key))
    else out[name] = value
  }
  return out
}

/** The text blocks of `content`, joined by "\n". */
function blockText(content: readonly JsonValue[]): string {
  return content.filter((block): block is JsonObject => isObject(block) && block.type === 'text' && typeof block.text === 'string')
    .map((block) => block.text as string).join('\n')
}

/** True when `content` says nothing beyond `text`: only text blocks with just type and text, adding up to it. */
function isJustText(content: readonly JsonValue[], text: string): boolean {
  return content.every((block) => isObject(block) && block.type === 'text' && Object.keys(block).every((key) => key === 'type' || key === 'text'))
    && blockText(content) === text
}

function addMessage(context: ImportContext, message: FieldReader, index: number, conversation: { uuid: string; name?: string; importId: string }): void {
  const where = message.where()
  const uuid = message.string('uuid')
  const content = message.array('content') ?? []
  const ownText = message.string('text')
  const text = ownText !== undefined && ownText !== '' ? ownText : blockText(content)
  const sender = message.string('sender')
  const { created, updated } = times(context, message)

  const metadata = new MetadataBuilder()
  metadata.put('claude_conversation_uuid', conversation.uuid)
  metadata.put('claude_conversation_name', conversation.name)
  metadata.put('claude_message_uuid', uuid)
  metadata.put('claude_sender', sender)
  for (const key of ['created_at', 'updated_at']) metadata.put(`claude_${key}`, message.raw(key))
  if (content.length > 0 && !isJustText(content, text)) metadata.set('claude_content', canonicalJson(content))
  if (ownText !== undefined && ownText !== '' && ownText !== text) metadata.set('claude_text', ownText)
  for (const [key, value] of Object.entries(message.object)) {
    const isEmptyList = Array.isArray(value) && value.length === 0
    if (!MESSAGE_KEYS.has(key) && !isEmptyList) metadata.set(`claude_${key}`, metadataString(value))
  }
  const built = metadata.toObject()
  if (pyStrip(text) === '' && !['claude_content', 'claude_attachments', 'claude_files'].some((key) => Object.hasOwn(built, key))) {
    context.skip('EMPTY_MESSAGE', 'a message with no text, content or attachments; skipped', where)
    return
  }
  const speaker = sender === undefined ? undefined : SPEAKERS[sender]
  context.add('episode', {
    id: hashId('ep_', 'claude', 'message', uuid ?? `${conversation.uuid}#${index}`), sourceType: 'chat',
    eventTime: created ?? context.now, mentionTime: updated ?? created ?? context.now, ingestionTime: created ?? context.now,
    summary: firstCodePoints(text), details: text, metadata: built, contextID: conversation.uuid, sourceID: conversation.importId,
    ...(speaker === undefined ? {} : { speaker }),
  }, where)
}

function addConversation(context: ImportContext, conversation: FieldReader): void {
  const uuid = conversation.string('uuid')
  if (uuid === undefined || uuid === '') throw new InputError('MISSING_FIELD', 'a conversation needs a uuid', conversation.where('uuid'))
  const name = conversation.string('name')
  const summary = conversation.string('summary')
  const messages = objectItems(conversation.array('chat_messages') ?? [], conversation.file, `${conversation.path}.chat_messages`)
  const { created, updated } = times(context, conversation)
  const metadata = new MetadataBuilder()
  for (const [key, value] of Object.entries(conversation.object)) if (key !== 'chat_messages') metadata.set(`claude_${key}`, metadataString(value))
  const importId = hashId('ep_', 'claude', 'conversation', uuid)
  const details = name || summary || 'Claude conversation'
  context.add('episode', {
    id: importId, sourceType: 'event', summary: firstCodePoints(details), details, metadata: metadata.toObject(), contextID: uuid,
    ...(created === undefined ? {} : { eventTime: created, mentionTime: updated ?? created }),
  }, conversation.where())
  messages.forEach((message, index) => addMessage(context, message, index, { uuid, importId, ...(name === undefined || name === '' ? {} : { name }) }))
}

function addMemoryEntry(context: ImportContext, entry: FieldReader): void {
  const account = entry.string('account_uuid') ?? ''
  const projects = entry.object_('project_memories') ?? {}
  let importId: string | undefined
  const others = Object.keys(entry.object).filter((key) => !MEMORY_KEYS.has(key) && entry.object[key] !== null)
  if (others.length > 0) {
    const metadata = new MetadataBuilder()
    for (const key of others) metadata.set(`claude_${key}`, metadataString(entry.object[key]))
    metadata.put('claude_account_uuid', account)
    importId = hashId('ep_', 'claude', 'memories', account)
    const details = 'Claude memories'
    context.add('episode', { id: importId, sourceType: 'event', summary: details, details, metadata: metadata.toObject() }, entry.where())
  }
  const add = (text: string, kind: 'conversations' | 'project', project: string | undefined, where: ReturnType<FieldReader['where']>): void => {
    if (pyStrip(text) === '') return context.skip('EMPTY_MEMORY', 'an empty memory; skipped', where)
    const metadata = new MetadataBuilder()
    metadata.put('claude_account_uuid', account)
    metadata.set('claude_memory', kind === 'conversations' ? 'conversations_memory' : 'project_memories')
    metadata.put('claude_project_uuid', project)
    context.add('episode', {
      id: hashId('ep_', 'claude', 'memory', account, kind, project ?? ''), sourceType: 'note', summary: firstCodePoints(text), details: text,
      metadata: metadata.toObject(), categories: [kind === 'conversations' ? 'conversations_memory' : 'project_memory'],
      ...(project === undefined ? {} : { contextID: project }),
      ...(importId === undefined ? {} : { sourceID: importId }),
    }, where)
  }
  const conversationsMemory = entry.string('conversations_memory')
  if (conversationsMemory !== undefined) add(conversationsMemory, 'conversations', undefined, entry.where('conversations_memory'))
  const projectReader = entry.child('project_memories')
  for (const project of Object.keys(projects)) {
    const text = projectReader.string(project)
    if (text !== undefined) add(text, 'project', project, projectReader.where(project))
  }
}

/**
 * Maps a Claude export's conversations.json, projects.json and memories.json (any of them, as
 * files or parsed values) to episodes, and project documents to resources and chunks.
 * @throws InputError BAD_JSON, WRONG_TYPE, MISSING_FIELD; LimitError
 */
export function parseClaudeExport(input: AdapterInput, options?: AdapterOptions): AdapterResult {
  assertInput(input)
  const context = new ImportContext('claude-export', 'claude_', options)
  for (const { value, file } of jsonDocuments(input, 'conversations.json')) {
    const list = Array.isArray(value) ? value : isObject(value) ? [value] : undefined
    if (list === undefined) throw new InputError('WRONG_TYPE', `expected a list of conversations, projects or memories, got ${describeType(value)}`, { file, path: '$' })
    const path = Array.isArray(value) ? '$' : ''
    const items = Array.isArray(value) ? objectItems(list, file, path) : [new FieldReader(value as JsonObject, file, '$')]
    for (const item of items) {
      // A project has docs or a prompt_template (null ones included) and no chat_messages.
      if (!item.has('chat_messages') && (Object.hasOwn(item.object, 'docs') || Object.hasOwn(item.object, 'prompt_template'))) addProject(context, item)
      else if (item.has('chat_messages') || item.has('uuid')) addConversation(context, item)
      else if (item.has('conversations_memory') || item.has('project_memories')) addMemoryEntry(context, item)
      else throw new InputError('WRONG_TYPE', 'neither a conversation (uuid, chat_messages), a project (docs, prompt_template) nor a memories entry (conversations_memory)', item.where())
    }
  }
  return context.result()
}

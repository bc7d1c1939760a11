/**
 * ChatGPT adapter (spec §10 "OpenAI"): the data export's `conversations.json` (a list, one
 * conversation, or `{conversations}`; newer exports split it into `conversations-000.json`,
 * `conversations-001.json`, …, read in that order) → chat episodes, one per visible user or assistant turn of
 * the conversation's current branch; a list of saved memories (strings or objects) → notes.
 *
 * Mapping (the PM reference's): text = the string parts joined by "\n", trimmed; turns sorted by
 * create_time (none last), then node key; id and sourceID = message.id (else `ep_` + 16 random
 * hex); contextID = conversation_id (else id); speaker = role; event/ingestion ← create_time,
 * mention ← update_time (else create_time, else now); metadata `openai_conversation_id`,
 * `_conversation_title`, `_message_id`, `_role`, `_model` (model_slug), `_recipient` (when not
 * "all"), `_create_time`.
 *
 * Beyond the reference: only the current branch is read (from `current_node` up the `parent`
 * links; without one, the branch of the latest leaf), so regenerated and edited-away turns are
 * not imported and are counted in a warning; a cycle or a dangling parent is an error naming the
 * node. What the reference drops is kept: the node's parent as `openai_parent`, the message's
 * other fields as `openai_<key>` (its
 * `metadata`, a richer `content` or `author` as canonical JSON, a fractional create_time as
 * `openai_create_time_raw`), and each conversation's own fields on an import episode
 * `ep_` + H("openai", "conversation", id).
 */
import { InputError } from '../../errors.js'
import { describeType } from '../../assert.js'
import { canonicalJson, compareCodePoints, type JsonValue } from '../../log/index.js'
import { formatTimestamp } from '../../projection/index.js'
import { assertInput, hashId, ImportContext, isUsableId, sha256Hex } from './import-context.js'
import { FieldReader, isObject, jsonDocuments, objectItems, pathKey, type JsonObject } from './json-fields.js'
import { MetadataBuilder, metadataString } from './metadata.js'
import { firstCodePoints, pyStrip } from './text-values.js'
import type { AdapterInput, AdapterOptions, AdapterResult } from './types.js'

const ROLES = new Set(['user', 'assistant'])
/** Message keys the mapping reads; the others go to `openai_<key>`. */
const MESSAGE_KEYS = new Set(['id', 'author', 'content', 'create_time', 'update_time', 'recipient', 'metadata'])

function epochTime(value: JsonValue | undefined): string | undefined {
  if (typeof value !== 'number' && typeof value !== 'bigint') return undefined
  try {
    return formatTimestamp(Number(value) * 1000)
  } catch {
    return undefined
  }
}

function messageText(content: JsonObject): string {
  const parts = content.parts
  if (Array.isArray(parts)) return pyStrip(parts.filter((part): part is string => typeof part === 'string').join('\n'))
  return typeof content.text === 'string' ? pyStrip(content.text) : ''
}

/** The node keys of the current branch, leaf first. @throws InputError CYCLE, BAD_REFERENCE */
function currentBranch(context: ImportContext, conversation: FieldReader, mapping: Record<string, FieldReader>): string[] {
  let key = conversation.string('current_node')
  if (key !== undefined && !Object.hasOwn(mapping, key)) {
    throw new InputError('BAD_REFERENCE', `current_node ${JSON.stringify(key.slice(0, 64))} is not a node of the mapping`, conversation.where('current_node'))
  }
  if (key === undefined) {
    // No current node: the branch that ends at the latest leaf (then the greatest key).
    const leaves = Object.entries(mapping).filter(([, node]) => (node.array('children') ?? []).length === 0)
    const time = (node: FieldReader): number => node.child('message').number('create_time') ?? -Infinity
    leaves.sort(([a, x], [b, y]) => time(x) - time(y) || compareCodePoints(a, b))
    key = leaves[leaves.length - 1]?.[0]
    if (key === undefined) return []
    context.warn('NO_CURRENT_NODE', `no current_node; reading the branch that ends at the latest leaf ${key}`, conversation.where())
  }
  const branch: string[] = []
  const seen = new Set<string>()
  for (let at: string | undefined = key; at !== undefined;) {
    const node = mapping[at] as FieldReader
    seen.add(at)
    branch.push(at)
    const parent = node.string('parent')
    if (parent !== undefined && !Object.hasOwn(mapping, parent)) {
      throw new InputError('BAD_REFERENCE', `parent ${JSON.stringify(parent.slice(0, 64))} is not a node of the mapping`, node.where('parent'))
    }
    // The link that leads back to a node already on the branch closes a cycle.
    if (parent !== undefined && seen.has(parent)) throw new InputError('CYCLE', 'the parent links of the mapping form a cycle', node.where('parent'))
    at = parent
  }
  return branch
}

function addMessage(context: ImportContext, message: FieldReader, parent: string | undefined, conversationId: string | undefined, title: string | undefined): void {
  const where = message.where()
  const author = message.child('author')
  const role = author.string('role') as string
  const content = message.object_('content') ?? {}
  const text = messageText(content)
  const meta = message.object_('metadata') ?? {}
  const created = epochTime(message.number('create_time'))
  const updated = epochTime(message.number('update_time'))
  const messageId = message.string('id')

  const metadata = new MetadataBuilder()
  metadata.put('openai_conversation_id', conversationId)
  metadata.put('openai_conversation_title', title)
  metadata.put('openai_message_id', messageId)
  metadata.put('openai_role', role)
  metadata.put('openai_model', meta.model_slug)
  const recipient = message.string('recipient')
  if (recipient !== 'all') metadata.put('openai_recipient', recipient)
  if (created !== undefined) metadata.set('openai_create_time', created)
  metadata.put('openai_parent', parent)
  const createTime = message.number('create_time')
  if (createTime !== undefined && !Number.isInteger(createTime)) metadata.set('openai_create_time_raw', canonicalJson(createTime))
  metadata.set('openai_update_time', metadataString(message.raw('update_time')))
  const metaRest = Object.keys(meta).filter((key) => key !== 'model_slug' && meta[key] !== null)
  if (metaRest.length > 0) metadata.set('openai_metadata', canonicalJson(meta))
  const authorRest = Object.keys(author.object).filter((key) => key !== 'role' && author.object[key] !== null && !(key === 'metadata' && canonicalJson(author.object[key]) === '{}'))
  if (authorRest.length > 0) metadata.set('openai_author', canonicalJson(author.object))
  const parts = content.parts
  const isPlainText = (content.content_type === 'text' || content.content_type === undefined) && Object.keys(content).every((key) => key === 'content_type' || key === 'parts')
    && Array.isArray(parts) && parts.every((part) => typeof part === 'string')
  if (!isPlainText) metadata.set('openai_content', canonicalJson(content))
  for (const [key, value] of Object.entries(message.object)) if (!MESSAGE_KEYS.has(key)) metadata.set(`openai_${key}`, metadataString(value))

  let id = messageId !== undefined && messageId !== '' ? messageId : context.randomEpisodeId()
  if (!isUsableId('episode', id)) {
    id = hashId('ep_', 'openai', id)
    context.warn('UNUSABLE_ID', `the message id cannot be a Cairn id; ${id} is used (the original is in openai_message_id)`, where)
  }
  context.add('episode', {
    id, eventTime: created ?? context.now, mentionTime: updated ?? created ?? context.now, ingestionTime: created ?? context.now,
    sourceType: 'chat', summary: firstCodePoints(text), details: text, metadata: metadata.toObject(), speaker: role,
    ...(messageId !== undefined && messageId !== '' ? { sourceID: messageId } : {}),
    ...(conversationId !== undefined && conversationId !== '' ? { contextID: conversationId } : {}),
  }, where)
}

function addConversation(context: ImportContext, conversation: FieldReader): void {
  const conversationId = conversation.string('conversation_id') ?? conversation.string('id')
  const title = conversation.string('title')
  const mappingObject = conversation.object_('mapping') as JsonObject
  const mapping: Record<string, FieldReader> = {}
  for (const [key, node] of Object.entries(mappingObject)) {
    const at = pathKey(conversation.where('mapping').path ?? '$', key)
    if (!isObject(node)) throw new InputError('WRONG_TYPE', `expected a node object, got ${describeType(node)}`, { ...conversation.where(), path: at })
    Object.defineProperty(mapping, key, { value: new FieldReader(node, conversation.file, at, conversation.line), enumerable: true })
  }
  const branch = new Set(currentBranch(context, conversation, mapping))
  const counts = { offBranch: 0, otherRole: 0, hidden: 0, empty: 0 }
  const rows: { time: number; key: string; message: FieldReader; parent: string | undefined }[] = []
  for (const [key, node] of Object.entries(mapping)) {
    if (!node.has('message')) continue
    const message = node.child('message')
    if (!branch.has(key)) {
      counts.offBranch++
      continue
    }
    const role = message.child('author').string('role')
    if (role === undefined || !ROLES.has(role)) counts.otherRole++
    else if (message.child('metadata').raw('is_visually_hidden_from_conversation') === true) counts.hidden++
    else if (messageText(message.object_('content') ?? {}) === '') counts.empty++
    else rows.push({ time: message.number('create_time') ?? Infinity, key, message, parent: node.string('parent') })
  }
  rows.sort((a, b) => (a.time === b.time ? compareCodePoints(a.key, b.key) : a.time < b.time ? -1 : 1))

  const metadata = new MetadataBuilder()
  for (const [key, value] of Object.entries(conversation.object)) if (key !== 'mapping') metadata.set(`openai_${key}`, metadataString(value))
  const key = conversationId ?? sha256Hex(canonicalJson({ ...conversation.object, mapping: null }))
  const details = title ?? 'ChatGPT conversation'
  const created = epochTime(conversation.raw('create_time'))
  context.add('episode', {
    id: hashId('ep_', 'openai', 'conversation', key), sourceType: 'event', summary: firstCodePoints(details), details, metadata: metadata.toObject(),
    ...(created === undefined ? {} : { eventTime: created, mentionTime: epochTime(conversation.raw('update_time')) ?? created }),
    ...(conversationId === undefined || conversationId === '' ? {} : { contextID: conversationId }),
  }, conversation.where())
  for (const { message, parent } of rows) addMessage(context, message, parent, conversationId, title)
  const skipped = [
    counts.offBranch > 0 ? `${counts.offBranch} off the current branch` : '',
    counts.otherRole > 0 ? `${counts.otherRole} system or tool` : '', counts.hidden > 0 ? `${counts.hidden} hidden` : '',
    counts.empty > 0 ? `${counts.empty} without text` : '',
  ].filter((part) => part !== '')
  if (skipped.length > 0) context.warn('MESSAGES_SKIPPED', `messages not imported: ${skipped.join(', ')}`, conversation.where())
}

/** A saved-memories list: strings, or objects with memory/content/text. */
function addSavedMemory(context: ImportContext, item: JsonValue, file: string, path: string): void {
  const where = { file, path }
  let text: string
  let memoryId: string | undefined
  const metadata = new MetadataBuilder()
  metadata.set('openai_source', 'memory')
  if (typeof item === 'string') text = item
  else if (isObject(item)) {
    const reader = new FieldReader(item, file, path)
    const textKey = (['memory', 'content', 'text'] as const).find((key) => typeof item[key] === 'string')
    text = textKey === undefined ? '' : (item[textKey] as string)
    memoryId = reader.string('id')
    metadata.put('openai_memory_id', memoryId)
    for (const [key, value] of Object.entries(item)) if (key !== textKey && key !== 'id') metadata.set(`openai_${key}`, metadataString(value))
  } else throw new InputError('WRONG_TYPE', `a saved memory is a string or an object, got ${describeType(item)}`, where)
  if (pyStrip(text) === '') {
    context.skip('EMPTY_MEMORY', 'a saved memory without text; skipped', where)
    return
  }
  let id = memoryId !== undefined && memoryId !== '' ? memoryId : context.randomEpisodeId()
  if (!isUsableId('episode', id)) id = hashId('ep_', 'openai', id)
  context.add('episode', {
    id, sourceType: 'note', summary: firstCodePoints(text), details: text, metadata: metadata.toObject(),
    ...(memoryId !== undefined && memoryId !== '' ? { sourceID: memoryId } : {}),
  }, where)
}

/**
 * Maps ChatGPT conversations (or saved memories) to episodes.
 * @throws InputError BAD_JSON, WRONG_TYPE, CYCLE, BAD_REFERENCE; LimitError
 */
export function parseChatGpt(input: AdapterInput, options?: AdapterOptions): AdapterResult {
  assertInput(input)
  const context = new ImportContext('chatgpt', 'openai_', options)
  for (const { value: root, file } of jsonDocuments(input, 'conversations.json')) {
    let conversations: FieldReader[] | undefined
    if (isObject(root) && root.mapping !== undefined) conversations = [new FieldReader(root, file, '$')]
    else if (isObject(root) && Array.isArray(root.conversations)) conversations = objectItems(root.conversations, file, '$.conversations')
    else if (Array.isArray(root) && root.some((item) => isObject(item) && item.mapping !== undefined)) conversations = objectItems(root, file, '$')
    if (conversations !== undefined) {
      for (const conversation of conversations) {
        if (conversation.object_('mapping') === undefined) throw new InputError('MISSING_FIELD', 'a conversation needs a mapping', conversation.where('mapping'))
        addConversation(context, conversation)
      }
      continue
    }
    const key = isObject(root) ? (['memories', 'results', 'data'] as const).find((name) => Array.isArray(root[name])) : undefined
    const list = Array.isArray(root) ? root : key !== undefined ? ((root as JsonObject)[key] as JsonValue[]) : undefined
    if (list === undefined) throw new InputError('WRONG_TYPE', 'expected conversations (with a mapping) or a list of saved memories', { file, path: '$' })
    list.forEach((item, index) => addSavedMemory(context, item, file, `${key === undefined ? '$' : `$.${key}`}[${index}]`))
  }
  return context.result()
}

/**
 * Letta agent file adapter (`.af`, github.com/letta-ai/agent-file): memory blocks → core blocks
 * `human` and `persona` (other labels → pinned episodes); the message history (recall memory)
 * and archival passages → episodes; the agent's configuration → an import episode. Both forms
 * are read: the current `{agents, blocks, tools, …}` file, and the first flat agent schema
 * (`core_memory`, `messages`, `in_context_message_indices`).
 *
 * Mapping (docs/memory-model.md §1.4, §5; H is memory-model's id hash; `name` is the agent's):
 * - agent → context `ctx_` + H("letta", "agent", name) labelled with the name, and an import
 *   episode `ep_` + H("letta", "agent", name): description → details; created_at/updated_at →
 *   event/mention time; every other key as `letta_<key>` (system prompt, llm_config, tools, …),
 *   and the fields of its human/persona blocks (all but the value) as `letta_block_<label>`.
 * - block human/persona → core {id: label, content: value, charBudget: limit}; any other label
 *   → a pinned episode `ep_` + H("letta", name, "block", label) with `letta_label`, the
 *   description and the rest as `letta_<key>`.
 * - message → episode `ep_` + H("letta", name, "message", created_at, role, text), sourceType
 *   chat: the text parts → details (an assistant's `send_message` argument when there are none);
 *   speaker = user or assistant; `letta_role`, `letta_in_context` "1"/"0", and the rest
 *   (tool calls and returns, ids, model) as `letta_<key>`.
 * - passage (`passages` or `archival_memory`) → note episode `ep_` + H("letta", name, "passage",
 *   created_at, text); tags → categories.
 * - the file's own keys (tools, groups, files, sources, …) → an import episode
 *   `ep_` + H("letta", "file", agent names…) that is the agents' sourceID; blocks no agent lists
 *   belong to it.
 * Every episode of an agent has its context as contextID and its import episode as sourceID.
 * Ids hang on names and content, not on the file's ids (`agent-0`, `message-3`), which each
 * export renumbers, so importing a later export of the same agent adds only what is new.
 */
import { InputError } from '../../errors.js'
import { canonicalJson, type JsonValue } from '../../log/index.js'
import { assertInput, hashId, ImportContext } from './import-context.js'
import { FieldReader, isObject, jsonDocuments, objectItems, type JsonObject } from './json-fields.js'
import { MetadataBuilder, metadataString } from './metadata.js'
import { firstCodePoints, looseTimestamp, pyStrip } from './text-values.js'
import type { AdapterInput, AdapterOptions, AdapterResult } from './types.js'

const CORE_LABELS = new Set(['human', 'persona'])
const MEMORY_KEYS = new Set(['messages', 'core_memory', 'memory_blocks', 'passages', 'archival_memory'])
const SPEAKERS = new Set(['user', 'assistant'])

interface Owner {
  readonly name: string
  readonly importId: string
  readonly contextId: string | undefined
  /** The owner's import episode metadata, which takes the human/persona block fields. */
  readonly metadata: MetadataBuilder
}

/** Sets `letta_<key>` for each key not in `skip`, leaving out nulls and empty lists (absent values). */
function rest(metadata: MetadataBuilder, object: JsonObject, skip: ReadonlySet<string> | readonly string[]): void {
  const skipped = skip instanceof Set ? skip : new Set(skip)
  for (const [key, value] of Object.entries(object)) {
    if (skipped.has(key) || value === null || (Array.isArray(value) && value.length === 0)) continue
    metadata.set(`letta_${key}`, metadataString(value))
  }
}

function time(reader: FieldReader, key: string): string | undefined {
  return looseTimestamp(reader.string(key))
}

function ownerFields(owner: Owner): Record<string, JsonValue> {
  return { sourceID: owner.importId, ...(owner.contextId === undefined ? {} : { contextID: owner.contextId }) }
}

function addBlock(context: ImportContext, block: FieldReader, owner: Owner): void {
  const label = block.string('label')
  if (label === undefined || label === '') throw new InputError('MISSING_FIELD', 'a memory block needs a label', block.where('label'))
  const value = block.string('value') ?? ''
  const limit = block.number('limit')
  const { value: _value, ...fields } = block.object
  if (CORE_LABELS.has(label)) {
    const held = context.get(label)
    if (held !== undefined && held.fields.content !== value) {
      // One human and one persona block per space: a second agent's differing block is kept whole on its import episode.
      owner.metadata.set(`letta_block_${label}`, canonicalJson(block.object))
      context.warn('CORE_BLOCK_TAKEN', `the ${label} block is already imported with other content; this one is kept in letta_block_${label}`, block.where())
      return
    }
    owner.metadata.set(`letta_block_${label}`, canonicalJson(fields))
    context.add('core', {
      id: label, content: value, ...(limit !== undefined && Number.isSafeInteger(limit) && limit >= 0 ? { charBudget: limit } : {}),
    }, block.where())
    return
  }
  const metadata = new MetadataBuilder()
  metadata.set('letta_record', 'block')
  metadata.put('letta_agent', owner.name)
  metadata.set('letta_label', label)
  rest(metadata, fields, ['label'])
  const created = time(block, 'created_at')
  context.add('episode', {
    id: hashId('ep_', 'letta', owner.name, 'block', label), sourceType: 'note', summary: firstCodePoints(value || label), details: value,
    metadata: metadata.toObject(), categories: [label], pinned: true, ...ownerFields(owner),
    ...(created === undefined ? {} : { eventTime: created, mentionTime: time(block, 'updated_at') ?? created }),
  }, block.where())
}

/** The text of a message: its text parts (or string content, or v1 `text`), else an assistant's send_message. */
function messageText(message: FieldReader): string {
  const content = message.raw('content')
  let text = typeof content === 'string' ? content
    : Array.isArray(content) ? content.filter((part): part is JsonObject => isObject(part) && typeof part.text === 'string').map((part) => part.text as string).join('\n')
      : message.string('text') ?? ''
  if (pyStrip(text) === '' && message.string('role') === 'assistant') {
    for (const call of message.array('tool_calls') ?? []) {
      const fn = isObject(call) && isObject(call.function) ? call.function : undefined
      if (fn?.name !== 'send_message' || typeof fn.arguments !== 'string') continue
      try {
        const args = JSON.parse(fn.arguments) as unknown
        if (isObject(args) && typeof args.message === 'string') text = args.message
      } catch {
        // Unparseable arguments stay in letta_tool_calls.
      }
    }
  }
  return text
}

/** True when `content` is only text parts with nothing else set. */
function isPlainContent(content: JsonValue | undefined): boolean {
  if (content === undefined || typeof content === 'string') return true
  return Array.isArray(content) && content.every((part) => isObject(part) && part.type === 'text'
    && Object.entries(part).every(([key, value]) => key === 'type' || key === 'text' || value === null))
}

function addMessage(context: ImportContext, message: FieldReader, owner: Owner, isInContext: boolean): void {
  const role = message.string('role') ?? ''
  const text = messageText(message)
  const created = time(message, 'created_at')
  const metadata = new MetadataBuilder()
  metadata.set('letta_record', 'message')
  metadata.put('letta_agent', owner.name)
  metadata.put('letta_role', role)
  metadata.set('letta_in_context', isInContext ? '1' : '0')
  if (!isPlainContent(message.raw('content'))) metadata.set('letta_content', canonicalJson(message.raw('content') as JsonValue))
  rest(metadata, message.object, ['role', 'content', 'text'])
  context.add('episode', {
    id: hashId('ep_', 'letta', owner.name, 'message', message.string('created_at') ?? '', role, text), sourceType: 'chat',
    summary: firstCodePoints(text), details: text, metadata: metadata.toObject(), ...ownerFields(owner),
    ...(SPEAKERS.has(role) ? { speaker: role } : {}),
    ...(created === undefined ? {} : { eventTime: created, ingestionTime: created, mentionTime: time(message, 'updated_at') ?? created }),
  }, message.where())
}

function addPassage(context: ImportContext, passage: FieldReader, owner: Owner): void {
  const text = passage.string('text') ?? passage.string('content') ?? ''
  const created = time(passage, 'created_at')
  const metadata = new MetadataBuilder()
  metadata.set('letta_record', 'passage')
  metadata.put('letta_agent', owner.name)
  rest(metadata, passage.object, ['text', 'tags', 'embedding'])
  if (passage.has('embedding')) context.warn('EMBEDDING_NOT_STORED', 'a passage embedding is derived data and is not imported', passage.where('embedding'))
  context.add('episode', {
    id: hashId('ep_', 'letta', owner.name, 'passage', passage.string('created_at') ?? '', text), sourceType: 'note',
    summary: firstCodePoints(text), details: text, metadata: metadata.toObject(), categories: passage.strings('tags') ?? [], ...ownerFields(owner),
    ...(created === undefined ? {} : { eventTime: created, mentionTime: created }),
  }, passage.where())
}

/** One agent: context, blocks, messages, passages, then its import episode (which collects the core block fields). */
function addAgent(context: ImportContext, agent: FieldReader, index: number, blocks: readonly FieldReader[], fileImportId: string | undefined): void {
  const name = agent.string('name') || agent.string('id') || `agent-${index}`
  const importId = hashId('ep_', 'letta', 'agent', name)
  const contextId = hashId('ctx_', 'letta', 'agent', name)
  const owner: Owner = { name, importId, contextId, metadata: new MetadataBuilder() }
  context.add('context', { id: contextId, label: name, createdAt: time(agent, 'created_at') ?? context.now }, agent.where())
  const inline = [...objectItems(agent.array('core_memory') ?? [], agent.file, `${agent.path}.core_memory`),
    ...objectItems(agent.array('memory_blocks') ?? [], agent.file, `${agent.path}.memory_blocks`)]
  for (const block of [...inline, ...blocks]) addBlock(context, block, owner)
  const messages = objectItems(agent.array('messages') ?? [], agent.file, `${agent.path}.messages`)
  const inContextIds = new Set(agent.strings('in_context_message_ids') ?? [])
  const inContextIndices = new Set((agent.array('in_context_message_indices') ?? []).filter((item) => typeof item === 'number'))
  messages.forEach((message, position) => {
    const id = message.string('id')
    addMessage(context, message, owner, (id !== undefined && inContextIds.has(id)) || inContextIndices.has(position))
  })
  for (const key of ['passages', 'archival_memory']) {
    for (const passage of objectItems(agent.array(key) ?? [], agent.file, `${agent.path}.${key}`)) addPassage(context, passage, owner)
  }
  const metadata = owner.metadata
  metadata.set('letta_record', 'agent')
  rest(metadata, agent.object, MEMORY_KEYS)
  const details = agent.string('description') || `Letta agent ${name}`
  const created = time(agent, 'created_at')
  context.add('episode', {
    id: importId, sourceType: 'event', summary: firstCodePoints(details), details, metadata: metadata.toObject(), contextID: contextId,
    ...(fileImportId === undefined ? {} : { sourceID: fileImportId }),
    ...(created === undefined ? {} : { eventTime: created, mentionTime: time(agent, 'updated_at') ?? created }),
  }, agent.where())
}

/** The current form: `{agents, blocks, …}`; blocks are matched to agents by `block_ids`. */
function addAgentFile(context: ImportContext, root: FieldReader): void {
  const agents = objectItems(root.array('agents') ?? [], root.file, '$.agents')
  const blocks = objectItems(root.array('blocks') ?? [], root.file, '$.blocks')
  const names = agents.map((agent, index) => agent.string('name') || agent.string('id') || `agent-${index}`)
  const fileImportId = hashId('ep_', 'letta', 'file', ...names)
  const used = new Set<FieldReader>()
  agents.forEach((agent, index) => {
    const ids = new Set(agent.strings('block_ids') ?? [])
    const own = blocks.filter((block) => ids.has(block.string('id') ?? ''))
    const missing = [...ids].filter((id) => !own.some((block) => block.string('id') === id))
    if (missing.length > 0) context.warn('MISSING_BLOCKS', `block_ids name blocks the file does not hold: ${missing.join(', ')}`, agent.where('block_ids'))
    own.forEach((block) => used.add(block))
    addAgent(context, agent, index, own, fileImportId)
  })
  const fileOwner: Owner = { name: '', importId: fileImportId, contextId: undefined, metadata: new MetadataBuilder() }
  const unlisted = blocks.filter((block) => !used.has(block))
  if (unlisted.length > 0) context.warn('UNLISTED_BLOCKS', `${unlisted.length} blocks no agent lists; imported under the file`, root.where('blocks'))
  for (const block of unlisted) addBlock(context, block, fileOwner)
  const metadata = fileOwner.metadata
  metadata.set('letta_record', 'agent-file')
  rest(metadata, root.object, ['agents', 'blocks'])
  const details = `Letta agent file: ${names.join(', ') || 'no agents'}`
  context.add('episode', { id: fileImportId, sourceType: 'event', summary: firstCodePoints(details), details, metadata: metadata.toObject() }, root.where())
}

/**
 * Maps Letta agent files to records.
 * @throws InputError BAD_JSON, WRONG_TYPE, MISSING_FIELD; LimitError
 */
export function parseLetta(input: AdapterInput, options?: AdapterOptions): AdapterResult {
  assertInput(input)
  const context = new ImportContext('letta', 'letta_', options)
  for (const { value, file } of jsonDocuments(input, 'agent.af')) {
    if (!isObject(value)) throw new InputError('WRONG_TYPE', 'an agent file is a JSON object', { file, path: '$' })
    const root = new FieldReader(value, file, '$')
    if (root.has('agents')) addAgentFile(context, root)
    else if (root.has('core_memory') || root.has('messages') || root.has('agent_type')) addAgent(context, root, 0, [], undefined)
    else throw new InputError('WRONG_TYPE', 'neither an agent file ({agents, blocks}) nor an agent (core_memory, messages)', { file, path: '$' })
  }
  return context.result()
}

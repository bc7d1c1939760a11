/**
 * How the memory store (seed 004) maps conversations and agent state onto ordinary Cairn
 * records, and back. Pure functions: ids, validation of a conversation, the fields of each
 * record, and decoding; cairn-memory-store.ts does the reads and writes.
 *
 * Records (metadata keys use the prefix `amp_`, for the seed's "Agent Memory Protocol", after
 * docs/memory-model.md §5; H is that page's id hash, §1.3):
 *   context  `ctx_` + H("amp", "session", sessionId, generation)   one per session
 *            label = sessionId; tags `amp:user:<userId>` (the listing index), `user:<userId>`
 *   episode  one per distinct message: `ep_` + H("amp", "message", contextID, message JSON, attempt)
 *            contextID; sourceType `chat`; speaker and actors = role; details = the text (the
 *            content itself when it is a string); tag `user:<userId>`; metadata amp_session,
 *            amp_message (canonical JSON of the message, without `content` when details holds
 *            it, which amp_contentInDetails = "1" says)
 *   episode  one per stored version ("revision"), random id: contextID; sourceType `chat`;
 *            details = the conversation's own `summary` member or '' (never message text, so a
 *            search finds each message once); tags `user:<userId>`, `amp:revision:<contextID>`;
 *            metadata amp_session, amp_user, amp_storedAt (ms), amp_summary (what listings
 *            show), amp_messages (canonical JSON array of the message episode ids, in order),
 *            amp_conversation (canonical JSON of the conversation without `messages`)
 *   episode  one per agent state key: `ep_` + H("amp", "agent-state", agentId, key, generation)
 *            sourceType `note`; details `Agent state <key>`; actors `agent:<agentId>`; tags `amp:agent-state`,
 *            `agent:<agentId>`; metadata amp_agent, amp_key, amp_value (canonical JSON)
 *
 * Invariant: ids are functions of their inputs (plus a generation or attempt number that skips
 * ids already spent by a deletion, since a deleted id never returns), so two replicas storing
 * the same session, message or state key write the same record and converge on merge.
 */
import { InputError, LimitError } from '../errors.js'
import { canonicalJson, MAX_BODY_BYTES, parseJson, type JsonValue } from '../log/index.js'
import { hashParts, type RecordView } from '../projection/index.js'
import type { ConversationContext, ConversationSummary, JsonObject } from './memory-store.js'
import { memberLabel, readStoreJson } from './store-json.js'

/** Room left in an event body for what surrounds a record's fields (op, salt, kind, id, defaults). */
const BODY_MARGIN_BYTES = 16 * 1024
/** A record whose fields serialize to more than this is refused before anything is written. */
export const MAX_RECORD_BYTES = MAX_BODY_BYTES - BODY_MARGIN_BYTES
/** Listing summaries: the PM adapters' derived-summary length. */
const SUMMARY_MAX_CODE_POINTS = 120

export const TAGS = {
  userIndex: (userId: string) => `amp:user:${userId}`,
  user: (userId: string) => `user:${userId}`,
  revision: (contextId: string) => `amp:revision:${contextId}`,
  agentState: 'amp:agent-state',
  agent: (agentId: string) => `agent:${agentId}`,
}

/** The tag change that makes a record's user tags (`user:…`, `amp:user:…`) exactly `wanted`; undefined when they are. */
export function userTagPatch(view: RecordView, wanted: readonly string[]): { add?: { tags: string[] }; remove?: { tags: string[] } } | undefined {
  const tags = Array.isArray(view.tags) ? view.tags.filter((tag): tag is string => typeof tag === 'string') : []
  const add = wanted.filter((tag) => !tags.includes(tag))
  const remove = tags.filter((tag) => (tag.startsWith('user:') || tag.startsWith('amp:user:')) && !wanted.includes(tag))
  if (add.length === 0 && remove.length === 0) return undefined
  return { ...(add.length > 0 ? { add: { tags: add } } : {}), ...(remove.length > 0 ? { remove: { tags: remove } } : {}) }
}

export const contextIdFor = (sessionId: string, generation: number) => `ctx_${hashParts('amp', 'session', sessionId, String(generation))}`
export const messageIdFor = (contextId: string, json: string, attempt: number) => `ep_${hashParts('amp', 'message', contextId, json, String(attempt))}`
export const agentStateIdFor = (agentId: string, key: string, generation: number) => `ep_${hashParts('amp', 'agent-state', agentId, key, String(generation))}`

export interface MessageInput {
  /** Canonical JSON of the whole message: its identity. */
  readonly json: string
  readonly role: string
  /** The searchable text: the content when it is a string, else the text parts of it. */
  readonly text: string
  /** Canonical JSON of what `details` does not hold. */
  readonly stored: string
  readonly isContentInDetails: boolean
}

export interface ConversationInput {
  readonly messages: MessageInput[]
  /** Canonical JSON of the conversation without `messages`. */
  readonly rest: string
  /** What listings show: the summary member, or the first message with text (first line, at most 120 code points). */
  readonly summary: string
  /** The conversation's own `summary` member, searchable on the revision; '' when absent. */
  readonly summaryMember: string
}

function firstLine(text: string): string {
  let out = ''
  let count = 0
  for (const character of text.trim()) {
    if (character === '\n' || character === '\r' || count === SUMMARY_MAX_CODE_POINTS) break
    out += character
    count++
  }
  return out
}

/** Text of a content value: a string, or the strings and `{ text }` blocks of an array. */
function textOf(content: JsonValue | undefined): string {
  if (typeof content === 'string') return content
  const parts = (Array.isArray(content) ? content : [content]).flatMap((part) => {
    if (typeof part === 'string') return [part]
    if (part !== null && typeof part === 'object' && !Array.isArray(part) && typeof part.text === 'string') return [part.text]
    return []
  })
  return parts.join('\n')
}

function bytesOf(text: string): number {
  return Buffer.byteLength(text, 'utf8')
}

/** Refuses fields that would not fit in one event body. @throws LimitError TOO_LARGE */
export function assertFits(fields: Record<string, JsonValue>, label: string): void {
  const size = bytesOf(canonicalJson(fields))
  if (size > MAX_RECORD_BYTES) throw new LimitError('TOO_LARGE', `${size} bytes of record, over ${MAX_RECORD_BYTES}`, { field: label })
}

/**
 * Validates a conversation and splits it into what the records hold.
 * @throws InputError WRONG_TYPE, MISSING_FIELD, EMPTY and the JSON codes of store-json.ts; LimitError TOO_DEEP, TOO_LARGE
 */
export function readConversation(value: unknown, label: string): ConversationInput {
  const conversation = readStoreJson(value, label)
  if (conversation === null || typeof conversation !== 'object' || Array.isArray(conversation)) {
    throw new InputError('WRONG_TYPE', 'expected a conversation object', { field: label })
  }
  if (!Object.hasOwn(conversation, 'messages')) throw new InputError('MISSING_FIELD', 'a conversation needs messages', { field: memberLabel(label, 'messages') })
  const list = conversation.messages
  if (!Array.isArray(list)) throw new InputError('WRONG_TYPE', 'expected an array of messages', { field: memberLabel(label, 'messages') })
  const messages = list.map((message, i) => readMessage(message, memberLabel(memberLabel(label, 'messages'), i)))
  const rest: JsonObject = {}
  for (const [key, member] of Object.entries(conversation)) if (key !== 'messages') Object.defineProperty(rest, key, { value: member, enumerable: true })
  const summaryMember = typeof rest.summary === 'string' ? rest.summary : ''
  const summary = firstLine(summaryMember) || firstLine(messages.find((message) => firstLine(message.text) !== '')?.text ?? '')
  return { messages, rest: canonicalJson(rest), summary, summaryMember }
}

function readMessage(message: JsonValue, label: string): MessageInput {
  if (message === null || typeof message !== 'object' || Array.isArray(message)) throw new InputError('WRONG_TYPE', 'expected a message object', { field: label })
  if (!Object.hasOwn(message, 'role')) throw new InputError('MISSING_FIELD', 'a message needs a role', { field: memberLabel(label, 'role') })
  const role = message.role
  if (typeof role !== 'string') throw new InputError('WRONG_TYPE', 'expected a string', { field: memberLabel(label, 'role') })
  if (role.length === 0) throw new InputError('EMPTY', 'must not be empty', { field: memberLabel(label, 'role') })
  const isContentInDetails = typeof message.content === 'string'
  const { content, ...others } = message
  const input = { json: canonicalJson(message), role, text: textOf(content), stored: isContentInDetails ? canonicalJson(others) : canonicalJson(message), isContentInDetails }
  assertFits(messageFields('ctx_', 'ep_', '', '', input), label)
  return input
}

/** The episode fields of one message (`remember` input without `kind`). */
export function messageFields(contextId: string, id: string, sessionId: string, userId: string, message: MessageInput): Record<string, JsonValue> {
  return {
    id, contextID: contextId, sourceType: 'chat', speaker: message.role, actors: [message.role], details: message.text, tags: [TAGS.user(userId)],
    metadata: { amp_session: sessionId, amp_message: message.stored, ...(message.isContentInDetails ? { amp_contentInDetails: '1' } : {}) },
  }
}

/** A message back from its episode, or undefined when the episode is not one (or was redacted). */
export function decodeMessage(view: RecordView): JsonObject | undefined {
  const metadata = view.metadata as Record<string, string> | undefined
  if (view.kind !== 'episode' || typeof metadata?.amp_message !== 'string') return undefined
  const message = parseJson(metadata.amp_message)
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return undefined
  if (metadata.amp_contentInDetails === '1') {
    if (typeof view.details !== 'string') return undefined
    Object.defineProperty(message, 'content', { value: view.details, enumerable: true, writable: true, configurable: true })
  }
  return message
}

export const isMessageRecord = (view: RecordView): boolean => view.kind === 'episode' && typeof (view.metadata as Record<string, unknown> | undefined)?.amp_message === 'string'

export interface Revision {
  readonly id: string
  readonly sessionId: string
  readonly userId: string
  readonly storedAtMs: number
  readonly messageIds: string[]
  /** Canonical JSON of the conversation without `messages`. */
  readonly rest: string
  /** What listings show. */
  readonly summary: string
}

/** The fields of a revision episode; refused when over the body budget. @throws LimitError TOO_LARGE */
export function revisionFields(contextId: string, sessionId: string, userId: string, storedAtMs: number, messageIds: readonly string[], conversation: ConversationInput): Record<string, JsonValue> {
  const fields: Record<string, JsonValue> = {
    contextID: contextId, sourceType: 'chat', details: conversation.summaryMember, tags: [TAGS.user(userId), TAGS.revision(contextId)],
    metadata: {
      amp_session: sessionId, amp_user: userId, amp_storedAt: String(storedAtMs), amp_summary: conversation.summary,
      amp_messages: canonicalJson([...messageIds]), amp_conversation: conversation.rest,
    },
  }
  assertFits(fields, 'conversation')
  return fields
}

/** A revision back from its episode, or undefined when the episode is not one. */
export function decodeRevision(view: RecordView): Revision | undefined {
  const metadata = view.metadata as Record<string, string> | undefined
  if (view.kind !== 'episode' || metadata === undefined) return undefined
  const { amp_session: sessionId, amp_user: userId, amp_storedAt: storedAt, amp_messages: messages, amp_conversation: rest, amp_summary: summary } = metadata
  if (typeof sessionId !== 'string' || typeof userId !== 'string' || typeof rest !== 'string' || typeof messages !== 'string' || typeof summary !== 'string') return undefined
  const storedAtMs = Number(storedAt)
  if (!Number.isSafeInteger(storedAtMs)) return undefined
  const messageIds = parseJson(messages)
  if (!Array.isArray(messageIds) || !messageIds.every((id): id is string => typeof id === 'string')) return undefined
  return { id: view.id, sessionId, userId, storedAtMs, messageIds, rest, summary }
}

/** The winning revision: the latest stored, ties broken by the greater id (the same on every replica). */
export function newestRevision(revisions: readonly Revision[]): Revision | undefined {
  let best: Revision | undefined
  for (const revision of revisions) {
    if (!best || revision.storedAtMs > best.storedAtMs || (revision.storedAtMs === best.storedAtMs && revision.id > best.id)) best = revision
  }
  return best
}

/** The conversation a revision and its messages make (messages deleted since are left out). */
export function assembleConversation(revision: Revision, messages: readonly (JsonObject | undefined)[]): ConversationContext {
  const rest = parseJson(revision.rest) as JsonObject
  const present = messages.filter((message): message is JsonObject => message !== undefined)
  Object.defineProperty(rest, 'messages', { value: present, enumerable: true, writable: true, configurable: true })
  return rest as unknown as ConversationContext
}

export function summaryOf(revision: Revision): ConversationSummary {
  return {
    sessionId: revision.sessionId, userId: revision.userId, lastUpdated: new Date(revision.storedAtMs).toISOString(),
    summary: revision.summary, messageCount: revision.messageIds.length,
  }
}

/** The episode fields of one agent state key. */
export function agentStateFields(id: string, agentId: string, key: string, json: string): Record<string, JsonValue> {
  const fields: Record<string, JsonValue> = {
    id, sourceType: 'note', actors: [TAGS.agent(agentId)], details: `Agent state ${key}`, tags: [TAGS.agentState, TAGS.agent(agentId)],
    metadata: { amp_agent: agentId, amp_key: key, amp_value: json },
  }
  assertFits(fields, 'value')
  return fields
}

/** The stored state value of an intact agent state record for (agentId, key), else undefined. */
export function agentStateJson(view: RecordView, agentId: string, key: string): string | undefined {
  const metadata = view.metadata as Record<string, string> | undefined
  if (view.kind !== 'episode' || metadata?.amp_agent !== agentId || metadata.amp_key !== key) return undefined
  return typeof metadata.amp_value === 'string' ? metadata.amp_value : undefined
}

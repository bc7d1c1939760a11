/**
 * The memory-store interface of seed 004 ("Agent Memory Protocol", `BaseMemoryStore`): the
 * contract an agent runtime codes against to keep conversation histories and agent state,
 * translated to TypeScript (camelCase, async, typed). `CairnMemoryStore`
 * (cairn-memory-store.ts) implements it on the Cairn engine, in memory and on disk.
 *
 * Seed method                                          → here
 *   store_conversation(session_id, user_id, conv)      → storeConversation(sessionId, userId, conversation)
 *   retrieve_conversation(session_id) → Optional       → retrieveConversation(sessionId) → undefined when absent
 *   delete_conversation(session_id) → bool             → deleteConversation(sessionId) → boolean
 *   list_conversations_for_user(user_id, limit=100,    → listConversationsForUser(userId, { limit = 100, offset = 0 })
 *     offset=0) → List[Dict]                              → ConversationSummary[]
 *   store_agent_state(agent_id, key, value)            → storeAgentState(agentId, key, value)
 *   retrieve_agent_state(agent_id, key) → Optional     → retrieveAgentState(agentId, key) → undefined when absent
 *
 * Invariant every implementation keeps: what `retrieveConversation` and `retrieveAgentState`
 * return is deep-equal to what was last stored (the JSON rules below), whatever the backend.
 *
 * JSON values (what "serializable" means here): null, booleans, finite numbers, strings without
 * lone surrogates, arrays without holes, plain objects; integers beyond 2^53 - 1 as `bigint`.
 * Object members that are `undefined` are dropped (as JSON.stringify drops them). Two
 * normalizations follow from canonical JSON having one form per value: -0 comes back as 0, and
 * a `bigint` within the safe range comes back as a number. A `number` that is an integer in
 * (2^53 - 1, 10^16) is refused (UNSAFE_INTEGER): its JSON text would read back as a bigint, so
 * the caller must say which one it means.
 */
import type { JsonObject, JsonValue } from '../log/index.js'

export type { JsonObject }

/** One message of a conversation. Any other JSON members (ids, tool calls, times…) are kept. */
export interface ConversationMessage {
  /** Who spoke: `user`, `assistant`, `system`, `tool`… Required, not empty. */
  role: string
  /** Text, or any JSON (content blocks, tool results). May be absent. */
  content?: JsonValue
  [member: string]: JsonValue | undefined
}

/**
 * What the seed's `ConversationContext` holds: "the full history of messages, metadata, and
 * state for a session". `messages` is required; `metadata` and `state` are the seed's other two
 * parts; any further top-level JSON members are kept too. A string `summary` member, when
 * present, is what listings show.
 */
export interface ConversationContext {
  messages: ConversationMessage[]
  metadata?: JsonObject
  state?: JsonValue
  [member: string]: JsonValue | ConversationMessage[] | undefined
}

/** One entry of `listConversationsForUser`: metadata only, never the messages (seed §3). */
export interface ConversationSummary {
  readonly sessionId: string
  readonly userId: string
  /** When the listed version was stored: RFC 3339 UTC with milliseconds. */
  readonly lastUpdated: string
  /** The first line (at most 120 code points) of the conversation's `summary` member, or else of its first message with text. */
  readonly summary: string
  /** Messages in the stored version. */
  readonly messageCount: number
}

export interface ListOptions {
  /** At most this many entries: 0…MAX_LIST_LIMIT, default DEFAULT_LIST_LIMIT. */
  readonly limit?: number
  /** Entries to skip first: a non-negative safe integer, default 0. */
  readonly offset?: number
}

/** The seed's default page size. */
export const DEFAULT_LIST_LIMIT = 100
export const MAX_LIST_LIMIT = 1000
/** Session, user and agent ids and state keys longer than this (in UTF-16 code units) are refused. */
export const MAX_NAME_LENGTH = 1024

export interface MemoryStore {
  /**
   * Stores or replaces a whole conversation: afterwards the session holds exactly
   * `conversation`, for `userId`.
   * @throws InputError (naming the argument) for a bad id or a value that is not JSON;
   *   LimitError TOO_LARGE, TOO_DEEP
   */
  storeConversation(sessionId: string, userId: string, conversation: ConversationContext): Promise<void>

  /** The conversation last stored for the session, or undefined. @throws InputError */
  retrieveConversation(sessionId: string): Promise<ConversationContext | undefined>

  /**
   * Deletes a conversation. As the seed specifies: true when it was deleted or did not exist,
   * false when the store could not carry the deletion out.
   * @throws InputError for a bad session id
   */
  deleteConversation(sessionId: string): Promise<boolean>

  /** A page of a user's conversations, as metadata. @throws InputError */
  listConversationsForUser(userId: string, options?: ListOptions): Promise<ConversationSummary[]>

  /** Stores one key of an agent's state, replacing the previous value. @throws InputError, LimitError */
  storeAgentState(agentId: string, key: string, value: JsonValue): Promise<void>

  /** One key of an agent's state, or undefined when never stored. @throws InputError */
  retrieveAgentState(agentId: string, key: string): Promise<JsonValue | undefined>
}

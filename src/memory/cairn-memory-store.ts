/**
 * CairnMemoryStore: the seed-004 `MemoryStore` (memory-store.ts) on the Cairn engine. Every
 * conversation and agent state is ordinary records of a `Memory` (layout in store-records.ts),
 * so it is signed, syncs to other replicas, exports in bundles and is erased by `forget` like
 * any other memory. In memory with `CairnMemoryStore.open()`, on disk with `open({ path })`.
 *
 * Why this mapping:
 * - One episode per message (speaker = role, details = the text): search finds the message that
 *   said something, scoped by `contextID` (the session) or the `user:<id>` tag. Its exact JSON
 *   rides in its metadata, so nothing is lost.
 * - Message ids are content hashes within the session, so storing a conversation again (what
 *   agents do after every turn) writes only the new messages and a new revision episode; the
 *   previous revision, and the messages no longer in the conversation, are forgotten: their
 *   content is erased from this store and from every replica the deletion reaches.
 * - A revision lists its messages in order and is written in one atomic batch with the new
 *   messages (sync delivers events causally), so every replica sees a store whole or not at all.
 * - The context id derives from the session id, so replicas storing one session share a record.
 *
 * Semantics:
 * - store replaces the whole conversation. Concurrent stores of one session on two replicas
 *   merge to the revision stored last (by the store's clock, which always moves past the
 *   revisions it has seen; ties by revision id). A message that either store removed stays
 *   removed (delete wins), so the merged conversation lacks it.
 * - delete forgets every record of the session. A session stored again after a deletion lives
 *   in a new context (the next generation: a deleted id never returns).
 * - list walks the `amp:user:<userId>` tag index of session contexts: entries are ordered by
 *   context id (a hash of the session id), the same on every replica and unchanged when a
 *   conversation is stored again, so pages do not shift under updates. Offset costs O(offset).
 * - agent state: one record per (agent, key), its value replaced in place (last writer wins on
 *   merge). Earlier values stay in that record's history until it is forgotten.
 *
 * Invariant: all writes of one store are serialized (one mutex), and each write validates its
 * arguments completely before the first record is written.
 */
import { assertInteger, assertOptions } from '../assert.js'
import { AuthError, InputError, StorageError } from '../errors.js'
import { canonicalJson, Mutex, parseJson, SystemClock, type Clock, type JsonValue } from '../log/index.js'
import type { RecordFilter, RecordInput, RecordView } from '../projection/index.js'
import { Memory } from './memory.js'
import type { MemoryOptions } from './memory-engine.js'
import { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, type ConversationContext, type ConversationSummary, type ListOptions, type MemoryStore } from './memory-store.js'
import { readName, readStoreJson } from './store-json.js'
import {
  agentStateFields, agentStateIdFor, agentStateJson, assembleConversation, contextIdFor, decodeMessage, decodeRevision, isMessageRecord,
  messageFields, messageIdFor, newestRevision, readConversation, revisionFields, summaryOf, TAGS, userTagPatch, type MessageInput, type Revision,
} from './store-records.js'

export interface CairnMemoryStoreOptions {
  /** Time source of revision times (`lastUpdated`); the system clock by default. */
  readonly clock?: Clock
}

/** Records read per page when walking an index. */
const PAGE = 500

/** An episode of the fields store-records.ts builds (checked again by remember, as any input). */
const episode = (fields: Record<string, JsonValue>): RecordInput<'episode'> => ({ kind: 'episode', ...fields }) as RecordInput<'episode'>
/** Tombstone reasons of records erased by deleteConversation and by replacement. */
const DELETE_REASON = 'conversation deleted', REPLACE_REASON = 'conversation replaced'

interface Resolved {
  readonly id: string
  readonly view?: RecordView // the live record at `id`; absent when `id` was never used
}

export class CairnMemoryStore implements MemoryStore {
  private readonly mutex = new Mutex()
  private readonly clock: Clock
  private isOwner = false

  /**
   * A store over an open memory. The caller keeps ownership: `close()` leaves it open.
   * @throws InputError WRONG_TYPE (memory, options.clock), UNKNOWN_FIELD
   */
  constructor(readonly memory: Memory, options: CairnMemoryStoreOptions = {}) {
    if (!(memory instanceof Memory)) throw new InputError('WRONG_TYPE', 'expected a Memory', { field: 'memory' })
    const raw = assertOptions(options, ['clock'], 'options')
    if (raw.clock !== undefined && (typeof raw.clock !== 'object' || raw.clock === null || typeof (raw.clock as Partial<Clock>).nowMs !== 'function')) {
      throw new InputError('WRONG_TYPE', 'a clock needs nowMs()', { field: 'options.clock' })
    }
    this.clock = (raw.clock as Clock | undefined) ?? new SystemClock()
  }

  /** Opens a memory (`Memory.open` options: no path = in memory) and a store over it, which `close()` closes. */
  static async open(options: MemoryOptions = {}): Promise<CairnMemoryStore> {
    const memory = await Memory.open(options)
    const store = new CairnMemoryStore(memory, options.clock ? { clock: options.clock } : {})
    store.isOwner = true
    return store
  }

  async close(): Promise<void> {
    if (this.isOwner) await this.memory.close()
  }

  /**
   * The first of idFor(0), idFor(1), … that holds an intact record, or that was never used. Ids
   * a deletion spent are skipped (as are ids that hold something else, such as a redacted skeleton).
   * `known` holds records already read, to spare a read each.
   */
  private async resolve(idFor: (n: number) => string, isIntact: (view: RecordView) => boolean, known?: ReadonlyMap<string, RecordView>): Promise<Resolved> {
    for (let n = 0; ; n++) {
      const id = idFor(n)
      const view = known?.get(id) ?? await this.memory.get(id)
      if (view !== undefined) {
        if (isIntact(view)) return { id, view }
      } else if (!(await this.memory.history(id)).some((entry) => entry.type === 'tombstone')) {
        return { id }
      }
    }
  }

  private sessionContext(sessionId: string): Promise<Resolved> {
    return this.resolve((n) => contextIdFor(sessionId, n), (view) => view.kind === 'context' && view.label === sessionId)
  }

  private async queryAll(filter: RecordFilter): Promise<RecordView[]> {
    const out: RecordView[] = []
    let cursor: string | undefined
    do {
      const page = await this.memory.query({ ...filter, limit: PAGE, ...(cursor !== undefined ? { cursor } : {}) })
      out.push(...page.records)
      cursor = page.cursor
    } while (cursor !== undefined)
    return out
  }

  private async revisionsOf(contextId: string): Promise<Revision[]> {
    const views = await this.queryAll({ kind: 'episode', tags: { all: [TAGS.revision(contextId)] } })
    return views.flatMap((view) => decodeRevision(view) ?? [])
  }

  /** Forgets a record unless it is already gone or redacted (a concurrent ingest may have done either). */
  private async forgetIfPresent(id: string, reason: string): Promise<void> {
    try {
      await this.memory.forget(id, { reason })
    } catch (error) {
      if (error instanceof InputError && ['FORGOTTEN', 'REDACTED', 'UNKNOWN_RECORD'].includes(error.code)) return
      throw error
    }
  }

  /** Makes a record's user tags exactly `wanted` (a conversation stored again for another user). */
  private async retag(view: RecordView, wanted: readonly string[]): Promise<void> {
    const patch = userTagPatch(view, wanted)
    if (patch) await this.memory.update(view.id, patch)
  }

  /**
   * Stores or replaces the conversation of a session (seed: store_conversation).
   * @throws InputError WRONG_TYPE, EMPTY, TOO_LONG, BAD_STRING, MISSING_FIELD, NOT_JSON,
   *   UNSAFE_INTEGER, UNKNOWN_FIELD (naming sessionId, userId or the conversation member);
   *   LimitError TOO_DEEP, TOO_LARGE (a message or the conversation would not fit in one event)
   */
  async storeConversation(sessionId: string, userId: string, conversation: ConversationContext): Promise<void> {
    const session = readName(sessionId, 'sessionId')
    const user = readName(userId, 'userId')
    const input = readConversation(conversation, 'conversation')
    await this.mutex.run(async () => {
      const context = await this.sessionContext(session)
      const existing = context.view ? await this.queryAll({ context: context.id, kind: 'episode' }) : []
      const newest = newestRevision(existing.flatMap((view) => decodeRevision(view) ?? []))
      const storedAtMs = Math.max(Math.floor(this.clock.nowMs()), newest === undefined ? 0 : newest.storedAtMs + 1)
      // Content-addressed ids: a message already stored in this session is reused. In a new
      // context no id can be taken yet, so nothing needs looking up.
      const messages = new Map<string, { resolved: Resolved; message: MessageInput }>()
      const known = new Map(existing.map((view) => [view.id, view]))
      for (const message of input.messages) {
        if (messages.has(message.json)) continue
        const resolved = context.view
          ? await this.resolve((n) => messageIdFor(context.id, message.json, n), isMessageRecord, known)
          : { id: messageIdFor(context.id, message.json, 0) }
        messages.set(message.json, { resolved, message })
      }
      const messageIds = input.messages.map((message) => (messages.get(message.json) as { resolved: Resolved }).resolved.id)
      const revision = revisionFields(context.id, session, user, storedAtMs, messageIds, input)
      // Records kept from before move to this user first; then what is new (the context of a new
      // session, new messages, the revision) is one atomic batch, so a store is complete or absent.
      if (context.view) await this.retag(context.view, [TAGS.userIndex(user), TAGS.user(user)])
      for (const { resolved } of messages.values()) if (resolved.view) await this.retag(resolved.view, [TAGS.user(user)])
      await this.memory.rememberMany([
        ...(context.view ? [] : [{ kind: 'context' as const, id: context.id, label: session, tags: [TAGS.userIndex(user), TAGS.user(user)] }]),
        ...[...messages.values()].flatMap(({ resolved, message }) =>
          resolved.view ? [] : [episode(messageFields(context.id, resolved.id, session, user, message))]),
        episode(revision),
      ])
      // Then erase what the new revision replaced: earlier revisions, dropped messages, leftovers.
      const keep = new Set(messageIds)
      for (const view of existing) {
        if (!keep.has(view.id) && (decodeRevision(view) !== undefined || isMessageRecord(view))) await this.forgetIfPresent(view.id, REPLACE_REASON)
      }
    })
  }

  /**
   * The conversation last stored for a session, or undefined (seed: retrieve_conversation).
   * @throws InputError WRONG_TYPE, EMPTY, TOO_LONG, BAD_STRING (sessionId)
   */
  async retrieveConversation(sessionId: string): Promise<ConversationContext | undefined> {
    const session = readName(sessionId, 'sessionId')
    const context = await this.sessionContext(session)
    if (!context.view) return undefined
    const revision = newestRevision(await this.revisionsOf(context.id))
    if (!revision) return undefined
    const views = new Map<string, RecordView | undefined>()
    for (const id of revision.messageIds) if (!views.has(id)) views.set(id, await this.memory.get(id))
    // Decoded once per occurrence, so a message that repeats is not one shared object.
    return assembleConversation(revision, revision.messageIds.map((id) => {
      const view = views.get(id)
      return view ? decodeMessage(view) : undefined
    }))
  }

  /**
   * Deletes a session's conversation: every record of it is forgotten, so its content is erased
   * here and wherever the deletion syncs to. As the seed specifies, returns true when the
   * conversation was deleted or did not exist, and false when the store refused the deletion
   * (StorageError, or AuthError when this replica may not delete); records forgotten before the
   * failure stay forgotten, and a later call finishes the job.
   * @throws InputError WRONG_TYPE, EMPTY, TOO_LONG, BAD_STRING (sessionId)
   */
  async deleteConversation(sessionId: string): Promise<boolean> {
    const session = readName(sessionId, 'sessionId')
    return this.mutex.run(async () => {
      const context = await this.sessionContext(session)
      if (!context.view) return true
      try {
        const records = await this.queryAll({ context: context.id, kind: 'episode' })
        const revisions = records.flatMap((view) => decodeRevision(view) ?? [])
        // Revisions first: once they are gone the conversation reads as absent, even if this is interrupted.
        const ids = new Set([
          ...revisions.map((revision) => revision.id),
          ...records.filter(isMessageRecord).map((view) => view.id),
          ...revisions.flatMap((revision) => revision.messageIds),
        ])
        for (const id of ids) await this.forgetIfPresent(id, DELETE_REASON)
        await this.forgetIfPresent(context.id, DELETE_REASON)
        return true
      } catch (error) {
        if (error instanceof StorageError || error instanceof AuthError) return false
        throw error
      }
    })
  }

  /**
   * A page of a user's conversations as metadata, ordered by context id (see the file header)
   * (seed: list_conversations_for_user).
   * @throws InputError WRONG_TYPE, EMPTY, TOO_LONG, BAD_STRING (userId); WRONG_TYPE,
   *   OUT_OF_RANGE, UNKNOWN_FIELD (options.limit, options.offset)
   */
  async listConversationsForUser(userId: string, options: ListOptions = {}): Promise<ConversationSummary[]> {
    const user = readName(userId, 'userId')
    const raw = assertOptions(options, ['limit', 'offset'], 'options')
    const limit = raw.limit === undefined ? DEFAULT_LIST_LIMIT : assertInteger(raw.limit, 'options.limit', 0, MAX_LIST_LIMIT)
    const offset = raw.offset === undefined ? 0 : assertInteger(raw.offset, 'options.offset', 0)
    const out: ConversationSummary[] = []
    if (limit === 0) return out
    let skipped = 0
    let cursor: string | undefined
    do {
      const page = await this.memory.query({ kind: 'context', tags: { all: [TAGS.userIndex(user)] }, limit: PAGE, ...(cursor !== undefined ? { cursor } : {}) })
      for (const context of page.records) {
        const revision = newestRevision(await this.revisionsOf(context.id))
        // A context whose latest revision belongs to another user was moved concurrently.
        if (!revision || revision.userId !== user || context.label !== revision.sessionId) continue
        if (skipped < offset) skipped++
        else if (out.push(summaryOf(revision)) === limit) return out
      }
      cursor = page.cursor
    } while (cursor !== undefined)
    return out
  }

  /**
   * Stores one key of an agent's state, replacing its value (seed: store_agent_state).
   * @throws InputError WRONG_TYPE, EMPTY, TOO_LONG, BAD_STRING (agentId, key), NOT_JSON,
   *   BAD_STRING, UNSAFE_INTEGER (value); LimitError TOO_DEEP, TOO_LARGE (value)
   */
  async storeAgentState(agentId: string, key: string, value: JsonValue): Promise<void> {
    const agent = readName(agentId, 'agentId')
    const name = readName(key, 'key')
    const json = canonicalJson(readStoreJson(value, 'value'))
    agentStateFields('ep_', agent, name, json)
    await this.mutex.run(async () => {
      const record = await this.agentStateRecord(agent, name)
      if (!record.view) await this.memory.remember(episode(agentStateFields(record.id, agent, name, json)))
      else if (agentStateJson(record.view, agent, name) !== json) await this.memory.update(record.id, { set: { metadata: { amp_value: json } } })
    })
  }

  /**
   * One key of an agent's state, or undefined when it was never stored (seed: retrieve_agent_state).
   * @throws InputError WRONG_TYPE, EMPTY, TOO_LONG, BAD_STRING (agentId, key)
   */
  async retrieveAgentState(agentId: string, key: string): Promise<JsonValue | undefined> {
    const agent = readName(agentId, 'agentId')
    const name = readName(key, 'key')
    const record = await this.agentStateRecord(agent, name)
    const json = record.view ? agentStateJson(record.view, agent, name) : undefined
    return json === undefined ? undefined : parseJson(json)
  }

  private agentStateRecord(agentId: string, key: string): Promise<Resolved> {
    return this.resolve((n) => agentStateIdFor(agentId, key, n), (view) => agentStateJson(view, agentId, key) !== undefined)
  }
}

/**
 * The seed-004 memory store on the Cairn engine: one behavioural suite run against an in-memory
 * store and an on-disk store (which is also closed and reopened), then replicas that sync.
 * Expected ids and orders are computed here with node:crypto, never with the code under test.
 */
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { CairnError, LimitError } from '../../src/errors.js'
import { ManualClock, type JsonValue } from '../../src/log/index.js'
import { CairnMemoryStore } from '../../src/memory/cairn-memory-store.js'
import { Memory } from '../../src/memory/index.js'
import type { ConversationContext } from '../../src/memory/memory-store.js'
import { badValues } from '../helpers/bad-inputs.js'
import { tempDir } from '../helpers/cli-home.js'
import { asyncRefusal as refusal } from '../helpers/error-code.js'

const START_MS = Date.UTC(2026, 0, 1, 12)

interface Harness {
  store: CairnMemoryStore
  readonly clock: ManualClock
  /** Closes and reopens an on-disk store (the same store in memory); returns the store to use next. */
  reopen(): Promise<CairnMemoryStore>
  close(): Promise<void>
}

const BACKENDS = [
  {
    name: 'in memory',
    isDurable: false,
    async open(): Promise<Harness> {
      const clock = new ManualClock(START_MS)
      const harness: Harness = {
        store: await CairnMemoryStore.open({ clock }), clock,
        reopen: async () => harness.store,
        close: () => harness.store.close(),
      }
      return harness
    },
  },
  {
    name: 'on disk',
    isDurable: true,
    async open(): Promise<Harness> {
      const clock = new ManualClock(START_MS)
      const path = await tempDir()
      const harness: Harness = {
        store: await CairnMemoryStore.open({ path, clock }), clock,
        async reopen() {
          await harness.store.close()
          harness.store = await CairnMemoryStore.open({ path, clock })
          return harness.store
        },
        close: () => harness.store.close(),
      }
      return harness
    },
  },
]

/** The listing order: context ids, `ctx_` + 24 hex of SHA-256 over ["amp","session",id,"0"]. */
function contextIdOf(sessionId: string, generation = 0): string {
  return `ctx_${createHash('sha256').update(JSON.stringify(['amp', 'session', sessionId, String(generation)])).digest('hex').slice(0, 24)}`
}

/** True when some event body still held in the log contains `word`. */
async function logHolds(memory: Memory, word: string): Promise<boolean> {
  return (await memory.events()).some((envelope) => envelope.body !== undefined && Buffer.from(envelope.body).includes(word))
}

const chat = (...texts: string[]): ConversationContext => ({ messages: texts.map((content, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content })) })

function rich(): ConversationContext {
  const protoMember = JSON.parse('{"__proto__": {"polluted": true}, "kept": 1}') as Record<string, JsonValue>
  return {
    messages: [
      { role: 'system', content: 'Tu es un assistant. 日本語 🎉 "quotes" \\ back\ttab\u0000nul' },
      { role: 'user', content: 'Bonjour — ça va? 👋🏽 capybara', timestamp: 1712345678901, id: 'm-1' },
      {
        role: 'assistant',
        content: [{ type: 'text', text: 'Oui! narwhal' }, { type: 'image', url: 'https://x.test/a.png', size: { w: 2n ** 64n } }],
        tool_calls: [{ id: 't1', args: { n: -(2n ** 70n), f: 0.1 + 0.2, e: 1e300, tiny: -5e-324, max: Number.MAX_SAFE_INTEGER } }],
      },
      { role: 'tool', content: null, result: { ok: true, list: [1, 'two', null, false, [], {}] }, extra: protoMember },
      { role: 'user' },
      { role: 'user', content: '' },
      { role: 'user', content: 'Bonjour — ça va? 👋🏽 capybara', timestamp: 1712345678901, id: 'm-1' },
    ],
    metadata: { topic: 'tests', nested: { deep: [[[{ a: -9007199254740991 }]]] }, big: 123456789012345678901234567890n },
    state: { step: 3, flags: ['a'], done: false },
    title: 'Mixed 🧪',
  }
}

describe.each(BACKENDS)('CairnMemoryStore $name', (backend) => {
  async function withStore(run: (harness: Harness) => Promise<void>): Promise<void> {
    const harness = await backend.open()
    try {
      await run(harness)
    } finally {
      await harness.close()
    }
  }

  it('round-trips a conversation exactly: unicode, nested data, big integers, extra members', () => withStore(async (harness) => {
    await harness.store.storeConversation('s-1', 'ada', rich())
    const store = await harness.reopen()
    const back = await store.retrieveConversation('s-1')
    expect(back).toEqual(rich())
    expect(typeof (back?.metadata?.big)).toBe('bigint')
    expect(Object.hasOwn(back?.messages[3]?.extra as object, '__proto__')).toBe(true)
    expect(back?.messages[1]).not.toBe(back?.messages[6])
    expect(await store.retrieveConversation('s-2')).toBeUndefined()
  }))

  it('keeps each message as a searchable episode of the session, with the role as speaker', () => withStore(async ({ store }) => {
    await store.storeConversation('s-1', 'ada', rich())
    const [hit, ...others] = await store.memory.search('capybara')
    expect(others).toEqual([])
    expect(hit?.record).toMatchObject({ kind: 'episode', speaker: 'user', contextID: contextIdOf('s-1'), tags: ['user:ada'] })
    expect((await store.memory.search('narwhal'))[0]?.record.speaker).toBe('assistant')
    expect((await store.memory.get(contextIdOf('s-1')))?.label).toBe('s-1')
  }))

  it('replaces the whole conversation when a session is stored again, erasing what was dropped', () => withStore(async (harness) => {
    const beta = { role: 'assistant', content: 'beta' }
    await harness.store.storeConversation('s-1', 'ada', { messages: [{ role: 'user', content: 'alpha zebrafish' }, beta], metadata: { v: 1 } })
    expect(await logHolds(harness.store.memory, 'zebrafish')).toBe(true)
    const betaBefore = (await harness.store.memory.search('beta'))[0]?.record.id
    harness.clock.advance(1000)
    const second = { messages: [beta, { role: 'user', content: 'gamma' }] }
    await harness.store.storeConversation('s-1', 'ada', second)
    const store = await harness.reopen()
    expect(await store.retrieveConversation('s-1')).toEqual(second)
    expect(await store.memory.search('zebrafish')).toEqual([])
    expect(await logHolds(store.memory, 'zebrafish')).toBe(false)
    // The message still in the conversation kept its record; only the new one and a revision were added.
    expect((await store.memory.search('beta'))[0]?.record.id).toBe(betaBefore)
    const records = await store.memory.query({ context: contextIdOf('s-1'), kind: 'episode' })
    expect(records.records).toHaveLength(3)
    expect(await store.listConversationsForUser('ada')).toMatchObject([{ sessionId: 's-1', messageCount: 2, lastUpdated: new Date(START_MS + 1000).toISOString() }])
  }))

  it('deletes a conversation for good: gone from retrieve, listing, search and the log', () => withStore(async (harness) => {
    await harness.store.storeConversation('s-1', 'ada', chat('the quokka smiles', 'indeed'))
    await harness.store.storeConversation('s-2', 'ada', chat('a different talk'))
    expect(await logHolds(harness.store.memory, 'quokka')).toBe(true)
    expect(await harness.store.deleteConversation('s-1')).toBe(true)
    const store = await harness.reopen()
    expect(await store.retrieveConversation('s-1')).toBeUndefined()
    expect((await store.listConversationsForUser('ada')).map((entry) => entry.sessionId)).toEqual(['s-2'])
    expect(await store.memory.search('quokka')).toEqual([])
    expect(await logHolds(store.memory, 'quokka')).toBe(false)
    expect(await store.memory.get(contextIdOf('s-1'))).toBeUndefined()
    // The seed: true when the item did not exist.
    expect(await store.deleteConversation('s-1')).toBe(true)
    expect(await store.deleteConversation('never-stored')).toBe(true)
    expect(await store.retrieveConversation('s-2')).toEqual(chat('a different talk'))
  }))

  it('stores a session again after deleting it, in a new context', () => withStore(async ({ store }) => {
    await store.storeConversation('s-1', 'ada', chat('first life'))
    await store.deleteConversation('s-1')
    await store.storeConversation('s-1', 'ada', chat('second life'))
    expect(await store.retrieveConversation('s-1')).toEqual(chat('second life'))
    expect((await store.listConversationsForUser('ada')).map((entry) => entry.sessionId)).toEqual(['s-1'])
    expect((await store.memory.search('life'))[0]?.record.contextID).toBe(contextIdOf('s-1', 1))
    expect(await store.memory.search('first')).toEqual([])
  }))

  it("lists a user's conversations a page at a time, in context-id order, apart from other users", () => withStore(async (harness) => {
    const sessions = ['s-a', 's-b', 's-c', 's-d', 's-e']
    for (const [i, session] of sessions.entries()) {
      harness.clock.set(START_MS + i * 1000)
      await harness.store.storeConversation(session, 'ada', { ...chat(`Topic ${session}\nmore lines`, 'answer'), ...(i === 0 ? { summary: 'Named talk' } : {}) })
    }
    await harness.store.storeConversation('b-1', 'bob', chat('bob one'))
    await harness.store.storeConversation('b-2', 'bob', chat('bob two'))
    const store = await harness.reopen()
    const order = [...sessions].sort((a, b) => (contextIdOf(a) < contextIdOf(b) ? -1 : 1))
    const all = await store.listConversationsForUser('ada')
    expect(all.map((entry) => entry.sessionId)).toEqual(order)
    expect(all.find((entry) => entry.sessionId === 's-c')).toEqual({
      sessionId: 's-c', userId: 'ada', lastUpdated: new Date(START_MS + 2000).toISOString(), summary: 'Topic s-c', messageCount: 2,
    })
    expect(all.find((entry) => entry.sessionId === 's-a')?.summary).toBe('Named talk')
    const pages = [0, 2, 4].map((offset) => store.listConversationsForUser('ada', { limit: 2, offset }))
    expect((await Promise.all(pages)).map((page) => page.map((entry) => entry.sessionId))).toEqual([order.slice(0, 2), order.slice(2, 4), order.slice(4)])
    expect(await store.listConversationsForUser('ada', { offset: 5 })).toEqual([])
    expect(await store.listConversationsForUser('ada', { limit: 0 })).toEqual([])
    expect((await store.listConversationsForUser('bob')).map((entry) => entry.sessionId).sort()).toEqual(['b-1', 'b-2'])
    expect(await store.listConversationsForUser('nobody')).toEqual([])
  }))

  it('moves a conversation to the user it was last stored for', () => withStore(async ({ store }) => {
    await store.storeConversation('s-1', 'ada', chat('the ocelot', 'yes'))
    await store.storeConversation('s-1', 'bob', chat('the ocelot', 'no'))
    expect(await store.listConversationsForUser('ada')).toEqual([])
    expect((await store.listConversationsForUser('bob')).map((entry) => entry.sessionId)).toEqual(['s-1'])
    expect([...((await store.memory.get(contextIdOf('s-1')))?.tags as string[])].sort()).toEqual(['amp:user:bob', 'user:bob'])
    expect(await store.memory.search('ocelot', { tags: ['user:ada'] })).toEqual([])
    expect(await store.memory.search('ocelot', { tags: ['user:bob'] })).toHaveLength(1)
  }))

  it('leaves out a message that was forgotten through the engine (delete wins)', () => withStore(async ({ store }) => {
    await store.storeConversation('s-1', 'ada', chat('keep this', 'drop the walrus', 'keep that'))
    const walrus = (await store.memory.search('walrus'))[0]?.record.id as string
    await store.memory.forget(walrus)
    const [keepThis, , keepThat] = chat('keep this', 'drop the walrus', 'keep that').messages
    expect(await store.retrieveConversation('s-1')).toEqual({ messages: [keepThis, keepThat] })
    // Storing it again brings the message back under a fresh id.
    await store.storeConversation('s-1', 'ada', chat('keep this', 'drop the walrus', 'keep that'))
    expect(await store.retrieveConversation('s-1')).toEqual(chat('keep this', 'drop the walrus', 'keep that'))
    expect((await store.memory.search('walrus'))[0]?.record.id).not.toBe(walrus)
  }))

  it('leaves out a redacted message, and still deletes the conversation', () => withStore(async ({ store }) => {
    await store.storeConversation('s-1', 'ada', chat('hello', 'the hidden tapir'))
    await store.memory.redact((await store.memory.search('tapir'))[0]?.record.id as string)
    expect(await store.retrieveConversation('s-1')).toEqual({ messages: chat('hello').messages })
    expect(await store.deleteConversation('s-1')).toBe(true)
    expect(await store.retrieveConversation('s-1')).toBeUndefined()
    expect(await store.memory.search('hello')).toEqual([])
  }))

  it('round-trips agent state per agent and key, and a store replaces the value', () => withStore(async (harness) => {
    const value = { plan: ['a', 'b'], depth: { x: [1.5, -2, null, true] }, big: -(2n ** 80n), name: 'Zoë ✨' }
    await harness.store.storeAgentState('agent-1', 'plan', value)
    await harness.store.storeAgentState('agent-1', 'nothing', null)
    await harness.store.storeAgentState('a:b', 'c', 'first')
    await harness.store.storeAgentState('a', 'b:c', 'second')
    await harness.store.storeAgentState('agent-2', 'plan', 42)
    let store = await harness.reopen()
    expect(await store.retrieveAgentState('agent-1', 'plan')).toEqual(value)
    expect(await store.retrieveAgentState('agent-1', 'nothing')).toBeNull()
    expect(await store.retrieveAgentState('agent-1', 'missing')).toBeUndefined()
    expect(await store.retrieveAgentState('a:b', 'c')).toBe('first')
    expect(await store.retrieveAgentState('a', 'b:c')).toBe('second')
    expect(await store.retrieveAgentState('agent-2', 'plan')).toBe(42)
    await store.storeAgentState('agent-1', 'plan', { plan: [] })
    store = await harness.reopen()
    expect(await store.retrieveAgentState('agent-1', 'plan')).toEqual({ plan: [] })
    expect(await store.retrieveAgentState('agent-2', 'plan')).toBe(42)
  }))

  it('stores an agent state key again after its record was forgotten', () => withStore(async ({ store }) => {
    await store.storeAgentState('agent-1', 'k', 1)
    const { records } = await store.memory.query({ tags: ['amp:agent-state', 'agent:agent-1'] })
    expect(records).toHaveLength(1)
    await store.memory.forget(records[0]?.id as string)
    expect(await store.retrieveAgentState('agent-1', 'k')).toBeUndefined()
    await store.storeAgentState('agent-1', 'k', 2)
    expect(await store.retrieveAgentState('agent-1', 'k')).toBe(2)
  }))

  it('normalizes only what JSON cannot tell apart: -0, and bigints within the safe range', () => withStore(async ({ store }) => {
    await store.storeAgentState('agent-1', 'k', { zero: -0, small: 12n, large: 2n ** 53n, dropped: undefined } as unknown as JsonValue)
    const back = await store.retrieveAgentState('agent-1', 'k') as Record<string, unknown>
    expect(Object.is(back.zero, 0)).toBe(true)
    expect(back).toEqual({ zero: 0, small: 12, large: 2n ** 53n })
  }))

  it('refuses bad arguments with a code naming the argument, and writes nothing', () => withStore(async ({ store }) => {
    await store.storeConversation('s-1', 'ada', chat('hello'))
    await store.storeAgentState('agent-1', 'k', 1)
    const digest = await store.memory.digest()
    const isName = (value: unknown) => typeof value === 'string' && value.length > 0 && value.length <= 1024 && value.isWellFormed()
    const good = chat('fine')
    for (const bad of badValues()) {
      if (!isName(bad.value)) {
        const name = bad.value as string
        expect(await refusal(() => store.storeConversation(name, 'ada', good)), bad.name).toMatchObject({ where: { field: 'sessionId' } })
        expect(await refusal(() => store.storeConversation('s-1', name, good)), bad.name).toMatchObject({ where: { field: 'userId' } })
        expect(await refusal(() => store.retrieveConversation(name)), bad.name).toMatchObject({ where: { field: 'sessionId' } })
        expect(await refusal(() => store.deleteConversation(name)), bad.name).toMatchObject({ where: { field: 'sessionId' } })
        expect(await refusal(() => store.listConversationsForUser(name)), bad.name).toMatchObject({ where: { field: 'userId' } })
        expect(await refusal(() => store.storeAgentState(name, 'k', 1)), bad.name).toMatchObject({ where: { field: 'agentId' } })
        expect(await refusal(() => store.storeAgentState('agent-1', name, 1)), bad.name).toMatchObject({ where: { field: 'key' } })
        expect(await refusal(() => store.retrieveAgentState(name, 'k')), bad.name).toMatchObject({ where: { field: 'agentId' } })
        expect(await refusal(() => store.retrieveAgentState('agent-1', name)), bad.name).toMatchObject({ where: { field: 'key' } })
      }
      const error = await refusal(() => store.storeConversation('s-1', 'ada', bad.value as ConversationContext))
      expect(error.where.field?.startsWith('conversation'), bad.name).toBe(true)
      const isEmptyOptions = bad.value === undefined || (typeof bad.value === 'object' && bad.value !== null && !Array.isArray(bad.value) &&
        Object.keys(bad.value).length === 0 && [Object.prototype, null].includes(Object.getPrototypeOf(bad.value)))
      if (!isEmptyOptions) expect((await refusal(() => store.listConversationsForUser('ada', bad.value as never))).where.field, bad.name).toMatch(/^options/)
    }
    const cases: [ConversationContext, string, string][] = [
      [{ messages: 'x' } as never, 'WRONG_TYPE', 'conversation.messages'],
      [{ messages: [{ content: 'hi' }] } as never, 'MISSING_FIELD', 'conversation.messages[0].role'],
      [{ messages: [{ role: '' }] }, 'EMPTY', 'conversation.messages[0].role'],
      [{ messages: [{ role: 5 }] } as never, 'WRONG_TYPE', 'conversation.messages[0].role'],
      [{ messages: [], state: Number.NaN }, 'NOT_JSON', 'conversation.state'],
      [{ messages: [{ role: 'user', content: 2 ** 53 + 2 }] }, 'UNSAFE_INTEGER', 'conversation.messages[0].content'],
      [{ messages: [{ role: 'user', content: 'a\ud800' }] }, 'BAD_STRING', 'conversation.messages[0].content'],
      [{ messages: [], metadata: { when: new Date(0) } } as never, 'NOT_JSON', 'conversation.metadata.when'],
      [{ messages: [{ role: 'user', content: 'x'.repeat(1024 * 1024) }] }, 'TOO_LARGE', 'conversation.messages[0]'],
      [{ messages: [], state: 'x'.repeat(1024 * 1024) }, 'TOO_LARGE', 'conversation'],
      [{ messages: new Array(2) }, 'WRONG_TYPE', 'conversation.messages'],
    ]
    for (const [conversation, code, field] of cases) {
      expect(await refusal(() => store.storeConversation('s-1', 'ada', conversation)), field).toMatchObject({ code, where: { field } })
    }
    expect(await refusal(() => store.storeAgentState('agent-1', 'k', 'x'.repeat(1024 * 1024)))).toBeInstanceOf(LimitError)
    expect(await refusal(() => store.storeAgentState('agent-1', 'k', undefined as never))).toMatchObject({ code: 'NOT_JSON', where: { field: 'value' } })
    expect(await refusal(() => store.listConversationsForUser('ada', { limit: -1 }))).toMatchObject({ code: 'OUT_OF_RANGE', where: { field: 'options.limit' } })
    expect(await refusal(() => store.listConversationsForUser('ada', { limit: 1001 }))).toMatchObject({ code: 'OUT_OF_RANGE', where: { field: 'options.limit' } })
    expect(await refusal(() => store.listConversationsForUser('ada', { offset: 1.5 }))).toMatchObject({ code: 'WRONG_TYPE', where: { field: 'options.offset' } })
    expect(await refusal(() => store.listConversationsForUser('ada', { page: 2 } as never))).toMatchObject({ code: 'UNKNOWN_FIELD', where: { field: 'options.page' } })
    expect(await refusal(() => store.listConversationsForUser('x'.repeat(1025)))).toMatchObject({ code: 'TOO_LONG', where: { field: 'userId' } })
    expect(await store.memory.digest()).toBe(digest)
    expect(await store.retrieveConversation('s-1')).toEqual(chat('hello'))
  }))

  it('stores any JSON agent state value exactly, and refuses every other value without writing', () => withStore(async ({ store }) => {
    const normalize = (value: unknown): unknown => {
      if (typeof value === 'bigint') return value >= -(2n ** 53n - 1n) && value <= 2n ** 53n - 1n ? Number(value) : value
      if (typeof value === 'number') return value === 0 ? 0 : value
      if (Array.isArray(value)) return value.map(normalize)
      if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).filter(([, item]) => item !== undefined).map(([key, item]) => [key, normalize(item)]))
      return value
    }
    for (const bad of badValues()) {
      const digest = await store.memory.digest()
      let isStored = true
      try {
        await store.storeAgentState('agent-1', 'k', bad.value as JsonValue)
      } catch (error) {
        expect(error, bad.name).toBeInstanceOf(CairnError)
        expect((error as CairnError).where.field, bad.name).toMatch(/^value/)
        isStored = false
      }
      if (isStored) expect(await store.retrieveAgentState('agent-1', 'k'), bad.name).toEqual(normalize(bad.value))
      else expect(await store.memory.digest(), bad.name).toBe(digest)
    }
  }))

  if (backend.isDurable) it('keeps everything across close and reopen, deletions included', () => withStore(async (harness) => {
    await harness.store.storeConversation('s-1', 'ada', rich())
    await harness.store.storeConversation('s-2', 'ada', chat('to be deleted: pangolin'))
    await harness.store.storeAgentState('agent-1', 'k', { n: 2n ** 64n })
    await harness.store.deleteConversation('s-2')
    let store = await harness.reopen()
    expect(await store.retrieveConversation('s-1')).toEqual(rich())
    expect(await store.retrieveConversation('s-2')).toBeUndefined()
    expect(await store.memory.search('pangolin')).toEqual([])
    expect(await store.retrieveAgentState('agent-1', 'k')).toEqual({ n: 2n ** 64n })
    expect((await store.listConversationsForUser('ada')).map((entry) => entry.sessionId)).toEqual(['s-1'])
    await store.storeConversation('s-1', 'ada', chat('after reopen'))
    store = await harness.reopen()
    expect(await store.retrieveConversation('s-1')).toEqual(chat('after reopen'))
  }))
})

describe('CairnMemoryStore on two replicas of one space', () => {
  async function replicas(): Promise<{ first: CairnMemoryStore; second: CairnMemoryStore; clock: ManualClock; exchange: () => Promise<void> }> {
    const clock = new ManualClock(START_MS)
    const firstMemory = await Memory.open({ clock })
    const secondMemory = await Memory.open({ clock, space: firstMemory.space })
    await firstMemory.grant(secondMemory.author)
    const exchange = async () => {
      await secondMemory.ingest(await firstMemory.events(secondMemory.versionVector()))
      await firstMemory.ingest(await secondMemory.events(firstMemory.versionVector()))
    }
    await exchange()
    return { first: new CairnMemoryStore(firstMemory, { clock }), second: new CairnMemoryStore(secondMemory, { clock }), clock, exchange }
  }

  it('converge: after exchanging events both list and return the same conversations', async () => {
    const { first, second, clock, exchange } = await replicas()
    try {
      await first.storeConversation('one', 'ada', chat('from the first replica'))
      await second.storeConversation('two', 'ada', chat('from the second replica'))
      await second.storeConversation('three', 'bob', chat('bob elsewhere'))
      await first.storeConversation('shared', 'ada', chat('written first'))
      clock.advance(5000)
      await second.storeConversation('shared', 'ada', chat('written last'))
      await second.storeAgentState('agent-1', 'k', { from: 'second' })
      await exchange()
      const expected = ['one', 'shared', 'two'].sort((a, b) => (contextIdOf(a) < contextIdOf(b) ? -1 : 1))
      for (const store of [first, second]) {
        expect((await store.listConversationsForUser('ada')).map((entry) => entry.sessionId)).toEqual(expected)
        expect(await store.retrieveConversation('shared')).toEqual(chat('written last'))
        expect(await store.retrieveConversation('two')).toEqual(chat('from the second replica'))
        expect(await store.retrieveAgentState('agent-1', 'k')).toEqual({ from: 'second' })
      }
      expect(await first.listConversationsForUser('ada')).toEqual(await second.listConversationsForUser('ada'))
      expect(await first.memory.digest()).toBe(await second.memory.digest())
    } finally {
      await first.memory.close()
      await second.memory.close()
    }
  })

  it('deleteConversation returns false when this replica may not delete, and loses nothing', async () => {
    const clock = new ManualClock(START_MS)
    const owner = new CairnMemoryStore(await Memory.open({ clock }), { clock })
    const reader = new CairnMemoryStore(await Memory.open({ clock, space: owner.memory.space }), { clock })
    try {
      await owner.storeConversation('s-1', 'ada', chat('kept safe'))
      await reader.memory.ingest(await owner.memory.events())
      expect(await reader.deleteConversation('s-1')).toBe(false)
      expect(await reader.retrieveConversation('s-1')).toEqual(chat('kept safe'))
    } finally {
      await owner.memory.close()
      await reader.memory.close()
    }
  })

  it('a deletion on one replica erases the conversation on the other', async () => {
    const { first, second, exchange } = await replicas()
    try {
      await first.storeConversation('s-1', 'ada', chat('the secret axolotl'))
      await exchange()
      expect(await second.retrieveConversation('s-1')).toEqual(chat('the secret axolotl'))
      expect(await first.deleteConversation('s-1')).toBe(true)
      await exchange()
      expect(await second.retrieveConversation('s-1')).toBeUndefined()
      expect(await second.listConversationsForUser('ada')).toEqual([])
      expect(await second.memory.search('axolotl')).toEqual([])
      expect(await logHolds(second.memory, 'axolotl')).toBe(false)
    } finally {
      await first.memory.close()
      await second.memory.close()
    }
  })
})

/**
 * Token scopes through a real relay. Reading: a scoped reader receives every header (so it can
 * verify every chain) but bodies only for records in scope (by kind, by tags any/all/none, by
 * explicit ids, or all); what it can query and what its store holds show nothing else. Deletions
 * and redactions of what its scope reaches come with their bodies, others as headers. Writing: a token writes only with `write`, within its scope, deletes only
 * with `redact`; with `derive` and no `write` it only creates new records in its scope; an author the log never granted is refused whatever its token says, and its
 * events are applied nowhere.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/log/clock.js'
import type { Permission, TokenScope } from '../../src/auth/index.js'
import { CairnError } from '../../src/errors.js'
import type { Memory } from '../../src/memory/index.js'
import { recordIdFor } from '../../src/projection/index.js'
import type { WithheldEvent } from '../../src/sync/messages.js'
import type { Relay } from '../../src/sync/relay.js'
import type { SyncClient } from '../../src/sync/sync-client.js'
import { craftChain, craftEvent, RawPeer } from '../helpers/raw-peer.js'
import {
  download, eventsOf, openOwner, openReplica, startRelay, startSync, storeText, Teardown, tokenFor, waitFor, withheldOf,
} from '../helpers/sync-fixtures.js'

const teardown = new Teardown()
afterEach(() => teardown.run())

interface Library {
  readonly relay: Relay
  readonly owner: Memory
  /** Record name → id. */
  readonly ids: Record<'tone' | 'diet' | 'work' | 'home' | 'both' | 'fact', string>
  /** Record name → a word only its content holds. */
  readonly words: Record<'tone' | 'diet' | 'work' | 'home' | 'both' | 'fact', string>
}

async function syncOnce(memory: Memory, url: string, token?: string): Promise<void> {
  const client = await startSync(teardown, memory, url, { live: false, ...(token ? { token } : {}) })
  await client.synced()
}

/** An owner with two preferences, three tagged episodes and a fact, all on a relay. */
async function library(): Promise<Library> {
  const relay = await startRelay(teardown)
  const owner = await openOwner(teardown)
  const ids = {
    tone: await owner.remember({ kind: 'preference', key: 'tone', value: 'laconic' }),
    diet: await owner.remember({ kind: 'preference', key: 'diet', value: 'pescatarian' }),
    work: await owner.remember({ kind: 'episode', summary: 'quarterly planning with marta', tags: ['work'] }),
    home: await owner.remember({ kind: 'episode', summary: 'repainting the kitchen ochre', tags: ['home', 'secret'] }),
    both: await owner.remember({ kind: 'episode', summary: 'office party in the garden', tags: ['work', 'home'] }),
    fact: '',
  }
  ids.fact = await owner.remember({ kind: 'fact', episodeID: ids.both, subject: 'user', predicate: 'lives in', object: 'trondheim' })
  await owner.update(ids.work, { set: { details: 'budget spreadsheet for marta' } })
  await syncOnce(owner, relay.url)
  const words = { tone: 'laconic', diet: 'pescatarian', work: 'marta', home: 'ochre', both: 'garden', fact: 'trondheim' }
  return { relay, owner, ids, words }
}

/** A reader with `scope` syncs once; it holds every header, and bodies exactly for `visible`. */
async function expectReads(lib: Library, scope: TokenScope, visible: readonly (keyof Library['ids'])[]): Promise<Memory> {
  const reader = await openReplica(teardown, lib.owner)
  await syncOnce(reader, lib.relay.url, tokenFor(lib.owner, reader, scope))
  expect(reader.versionVector()).toEqual(lib.owner.versionVector())
  expect((await reader.log.verify()).ok).toBe(true)
  const shown = (await reader.query({ limit: 100 })).records.map((record) => record.id).sort()
  expect(shown).toEqual(visible.map((name) => lib.ids[name]).sort())
  const text = await storeText(reader)
  for (const name of Object.keys(lib.ids) as (keyof Library['ids'])[]) {
    const inScope = visible.includes(name)
    for (const event of await eventsOf(lib.owner, lib.ids[name])) {
      expect((await reader.log.get(event))?.bodyState, `${name} ${event}`).toBe(inScope ? 'present' : 'absent')
    }
    expect(text.includes(lib.words[name]), `the store ${inScope ? 'holds' : 'does not hold'} "${lib.words[name]}"`).toBe(inScope)
    if (!inScope) expect(await reader.search(lib.words[name])).toEqual([])
  }
  return reader
}

describe('reading through a scoped token', () => {
  it('kinds: a reader of preferences sees preference bodies only, every other event as a header', async () => {
    const lib = await library()
    await expectReads(lib, { kinds: ['preference'] }, ['tone', 'diet'])
  })

  it('tags any: records carrying at least one of the tags', async () => {
    const lib = await library()
    await expectReads(lib, { tags: { any: ['work', 'nothing'] } }, ['work', 'both'])
  })

  it('tags all: records carrying every one of the tags', async () => {
    const lib = await library()
    await expectReads(lib, { tags: { all: ['work', 'home'] } }, ['both'])
  })

  it('tags none, with kinds: episodes without the excluded tag', async () => {
    const lib = await library()
    await expectReads(lib, { kinds: ['episode'], tags: { none: ['secret'] } }, ['work', 'both'])
  })

  it('explicit ids: exactly those records', async () => {
    const lib = await library()
    await expectReads(lib, { ids: [lib.ids.home, lib.ids.tone] }, ['home', 'tone'])
  })

  it('all: everything, and the reader shows the same memory as the owner, lines of unknown kinds included', async () => {
    const lib = await library()
    await lib.owner.rememberForeign('x-widget', ['{"widget":1}'])
    await syncOnce(lib.owner, lib.relay.url)
    const reader = await expectReads(lib, { all: true }, ['tone', 'diet', 'work', 'home', 'both', 'fact'])
    expect(await reader.digest()).toBe(await lib.owner.digest())
    expect(await reader.foreignLines()).toEqual({ 'x-widget': ['{"widget":1}'] })
    // A narrower scope names record kinds, which lines of unknown kinds are not.
    const narrow = await expectReads(lib, { kinds: ['preference'] }, ['tone', 'diet'])
    expect(await narrow.foreignLines()).toEqual({})
  })

  it('a live scoped reader receives new in-scope bodies and new out-of-scope headers', async () => {
    const lib = await library()
    const ownerClient = await startSync(teardown, lib.owner, lib.relay.url)
    await ownerClient.synced()
    const reader = await openReplica(teardown, lib.owner)
    const client = await startSync(teardown, reader, lib.relay.url, { token: tokenFor(lib.owner, reader, { kinds: ['preference'] }) })
    await client.synced()
    const pref = await lib.owner.remember({ kind: 'preference', key: 'editor', value: 'helix' })
    const episode = await lib.owner.remember({ kind: 'episode', summary: 'bought a kayak' })
    await waitFor(() => reader.versionVector()[lib.owner.author] === lib.owner.versionVector()[lib.owner.author], 'the reader to catch up')
    expect((await reader.get(pref))?.value).toBe('helix')
    expect(await reader.get(episode)).toBeUndefined()
    expect(await reader.search('kayak')).toEqual([])
  })

  it('deletions reach a scoped reader with their bodies in scope, and erase what it held; out of scope, as headers', async () => {
    const lib = await library()
    const ownerClient = await startSync(teardown, lib.owner, lib.relay.url)
    await ownerClient.synced()
    const reader = await openReplica(teardown, lib.owner)
    const client = await startSync(teardown, reader, lib.relay.url, { token: tokenFor(lib.owner, reader, { kinds: ['preference'] }) })
    await client.synced()
    const toneEvents = await eventsOf(lib.owner, lib.ids.tone)
    expect((await reader.get(lib.ids.tone))?.value).toBe('laconic')
    await lib.owner.forget(lib.ids.home, { reason: 'mentions the neighbours by name' })
    await lib.owner.forget(lib.ids.tone)
    await waitFor(async () => (await reader.status(lib.ids.tone)) === 'deleted', 'the in-scope deletion to arrive')
    // The out-of-scope deletion came first, as a header: the reader never held the record, and
    // the deletion's reason is not its to read.
    expect(reader.versionVector()).toEqual(lib.owner.versionVector())
    expect(await reader.status(lib.ids.home)).toBe('absent')
    expect(await storeText(reader)).not.toContain('neighbours')
    expect(await reader.get(lib.ids.tone)).toBeUndefined()
    for (const event of toneEvents) expect((await reader.log.get(event))?.bodyState).toBe('erased')
    expect(await reader.search('laconic')).toEqual([])
    expect(await storeText(reader)).not.toContain('laconic')
    expect((await reader.query({ limit: 100 })).records.map((record) => record.id)).toEqual([lib.ids.diet])
    expect((await reader.log.verify()).ok).toBe(true)
  })

  // A redaction's body keeps the record's skeleton (tags, times…): a reader whose scope does not
  // hold the record gets its header only, and shows nothing of it.
  it('a redaction of an out-of-scope record shows a scoped reader nothing of it', async () => {
    const lib = await library()
    await lib.owner.redact(lib.ids.home)
    await syncOnce(lib.owner, lib.relay.url)
    const reader = await openReplica(teardown, lib.owner)
    await syncOnce(reader, lib.relay.url, tokenFor(lib.owner, reader, { kinds: ['preference'] }))
    expect((await reader.query({ limit: 100 })).records.map((record) => record.id).sort()).toEqual([lib.ids.tone, lib.ids.diet].sort())
    expect(await storeText(reader)).not.toContain('"secret"')
  })
})

describe('writing through a scoped token', () => {
  /** A granted writer, live with `token`, next to the live owner. */
  async function writer(lib: Library, scope: TokenScope, permissions: Permission[]) {
    const ownerClient = await startSync(teardown, lib.owner, lib.relay.url)
    await ownerClient.synced()
    const memory = await openReplica(teardown, lib.owner, { grant: true })
    const client = await startSync(teardown, memory, lib.relay.url, { token: tokenFor(lib.owner, memory, scope, permissions) })
    await client.synced()
    await waitFor(() => memory.versionVector()[lib.owner.author] === lib.owner.versionVector()[lib.owner.author], 'the writer to hold the grant')
    return { memory, client }
  }

  /**
   * Runs `write` on the live writer, whose token does not allow it: the relay keeps the one event
   * it writes as a header only and says so. The header reaches the owner, whose memory does not
   * change, and the writer stays live.
   */
  async function withheldWrite(lib: Library, memory: Memory, client: SyncClient, write: () => Promise<unknown>): Promise<WithheldEvent> {
    const digest = await lib.owner.digest()
    const reported = withheldOf(client)
    await write()
    const events = await reported
    expect(events).toHaveLength(1)
    const entry = events[0] as WithheldEvent
    expect(entry.code).toBe('PERMISSION_DENIED')
    const seq = memory.versionVector()[memory.author]
    await waitFor(() => lib.owner.versionVector()[memory.author] === seq, 'the header to reach the owner')
    expect((await lib.owner.log.get(entry.event))?.bodyState).toBe('absent')
    expect((await memory.log.get(entry.event))?.bodyState).toBe('present')
    expect(await lib.owner.digest()).toBe(digest)
    expect(client.status).toBe('live')
    return entry
  }

  it('accepts writes within scope; one outside stays on the writer (the relay keeps its header), and later writes still go through', async () => {
    const lib = await library()
    const { memory, client } = await writer(lib, { kinds: ['preference'] }, ['read', 'write'])
    const pref = await memory.remember({ kind: 'preference', key: 'music', value: 'shoegaze' })
    await waitFor(async () => (await lib.owner.get(pref))?.value === 'shoegaze', 'the in-scope write to reach the owner')
    let episode = ''
    const entry = await withheldWrite(lib, memory, client, async () => {
      episode = await memory.remember({ kind: 'episode', summary: 'an episode the token may not write: harbour' })
    })
    expect(entry.message).toMatch(/outside the token's scope/)
    expect((await memory.get(episode))?.summary).toMatch(/harbour/)
    // The writer's chain goes on past the withheld event.
    const later = await memory.remember({ kind: 'preference', key: 'tea', value: 'oolong' })
    await waitFor(async () => (await lib.owner.get(later))?.value === 'oolong', 'a later in-scope write to reach the owner')
    const copy = await download(teardown, lib.relay.url, lib.owner)
    for (const holder of [copy, lib.owner]) {
      expect(holder.versionVector()[memory.author]).toBe(3)
      expect(await holder.status(episode)).toBe('absent')
      expect(await storeText(holder)).not.toContain('harbour')
    }
  })

  it('withholds a change that would move a record out of scope', async () => {
    const lib = await library()
    const { memory, client } = await writer(lib, { kinds: ['episode'], tags: { none: ['secret'] } }, ['read', 'write'])
    const entry = await withheldWrite(lib, memory, client, () => memory.update(lib.ids.work, { add: { tags: ['secret'] } }))
    expect(entry.message).toMatch(/move record .* out of the token's scope/)
    expect((await lib.owner.get(lib.ids.work))?.tags).toEqual(['work'])
  })

  it('a read-only token writes nothing', async () => {
    const lib = await library()
    const { memory, client } = await writer(lib, { all: true }, ['read'])
    const entry = await withheldWrite(lib, memory, client, () => memory.remember({ kind: 'preference', key: 'music', value: 'shoegaze' }))
    expect(entry.message).toMatch(/does not allow writing/)
  })

  it('a deletion cannot take an out-of-scope record with it by naming it as derived', async () => {
    const lib = await library()
    const { memory, client } = await writer(lib, { kinds: ['episode'] }, ['read', 'write', 'redact'])
    // A crafted deletion: the writer's own log signs whatever body it is given.
    const log = memory.log as unknown as { append: (identity: unknown, entry: { op: string; data: Record<string, unknown> }) => Promise<unknown> }
    const append = log.append.bind(log)
    log.append = (identity, entry) => append(identity, entry.op === 'memory.delete' ? { ...entry, data: { ...entry.data, derived: [{ kind: 'preference', id: lib.ids.tone }] } } : entry)
    const entry = await withheldWrite(lib, memory, client, () => memory.forget(lib.ids.work))
    expect(entry.message).toMatch(/outside the token's scope/)
    expect(await lib.owner.status(lib.ids.tone)).toBe('visible')
    expect(await lib.owner.status(lib.ids.work)).toBe('visible')
  })

  it('a deletion in scope still takes what was derived only from its target, in scope or not', async () => {
    const lib = await library()
    const { memory } = await writer(lib, { kinds: ['episode'] }, ['read', 'write', 'redact'])
    expect(await lib.owner.forgetReach(lib.ids.both)).toEqual([{ kind: 'fact', id: lib.ids.fact }])
    await memory.forget(lib.ids.both)
    await waitFor(async () => (await lib.owner.status(lib.ids.both)) === 'deleted', 'the deletion to reach the owner')
    expect(await lib.owner.status(lib.ids.fact)).toBe('deleted')
    expect(await lib.owner.status(lib.ids.tone)).toBe('visible')
  })

  it('derive without write: new records in scope go through, a change to an existing one is withheld', async () => {
    const lib = await library()
    const { memory, client } = await writer(lib, { kinds: ['fact'] }, ['read', 'derive'])
    const derived = await memory.remember({ kind: 'fact', episodeID: lib.ids.both, subject: 'user', predicate: 'hosts', object: 'garden parties' })
    await waitFor(async () => (await lib.owner.get(derived))?.object === 'garden parties', 'the derived fact to reach the owner')
    const entry = await withheldWrite(lib, memory, client, () => memory.update(lib.ids.fact, { set: { speaker: 'oslo' } }))
    expect(entry.message).toMatch(/only creates new records/)
    expect((await lib.owner.get(lib.ids.fact))?.speaker).toBeUndefined()
  })

  it('derive without write cannot create a record outside its scope either', async () => {
    const lib = await library()
    const { memory, client } = await writer(lib, { kinds: ['fact'] }, ['read', 'derive'])
    const entry = await withheldWrite(lib, memory, client, () => memory.remember({ kind: 'episode', summary: 'not a fact' }))
    expect(entry.message).toMatch(/outside the token's scope/)
  })

  it('deleting needs the redact permission', async () => {
    const lib = await library()
    const { memory, client } = await writer(lib, { all: true }, ['read', 'write'])
    const entry = await withheldWrite(lib, memory, client, () => memory.forget(lib.ids.tone))
    expect(entry.message).toMatch(/need the redact permission/)
    expect(await lib.owner.status(lib.ids.tone)).toBe('visible')
    // With it, the same deletion goes through.
    const allowed = await writer(lib, { all: true }, ['read', 'write', 'redact'])
    await allowed.memory.forget(lib.ids.tone)
    await waitFor(async () => (await lib.owner.status(lib.ids.tone)) === 'deleted', 'the deletion to reach the owner')
  })
})

/**
 * A granted writer that first syncs once (so it holds the grant and what it reads), then
 * writes offline: its next sync sends all of `write`'s events in one catch-up. `outcome` is why
 * the relay withheld the first event it kept as a header only, if it withheld any; the sync
 * itself always completes. `ownerChanged`: the owner's memory (its digest) changed.
 */
async function offlineWriter(lib: Library, scope: TokenScope, permissions: Permission[], write: (memory: Memory, sign: Signer) => Promise<void>) {
  const memory = await openReplica(teardown, lib.owner, { grant: true })
  const token = tokenFor(lib.owner, memory, scope, permissions)
  await syncOnce(lib.owner, lib.relay.url)
  await syncOnce(memory, lib.relay.url, token)
  // Events written below the API, as a peer running other code could: its own log signs them.
  const identity = (memory as unknown as { engine: { identity: never } }).engine.identity
  await write(memory, (op, data) => memory.log.append(identity, { op, data: data as never }).then(() => undefined))
  const before = await lib.owner.digest()
  const client = await startSync(teardown, memory, lib.relay.url, { live: false, token })
  const withheld: WithheldEvent[] = []
  client.on('withheld', ({ events }) => withheld.push(...events))
  await client.synced()
  await syncOnce(lib.owner, lib.relay.url)
  // Whatever was withheld, the relay and the owner hold every event the writer wrote, as headers at least.
  expect(lib.owner.versionVector()[memory.author]).toBe(memory.versionVector()[memory.author])
  for (const { event } of withheld) expect((await lib.owner.log.get(event))?.bodyState).toBe('absent')
  const first = withheld[0]
  return { memory, outcome: first ? { code: first.code, message: first.message } : undefined, withheld, ownerChanged: (await lib.owner.digest()) !== before }
}
type Signer = (op: string, data: Record<string, unknown>) => Promise<void>

describe('a token writer\'s frame, judged event by event', () => {

  it('a create and its update in one frame are judged in order: a tag writer\'s new record goes through', async () => {
    const lib = await library()
    let id = ''
    const { outcome } = await offlineWriter(lib, { tags: { any: ['work'] } }, ['read', 'write'], async (memory) => {
      id = await memory.remember({ kind: 'episode', summary: 'standup notes', tags: ['work'] })
      await memory.update(id, { set: { summary: 'standup notes, edited' } })
    })
    expect(outcome).toBeUndefined()
    expect((await lib.owner.get(id))?.summary).toBe('standup notes, edited')
  })

  it('two patches in one frame cannot together move a record out of scope: the second is withheld', async () => {
    const lib = await library()
    const { outcome, withheld } = await offlineWriter(lib, { tags: { any: ['work', 'home'] } }, ['read', 'write'], async (memory) => {
      await memory.update(lib.ids.both, { remove: { tags: ['work'] } })
      await memory.update(lib.ids.both, { remove: { tags: ['home'] } })
    })
    expect(withheld).toHaveLength(1)
    expect(outcome?.code).toBe('PERMISSION_DENIED')
    expect(outcome?.message).toMatch(/move record .* out of the token's scope/)
    expect((await lib.owner.get(lib.ids.both))?.tags).toEqual(['home'])
  })

  it('a record whose create was withheld does not exist for the relay: changes to it are withheld too, later records go through', async () => {
    const lib = await library()
    const { withheld } = await offlineWriter(lib, { kinds: ['fact'] }, ['read', 'write'], async (memory) => {
      await memory.remember({ kind: 'fact', id: 'human', episodeID: lib.ids.both, subject: 'user', predicate: 'is', object: 'squatting' })
      await memory.update('human', { set: { speaker: 'still squatting' } })
      await memory.remember({ kind: 'fact', episodeID: lib.ids.both, subject: 'user', predicate: 'likes', object: 'moss' })
    })
    expect(withheld.map((entry) => entry.message)).toEqual([
      expect.stringMatching(/takes an id starting fact_/),
      expect.stringMatching(/record human is outside the token's scope or does not exist here/),
    ])
    expect(await lib.owner.status('human')).toBe('absent')
    expect((await lib.owner.search('moss')).length).toBe(1)
  })

  it('a create on a record that exists is judged as the change it makes to it', async () => {
    const lib = await library()
    const { outcome, ownerChanged } = await offlineWriter(lib, { kinds: ['episode'], tags: { none: ['secret'] } }, ['read', 'write'], async (_memory, sign) => {
      await sign('memory.create', { kind: 'episode', id: lib.ids.work, fields: { id: lib.ids.work, summary: 'x', details: 'x', tags: ['secret'] } })
    })
    expect(outcome?.code).toBe('PERMISSION_DENIED')
    expect(ownerChanged).toBe(false)
    expect((await lib.owner.get(lib.ids.work))?.tags).toEqual(['work'])
  })

  it('a redaction carries what a redaction keeps: a forged skeleton is refused, the API\'s goes through', async () => {
    const lib = await library()
    const forged = await offlineWriter(lib, { kinds: ['episode'] }, ['read', 'write', 'redact'], async (memory, sign) => {
      const view = await memory.get(lib.ids.work)
      const tombstone = { id: 'tomb_0000000000000001', op: 'redact', targetKind: 'episode', targetID: lib.ids.work, deletedAt: '2026-01-01T00:00:00Z', actor: memory.author, derived: {} }
      await sign('memory.redact', { kind: 'episode', id: lib.ids.work, tombstone, skeleton: { ...view, kind: undefined, summary: 'anything the writer likes' }, derived: [] })
    })
    expect(forged.outcome?.code).toBe('PERMISSION_DENIED')
    expect(forged.outcome?.message).toMatch(/skeleton/)
    expect(forged.ownerChanged).toBe(false)
    expect(await lib.owner.status(lib.ids.work)).toBe('visible')
    const honest = await offlineWriter(lib, { kinds: ['episode'] }, ['read', 'write', 'redact'], async (memory) => {
      await memory.redact(lib.ids.work)
    })
    expect(honest.outcome).toBeUndefined()
    expect(await lib.owner.status(lib.ids.work)).toBe('redacted')
    expect((await lib.owner.get(lib.ids.work))?.summary).toBe('')
  })

  it('an id nobody created cannot be deleted or changed under a kind the writer picks, nor claimed by a create of another kind', async () => {
    const lib = await library()
    const future = recordIdFor('preference', { key: 'language' })
    const tombstone = { id: 'tomb_0000000000000002', op: 'delete', targetKind: 'fact', targetID: future, deletedAt: '2026-01-01T00:00:00Z', actor: lib.owner.author, derived: {} }
    const deletion = await offlineWriter(lib, { kinds: ['fact'] }, ['read', 'write', 'redact'], async (_memory, sign) => {
      await sign('memory.delete', { kind: 'fact', id: future, tombstone, derived: [] })
    })
    // Every refusal of a deletion of an absent id reads as one of a record outside the scope.
    expect(deletion.outcome?.message).toMatch(/outside the token's scope or does not exist here/)
    const patch = await offlineWriter(lib, { kinds: ['fact'] }, ['read', 'write'], async (_memory, sign) => {
      await sign('memory.patch', { kind: 'fact', id: future, set: { object: 'x' } })
    })
    expect(patch.outcome?.message).toMatch(/does not exist here/)
    const squat = await offlineWriter(lib, { kinds: ['fact'] }, ['read', 'write'], async (memory) => {
      await memory.remember({ kind: 'fact', id: 'human', episodeID: lib.ids.both, subject: 'user', predicate: 'is', object: 'squatting' })
    })
    expect(squat.outcome?.message).toMatch(/takes an id starting fact_/)
    // Named as derived, an id another kind derives is refused as a direct deletion of it is.
    const derived = await offlineWriter(lib, { kinds: ['fact'] }, ['read', 'write', 'redact'], async (memory, sign) => {
      const own = { id: 'tomb_0000000000000003', op: 'delete', targetKind: 'fact', targetID: lib.ids.fact, deletedAt: '2026-01-01T00:00:00Z', actor: memory.author, derived: {} }
      await sign('memory.delete', { kind: 'fact', id: lib.ids.fact, tombstone: own, derived: [{ kind: 'fact', id: future }] })
    })
    expect(derived.outcome?.message).toMatch(/does not exist here/)
    for (const attempt of [deletion, patch, squat, derived]) {
      expect(attempt.outcome?.code).toBe('PERMISSION_DENIED')
      expect(attempt.ownerChanged).toBe(false)
    }
    expect(await lib.owner.remember({ kind: 'preference', key: 'language', value: 'nynorsk' })).toBe(future)
    expect(await lib.owner.status(future)).toBe('visible')
    expect(await lib.owner.status('human')).toBe('absent')
  })

  it('a deletion of an id nobody created yet, of its kind\'s own form and in scope, goes through (a bundle\'s tombstone does that)', async () => {
    const lib = await library()
    const unseen = await offlineWriter(lib, { kinds: ['fact'] }, ['read', 'write', 'redact'], async (memory) => {
      await memory.importTombstones([{ id: 'tomb_00000000000000aa', op: 'delete', targetKind: 'fact', targetID: 'fact_unseen', deletedAt: '2026-01-01T00:00:00Z', actor: 'someone', derived: {} }])
    })
    expect(unseen.outcome).toBeUndefined()
    expect(await lib.owner.status('fact_unseen')).toBe('deleted')
    const tagged = await offlineWriter(lib, { tags: { any: ['work'] } }, ['read', 'write', 'redact'], async (memory) => {
      await memory.importTombstones([{ id: 'tomb_00000000000000ab', op: 'delete', targetKind: 'episode', targetID: 'ep_unseen', deletedAt: '2026-01-01T00:00:00Z', actor: 'someone', derived: {} }])
    })
    // A tag scope cannot tell whether a record it never saw is in it.
    expect(tagged.outcome?.message).toMatch(/outside the token's scope/)
    expect(await lib.owner.status('ep_unseen')).toBe('absent')
  })

  it('a forget of what its writer created and derived before syncing takes the derived record along (its create, erased, came as a header only)', async () => {
    const lib = await library()
    let episode = ''
    let fact = ''
    const forgotten = await offlineWriter(lib, { kinds: ['episode', 'fact'] }, ['read', 'write', 'redact'], async (memory) => {
      episode = await memory.remember({ kind: 'episode', summary: 'the platypus meeting' })
      fact = await memory.remember({ kind: 'fact', episodeID: episode, subject: 'platypus', predicate: 'is', object: 'venomous' })
      await memory.forget(episode)
    })
    expect(forgotten.withheld).toEqual([])
    expect([await lib.owner.status(episode), await lib.owner.status(fact)]).toEqual(['deleted', 'deleted'])
    expect(await storeText(lib.owner)).not.toContain('platypus')
    // A tag scope cannot tell whether a record it never saw is in it: as for a direct deletion.
    const tagged = await offlineWriter(lib, { tags: { any: ['work'] } }, ['read', 'write', 'redact'], async (memory) => {
      const id = await memory.remember({ kind: 'episode', summary: 'the echidna meeting', tags: ['work'] })
      await memory.remember({ kind: 'fact', episodeID: id, subject: 'echidna', predicate: 'lays', object: 'eggs', tags: ['work'] })
      await memory.forget(id)
    })
    expect(tagged.outcome?.message).toMatch(/does not exist here/)
  })

  it('a record its writer created and redacted before syncing arrives as its skeleton (the create, erased, came as a header only)', async () => {
    const lib = await library()
    let id = ''
    const redacted = await offlineWriter(lib, { tags: { any: ['work'] } }, ['read', 'write', 'redact'], async (memory) => {
      id = await memory.remember({ kind: 'episode', summary: 'the quokka incident', tags: ['work'] })
      await memory.redact(id)
    })
    expect(redacted.withheld).toEqual([])
    expect(await lib.owner.status(id)).toBe('redacted')
    expect(await lib.owner.get(id)).toEqual(await redacted.memory.get(id))
    expect(await storeText(lib.owner)).not.toContain('quokka')
    // Judged as a create of the skeleton: its tags must keep it in the scope.
    let untagged = ''
    const outside = await offlineWriter(lib, { tags: { any: ['work'] } }, ['read', 'write', 'redact'], async (memory) => {
      untagged = await memory.remember({ kind: 'episode', summary: 'the wombat incident' })
      await memory.redact(untagged)
    })
    expect(outside.outcome?.message).toMatch(/outside the token's scope/)
    expect(await lib.owner.status(untagged)).toBe('absent')
    // A preference's skeleton has its key emptied: it cannot show that its id is the key's, so it
    // could claim any preference's id (predictable from the key). It stays on the writer.
    let preference = ''
    const keyed = await offlineWriter(lib, { kinds: ['preference'] }, ['read', 'write', 'redact'], async (memory) => {
      preference = await memory.remember({ kind: 'preference', key: 'snack', value: 'liquorice' })
      await memory.redact(preference)
    })
    expect(keyed.outcome?.message).toMatch(/does not exist here/)
    expect(await lib.owner.status(preference)).toBe('absent')
    // Refused for a reason of its own (no redact permission, a forged skeleton), a redaction of an
    // absent id answers as one of a record outside the scope: no probing for what exists.
    const probes = await offlineWriter(lib, { tags: { any: ['work'] } }, ['read', 'write'], async (_memory, sign) => {
      await sign('memory.redact', { kind: 'episode', id: 'ep_00000000000000f1', skeleton: { id: 'ep_00000000000000f1', summary: 'forged' }, derived: [] })
    })
    expect(probes.outcome?.message).toMatch(/outside the token's scope or does not exist here/)
  })
})

describe('protocol versions: a write the token does not allow', () => {
  /**
   * A granted writer's crafted frame, sent by a raw peer speaking `versions`: a deletion that
   * takes an out-of-scope record along, then a patch of its target that moves it out of scope,
   * then a create in scope. Crafted, because the writer's own replica, having applied the
   * deletion, would erase the patch's body rather than send it.
   */
  async function sendFrame(versions: number[]) {
    const lib = await library()
    const writer = await openReplica(teardown, lib.owner, { grant: true })
    await syncOnce(lib.owner, lib.relay.url)
    const token = tokenFor(lib.owner, writer, { kinds: ['episode'], tags: { none: ['secret'] } }, ['read', 'write', 'redact'])
    const tombstone = { id: 'tomb_00000000000000c1', op: 'delete', targetKind: 'episode', targetID: lib.ids.work, deletedAt: '2026-01-01T00:00:00Z', actor: writer.author, derived: {} }
    const events = await craftChain(lib.owner, writer.identity, [
      { op: 'memory.delete', data: { kind: 'episode', id: lib.ids.work, tombstone, derived: [{ kind: 'preference', id: lib.ids.tone }] } },
      { op: 'memory.patch', data: { kind: 'episode', id: lib.ids.work, add: { tags: ['secret'] } } },
      { op: 'memory.create', data: { kind: 'episode', id: 'ep_0000000000c0ffee', fields: { id: 'ep_0000000000c0ffee', summary: 'espresso tasting' } } },
    ])
    const relayReports: { key: string; events: readonly WithheldEvent[] }[] = []
    lib.relay.on('peer-withheld', ({ key, events: withheld }) => relayReports.push({ key, events: withheld }))
    const peer = await RawPeer.connect(lib.relay.url)
    teardown.add(0, () => peer.close())
    expect((await peer.handshake(writer.identity, lib.owner.space, { token, versions }))?.type).toBe('ready')
    await peer.sendMessage({ type: 'events', seq: 1, events: events.map(({ header, body, signature }) => ({ header, body: body as Uint8Array, signature: signature as Uint8Array })) })
    return { lib, writer, events, peer, relayReports }
  }

  it('version 2: each is kept as a header and named in the ack; what it would have done counts for nothing in the rest of the frame', async () => {
    const { lib, writer, events, peer, relayReports } = await sendFrame([1, 2])
    const ack = await peer.next('ack')
    // The relay's operator hears of it as the peer does.
    expect(relayReports).toEqual([{ key: writer.author, events: ack?.withheld }])
    expect(ack?.seq).toBe(1)
    expect(ack?.withheld?.map((entry) => entry.event)).toEqual([events[0]?.id, events[1]?.id])
    expect(ack?.withheld?.map((entry) => entry.code)).toEqual(['PERMISSION_DENIED', 'PERMISSION_DENIED'])
    expect(ack?.withheld?.[0]?.message).toMatch(/outside the token's scope or does not exist here, and is not derived from/)
    // Had the withheld deletion counted, the record would have looked deleted to the patch, which
    // a deleted record lets through unjudged.
    expect(ack?.withheld?.[1]?.message).toMatch(/move record .* out of the token's scope/)
    expect(peer.isClosed).toBe(false)
    await syncOnce(lib.owner, lib.relay.url)
    expect(lib.owner.versionVector()[writer.author]).toBe(3)
    expect((await lib.owner.log.get(events[0]?.id as string))?.bodyState).toBe('absent')
    expect((await lib.owner.log.get(events[1]?.id as string))?.bodyState).toBe('absent')
    expect(await lib.owner.status(lib.ids.work)).toBe('visible')
    expect((await lib.owner.get(lib.ids.work))?.tags).toEqual(['work'])
    expect(await lib.owner.status(lib.ids.tone)).toBe('visible')
    expect((await lib.owner.get('ep_0000000000c0ffee'))?.summary).toBe('espresso tasting')
  })

  it('version 1: the frame is refused whole and the session ends', async () => {
    const { lib, writer, peer, relayReports } = await sendFrame([1])
    const refusal = await peer.next('error')
    expect(relayReports).toEqual([])
    expect(refusal?.code).toBe('PERMISSION_DENIED')
    expect(refusal?.message).toMatch(/outside the token's scope or does not exist here, and is not derived from/)
    await peer.closed
    await syncOnce(lib.owner, lib.relay.url)
    expect(lib.owner.versionVector()[writer.author]).toBeUndefined()
    expect(await lib.owner.status('ep_0000000000c0ffee')).toBe('absent')
  })
})

describe('what a deleted record still allows', () => {
  it('a second deletion of a deleted record is judged as a deletion: its derived list cannot reach out of scope', async () => {
    const lib = await library()
    await lib.owner.forget(lib.ids.work)
    for (const permissions of [['read', 'write'], ['read', 'write', 'redact']] as Permission[][]) {
      const { outcome } = await offlineWriter(lib, { kinds: ['episode'] }, permissions, async (memory, sign) => {
        const tombstone = { id: `tomb_${permissions.length}000000000000000`, op: 'delete', targetKind: 'episode', targetID: lib.ids.work, deletedAt: '2026-01-01T00:00:00Z', actor: memory.author, derived: {} }
        await sign('memory.delete', { kind: 'episode', id: lib.ids.work, tombstone, derived: [{ kind: 'preference', id: lib.ids.tone }] })
      })
      expect(outcome?.code, permissions.join()).toBe('PERMISSION_DENIED')
      expect(await lib.owner.status(lib.ids.tone)).toBe('visible')
    }
  })

  it('a write to a deleted record is judged by the scope it may have had: an episode writer cannot redact a deleted fact', async () => {
    const lib = await library()
    // A replica the deletion has not reached would take such a redaction, skeleton and all.
    await lib.owner.forget(lib.ids.fact)
    const forged = await offlineWriter(lib, { kinds: ['episode'] }, ['read', 'write', 'redact'], async (memory, sign) => {
      const tombstone = { id: 'tomb_00000000000000f1', op: 'redact', targetKind: 'fact', targetID: lib.ids.fact, deletedAt: '2026-01-01T00:00:00Z', actor: memory.author, derived: {} }
      await sign('memory.redact', { kind: 'fact', id: lib.ids.fact, tombstone, skeleton: { id: lib.ids.fact, subject: 'user', predicate: 'says', object: 'forged' }, derived: [] })
    })
    expect(forged.outcome?.code).toBe('PERMISSION_DENIED')
    expect(forged.outcome?.message).toMatch(/outside the token's scope/)
    expect(forged.ownerChanged).toBe(false)
    // Claiming the kind its scope reads does not help: the relay knows the deleted record's kind.
    const spoofed = await offlineWriter(lib, { kinds: ['episode'] }, ['read', 'write', 'redact'], async (memory, sign) => {
      const tombstone = { id: 'tomb_00000000000000f3', op: 'redact', targetKind: 'episode', targetID: lib.ids.fact, deletedAt: '2026-01-01T00:00:00Z', actor: memory.author, derived: {} }
      await sign('memory.redact', { kind: 'episode', id: lib.ids.fact, tombstone, skeleton: { id: lib.ids.fact, summary: 'forged', tags: ['forged'] }, derived: [] })
    })
    expect(spoofed.outcome?.code).toBe('PERMISSION_DENIED')
    // Nor does it learn the record's kind: out of its scope, a record is as good as absent.
    expect(spoofed.outcome?.message).toMatch(/is outside the token's scope or does not exist here/)
    expect(spoofed.ownerChanged).toBe(false)
    // A writer whose scope reaches the kind still writes to it (its redaction changes nothing here).
    const honest = await offlineWriter(lib, { kinds: ['fact'] }, ['read', 'write', 'redact'], async (memory, sign) => {
      const tombstone = { id: 'tomb_00000000000000f2', op: 'delete', targetKind: 'fact', targetID: lib.ids.fact, deletedAt: '2026-01-01T00:00:00Z', actor: memory.author, derived: {} }
      await sign('memory.delete', { kind: 'fact', id: lib.ids.fact, tombstone, derived: [] })
    })
    expect(honest.outcome).toBeUndefined()
    expect(await lib.owner.status(lib.ids.fact)).toBe('deleted')
  })

  it('a reader whose token narrowed still gets the deletion of what it held under the wider one', async () => {
    const lib = await library()
    const reader = await openReplica(teardown, lib.owner)
    await syncOnce(reader, lib.relay.url, tokenFor(lib.owner, reader, { all: true }))
    expect(await reader.status(lib.ids.home)).toBe('visible')
    await lib.owner.forget(lib.ids.home)
    await syncOnce(lib.owner, lib.relay.url)
    await syncOnce(reader, lib.relay.url, tokenFor(lib.owner, reader, { kinds: ['preference'] }))
    expect(await reader.status(lib.ids.home)).toBe('deleted')
    expect(await storeText(reader)).not.toContain(lib.words.home)
  })

  it('a core block cannot take another kind\'s id (a preference\'s, predictable from its key)', async () => {
    const lib = await library()
    const future = recordIdFor('preference', { key: 'language' })
    const { outcome: error } = await offlineWriter(lib, { kinds: ['core'] }, ['read', 'write'], async (_memory, sign) => {
      await sign('memory.create', { kind: 'core', id: future, fields: { id: future, charBudget: 100, version: 1 } })
    })
    expect(error?.code).toBe('PERMISSION_DENIED')
    expect(error?.message).toMatch(/cannot take the id/)
    expect(await lib.owner.remember({ kind: 'preference', key: 'language', value: 'nynorsk' })).toBe(future)
    expect((await lib.owner.get(future))?.kind).toBe('preference')
  })
})

describe('an author the log never granted', () => {
  it('cannot write locally, and its crafted events are refused with NOT_AUTHORIZED and applied nowhere', async () => {
    const lib = await library()
    const ownerClient = await startSync(teardown, lib.owner, lib.relay.url)
    await ownerClient.synced()
    const other = await openReplica(teardown, lib.owner)
    const otherClient = await startSync(teardown, other, lib.relay.url, { token: tokenFor(lib.owner, other, { all: true }) })
    await otherClient.synced()
    // A valid write token, but no grant in the log.
    const intruder = await openReplica(teardown, lib.owner)
    const token = tokenFor(lib.owner, intruder, { all: true }, ['read', 'write', 'redact'])
    await syncOnce(intruder, lib.relay.url, token)
    const local = await intruder.remember({ kind: 'episode', summary: 'x' }).catch((error: unknown) => error)
    expect((local as CairnError).code).toBe('NOT_AUTHORIZED')

    const event = await craftEvent(intruder, intruder.identity, { kind: 'episode', id: 'ep_1ntruder00000000', fields: { summary: 'intruder was here' } })
    const peer = await RawPeer.connect(lib.relay.url)
    teardown.add(0, () => peer.close())
    expect((await peer.handshake(intruder.identity, lib.owner.space, { token }))?.type).toBe('ready')
    await peer.sendMessage({ type: 'events', seq: 1, events: [{ header: event.header, body: event.body as Uint8Array, signature: event.signature as Uint8Array }] })
    const refusal = await peer.next('error')
    expect(refusal?.code).toBe('NOT_AUTHORIZED')
    await peer.closed

    // Delivered directly, a replica refuses it too, and its log stays as it was.
    const before = other.versionVector()
    expect(((await other.ingest([event]).catch((error: unknown) => error)) as CairnError).code).toBe('NOT_AUTHORIZED')
    expect(other.versionVector()).toEqual(before)

    // A legitimate write still flows, and the intruder's event is nowhere.
    const after = await lib.owner.remember({ kind: 'episode', summary: 'after the intrusion' })
    await waitFor(async () => (await other.get(after)) !== undefined, 'the next write to reach the other peer')
    const copy = await download(teardown, lib.relay.url, lib.owner)
    for (const memory of [copy, other, lib.owner]) {
      expect(memory.versionVector()[intruder.author]).toBeUndefined()
      expect(await memory.log.get(event.id)).toBeUndefined()
      expect(await memory.search('intruder')).toEqual([])
    }
  })
})

describe('one id created as two kinds', () => {
  it('a reader scoped to the winning kind does not receive the losing kind\'s content', async () => {
    const relay = await startRelay(teardown)
    const owner = await openOwner(teardown)
    const phone = await openReplica(teardown, owner, { grant: true })
    await phone.ingest(await owner.events())
    // The phone's entity is the earlier create: it decides the kind everywhere.
    await phone.remember({ kind: 'entity', id: 'shared', type: 'person', canonicalName: 'Ann' })
    await new Promise((resolve) => setTimeout(resolve, 5))
    await owner.remember({ kind: 'episode', id: 'shared', summary: 'diary-secret-words' })
    await owner.ingest(await phone.events(owner.versionVector()))
    await syncOnce(owner, relay.url)
    expect((await owner.get('shared'))?.kind).toBe('entity')
    const reader = await openReplica(teardown, owner)
    await syncOnce(reader, relay.url, tokenFor(owner, reader, { kinds: ['entity'] }))
    expect(await reader.get('shared')).toMatchObject({ kind: 'entity', canonicalName: 'Ann' })
    expect(await storeText(reader)).not.toContain('diary-secret-words')
  })

  it('a tag-scoped reader keeps the record it holds when an operation of another kind of its id arrives', async () => {
    const clock = new ManualClock(Date.now())
    const relay = await startRelay(teardown)
    const owner = await openOwner(teardown, { clock })
    const phone = await openReplica(teardown, owner, { clock })
    await owner.grant(phone.author, ['write', 'admin'])
    await syncOnce(owner, relay.url)
    await syncOnce(phone, relay.url)
    clock.advance(1000)
    await owner.remember({ kind: 'episode', id: 'shared', summary: 'work diary', tags: ['work'] })
    clock.advance(1000)
    await phone.remember({ kind: 'entity', id: 'shared', type: 'person', canonicalName: 'Bob' })
    await syncOnce(owner, relay.url)
    const reader = await openReplica(teardown, owner, { clock })
    const token = tokenFor(owner, reader, { tags: { any: ['work'] } })
    await syncOnce(reader, relay.url, token)
    expect(await reader.get('shared')).toMatchObject({ kind: 'episode' })
    // The phone's later entity create reaches the relay: it shows nowhere, and takes nothing away.
    await syncOnce(phone, relay.url)
    await syncOnce(reader, relay.url, token)
    expect(await reader.get('shared')).toMatchObject({ kind: 'episode', summary: 'work diary' })
  })

  it('a reader whose scope reaches both kinds ends like every full replica, whichever kind the relay showed when it sent each', async () => {
    const clock = new ManualClock(Date.now())
    const relay = await startRelay(teardown)
    const owner = await openOwner(teardown, { clock })
    const phone = await openReplica(teardown, owner, { clock })
    const laptop = await openReplica(teardown, owner, { clock })
    for (const replica of [phone, laptop]) await owner.grant(replica.author, ['write', 'admin'])
    for (const memory of [owner, phone, laptop]) await syncOnce(memory, relay.url)
    clock.advance(1000)
    await laptop.remember({ kind: 'entity', id: 'shared', type: 'person', canonicalName: 'Ann' })   // the earliest create
    clock.advance(1000)
    await owner.remember({ kind: 'episode', id: 'shared', summary: 'owner episode' })
    clock.advance(1000)
    await phone.remember({ kind: 'entity', id: 'shared', type: 'person', canonicalName: 'Bob' })    // the latest
    await syncOnce(owner, relay.url)
    const reader = await openReplica(teardown, owner, { clock })
    const token = tokenFor(owner, reader, { kinds: ['entity', 'episode'] })
    await syncOnce(reader, relay.url, token)
    await syncOnce(phone, relay.url)      // the relay shows an episode: Bob's entity create is of another kind
    await syncOnce(reader, relay.url, token)
    await syncOnce(laptop, relay.url)     // now the entity wins on the relay
    await syncOnce(reader, relay.url, token)
    await syncOnce(owner, relay.url)
    expect(await owner.get('shared')).toMatchObject({ kind: 'entity' })
    expect(await reader.get('shared')).toEqual(await owner.get('shared'))
  })
})

/**
 * What a relay takes from a token holder, beyond its own writes judged one by one
 * (test/sync/scope.test.ts): events of other authors it holds (never withheld: left to their
 * author, the holder retrying until the author has brought them whole), bodies of events the
 * relay keeps as headers (never filled in from a token holder), a frame that repeats an event,
 * reorders an author's events or holds an event the relay could not apply at once, writes to
 * deleted records, and what the refusal messages give away about records outside the scope
 * (nothing). In version 2, and in version 1 where it applies.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { CairnError } from '../../src/errors.js'
import type { EventEnvelope } from '../../src/log/index.js'
import type { Memory } from '../../src/memory/index.js'
import { recordIdFor } from '../../src/projection/index.js'
import type { WithheldEvent } from '../../src/sync/messages.js'
import { authorAndSeq } from '../../src/sync/frames.js'
import { craftChain, RawPeer } from '../helpers/raw-peer.js'
import { download, openOwner, openReplica, startRelay, startSync, storeText, Teardown, tokenFor, waitFor } from '../helpers/sync-fixtures.js'

const teardown = new Teardown()
afterEach(() => teardown.run())

const wire = (events: readonly EventEnvelope[]) => events.map(({ header, body, signature }) => ({ header, ...(body ? { body } : {}), ...(signature ? { signature } : {}) }))

async function syncOnce(memory: Memory, url: string, token?: string): Promise<WithheldEvent[]> {
  const client = await startSync(teardown, memory, url, { live: false, ...(token ? { token } : {}) })
  const withheld: WithheldEvent[] = []
  client.on('withheld', ({ events }) => withheld.push(...events))
  await client.synced()
  return withheld
}

/** A relay holding an owner's space, and a writer the owner granted. */
async function stage() {
  const relay = await startRelay(teardown)
  const owner = await openOwner(teardown)
  const writer = await openReplica(teardown, owner, { grant: true })
  await syncOnce(owner, relay.url)
  return { relay, owner, writer }
}

/** The writer's chain: a patch ("quokka") of an episode, then the create of that episode. */
async function patchBeforeCreate(owner: Memory, writer: Memory): Promise<[EventEnvelope, EventEnvelope]> {
  return await craftChain(owner, writer.identity, [
    { op: 'memory.patch', data: { kind: 'episode', id: 'ep_0000000000000bee', set: { summary: 'quokka' } } },
    { op: 'memory.create', data: { kind: 'episode', id: 'ep_0000000000000bee', fields: { id: 'ep_0000000000000bee', summary: 'first' } } },
  ]) as [EventEnvelope, EventEnvelope]
}

async function rawSession(url: string, writer: Memory, space: string, token: string): Promise<RawPeer> {
  const peer = await RawPeer.connect(url)
  teardown.add(0, () => peer.close())
  expect((await peer.handshake(writer.identity, space, { token, versions: [1, 2] }))?.type).toBe('ready')
  return peer
}

describe('events of other authors from a token holder', () => {
  /** The writer syncs, live, until it is synced; the owner may sync meanwhile. */
  async function startWriter(writer: Memory, url: string, token: string) {
    const client = await startSync(teardown, writer, url, { token })
    const errors: string[] = []
    client.on('error', (error) => errors.push(error.code))
    return { client, errors }
  }

  it('one its token does not allow is left to its author: the writer retries until the author has brought it whole', async () => {
    const { relay, owner, writer } = await stage()
    const token = tokenFor(owner, writer, { kinds: ['preference'] }, ['read', 'write'])
    await syncOnce(writer, relay.url, token)
    // The owner writes offline; the writer gets the owner's log out of band (a log snapshot, say).
    const episode = await owner.remember({ kind: 'episode', summary: 'the lighthouse keeper diary' })
    const preference = await owner.remember({ kind: 'preference', key: 'light', value: 'dim' })
    await writer.ingest(await owner.log.envelopesSince(writer.versionVector(), { signatures: 'stored' }))
    const mine = await writer.remember({ kind: 'preference', key: 'tea', value: 'oolong' })
    const { client, errors } = await startWriter(writer, relay.url, token)
    // Sent away, it tries again (a closed connection may show up between tries).
    await waitFor(() => errors.filter((code) => code === 'AWAITING_AUTHOR').length >= 2, 'the writer to be sent away, twice')
    expect(client.status).not.toBe('error')
    // Nothing of those frames was stored.
    expect((await download(teardown, relay.url, owner)).versionVector()[writer.author]).toBeUndefined()
    // The owner syncs: the writer's next try goes through, and nothing of the owner's was lost.
    await syncOnce(owner, relay.url)
    await client.synced()
    await syncOnce(owner, relay.url)
    const copy = await download(teardown, relay.url, owner)
    expect(copy.versionVector()).toEqual(writer.versionVector())
    expect((await copy.get(episode))?.summary).toBe('the lighthouse keeper diary')
    expect((await copy.get(preference))?.value).toBe('dim')
    expect((await owner.get(mine))?.value).toBe('oolong')
    expect(await copy.digest()).toBe(await owner.digest())
  })

  it('another author\'s event without its body is left to its author too; a one-time sync stops and says so', async () => {
    const { relay, owner, writer } = await stage()
    const token = tokenFor(owner, writer, { all: true }, ['read', 'write'])
    await syncOnce(writer, relay.url, token)
    const episode = await owner.remember({ kind: 'episode', summary: 'the lighthouse keeper diary' })
    // The writer holds the owner's event as a header only (got through a relay that let it read no more).
    const fresh = await owner.log.envelopesSince(writer.versionVector(), { signatures: 'stored' })
    await writer.ingest(fresh.map(({ body: _body, ...header }) => header))
    const refused = await syncOnce(writer, relay.url, token).then(() => undefined, (error: CairnError) => error)
    expect(refused?.code).toBe('AWAITING_AUTHOR')
    expect(refused?.message).toMatch(/is another author's, and came without its body/)
    await syncOnce(owner, relay.url)
    await syncOnce(writer, relay.url, token)
    const copy = await download(teardown, relay.url, owner)
    expect((await copy.get(episode))?.summary).toBe('the lighthouse keeper diary')
    expect(await copy.digest()).toBe(await owner.digest())
  })

  it('the owner\'s deletion, relayed first by a writer without redact, is left to the owner, and takes effect when it syncs', async () => {
    const { relay, owner, writer } = await stage()
    const episode = await owner.remember({ kind: 'episode', summary: 'a diagnosis to forget: brucellosis' })
    await syncOnce(owner, relay.url)
    const token = tokenFor(owner, writer, { all: true }, ['read', 'write'])
    await syncOnce(writer, relay.url, token)
    await owner.forget(episode)
    await writer.ingest(await owner.log.envelopesSince(writer.versionVector(), { signatures: 'stored' }))
    const { client, errors } = await startWriter(writer, relay.url, token)
    await waitFor(() => errors.includes('AWAITING_AUTHOR'), 'the writer to be sent away')
    await syncOnce(owner, relay.url)
    await client.synced()
    const copy = await download(teardown, relay.url, owner)
    expect(await copy.status(episode)).toBe('deleted')
    expect(await storeText(copy)).not.toContain('brucellosis')
  })
})

describe('what a token holder cannot bring to the relay', () => {
  for (const versions of [[1, 2], [1]]) {
    it(`the body of a withheld event, sent again through a wider token, is not filled in: the relay and the owner stay alike (version ${versions.at(-1)})`, async () => {
      const { relay, owner, writer } = await stage()
      const narrow = tokenFor(owner, writer, { kinds: ['preference'] }, ['read', 'write'])
      const wide = tokenFor(owner, writer, { all: true }, ['read', 'write'])
      const [create] = await craftChain(owner, writer.identity, [
        { op: 'memory.create', data: { kind: 'episode', id: 'ep_0000000000c0ffee', fields: { id: 'ep_0000000000c0ffee', summary: 'zanzibar espresso' } } },
      ]) as [EventEnvelope]
      const first = await rawSession(relay.url, writer, owner.space, narrow)
      await first.sendMessage({ type: 'events', seq: 1, events: wire([create]) })
      expect((await first.next('ack'))?.withheld?.map((entry) => entry.event)).toEqual([create.id])
      first.close()
      await syncOnce(owner, relay.url)
      const again = await RawPeer.connect(relay.url)
      teardown.add(0, () => again.close())
      expect((await again.handshake(writer.identity, owner.space, { token: wide, versions }))?.type).toBe('ready')
      await again.sendMessage({ type: 'events', seq: 1, events: wire([create]) })
      // Held already: nothing to judge, nothing to withhold, nothing stored.
      expect(await again.next('ack')).toEqual({ type: 'ack', seq: 1 })
      await syncOnce(owner, relay.url)
      const copy = await download(teardown, relay.url, owner)
      for (const memory of [copy, owner]) {
        expect((await memory.log.get(create.id))?.bodyState).toBe('absent')
        expect(await memory.status('ep_0000000000c0ffee')).toBe('absent')
      }
      expect(await copy.digest()).toBe(await owner.digest())
    })
  }

  it('under a tag scope, a deletion whose derived list names a record the owner deleted meanwhile goes through', async () => {
    const { relay, owner, writer: holder } = await stage()
    const episode = await owner.remember({ kind: 'episode', summary: 'met Ann at the cafe', tags: ['work'] })
    const fact = await owner.remember({ kind: 'fact', episodeID: episode, subject: 'user', predicate: 'met', object: 'Ann' })
    await syncOnce(owner, relay.url)
    const token = tokenFor(owner, holder, { tags: { none: ['secret'] } }, ['read', 'write', 'redact'])
    await syncOnce(holder, relay.url, token)
    // Concurrently: the owner forgets the fact; the holder forgets the episode, taking the fact along.
    await owner.forget(fact)
    await syncOnce(owner, relay.url)
    await holder.forget(episode)
    expect(await syncOnce(holder, relay.url, token)).toEqual([])
    await syncOnce(owner, relay.url)
    expect(await owner.status(episode)).toBe('deleted')
    expect(await storeText(owner)).not.toContain('met Ann')
  })

  it('a frame that repeats an event judges it once, as the log keeps it', async () => {
    const { relay, owner, writer } = await stage()
    const token = tokenFor(owner, writer, { kinds: ['episode'] }, ['read', 'write'])
    const [patch, create] = await patchBeforeCreate(owner, writer)
    const peer = await rawSession(relay.url, writer, owner.space, token)
    await peer.sendMessage({ type: 'events', seq: 1, events: wire([patch, create, patch]) })
    expect((await peer.next('ack'))?.withheld?.map((entry) => entry.event)).toEqual([patch.id])
    await syncOnce(owner, relay.url)
    expect((await owner.log.get(patch.id))?.bodyState).toBe('absent')
    expect(await storeText(owner)).not.toContain('quokka')
    expect((await owner.get('ep_0000000000000bee'))?.summary).toBe('first')
  })

  it('a repeated event whose first copy lacks its body is judged and kept with it', async () => {
    const { relay, owner, writer } = await stage()
    const token = tokenFor(owner, writer, { all: true }, ['read', 'write'])
    const [create] = await craftChain(owner, writer.identity, [
      { op: 'memory.create', data: { kind: 'episode', id: 'ep_0000000000000cab', fields: { id: 'ep_0000000000000cab', summary: 'kept whole' } } },
    ]) as [EventEnvelope]
    const { body: _body, ...header } = create
    const peer = await rawSession(relay.url, writer, owner.space, token)
    await peer.sendMessage({ type: 'events', seq: 1, events: wire([header, create]) })
    expect((await peer.next('ack'))?.withheld).toBeUndefined()
    await syncOnce(owner, relay.url)
    expect((await owner.get('ep_0000000000000cab'))?.summary).toBe('kept whole')
  })

  for (const versions of [[1, 2], [1]]) {
    it(`a frame with an event the relay could not apply at once goes back to wait for its author, nothing of it stored (version ${versions.at(-1)})`, async () => {
      const { relay, owner, writer: holder } = await stage()
      const other = await openReplica(teardown, owner, { grant: true })
      const record = await owner.remember({ kind: 'episode', summary: 'a diagnosis: brucellosis', tags: ['health'] })
      await syncOnce(owner, relay.url)
      const token = tokenFor(owner, holder, { kinds: ['episode'] }, ['read', 'write', 'redact'])
      await syncOnce(holder, relay.url, token)
      // A redaction with a skeleton of the holder's choosing: judged on the record as it is, never let through.
      const tombstone = { id: 'tomb_00000000000000f1', op: 'redact', targetKind: 'episode', targetID: record, deletedAt: '2026-01-01T00:00:00Z', actor: holder.author, derived: {} }
      const [forged] = await craftChain(holder, holder.identity, [
        { op: 'memory.redact', data: { kind: 'episode', id: record, tombstone, skeleton: { id: record, summary: 'FORGED', tags: ['forged'] }, derived: [] } },
      ]) as [EventEnvelope]
      // Another writer deletes the record (its dependencies all at the relay), then writes an event
      // depending on an owner's event the relay lacks: the log would hold both, one signed segment.
      await other.ingest(await owner.log.envelopesSince({}, { signatures: 'stored' }))
      const before = other.versionVector()
      await other.forget(record)
      await owner.remember({ kind: 'preference', key: 'tone', value: 'warm' })
      await other.ingest(await owner.log.envelopesSince({}, { signatures: 'stored' }))
      await other.remember({ kind: 'episode', summary: 'unrelated note' })
      const segment = (await other.log.envelopesSince(before)).filter((envelope) => authorAndSeq(envelope).author === other.author)
      const peer = await RawPeer.connect(relay.url)
      teardown.add(0, () => peer.close())
      expect((await peer.handshake(holder.identity, owner.space, { token, versions }))?.type).toBe('ready')
      await peer.sendMessage({ type: 'events', seq: 1, events: wire([...segment, forged]) })
      const refusal = await peer.next('error')
      expect(refusal?.code).toBe('AWAITING_AUTHOR')
      expect(refusal?.message).toMatch(/depends on event [0-9a-f]{64}, which the relay does not hold/)
      const copy = await download(teardown, relay.url, owner)
      expect(copy.versionVector()[other.author]).toBeUndefined()
      expect((await copy.get(record))?.summary).toBe('a diagnosis: brucellosis')
      expect(await storeText(copy)).not.toContain('FORGED')
    })
  }

  it('the holder\'s own event sent before the one it follows goes back too: judged alone, two changes could take a record out of the scope', async () => {
    const { relay, owner, writer: holder } = await stage()
    const record = await owner.remember({ kind: 'episode', summary: 'shared', tags: ['work', 'home'] })
    await syncOnce(owner, relay.url)
    const token = tokenFor(owner, holder, { tags: { any: ['work', 'home'] } }, ['read', 'write'])
    await syncOnce(holder, relay.url, token)
    const [first, second] = await craftChain(holder, holder.identity, [
      { op: 'memory.patch', data: { kind: 'episode', id: record, remove: { tags: ['work'] } } },
      { op: 'memory.patch', data: { kind: 'episode', id: record, remove: { tags: ['home'] } } },
    ]) as [EventEnvelope, EventEnvelope]
    const peer = await rawSession(relay.url, holder, owner.space, token)
    await peer.sendMessage({ type: 'events', seq: 1, events: wire([second]) })
    expect((await peer.next('error'))?.code).toBe('AWAITING_AUTHOR')
    // In order, the second is withheld: it would move the record out of the scope.
    const again = await rawSession(relay.url, holder, owner.space, token)
    await again.sendMessage({ type: 'events', seq: 1, events: wire([first, second]) })
    expect((await again.next('ack'))?.withheld?.map((entry) => entry.event)).toEqual([second.id])
    await syncOnce(owner, relay.url)
    expect((await owner.get(record))?.tags).toEqual(['home'])
  })

  it('an event after a withheld one of the holder\'s, in the same frame, goes through', async () => {
    const { relay, owner, writer } = await stage()
    const token = tokenFor(owner, writer, { kinds: ['preference'] }, ['read', 'write'])
    const [episode, preference] = await craftChain(owner, writer.identity, [
      { op: 'memory.create', data: { kind: 'episode', id: 'ep_0000000000000d1a', fields: { id: 'ep_0000000000000d1a', summary: 'a private note' } } },
      { op: 'memory.create', data: { kind: 'preference', id: recordIdFor('preference', { key: 'tea' }), fields: { key: 'tea', value: 'oolong' } } },
    ]) as [EventEnvelope, EventEnvelope]
    const peer = await rawSession(relay.url, writer, owner.space, token)
    await peer.sendMessage({ type: 'events', seq: 1, events: wire([episode, preference]) })
    expect((await peer.next('ack'))?.withheld?.map((entry) => entry.event)).toEqual([episode.id])
    await syncOnce(owner, relay.url)
    expect((await owner.get(recordIdFor('preference', { key: 'tea' })))?.value).toBe('oolong')
  })

  for (const versions of [[1, 2], [1]]) {
    it(`an author's events are judged in their chain's order, whatever order the frame gives them (version ${versions.at(-1)})`, async () => {
      const { relay, owner, writer } = await stage()
      const token = tokenFor(owner, writer, { kinds: ['episode'] }, ['read', 'write'])
      const [patch, create] = await patchBeforeCreate(owner, writer)
      const peer = await RawPeer.connect(relay.url)
      teardown.add(0, () => peer.close())
      expect((await peer.handshake(writer.identity, owner.space, { token, versions }))?.type).toBe('ready')
      await peer.sendMessage({ type: 'events', seq: 1, events: wire([create, patch]) })
      const unseen = 'record ep_0000000000000bee is outside the token\'s scope or does not exist here'
      if (versions.includes(2)) {
        const ack = await peer.next('ack')
        expect(ack?.withheld?.map((entry) => [entry.event, entry.message.replace(/ \(event .*\)$/, '')])).toEqual([[patch.id, unseen]])
      } else {
        const refusal = await peer.next('error')
        expect(refusal).toMatchObject({ code: 'PERMISSION_DENIED' })
        expect(refusal?.message).toContain(unseen)
      }
      await syncOnce(owner, relay.url)
      expect(await storeText(owner)).not.toContain('quokka')
    })
  }
})

describe('refusals say nothing of records outside the scope', () => {
  it('a create whose key does not derive its id reads alike for a preference that exists and one that does not', async () => {
    const { relay, owner, writer } = await stage()
    await owner.remember({ kind: 'preference', key: 'medication', value: 'lithium' })
    await syncOnce(owner, relay.url)
    const token = tokenFor(owner, writer, { kinds: ['episode'] }, ['read', 'write'])
    const probes = ['medication', 'religion'].map((key) => ({ op: 'memory.create', data: { kind: 'preference', id: recordIdFor('preference', { key }), fields: { key: 'nope', value: 'x' } } }))
    const peer = await rawSession(relay.url, writer, owner.space, token)
    await peer.sendMessage({ type: 'events', seq: 1, events: wire(await craftChain(owner, writer.identity, probes)) })
    const messages = ((await peer.next('ack'))?.withheld ?? []).map((entry) => entry.message.replace(/pref_\w+/g, 'pref_X').replace(/ \(event .*\)$/, ''))
    expect(messages).toEqual(['a preference takes the id its key derives, not pref_X', 'a preference takes the id its key derives, not pref_X'])
  })

  it('under a tag scope, a deleted preference (its id derives from its key) answers as an absent one', async () => {
    const { relay, owner, writer } = await stage()
    const deleted = await owner.remember({ kind: 'preference', key: 'medication', value: 'lithium', tags: ['secret'] })
    await owner.forget(deleted)
    await syncOnce(owner, relay.url)
    const token = tokenFor(owner, writer, { tags: { any: ['work'] } }, ['read', 'write', 'redact'])
    const absent = recordIdFor('preference', { key: 'religion' })
    const redaction = (id: string) => ({
      op: 'memory.redact',
      data: { kind: 'preference', id, tombstone: { id: `tomb_${id.slice(5)}`, op: 'redact', targetKind: 'preference', targetID: id, deletedAt: '2026-01-01T00:00:00Z', actor: writer.author, derived: {} }, skeleton: { id, tags: ['work'] }, derived: [] },
    })
    const probes = [redaction(deleted), redaction(absent), { op: 'memory.patch', data: { kind: 'preference', id: deleted, set: { value: 'x' } } }, { op: 'memory.patch', data: { kind: 'episode', id: deleted, set: { summary: 'x' } } }]
    const peer = await rawSession(relay.url, writer, owner.space, token)
    await peer.sendMessage({ type: 'events', seq: 1, events: wire(await craftChain(owner, writer.identity, probes)) })
    const messages = ((await peer.next('ack'))?.withheld ?? []).map((entry) => entry.message.replace(/^record \S+ /, 'record X ').replace(/ \(event .*\)$/, ''))
    expect(messages).toEqual(probes.map(() => 'record X is outside the token\'s scope or does not exist here'))
  })

  it('under a tag scope, a redaction of a deleted episode still carries only what a redaction keeps', async () => {
    const { relay, owner, writer } = await stage()
    const deleted = await owner.remember({ kind: 'episode', summary: 'a secret meeting', tags: ['work'] })
    await syncOnce(owner, relay.url)
    const token = tokenFor(owner, writer, { tags: { any: ['work'] } }, ['read', 'write', 'redact'])
    await syncOnce(writer, relay.url, token)
    await owner.forget(deleted)
    await syncOnce(owner, relay.url)
    const tombstone = { id: 'tomb_00000000000000e1', op: 'redact', targetKind: 'episode', targetID: deleted, deletedAt: '2026-01-01T00:00:00Z', actor: writer.author, derived: {} }
    const [forged] = await craftChain(owner, writer.identity, [
      { op: 'memory.redact', data: { kind: 'episode', id: deleted, tombstone, skeleton: { id: deleted, summary: 'FORGED', tags: ['work'] }, derived: [] } },
    ]) as [EventEnvelope]
    const peer = await rawSession(relay.url, writer, owner.space, token)
    await peer.sendMessage({ type: 'events', seq: 1, events: wire([forged]) })
    expect((await peer.next('ack'))?.withheld?.[0]?.message).toMatch(/keeps more of record .* than a redaction keeps/)
    await syncOnce(owner, relay.url)
    expect(await storeText(owner)).not.toContain('FORGED')
  })

  it('a deletion naming a deleted record outside the scope in its derived list reads as one naming an absent record', async () => {
    const relay = await startRelay(teardown)
    const owner = await openOwner(teardown)
    await owner.forget(await owner.remember({ kind: 'preference', key: 'medication', value: 'lithium' }))
    const probe = async (key: string, episode: string): Promise<string> => {
      const writer = await openReplica(teardown, owner, { grant: true })
      await syncOnce(owner, relay.url)
      const token = tokenFor(owner, writer, { kinds: ['episode'] }, ['read', 'write', 'redact'])
      const events = await craftChain(owner, writer.identity, [
        { op: 'memory.create', data: { kind: 'episode', id: episode, fields: { id: episode, summary: 'throwaway' } } },
        { op: 'memory.delete', data: { kind: 'episode', id: episode, tombstone: { reason: 'x' }, derived: [{ kind: 'preference', id: recordIdFor('preference', { key }) }] } },
      ])
      const peer = await rawSession(relay.url, writer, owner.space, token)
      await peer.sendMessage({ type: 'events', seq: 1, events: wire(events) })
      return ((await peer.next('ack'))?.withheld ?? []).map((entry) => entry.message.replace(/(pref|ep)_\w+/g, 'X').replace(/ \(event .*\)$/, '')).join('; ') || 'accepted'
    }
    const deleted = await probe('medication', 'ep_00000000000000a1')
    expect(deleted).toMatch(/outside the token's scope or does not exist here/)
    expect(await probe('religion', 'ep_00000000000000a2')).toBe(deleted)
  })

  it('a change to a record that exists outside the scope and to one that does not exist read alike', async () => {
    const { relay, owner, writer } = await stage()
    await owner.remember({ kind: 'preference', key: 'medication', value: 'lithium' })
    await owner.forget(await owner.remember({ kind: 'fact', episodeID: 'ep_none', subject: 'user', predicate: 'takes', object: 'lithium' }))
    await syncOnce(owner, relay.url)
    const token = tokenFor(owner, writer, { kinds: ['episode'] }, ['read', 'write', 'redact'])
    const facts = (await owner.tombstones()).filter((row) => row.targetKind === 'fact')
    const deletedFact = facts[0]?.targetID as string
    const probes = [
      // a preference that exists, one that does not (their ids derive from their keys)
      { op: 'memory.patch', data: { kind: 'preference', id: recordIdFor('preference', { key: 'medication' }), set: { value: 'x' } } },
      { op: 'memory.patch', data: { kind: 'preference', id: recordIdFor('preference', { key: 'religion' }), set: { value: 'x' } } },
      // claimed as episodes: a deleted fact, and an id nobody holds
      { op: 'memory.patch', data: { kind: 'episode', id: deletedFact, set: { summary: 'x' } } },
      { op: 'memory.patch', data: { kind: 'episode', id: 'fact_0000000000000000', set: { summary: 'x' } } },
      // a preference that exists, as an episode
      { op: 'memory.patch', data: { kind: 'episode', id: recordIdFor('preference', { key: 'medication' }), set: { summary: 'x' } } },
    ]
    const events = await craftChain(owner, writer.identity, probes)
    const peer = await rawSession(relay.url, writer, owner.space, token)
    await peer.sendMessage({ type: 'events', seq: 1, events: wire(events) })
    const ack = await peer.next('ack')
    const messages = (ack?.withheld ?? []).map((entry) => entry.message.replace(/^record \S+ /, 'record X ').replace(/ \(event .*\)$/, ''))
    expect(messages).toEqual(probes.map(() => 'record X is outside the token\'s scope or does not exist here'))
  })
})

/**
 * Live sessions after catch-up, over a relay on loopback: new events reach every live peer once,
 * a peer never sends back what it was just sent, and a token holder that may not write what it
 * receives (a reader, a writer without redact) stays live while others write and delete.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { EventEnvelope, VersionVector } from '../../src/log/index.js'
import { SpaceLog } from '../../src/log/space-log.js'
import { Memory as MemoryClass } from '../../src/memory/index.js'
import { cutFrames } from '../../src/sync/frames.js'
import { decodeMessage, encodeMessage, type Message, type WireEvent } from '../../src/sync/messages.js'
import { HIGH_WATER_BYTES, MAX_FRAME_APPLY_MS, SyncSession, type SyncEndpoint } from '../../src/sync/sync-session.js'
import type { Transport } from '../../src/sync/transport.js'
import type { Memory } from '../../src/memory/index.js'
import {
  openOwner, openReplica, recordStatuses, sleep, startRelay, startSync, Teardown, tokenFor, waitFor,
} from '../helpers/sync-fixtures.js'

const teardown = new Teardown()
afterEach(() => teardown.run())

async function liveOwner() {
  const relay = await startRelay(teardown)
  const owner = await openOwner(teardown)
  await owner.remember({ kind: 'episode', summary: 'before anyone joined' })
  const client = await startSync(teardown, owner, relay.url)
  await client.synced()
  return { relay, owner }
}

const caughtUp = (peer: Memory, owner: Memory) => () => peer.versionVector()[owner.author] === owner.versionVector()[owner.author]

/** A live owner and a live admin peer, both synced and quiet. */
async function livePeerOfOwner() {
  const { relay, owner } = await liveOwner()
  const peer = await openReplica(teardown, owner)
  await owner.grant(peer.author, ['admin'])
  const client = await startSync(teardown, peer, relay.url)
  await client.synced()
  await waitFor(caughtUp(peer, owner), 'the peer to hold the grant')
  await sleep(100)
  return { relay, owner, peer, client }
}

describe('live push', () => {
  it('new events reach a live full-access peer, which stays live, and every log verifies', async () => {
    const { relay, owner } = await liveOwner()
    const peer = await openReplica(teardown, owner)
    await owner.grant(peer.author, ['admin'])
    const client = await startSync(teardown, peer, relay.url)
    await client.synced()
    const statuses = recordStatuses(client)
    for (let i = 0; i < 5; i++) await owner.remember({ kind: 'episode', summary: `live ${i}` })
    await owner.rememberMany(Array.from({ length: 100 }, (_, i) => ({ kind: 'episode', summary: `bulk ${i}` })))
    await waitFor(caughtUp(peer, owner), 'the peer to catch up')
    expect(statuses).toEqual(['live'])
    expect(await peer.digest()).toBe(await owner.digest())
    const report = await peer.log.verify()
    expect(report.ok).toBe(true)
    expect(report.events).toBe(Object.values(owner.versionVector()).reduce((sum, seq) => sum + seq, 0))
  })

  it('live changes travel from the events just applied, without reading the log at the writer or the relay', async () => {
    const { owner, peer } = await livePeerOfOwner()
    const reads = vi.spyOn(SpaceLog.prototype, 'envelopesSince')
    try {
      for (let i = 0; i < 10; i++) {
        await owner.remember({ kind: 'episode', summary: `live ${i}` })
        await waitFor(caughtUp(peer, owner), `live change ${i} to arrive`)
      }
      await owner.rememberMany(Array.from({ length: 50 }, (_, i) => ({ kind: 'episode', summary: `bulk ${i}` })))
      await waitFor(caughtUp(peer, owner), 'the batch to arrive')
      expect(reads).not.toHaveBeenCalled()
    } finally {
      reads.mockRestore()
    }
    expect(await peer.digest()).toBe(await owner.digest())
    expect((await peer.log.verify()).ok).toBe(true)
  })

  // Regression: receiveEvents used to advance peerVector only after ingesting, and applying
  // woke the pump, which sent every live-pushed event straight back to the relay.
  it('a live peer never sends back the events it was just sent', async () => {
    const { owner, peer, client } = await livePeerOfOwner()
    let echoed = 0
    client.on('sent', ({ events }) => { echoed += events })
    await owner.rememberMany(Array.from({ length: 100 }, (_, i) => ({ kind: 'episode', summary: `bulk ${i}` })))
    await waitFor(caughtUp(peer, owner), 'the peer to catch up')
    await sleep(200)
    expect(echoed).toBe(0)
  })

  // Regression: the relay checked echoed events as writes, so the echo above cut a read-only
  // reader (PERMISSION_DENIED, fatal) at the first event anyone else wrote.
  it('a live read-only reader stays live while others write', async () => {
    const { relay, owner } = await liveOwner()
    const reader = await openReplica(teardown, owner)
    const client = await startSync(teardown, reader, relay.url, { token: tokenFor(owner, reader, { all: true }) })
    await client.synced()
    const statuses = recordStatuses(client)
    const first = await owner.remember({ kind: 'episode', summary: 'first live event' })
    await waitFor(async () => (await reader.get(first)) !== undefined, 'the first event to arrive')
    await sleep(200)
    const second = await owner.remember({ kind: 'episode', summary: 'second live event' })
    await waitFor(async () => (await reader.get(second)) !== undefined, 'the second event to arrive', 1000)
    expect(statuses).toEqual(['live'])
  })

  // Regression: the same, for a writer without redact that received a deletion.
  it('a live writer without the redact permission stays live when another peer deletes', async () => {
    const { relay, owner } = await liveOwner()
    const doomed = await owner.remember({ kind: 'episode', summary: 'to be forgotten' })
    const writer = await openReplica(teardown, owner, { grant: true })
    const client = await startSync(teardown, writer, relay.url, { token: tokenFor(owner, writer, { all: true }, ['read', 'write']) })
    await client.synced()
    await waitFor(caughtUp(writer, owner), 'the writer to catch up')
    const statuses = recordStatuses(client)
    await owner.forget(doomed)
    await waitFor(async () => (await writer.status(doomed)) === 'deleted', 'the deletion to arrive')
    await sleep(200)
    expect(statuses).toEqual(['live'])
  })
})

describe('live push while a send is in flight', () => {
  /** A transport whose `events` sends stay pending until released, and an endpoint whose log reads are counted. */
  function harness(options: { heldWork?: Promise<void> } = {}) {
    const sent: Message[] = []
    const held: (() => void)[] = []
    const socket = { buffered: 0 }
    const transport: Transport = {
      get bufferedAmount() {
        return socket.buffered
      },
      isOpen: true,
      send: (data) => {
        const message = decodeMessage(data)
        sent.push(message)
        return message.type === 'events' ? new Promise<void>((resolve) => held.push(resolve)) : Promise.resolve()
      },
      onMessage: () => undefined,
      onClose: () => undefined,
      close: () => undefined,
    }
    let applied: ((envelopes: readonly EventEnvelope[]) => void) | undefined
    let logReads = 0
    const deadlines: (number | undefined)[] = []
    const more: (boolean | undefined)[] = []
    let appliedHeldCount = 0
    const endpoint: SyncEndpoint = {
      space: 'a'.repeat(64),
      versionVector: (): VersionVector => ({}),
      envelopesFor: async () => {
        logReads++
        return { events: [] }
      },
      visible: async (envelopes) => ({ events: envelopes }),
      prepare: async () => undefined,
      ingest: async (_envelopes, deadline, following) => {
        deadlines.push(deadline)
        more.push(following)
      },
      applyHeld: () => {
        appliedHeldCount++
        return options.heldWork
      },
      onApplied: (listener) => {
        applied = listener
        return () => undefined
      },
    }
    const session = new SyncSession(transport, endpoint)
    return {
      session, sent, held, socket, deadlines, more,
      heldApplied: () => appliedHeldCount,
      apply: (envelopes: readonly EventEnvelope[]) => (applied as (envelopes: readonly EventEnvelope[]) => void)(envelopes),
      logReads: () => logReads,
    }
  }

  it('sends what was applied meanwhile together after the send in progress, without reading the log', async () => {
    const memory = await MemoryClass.open({ name: 'coalesce' })
    teardown.add(2, () => memory.close())
    for (let i = 0; i < 4; i++) await memory.remember({ kind: 'episode', summary: `one by one ${i}` })
    const log = await memory.log.envelopesSince({}, { signatures: 'stored' })
    expect(log).toHaveLength(5)
    const { session, sent, held, apply, logReads } = harness()
    await session.start()
    session.receive(encodeMessage({ type: 'want', vector: {} }))
    await waitFor(() => sent.some((message) => message.type === 'caught-up'), 'the empty catch-up')
    expect(logReads()).toBe(1)

    apply(log.slice(0, 2))
    await waitFor(() => held.length === 1, 'the first live frame')
    apply(log.slice(2, 3))
    apply(log.slice(3, 5))
    await sleep(20)
    expect(sent.filter((message) => message.type === 'events')).toHaveLength(1)
    ;(held.shift() as () => void)()
    await waitFor(() => held.length === 1, 'the second live frame')
    const frames = sent.filter((message): message is Extract<Message, { type: 'events' }> => message.type === 'events')
    expect(frames.map((frame) => frame.events.length)).toEqual([2, 3])
    // One signature per author per frame: the newest event of each frame carries it.
    expect(frames.map((frame) => frame.events.filter((event) => event.signature).length)).toEqual([1, 1])
    expect(logReads()).toBe(1)

    // A gap (an event the peer lacks but that is not in the run) sends the session back to the log.
    ;(held.shift() as () => void)()
    await memory.remember({ kind: 'episode', summary: 'skipped' })
    await memory.remember({ kind: 'episode', summary: 'next' })
    const tail = await memory.log.envelopesSince({ [memory.author]: 5 }, { signatures: 'stored' })
    expect(tail).toHaveLength(2)
    apply(tail.slice(1))
    await waitFor(() => logReads() === 2, 'a log read to fill the gap')
    session.close()
  })

  it('holds frames back while the socket buffers more than the high-water mark (backpressure)', async () => {
    const memory = await MemoryClass.open({ name: 'backpressure' })
    teardown.add(2, () => memory.close())
    await memory.remember({ kind: 'episode', summary: 'waits for the socket' })
    const log = await memory.log.envelopesSince({}, { signatures: 'stored' })
    const { session, sent, held, socket, apply } = harness()
    await session.start()
    session.receive(encodeMessage({ type: 'want', vector: {} }))
    await waitFor(() => sent.some((message) => message.type === 'caught-up'), 'the empty catch-up')
    socket.buffered = HIGH_WATER_BYTES + 1
    apply(log)
    await sleep(150)
    expect(sent.filter((message) => message.type === 'events')).toEqual([])
    socket.buffered = HIGH_WATER_BYTES
    await waitFor(() => held.length === 1, 'the frame once the buffer drained')
    expect(sent.filter((message) => message.type === 'events')).toHaveLength(1)
    held.shift()?.()
    session.close()
  })

  it('gives each received frame the apply-time limit as a deadline, and acknowledges it once stored', async () => {
    const memory = await MemoryClass.open({ name: 'deadline' })
    teardown.add(2, () => memory.close())
    await memory.remember({ kind: 'episode', summary: 'arrives in a frame' })
    const [frame] = cutFrames(await memory.log.envelopesSince({}, { signatures: 'stored' }))
    const { session, sent, deadlines } = harness()
    await session.start()
    const before = Date.now()
    session.receive(encodeMessage({ type: 'events', seq: 1, events: frame as WireEvent[] }))
    await waitFor(() => sent.some((message) => message.type === 'ack'), 'the acknowledgement')
    expect(deadlines).toHaveLength(1)
    expect(deadlines[0]).toBeGreaterThanOrEqual(before + MAX_FRAME_APPLY_MS)
    expect(deadlines[0]).toBeLessThanOrEqual(Date.now() + MAX_FRAME_APPLY_MS)
    session.close()
  })

  it('finishes (one-shot) once the work the catch-up set off is done and what it appended is sent and acknowledged', async () => {
    const memory = await MemoryClass.open({ name: 'finish' })
    teardown.add(2, () => memory.close())
    await memory.remember({ kind: 'episode', summary: 'appended after the catch-up' })
    const appended = await memory.log.envelopesSince({}, { signatures: 'stored' })
    let workDone = (): void => undefined
    const { session, sent, held, apply } = harness({ heldWork: new Promise<void>((resolve) => { workDone = resolve }) })
    let synced = false
    session.on('synced', () => { synced = true })
    await session.start()
    session.receive(encodeMessage({ type: 'want', vector: {} }))
    session.receive(encodeMessage({ type: 'caught-up' }))
    await waitFor(() => synced, 'the session to be synced')
    let finished = false
    void session.finish().then(() => { finished = true })
    // The work (an admin naming deletions) appends events: they go out as a live push.
    apply(appended)
    await waitFor(() => held.length === 1, 'the frame of what was appended')
    await sleep(20)
    expect(finished).toBe(false)
    workDone()
    ;(held.shift() as () => void)()
    await sleep(20)
    expect(finished).toBe(false) // sent, not acknowledged yet
    const frame = sent.find((message): message is Extract<Message, { type: 'events' }> => message.type === 'events')
    session.receive(encodeMessage({ type: 'ack', seq: (frame as { seq: number }).seq }))
    await waitFor(() => finished, 'finish to resolve after the acknowledgement')
    session.close()
  })

  it('finishes at once when the session closes, whatever is still pending', async () => {
    const { session } = harness({ heldWork: new Promise<void>(() => undefined) })
    await session.start()
    session.receive(encodeMessage({ type: 'want', vector: {} }))
    session.receive(encodeMessage({ type: 'caught-up' }))
    await sleep(20)
    let finished = false
    void session.finish().then(() => { finished = true })
    await sleep(20)
    expect(finished).toBe(false)
    session.close()
    await waitFor(() => finished, 'finish to resolve on close')
  })

  it('tells the endpoint more frames follow until the peer is caught up, and to apply what it held then and on close', async () => {
    const memory = await MemoryClass.open({ name: 'more' })
    teardown.add(2, () => memory.close())
    await memory.remember({ kind: 'episode', summary: 'in the catch-up' })
    await memory.remember({ kind: 'episode', summary: 'pushed live' })
    const frames = cutFrames(await memory.log.envelopesSince({}, { signatures: 'stored' }), 2)
    expect(frames.length).toBeGreaterThan(1)
    const { session, sent, more, heldApplied } = harness()
    await session.start()
    const acks = () => sent.filter((message) => message.type === 'ack').length
    session.receive(encodeMessage({ type: 'events', seq: 1, events: frames[0] as WireEvent[] }))
    await waitFor(() => acks() === 1, 'the first acknowledgement')
    expect(heldApplied()).toBe(0)
    session.receive(encodeMessage({ type: 'caught-up' }))
    await waitFor(() => heldApplied() === 1, 'the held events to be applied at caught-up')
    session.receive(encodeMessage({ type: 'events', seq: 2, events: frames[1] as WireEvent[] }))
    await waitFor(() => acks() === 2, 'the second acknowledgement')
    expect(more).toEqual([true, false])
    session.close()
    expect(heldApplied()).toBe(2)
  })
})

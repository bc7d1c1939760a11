/**
 * Frames too slow to apply (SLOW_FRAME). A receiver that needed more than the apply-time limit
 * for a frame asks its peer for frames half that size on the next connection; a sender whose
 * frame the peer refused as too slow sends half-size frames from then on. Once a frame of one
 * event is still too slow, the client stops retrying with SLOW_FRAME instead of forever.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { LimitError } from '../../src/errors.js'
import type { EventEnvelope, VersionVector } from '../../src/log/index.js'
import type { Memory } from '../../src/memory/index.js'
import { FrameBudget } from '../../src/sync/frame-budget.js'
import { decodeMessage, encodeMessage, MAX_FRAME_EVENTS, type Message } from '../../src/sync/messages.js'
import { SyncSession, type SyncEndpoint } from '../../src/sync/sync-session.js'
import type { Transport } from '../../src/sync/transport.js'
import { failureOf, openOwner, openReplica, startRelay, startSync, Teardown, waitFor } from '../helpers/sync-fixtures.js'

const teardown = new Teardown()
afterEach(() => teardown.run())

const tooSlow = (): LimitError => new LimitError('SLOW_FRAME', 'the events could not be checked and stored in the time allowed; nothing was stored')

/**
 * An owner on a relay with `count` events, each uploaded in its own frame: a frame may only end
 * at a signature, and the relay keeps one per frame it received, so only then can it cut its
 * frames down to one event.
 */
async function ownerWithEvents(count: number) {
  const relay = await startRelay(teardown)
  const owner = await openOwner(teardown)
  const upload = async () => (await startSync(teardown, owner, relay.url, { live: false })).synced()
  await upload()
  for (let i = 0; i < count; i++) {
    await owner.remember({ kind: 'episode', summary: `event ${i}` })
    await upload()
  }
  return { relay, owner }
}

/** Makes `memory` refuse every frame of more than `most` events as too slow, and records the sizes it got. */
function slowFor(memory: Memory, most: number): number[] {
  const received: number[] = []
  const ingest = memory.ingestDeferred.bind(memory)
  memory.ingestDeferred = async (events, options) => {
    received.push(events.length)
    if (events.length > most) throw tooSlow()
    return ingest(events, options)
  }
  return received
}

const readToken = (owner: Memory, reader: Memory): string => owner.createToken({ audience: reader.author, scope: { all: true }, permissions: ['read'], expiresIn: 3_600_000 })

describe('a receiver too slow for the frames it gets', () => {
  it('asks for half-size frames on each reconnect until they fit, then syncs everything', async () => {
    const { relay, owner } = await ownerWithEvents(24)
    const reader = await openReplica(teardown, owner)
    const received = slowFor(reader, 5)
    const sync = await startSync(teardown, reader, relay.url, { live: false, token: readToken(owner, reader) })
    await sync.synced()
    expect(reader.versionVector()).toEqual(owner.versionVector())
    expect(await reader.digest()).toBe(await owner.digest())
    // Each refused frame at most half the one before; once they fit, they all fit.
    const refused = received.filter((size) => size > 5)
    expect(refused.length).toBeGreaterThan(1)
    for (let i = 1; i < refused.length; i++) expect(refused[i]).toBeLessThanOrEqual(Math.floor((refused[i - 1] as number) / 2))
    expect(received.slice(refused.length).every((size) => size <= 5)).toBe(true)
  })

  it('gives up with SLOW_FRAME once a frame of one event is too slow, instead of retrying forever', async () => {
    const { relay, owner } = await ownerWithEvents(6)
    const reader = await openReplica(teardown, owner)
    const received = slowFor(reader, 0)
    const client = await startSync(teardown, reader, relay.url, { token: readToken(owner, reader) })
    expect((await failureOf(client)).code).toBe('SLOW_FRAME')
    expect(client.status).toBe('error')
    expect(received[received.length - 1]).toBe(1)
    for (let i = 1; i < received.length; i++) expect(received[i]).toBeLessThanOrEqual(Math.floor((received[i - 1] as number) / 2))
  })

  it('gives up when the relay cannot cut frames smaller (they end at the signatures it holds)', async () => {
    const relay = await startRelay(teardown)
    const owner = await openOwner(teardown)
    await owner.rememberMany(Array.from({ length: 30 }, (_, i) => ({ kind: 'episode', summary: `batch ${i}` })))
    await (await startSync(teardown, owner, relay.url, { live: false })).synced()
    const reader = await openReplica(teardown, owner)
    const received = slowFor(reader, 5)
    const client = await startSync(teardown, reader, relay.url, { token: readToken(owner, reader) })
    expect((await failureOf(client)).code).toBe('SLOW_FRAME')
    expect(received.length).toBeLessThanOrEqual(3)
  })
})

describe('a sender whose frames the peer finds too slow', () => {
  /** A session over a transport that keeps what it sends and acknowledges each frame, on an endpoint that offers `events`. */
  function sender(events: readonly EventEnvelope[], budget: FrameBudget) {
    const sent: Message[] = []
    let session: SyncSession | undefined
    const transport: Transport = {
      bufferedAmount: 0,
      isOpen: true,
      send: async (data) => {
        const message = decodeMessage(data)
        sent.push(message)
        if (message.type === 'events') setImmediate(() => session?.receive(encodeMessage({ type: 'ack', seq: message.seq })))
      },
      onMessage: () => undefined,
      onClose: () => undefined,
      close: () => undefined,
    }
    const endpoint: SyncEndpoint = {
      space: 'a'.repeat(64),
      versionVector: (): VersionVector => ({}),
      envelopesFor: async () => ({ events }),
      visible: async (envelopes) => ({ events: envelopes }),
      prepare: async () => undefined,
      ingest: async () => undefined,
      onApplied: () => () => undefined,
    }
    session = new SyncSession(transport, endpoint, undefined, budget)
    const frames = () => sent.flatMap((message) => (message.type === 'events' ? [message.events.length] : []))
    return { session, frames }
  }

  it('halves its frames after the peer reports SLOW_FRAME, and keeps them small on the next connection', async () => {
    const owner = await openOwner(teardown)
    for (let i = 0; i < 40; i++) await owner.remember({ kind: 'episode', summary: `event ${i}` })
    const events = await owner.log.envelopesSince({}, { signatures: 'stored' })
    const budget = new FrameBudget()

    const first = sender(events, budget)
    first.session.receive(encodeMessage({ type: 'want', vector: {} }))
    await waitFor(() => first.frames().length > 0, 'the first frame')
    expect(first.frames()).toEqual([events.length])
    first.session.receive(encodeMessage({ type: 'error', code: 'SLOW_FRAME', message: 'a frame took over 30000 ms to apply' }))
    await first.session.drain()
    expect(budget.send).toBe(Math.floor(events.length / 2))

    const second = sender(events, budget)
    second.session.receive(encodeMessage({ type: 'want', vector: {} }))
    await waitFor(() => second.frames().reduce((sum, size) => sum + size, 0) === events.length, 'every event to be sent again')
    expect(Math.max(...second.frames())).toBeLessThanOrEqual(budget.send)
    second.session.close()
  })

  it('gives up when its frames cannot be cut smaller (a signed segment is one frame at least)', async () => {
    const owner = await openOwner(teardown)
    await owner.rememberMany(Array.from({ length: 40 }, (_, i) => ({ kind: 'episode', summary: `batch ${i}` })))
    const events = await owner.log.envelopesSince({}, { signatures: 'stored' })
    const budget = new FrameBudget()
    for (let round = 0; round < 3 && !budget.exhausted; round++) {
      const { session, frames } = sender(events, budget)
      session.receive(encodeMessage({ type: 'want', vector: {} }))
      await waitFor(() => frames().length > 0, 'a frame')
      session.receive(encodeMessage({ type: 'error', code: 'SLOW_FRAME', message: 'a frame took over 30000 ms to apply' }))
      await session.drain()
    }
    expect(budget.exhausted).toBe(true)
  })

  it('honours the frame size the peer asks for in its want', async () => {
    const owner = await openOwner(teardown)
    for (let i = 0; i < 12; i++) await owner.remember({ kind: 'episode', summary: `event ${i}` })
    const events = await owner.log.envelopesSince({}, { signatures: 'stored' })
    const { session, frames } = sender(events, new FrameBudget())
    session.receive(encodeMessage({ type: 'want', vector: {}, maxFrameEvents: 3 }))
    await waitFor(() => frames().reduce((sum, size) => sum + size, 0) === events.length, 'every event to be sent')
    expect(Math.max(...frames())).toBeLessThanOrEqual(3)
    session.close()
  })
})

it('refuses a want asking for frames of zero or more than the limit', () => {
  expect(() => decodeMessage(encodeMessage({ type: 'want', vector: {}, maxFrameEvents: 0 }))).toThrow(/maxFrameEvents/)
  expect(() => decodeMessage(encodeMessage({ type: 'want', vector: {}, maxFrameEvents: MAX_FRAME_EVENTS + 1 }))).toThrow(/maxFrameEvents/)
  expect(decodeMessage(encodeMessage({ type: 'want', vector: {}, maxFrameEvents: 7 }))).toEqual({ type: 'want', vector: {}, maxFrameEvents: 7 })
})

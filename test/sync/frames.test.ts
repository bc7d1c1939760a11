/**
 * Bad frames, from the decoder up to a running relay. decodeMessage turns any garbage into a
 * ProtocolError and nothing else; cutFrames cuts a log into frames that each end at a signature
 * per author, carry one signature per author, and cover every event in order (so each frame
 * ingests on its own). Against a relay on loopback, a raw `ws` client sends garbage before and
 * after the handshake: each time only that client is disconnected (an error frame and/or a
 * close), while a legitimate peer of the same space stays live and keeps receiving new events.
 */
import { createHash } from 'node:crypto'
import fc from 'fast-check'
import { Packr } from 'msgpackr'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { ProtocolError } from '../../src/errors.js'
import { refusal } from '../helpers/error-code.js'
import type { EventEnvelope, EventId } from '../../src/log/index.js'
import { Memory } from '../../src/memory/index.js'
import { continuationOf, cutFills, cutFrames } from '../../src/sync/frames.js'
import { decodeMessage, encodeMessage, MAX_FRAME_BYTES, MAX_FRAME_EVENTS, MAX_WITHDRAW_RECORDS, type Message, type WireEvent } from '../../src/sync/messages.js'
import type { Relay } from '../../src/sync/relay.js'
import type { SyncClient } from '../../src/sync/sync-client.js'
import { closeAll, deliver, openReplicas } from '../helpers/memory-replicas.js'
import { craftEvent, RawPeer, type Closed } from '../helpers/raw-peer.js'
import { SeededRandom } from '../helpers/seeded-random.js'
import {
  download, openOwner, openReplica, recordStatuses, sleep, startRelay, startSync, Teardown, tokenFor, waitFor,
} from '../helpers/sync-fixtures.js'

const packr = new Packr({ useRecords: false, mapsAsObjects: true, variableMapSize: true })
const HEX = 'ab'.repeat(32)

function decodeOutcome(data: Uint8Array): 'ok' | string {
  try {
    decodeMessage(data)
    return 'ok'
  } catch (error) {
    if (error instanceof ProtocolError) return error.code
    throw error
  }
}

function idOf(header: Uint8Array): EventId {
  return createHash('sha256').update(header).digest('hex') as EventId
}

/** A header as the wire checks it: canonical JSON that starts with the author. */
const wireHeader = (seq: number): Uint8Array => new TextEncoder().encode(`{"author":"${'ab'.repeat(32)}","seq":${seq}}`)
const authorOf = (event: { header: Uint8Array }): string => (JSON.parse(Buffer.from(event.header).toString('utf8')) as { author: string }).author

describe('decodeMessage', () => {
  const samples: Message[] = [
    { type: 'hello', versions: [1, 2], space: HEX, peer: HEX, nonce: new Uint8Array(32).fill(7), token: 'ct1.a.b' },
    { type: 'welcome', version: 1, relay: HEX, nonce: new Uint8Array(32), proof: new Uint8Array(64).fill(1) },
    { type: 'proof', proof: new Uint8Array(64).fill(2) },
    { type: 'ready', permissions: ['read'], full: false },
    { type: 'ready', permissions: ['*'], full: true, genesis: true },
    { type: 'want', vector: { [HEX]: 3 } },
    { type: 'want', vector: {}, maxFrameEvents: 250, rescope: true },
    { type: 'events', seq: 4, events: [{ header: wireHeader(1), body: new Uint8Array([3]), signature: new Uint8Array(64) }, { header: wireHeader(2) }] },
    { type: 'ack', seq: 4 },
    { type: 'ack', seq: 5, withheld: [{ event: HEX, code: 'PERMISSION_DENIED', message: 'record ep_1 is outside the token\'s scope' }] },
    { type: 'caught-up' },
    { type: 'withdraw', records: ['ep_1', 'pref_2'] },
    { type: 'error', code: 'BAD_FRAME', message: 'no' },
  ]

  /** Decoded bytes are Buffers; compare them as plain bytes. */
  const plain = (value: unknown): unknown =>
    value instanceof Uint8Array ? Array.from(value)
      : Array.isArray(value) ? value.map(plain)
        : value !== null && typeof value === 'object' ? Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, plain(inner)]))
          : value

  it('round-trips every message type', () => {
    for (const message of samples) expect(plain(decodeMessage(encodeMessage(message)))).toEqual(plain(message))
  })

  it('never throws anything but a ProtocolError on random bytes', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 512 }), (bytes) => {
      expect(() => decodeOutcome(bytes)).not.toThrow()
    }), { numRuns: 3000 })
  })

  it('never throws anything but a ProtocolError on random msgpack values, typed or not', () => {
    const type = fc.constantFrom('hello', 'welcome', 'proof', 'ready', 'want', 'events', 'ack', 'caught-up', 'withdraw', 'error', 'nope')
    const field = fc.oneof(fc.anything({ maxDepth: 2 }), fc.uint8Array({ maxLength: 80 }), fc.array(fc.anything({ maxDepth: 1 }), { maxLength: 5 }), fc.constant(HEX))
    const typed = fc.record({
      type, versions: field, space: field, peer: field, nonce: field, token: field, genesis: field, version: field, relay: field,
      proof: field, permissions: field, full: field, vector: field, maxFrameEvents: field, rescope: field, seq: field, events: field, records: field, code: field, message: field, withheld: field,
    }, { requiredKeys: ['type'] })
    fc.assert(fc.property(fc.oneof(fc.anything({ maxDepth: 3 }), typed), (value) => {
      let bytes: Uint8Array
      try {
        bytes = packr.pack(value)
      } catch {
        return // msgpackr cannot encode it: nothing to send
      }
      expect(() => decodeOutcome(bytes)).not.toThrow()
    }), { numRuns: 1500 })
  })

  it('refuses every truncation and every single-byte change of valid frames with a ProtocolError or decodes them', () => {
    for (const message of samples) {
      const bytes = encodeMessage(message)
      for (let end = 0; end < bytes.length; end++) expect(decodeOutcome(bytes.subarray(0, end))).not.toBe('ok')
      for (let i = 0; i < bytes.length; i++) {
        const changed = Uint8Array.from(bytes)
        changed[i] = (changed[i] as number) ^ 0xff
        expect(() => decodeOutcome(changed)).not.toThrow()
      }
    }
  })

  it('names the limits: frame size, events per frame, declared lengths, nesting', () => {
    expect(decodeOutcome(new Uint8Array(MAX_FRAME_BYTES + 1))).toBe('FRAME_TOO_LARGE')
    const many = encodeMessage({ type: 'events', seq: 1, events: Array.from({ length: MAX_FRAME_EVENTS + 1 }, () => ({ header: new Uint8Array(1) })) })
    expect(decodeOutcome(many)).toBe('LIMIT')
    const withdrawals = (records: unknown) => decodeOutcome(packr.pack({ type: 'withdraw', records }))
    expect(withdrawals(Array.from({ length: MAX_WITHDRAW_RECORDS + 1 }, (_, i) => `ep_${i}`))).toBe('LIMIT')
    expect(withdrawals([])).toBe('BAD_FRAME')
    expect(withdrawals([''])).toBe('BAD_FRAME')
    expect(withdrawals(['x'.repeat(257)])).toBe('BAD_FRAME')
    expect(withdrawals([7])).toBe('BAD_FRAME')
    expect(withdrawals(['x'.repeat(256)])).toBe('ok')
    expect(decodeOutcome(packr.pack({ type: 'want', vector: {}, rescope: false }))).toBe('BAD_FRAME')
    expect(decodeMessage(packr.pack({ type: 'ready', permissions: [], full: true, genesis: 'maybe' }))).toEqual({ type: 'ready', permissions: [], full: true })
    expect(decodeOutcome(new Uint8Array([0xc6, 0xff, 0xff, 0xff, 0xff, 1, 2, 3]))).toBe('BAD_FRAME')
    expect(decodeOutcome(new Uint8Array([0xdd, 0xff, 0xff, 0xff, 0xff]))).toBe('BAD_FRAME')
    expect(decodeOutcome(new Uint8Array([0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, 0x61]))).toBe('BAD_FRAME')
    expect(decodeOutcome(new Uint8Array(200_000).fill(0x91))).toBe('BAD_FRAME')
    expect(decodeOutcome(new Uint8Array(0))).toBe('BAD_FRAME')
    expect(decodeOutcome(packr.pack({ type: 'hello', versions: '1', space: 42, peer: null, nonce: 'abc' }))).toBe('BAD_FRAME')
    expect(decodeOutcome(packr.pack({ type: 'want', vector: { [HEX.toUpperCase()]: 1 } }))).toBe('BAD_FRAME')
    expect(decodeOutcome(packr.pack({ type: 'ack', seq: -1 }))).toBe('BAD_FRAME')
    const withheld = (list: unknown) => decodeOutcome(packr.pack({ type: 'ack', seq: 1, withheld: list }))
    const entry = { event: HEX, code: 'PERMISSION_DENIED', message: 'no' }
    expect(withheld([entry])).toBe('ok')
    expect(withheld([])).toBe('BAD_FRAME')
    expect(withheld(entry)).toBe('BAD_FRAME')
    expect(withheld([{ ...entry, event: 'ab' }])).toBe('BAD_FRAME')
    expect(withheld([{ ...entry, code: 7 }])).toBe('BAD_FRAME')
    expect(withheld([{ ...entry, message: 'x'.repeat(1001) }])).toBe('BAD_FRAME')
    expect(withheld(Array.from({ length: MAX_FRAME_EVENTS + 1 }, () => entry))).toBe('LIMIT')
    expect(decodeOutcome(packr.pack([1, 2, 3]))).toBe('BAD_FRAME')
  })
})

describe('cutFrames', () => {
  /** A log of 3 authors with batches of random sizes, interleaved by exchanges. */
  async function randomLog(seed: number): Promise<{ envelopes: EventEnvelope[]; space: string; close: () => Promise<void> }> {
    const random = new SeededRandom(seed)
    const { memories } = await openReplicas(3)
    const owner = memories[0] as Memory
    for (let step = 0; step < 8; step++) {
      const memory = random.pick(memories)
      const size = random.pick([1, 1, 2, 5, 17, 40])
      if (size === 1) await memory.remember({ kind: 'episode', summary: `s${step}` })
      else await memory.rememberMany(Array.from({ length: size }, (_, i) => ({ kind: 'episode', summary: `b${step}.${i}` })))
      if (random.int(0, 2) === 0) await deliver(memory, owner)
    }
    for (const memory of memories) await deliver(memory, owner)
    return { envelopes: await owner.log.envelopesSince({}, { signatures: 'stored' }), space: owner.space, close: () => closeAll(memories) }
  }

  it('cuts at signatures: each frame ends signed per author, one signature per author, all events in order', async () => {
    const cut = fc.record({ maxEvents: fc.integer({ min: 1, max: 60 }), targetBytes: fc.integer({ min: 200, max: 20_000 }) })
    await fc.assert(fc.asyncProperty(fc.nat(), fc.array(cut, { minLength: 1, maxLength: 3 }), async (seed, cuts) => {
      const log = await randomLog(seed)
      try {
        for (const { maxEvents, targetBytes } of cuts) await checkCut(log, maxEvents, targetBytes)
      } finally {
        await log.close()
      }
    }), { numRuns: 8 })
  })

  async function checkCut(log: { envelopes: EventEnvelope[]; space: string }, maxEvents: number, targetBytes: number): Promise<void> {
    const frames = cutFrames(log.envelopes, maxEvents, targetBytes)
    // Covered in order, nothing added, nothing lost.
    expect(frames.flat().map((event) => idOf(event.header))).toEqual(log.envelopes.map((envelope) => envelope.id))
    const signedInLog = new Set(log.envelopes.filter((envelope) => envelope.signature).map((envelope) => envelope.id))
    for (const frame of frames) {
      expect(frame.length).toBeGreaterThan(0)
      const last = new Map<string, WireEvent>()
      const signatures = new Map<string, number>()
      for (const event of frame) {
        last.set(authorOf(event), event)
        if (event.signature) signatures.set(authorOf(event), (signatures.get(authorOf(event)) ?? 0) + 1)
      }
      for (const [author, event] of last) {
        expect(event.signature, 'the newest event of each author carries its signature').toBeDefined()
        expect(signedInLog.has(idOf(event.header))).toBe(true)
        expect(signatures.get(author)).toBe(1)
      }
      // Longer than maxEvents only when no signed cut exists within it.
      if (frame.length > maxEvents) {
        const open = new Map<string, boolean>()
        for (const [i, event] of frame.slice(0, maxEvents).entries()) {
          open.set(authorOf(event), signedInLog.has(idOf(event.header)))
          expect([...open.values()].every(Boolean) && i < frame.length - 1, `a cut was possible after ${i + 1} events`).toBe(false)
        }
      }
    }
    // Each frame is a unit a receiver verifies and applies on its own.
    const receiver = await Memory.open({ space: log.space })
    try {
      for (const frame of frames) {
        const result = await receiver.ingest(frame.map((event) => ({ id: idOf(event.header), ...event })))
        expect(result.held).toEqual([])
        expect(result.applied).toHaveLength(frame.length)
      }
      expect((await receiver.log.verify()).ok).toBe(true)
    } finally {
      await receiver.close()
    }
  }

  it('returns no frames for no events', () => {
    expect(cutFrames([])).toEqual([])
  })

  it('cuts fills anywhere, without signatures, and each frame fills in bodies on its own', async () => {
    await fc.assert(fc.asyncProperty(fc.nat(), fc.integer({ min: 1, max: 40 }), fc.integer({ min: 200, max: 20_000 }), async (seed, maxEvents, targetBytes) => {
      const log = await randomLog(seed)
      const receiver = await Memory.open({ space: log.space })
      try {
        const isData = (envelope: EventEnvelope): boolean => !Buffer.from(envelope.header).toString('utf8').includes('"kind":"control"')
        await receiver.ingest(log.envelopes.map((envelope) => (isData(envelope) ? (({ body: _body, ...header }) => header)(envelope) : envelope)))
        const data = log.envelopes.filter(isData)
        const frames = cutFills(data, maxEvents, targetBytes)
        expect(frames.flat().map((event) => idOf(event.header))).toEqual(data.map((envelope) => envelope.id))
        for (const frame of frames) {
          expect(frame.length).toBeGreaterThan(0)
          expect(frame.length).toBeLessThanOrEqual(maxEvents)
          expect(frame.every((event) => event.signature === undefined && event.body !== undefined)).toBe(true)
          const result = await receiver.ingest(frame.map((event) => ({ id: idOf(event.header), ...event })))
          expect(result.filled).toHaveLength(frame.length)
        }
        const full = await Memory.open({ space: log.space })
        try {
          await full.ingest(log.envelopes)
          expect(await receiver.digest()).toBe(await full.digest())
        } finally {
          await full.close()
        }
      } finally {
        await receiver.close()
        await log.close()
      }
    }), { numRuns: 6 })
  })

  // cutFrames may only cut at a signature, so a segment must fit a frame: append batches are
  // signed every 1000 events and every MAX_SEGMENT_BYTES, whatever the bodies' sizes.
  it('keeps every frame within MAX_FRAME_BYTES, even for a bulk batch of large bodies', async () => {
    const memory = await Memory.open({ name: 'big' })
    try {
      await memory.log.appendBatch(memory.identity, Array.from({ length: 56 }, (_, i) => ({ op: 'note', data: `${i}${'x'.repeat(600_000)}` })))
      const frames = cutFrames(await memory.log.envelopesSince({}, { signatures: 'stored' }))
      for (const frame of frames) expect(encodeMessage({ type: 'events', seq: 1, events: frame }).length).toBeLessThanOrEqual(MAX_FRAME_BYTES)
    } finally {
      await memory.close()
    }
  })
})

describe('continuationOf', () => {
  const seqOf = (envelope: EventEnvelope): number => (JSON.parse(Buffer.from(envelope.header).toString('utf8')) as { seq: number }).seq

  /** What a live push may send, computed the slow way: undefined when there is a gap or an unsigned tail. */
  function expected(applied: readonly EventEnvelope[], vector: Record<string, number>): EventEnvelope[] | undefined {
    const fresh = applied.filter((envelope) => seqOf(envelope) > (vector[authorOf(envelope)] ?? 0))
    const authors = new Set(fresh.map(authorOf))
    for (const author of authors) {
      const mine = fresh.filter((envelope) => authorOf(envelope) === author)
      if (seqOf(mine[0] as EventEnvelope) !== (vector[author] ?? 0) + 1) return undefined
      if (!(mine[mine.length - 1] as EventEnvelope).signature) return undefined
    }
    return fresh
  }

  it('sends just-applied events only when they continue the peer\'s vector and end signed per author', async () => {
    const random = new SeededRandom(0xc0de)
    const { memories } = await openReplicas(3)
    try {
      const owner = memories[0] as Memory
      for (let step = 0; step < 10; step++) {
        const memory = random.pick(memories)
        const size = random.pick([1, 1, 2, 5, 17])
        if (size === 1) await memory.remember({ kind: 'episode', summary: `s${step}` })
        else await memory.rememberMany(Array.from({ length: size }, (_, i) => ({ kind: 'episode', summary: `b${step}.${i}` })))
        if (random.int(0, 2) === 0) await deliver(memory, owner)
      }
      for (const memory of memories) await deliver(memory, owner)
      const log = await owner.log.envelopesSince({}, { signatures: 'stored' })
      const tips = owner.versionVector()
      let sent = 0
      let refused = 0
      fc.assert(fc.property(
        fc.nat({ max: log.length }), fc.nat({ max: log.length }),
        fc.dictionary(fc.constantFrom(...Object.keys(tips)), fc.nat({ max: 80 })),
        (a, b, vector) => {
          const applied = log.slice(Math.min(a, b), Math.max(a, b))
          const want = expected(applied, vector)
          const got = continuationOf(applied, vector)
          expect(got?.map((envelope) => envelope.id)).toEqual(want?.map((envelope) => envelope.id))
          if (got && got.length > 0) sent++
          if (!got) refused++
        },
      ), { numRuns: 400 })
      // Both outcomes were exercised, so the property compared something on each side.
      expect(sent).toBeGreaterThan(10)
      expect(refused).toBeGreaterThan(10)
      // The whole log continues an empty vector.
      expect(continuationOf(log, {})?.length).toBe(log.length)
    } finally {
      await closeAll(memories)
    }
  })
})

describe('a bulk batch bigger than a frame', () => {
  const teardown = new Teardown()
  afterAll(() => teardown.run())

  // End to end: a batch of 56 bodies of 600 kB syncs in frames the relay accepts.
  it('syncs to the relay', async () => {
    const relay = await startRelay(teardown)
    const owner = await openOwner(teardown)
    await owner.log.appendBatch(owner.identity, Array.from({ length: 56 }, (_, i) => ({ op: 'note', data: `${i}${'x'.repeat(600_000)}` })))
    const client = await startSync(teardown, owner, relay.url)
    // Before the fix this looped forever (reconnecting after close 1009); synced() rejects on a fatal error.
    await client.synced()
    const copy = await download(teardown, relay.url, owner)
    expect(copy.versionVector()).toEqual(owner.versionVector())
  }, 60_000)
})

describe('malformed frames against a running relay', () => {
  const teardown = new Teardown()
  let relay: Relay
  let owner: Memory
  let legit: Memory
  let legitClient: SyncClient
  let legitStatuses: string[]
  let offender: Memory
  let offenderToken: string
  const random = new SeededRandom(20260301)

  beforeAll(async () => {
    relay = await startRelay(teardown)
    owner = await openOwner(teardown)
    await owner.remember({ kind: 'episode', summary: 'the first note' })
    // The legitimate peer is a reader with a token, like most peers of a relay.
    legit = await openReplica(teardown, owner)
    const ownerClient = await startSync(teardown, owner, relay.url)
    await ownerClient.synced()
    legitClient = await startSync(teardown, legit, relay.url, { token: tokenFor(owner, legit, { all: true }) })
    await legitClient.synced()
    legitStatuses = recordStatuses(legitClient)
    offender = await openReplica(teardown, owner)
    offenderToken = tokenFor(owner, offender, { all: true }, ['read', 'write'])
  })
  afterAll(() => teardown.run())

  let peer: RawPeer | undefined
  afterEach(() => peer?.close())

  /** The offender was disconnected; the legitimate peer is still live and receives a new event. */
  async function expectOnlyOffenderDropped(closed: Closed | undefined, expected: { code?: string; close?: number }): Promise<void> {
    const outcome = closed ?? await Promise.race([peer?.closed, sleep(5000).then(() => undefined)])
    expect(outcome, 'the offender is disconnected').toBeDefined()
    if (expected.close !== undefined) expect(outcome?.code).toBe(expected.close)
    if (expected.code !== undefined) {
      const error = peer?.received.find((message) => message.type === 'error')
      expect(error && 'code' in error ? error.code : undefined).toBe(expected.code)
    }
    const id = await owner.remember({ kind: 'episode', summary: `after an offense ${random.int(0, 1e9)}` })
    await waitFor(async () => (await legit.get(id)) !== undefined, 'the legitimate peer to receive the next event')
    expect(legitClient.status).toBe('live')
    expect(legitStatuses).toEqual(['live'])
  }

  async function connected(): Promise<RawPeer> {
    peer = await RawPeer.connect(relay.url)
    return peer
  }

  async function handshaken(): Promise<RawPeer> {
    const raw = await connected()
    expect((await raw.handshake(offender.identity, owner.space, { token: offenderToken }))?.type).toBe('ready')
    return raw
  }

  const before: { name: string; code: string; frame: () => Uint8Array | string }[] = [
    { name: 'random bytes', code: 'BAD_FRAME', frame: () => Uint8Array.from([0xc1, ...random.bytes(63)]) },
    { name: 'truncated msgpack', code: 'BAD_FRAME', frame: () => encodeMessage({ type: 'hello', versions: [1], space: owner.space, peer: offender.author, nonce: new Uint8Array(32) }).subarray(0, 40) },
    { name: 'wrong types in hello', code: 'BAD_FRAME', frame: () => packr.pack({ type: 'hello', versions: ['1'], space: 42, peer: null, nonce: 'abc' }) },
    { name: 'a huge declared length in msgpack', code: 'BAD_FRAME', frame: () => new Uint8Array([0xc6, 0xff, 0xff, 0xff, 0xf0, 1, 2, 3]) },
    { name: 'deep nesting', code: 'BAD_FRAME', frame: () => new Uint8Array(200_000).fill(0x91) },
    { name: 'an events frame before the handshake', code: 'UNEXPECTED_FRAME', frame: () => encodeMessage({ type: 'events', seq: 1, events: [] }) },
    { name: 'a text frame', code: 'BAD_FRAME', frame: () => '{"type":"hello"}' },
  ]
  for (const { name, code, frame } of before) {
    it(`before the handshake, ${name}: ${code}, only the offender is disconnected`, async () => {
      const raw = await connected()
      await raw.send(frame())
      await expectOnlyOffenderDropped(await raw.closed, { code, close: 4000 })
    })
  }

  it('a frame over MAX_FRAME_BYTES is refused by the WebSocket layer (1009), only the offender is disconnected', async () => {
    const raw = await connected()
    await raw.send(new Uint8Array(MAX_FRAME_BYTES + 1))
    await expectOnlyOffenderDropped(await raw.closed, { close: 1009 })
  })

  it('a WebSocket frame header declaring 2^40 bytes is refused before anything is read (1009)', async () => {
    const raw = await connected()
    // A masked binary frame whose 64-bit length says 1 TiB, followed by a few bytes.
    const header = Buffer.from([0x82, 0xff, 0, 0, 0x01, 0, 0, 0, 0, 0, 1, 2, 3, 4])
    ;(raw.socket as unknown as { _socket: { write(data: Buffer): void } })._socket.write(Buffer.concat([header, Buffer.alloc(16)]))
    await expectOnlyOffenderDropped(await raw.closed, { close: 1009 })
  })

  const after: { name: string; code: string; frame: () => Promise<Uint8Array | string> | Uint8Array | string }[] = [
    { name: 'random bytes', code: 'BAD_FRAME', frame: () => Uint8Array.from([0xc1, ...random.bytes(200)]) },
    { name: 'a text frame', code: 'BAD_FRAME', frame: () => 'hello' },
    { name: 'a second hello', code: 'UNEXPECTED_FRAME', frame: () => encodeMessage({ type: 'hello', versions: [1], space: owner.space, peer: offender.author, nonce: new Uint8Array(32) }) },
    {
      name: `${MAX_FRAME_EVENTS + 1} events in one frame`, code: 'LIMIT',
      frame: () => encodeMessage({ type: 'events', seq: 1, events: Array.from({ length: MAX_FRAME_EVENTS + 1 }, () => ({ header: new Uint8Array(8) })) }),
    },
    {
      name: 'events whose signature does not verify', code: 'BAD_SIGNATURE',
      frame: async () => {
        const event = await craftEvent(owner, offender.identity, { kind: 'episode', id: 'ep_0ffender00000000', fields: { summary: 'forged' } })
        // Signed over something else: the signature is well-formed and wrong.
        const forged = offender.identity.sign(new Uint8Array(32))
        return encodeMessage({ type: 'events', seq: 1, events: [{ header: event.header, body: event.body as Uint8Array, signature: forged }] })
      },
    },
  ]
  for (const { name, code, frame } of after) {
    it(`after the handshake, ${name}: ${code}, only the offender is disconnected`, async () => {
      const raw = await handshaken()
      await raw.send(await frame())
      await expectOnlyOffenderDropped(await raw.closed, { code, close: 4000 })
    })
  }

  it('a connection that does not finish its handshake in time gets HANDSHAKE_TIMEOUT and is closed', async () => {
    const quick = await startRelay(teardown, { handshakeTimeoutMs: 200 })
    const silent = await RawPeer.connect(quick.url)
    const started = Date.now()
    const closed = await silent.closed
    expect(Date.now() - started).toBeLessThan(5_000)
    expect(silent.received).toContainEqual(expect.objectContaining({ type: 'error', code: 'HANDSHAKE_TIMEOUT' }))
    expect(closed.code).toBe(4000)
    await expect(startRelay(teardown, { handshakeTimeoutMs: 0 })).rejects.toMatchObject({ code: 'OUT_OF_RANGE' })
  })

  it('a silent peer that never finishes its handshake does not hold up anyone', async () => {
    const raw = await connected()
    await raw.sendMessage({ type: 'hello', versions: [1], space: owner.space, peer: offender.author, nonce: new Uint8Array(32) })
    expect(await raw.next('welcome')).toBeDefined()
    const id = await owner.remember({ kind: 'episode', summary: 'while a handshake hangs' })
    await waitFor(async () => (await legit.get(id)) !== undefined, 'the legitimate peer to receive the event')
    expect(raw.isClosed).toBe(false)
  })
})

describe('frames that cannot be read name what is wrong', () => {
  it('an events frame whose header cannot be an event header, and a text frame (empty bytes)', () => {
    const events = (header: Uint8Array) => packr.pack({ type: 'events', seq: 1, events: [{ header }] })
    for (const header of [new Uint8Array([1, 2, 3, 4, 5]), new TextEncoder().encode('{"seq":1,"author":"x"}'), new TextEncoder().encode(`{"author":"${'ab'.repeat(31)}"}`)]) {
      const error = refusal(() => decodeMessage(events(header)))
      expect(error.code).toBe('BAD_FRAME')
      expect(error.message).toMatch(/events\[0\]\.header is not an event header/)
    }
    expect(refusal(() => decodeMessage(new Uint8Array(0))).message).toMatch(/text frame/)
  })
})

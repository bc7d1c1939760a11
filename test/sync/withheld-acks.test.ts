/**
 * What a client makes of an `ack.withheld` (sync protocol version 2), with the relay played by
 * the test over a fake transport: only events the acknowledged frame carried count, an ack of
 * nothing in flight counts for nothing, each counted event is reported even where it can no
 * longer be noted, and a relay URL of any shape is noted without failing the session.
 */
import { describe, expect, it } from 'vitest'
import { Memory } from '../../src/index.js'
import { MemoryEndpoint } from '../../src/sync/memory-endpoint.js'
import { decodeMessage, encodeMessage, type Message, type WithheldEvent } from '../../src/sync/messages.js'
import { SyncSession } from '../../src/sync/sync-session.js'
import type { Transport } from '../../src/sync/transport.js'

class FakeTransport implements Transport {
  readonly sent: Message[] = []
  isOpen = true
  bufferedAmount = 0
  async send(data: Uint8Array): Promise<void> {
    this.sent.push(decodeMessage(data))
  }
  onMessage(): void {}
  onClose(): void {}
  close(): void {
    this.isOpen = false
  }
}

const denied = (event: string): WithheldEvent => ({ event, code: 'PERMISSION_DENIED', message: 'record is outside the token\'s scope or does not exist here' })

/** A writer's session with its events sent to the "relay" in one frame: the frame's seq and its events' ids. */
async function sentFrame(memory: Memory, relay = 'ws://127.0.0.1:7357', endpoint = new MemoryEndpoint(memory, { scoped: true, relay })) {
  const transport = new FakeTransport()
  const session = new SyncSession(transport, endpoint, memory.crypto)
  const reported: WithheldEvent[][] = []
  let closed: { error?: unknown } | undefined
  session.on('withheld', ({ events }) => reported.push([...events]))
  session.on('closed', (payload) => (closed = payload))
  session.receive(encodeMessage({ type: 'want', vector: {} }))
  await session.drain()
  await until(() => transport.sent.some((message) => message.type === 'caught-up'))
  const frames = transport.sent.filter((message): message is Extract<Message, { type: 'events' }> => message.type === 'events')
  expect(frames).toHaveLength(1)
  const frame = frames[0] as Extract<Message, { type: 'events' }>
  const ids = frame.events.map((event) => memory.crypto.sha256Hex(event.header))
  const ack = async (seq: number, withheld: WithheldEvent[]): Promise<void> => {
    session.receive(encodeMessage({ type: 'ack', seq, ...(withheld.length > 0 ? { withheld } : {}) }))
    await session.drain()
  }
  return { session, reported, seq: frame.seq, ids, ack, closed: () => closed }
}

async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 5))
  expect(done()).toBe(true)
}

describe('a withheld list in an ack', () => {
  it('counts only the events the acknowledged frame carried, each once', async () => {
    const owner = await Memory.open()
    await owner.remember({ kind: 'episode', summary: 'the owner wrote this' })
    const writer = await Memory.open({ space: owner.space })
    await owner.grant(writer.author)
    await writer.ingest(await owner.events())
    const ownersEvents = new Set<string>((await owner.events()).map((event) => event.id))
    await writer.remember({ kind: 'episode', summary: 'a private note' })
    const { reported, seq, ids, ack } = await sentFrame(writer)
    const mine = ids.find((id) => !ownersEvents.has(id)) as string
    const ownersEvent = ids.find((id) => ownersEvents.has(id)) as string
    const neverSent = 'ab'.repeat(32)
    await ack(seq, [denied(neverSent), denied(ownersEvent), denied(mine), denied(mine)])
    // The owner's event was in the frame, so it is reported, but only the writer's own is noted.
    expect(reported).toEqual([[denied(ownersEvent), denied(mine)]])
    expect((await writer.withheld()).map((note) => note.event)).toEqual([mine])
    await owner.close()
    await writer.close()
  })

  it('in an ack of nothing in flight (or acknowledged already) counts for nothing', async () => {
    const memory = await Memory.open()
    await memory.remember({ kind: 'episode', summary: 'a private note' })
    const { session, reported, seq, ids, ack } = await sentFrame(memory)
    const event = ids[ids.length - 1] as string
    await ack(seq + 7, [denied(event)])
    expect(reported).toEqual([])
    expect(await memory.withheld()).toEqual([])
    // The unknown ack did not count as the frame's: the session is not synced by it.
    session.receive(encodeMessage({ type: 'caught-up' }))
    await session.drain()
    expect(session.synced).toBe(false)
    await ack(seq, [])
    expect(session.synced).toBe(true)
    await ack(seq, [denied(event)])
    expect(reported).toEqual([])
    expect(await memory.withheld()).toEqual([])
    await memory.close()
  })

  it('is noted before it is reported, so a listener finds it in memory.withheld()', async () => {
    const memory = await Memory.open()
    await memory.remember({ kind: 'episode', summary: 'a private note' })
    const { session, seq, ids, ack } = await sentFrame(memory)
    const seen: number[] = []
    session.on('withheld', () => void memory.withheld().then((notes) => seen.push(notes.length)))
    await ack(seq, [denied(ids[ids.length - 1] as string)])
    await until(() => seen.length === 1)
    expect(seen).toEqual([1])
    await memory.close()
  })

  it('does not make a session that closed while it was noted report synced', async () => {
    const memory = await Memory.open()
    await memory.remember({ kind: 'episode', summary: 'a private note' })
    // Noting waits until the test lets it go; meanwhile the session closes (the connection dropped).
    let release: () => void = () => undefined
    const gate = new Promise<void>((resolve) => (release = resolve))
    const endpoint = new MemoryEndpoint(memory, { scoped: true, relay: 'ws://127.0.0.1:7357' })
    const note = endpoint.noteWithheld.bind(endpoint)
    endpoint.noteWithheld = async (events) => {
      await gate
      return note(events)
    }
    const { session, seq, ids } = await sentFrame(memory, undefined, endpoint)
    let synced = false
    session.on('synced', () => (synced = true))
    session.receive(encodeMessage({ type: 'caught-up' }))
    session.receive(encodeMessage({ type: 'ack', seq, withheld: [denied(ids[ids.length - 1] as string)] }))
    await new Promise((resolve) => setTimeout(resolve, 10))
    session.close()
    release()
    await session.drain()
    expect(synced).toBe(false)
    await memory.close()
  })

  it('is reported even for an event forgotten meanwhile, which is not noted', async () => {
    const memory = await Memory.open()
    const id = await memory.remember({ kind: 'episode', summary: 'forgotten before the ack came' })
    const { reported, seq, ids, ack } = await sentFrame(memory)
    const create = ids[ids.length - 1] as string
    await memory.forget(id)
    await ack(seq, [denied(create)])
    expect(reported).toEqual([[denied(create)]])
    expect(await memory.withheld()).toEqual([])
    await memory.close()
  })

  it('is noted under a relay URL of any shape, without its user info or query, and the session goes on', async () => {
    for (const [url, kept] of [
      ['wss://alice:hunter2@relay.example/cairn?invite=x#top', 'wss://relay.example/cairn'],
      ['ws://127.0.0.1:7357', 'ws://127.0.0.1:7357'],
      ['ws://127.0.0.1:1/\uD800', 'ws://127.0.0.1:1/%EF%BF%BD'],
    ] as const) {
      const memory = await Memory.open()
      await memory.remember({ kind: 'episode', summary: 'a private note' })
      const { reported, seq, ids, ack, closed } = await sentFrame(memory, url)
      await ack(seq, [denied(ids[ids.length - 1] as string)])
      expect(closed(), url).toBeUndefined()
      expect(reported, url).toHaveLength(1)
      expect((await memory.withheld()).map((note) => note.relay), url).toEqual([kept])
      expect(JSON.stringify(await memory.withheld())).not.toContain('hunter2')
      await memory.close()
    }
  })
})

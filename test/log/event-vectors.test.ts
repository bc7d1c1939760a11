/**
 * Pins the exact bytes of the log format to vectors made by an independent generator
 * (test/log/vectors/generate-event-vectors.py: Python hashlib and OpenSSL Ed25519).
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { bytesToHex, hexToBytes, utf8Decode, utf8Encode } from '../../src/log/bytes.js'
import { parseJson, type JsonValue } from '../../src/log/canonical-json.js'
import { NativeCrypto, NobleCrypto } from '../../src/log/crypto/index.js'
import { decodeHeader, type EventHeader, type EventKind } from '../../src/log/event.js'
import { buildEvent } from '../../src/log/event-builder.js'
import { Identity } from '../../src/log/identity.js'
import type { AuthorKey, EventId, SpaceId } from '../../src/log/ids.js'
import { LogStore } from '../../src/log/log-store.js'
import { eventSignable } from '../../src/log/signable.js'
import { repoRoot } from '../helpers/conformance.js'

interface VectorEvent {
  name: string
  header: EventHeader
  headerCanonical: string
  id: string
  body: { op: string; data: JsonValue; salt: string }
  bodyCanonical: string
  signature: string
}

const file = parseJson(readFileSync(path.join(repoRoot, 'test/log/vectors/events.json'), 'utf8')) as unknown as {
  keys: { role: string; seed: string; publicKey: string }[]
  space: string
  events: VectorEvent[]
}

function envelope(event: VectorEvent, withSignature: boolean) {
  return {
    id: event.id as EventId,
    header: utf8Encode(event.headerCanonical),
    body: utf8Encode(event.bodyCanonical),
    ...(withSignature ? { signature: hexToBytes(event.signature) } : {}),
  }
}

describe.each([['native', new NativeCrypto()], ['noble', new NobleCrypto()]] as const)('event golden vectors (%s crypto)', (_name, crypto) => {
  it('derives the vector public keys from their seeds', () => {
    for (const key of file.keys) expect(Identity.fromSeed(hexToBytes(key.seed), crypto).author).toBe(key.publicKey)
  })

  for (const vector of file.events) {
    it(`builds "${vector.name}" to the exact header bytes, id, body bytes and signature`, () => {
      const header = vector.header
      const event = buildEvent({
        ...(header.space ? { space: header.space as SpaceId } : {}),
        author: header.author as AuthorKey,
        seq: header.seq,
        ...(header.prev ? { prev: header.prev as EventId } : {}),
        deps: header.deps as EventId[],
        clock: header.clock,
        kind: header.kind as EventKind,
        op: vector.body.op,
        data: vector.body.data,
      }, crypto, hexToBytes(vector.body.salt))
      expect(utf8Decode(event.bodyBytes as Uint8Array)).toBe(vector.bodyCanonical)
      expect(event.headerText).toBe(vector.headerCanonical)
      expect(event.id).toBe(vector.id)
      const key = file.keys.find((k) => k.publicKey === header.author)
      const identity = Identity.fromSeed(hexToBytes(key?.seed ?? ''), crypto)
      expect(bytesToHex(identity.sign(eventSignable(event.id)))).toBe(vector.signature)
      expect(crypto.verify(hexToBytes(vector.signature), eventSignable(vector.id as EventId), header.author)).toBe(true)
    })
  }

  it('decodes every vector header back to its fields', () => {
    for (const vector of file.events) expect(decodeHeader(vector.headerCanonical, vector.id)).toEqual(vector.header)
  })

  it('ingests the vectors into an empty replica, which then verifies', async () => {
    const store = await LogStore.open({ crypto })
    const log = await store.openSpace(file.space)
    const result = await log.ingest(file.events.map((event) => envelope(event, true)))
    expect(result.applied.map((event) => event.id)).toEqual(file.events.map((event) => event.id))
    expect((await log.verify()).ok).toBe(true)
    expect(log.owner).toBe(file.keys[0]?.publicKey)
    await store.close()
  })

  it('accepts the vectors with only each author\'s newest event signed (batch signature)', async () => {
    const store = await LogStore.open({ crypto })
    const log = await store.openSpace(file.space)
    const last = new Map(file.events.map((event) => [event.header.author, event.id]))
    const shipped = file.events.map((event) => envelope(event, last.get(event.header.author) === event.id))
    expect(shipped.filter((event) => event.signature).length).toBe(2)
    const result = await log.ingest(shipped)
    expect(result.applied).toHaveLength(file.events.length)
    const report = await log.verify()
    expect(report).toMatchObject({ ok: true, events: 5, signatures: 2 })
    await store.close()
  })
})

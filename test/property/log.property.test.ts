import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { CairnError } from '../../src/errors.js'
import { utf8Decode, utf8Encode } from '../../src/log/bytes.js'
import type { EventEnvelope } from '../../src/log/event.js'
import type { EventId } from '../../src/log/ids.js'
import { memoryStore, emptyReplica, readStoredRecord, tamperStoredRecord } from '../helpers/log-fixtures.js'
import { historySteps, playHistory, segmentsOf } from '../helpers/log-history.js'
import { SeededRandom } from '../helpers/seeded-random.js'

const authorOf = (envelope: EventEnvelope): string => (JSON.parse(utf8Decode(envelope.header)) as { author: string }).author

function flipByte(bytes: Uint8Array, position: number, mask: number): Uint8Array {
  const copy = Uint8Array.from(bytes)
  const index = position % copy.length
  copy[index] = (copy[index] as number) ^ mask
  return copy
}

describe('log properties', () => {
  it('delivery order does not matter: any permutation, duplication and chunking ingests to the same heads and vector', async () => {
    await fc.assert(fc.asyncProperty(
      historySteps,
      fc.integer({ min: 0, max: 2 ** 31 - 1 }),
      async (steps, seed) => {
        const { full } = await playHistory(steps)
        const envelopes = await full.envelopesSince({}, { signatures: 'stored' })
        const random = new SeededRandom(seed)
        // Split each signed segment into an upper piece (holding the signature) and a lower one.
        const pieces: { segment: number; upper: boolean; events: EventEnvelope[] }[] = []
        segmentsOf(envelopes, authorOf).forEach((segment, index) => {
          const cut = random.int(0, segment.length - 1)
          pieces.push({ segment: index, upper: true, events: segment.slice(cut) })
          if (cut > 0) pieces.push({ segment: index, upper: false, events: segment.slice(0, cut) })
        })
        random.shuffle(pieces)
        // An unsigned lower piece is only authentic once its upper piece is held or applied.
        for (let i = 0; i < pieces.length; i++) {
          const piece = pieces[i] as (typeof pieces)[number]
          if (piece.upper) continue
          const upper = pieces.findIndex((other) => other.segment === piece.segment && other.upper)
          if (upper > i) [pieces[i], pieces[upper]] = [pieces[upper] as never, piece]
        }
        const chunks: EventEnvelope[][] = [[]]
        for (const piece of pieces) {
          if (random.int(0, 2) === 0) chunks.push([])
          const chunk = chunks[chunks.length - 1] as EventEnvelope[]
          chunk.push(...piece.events)
          // Duplicates of anything already delivered may arrive again, anywhere later.
          if (random.int(0, 3) === 0) chunk.push(...piece.events)
        }
        const replica = await emptyReplica(full.space)
        for (const chunk of chunks) {
          random.shuffle(chunk)
          if (chunk.length === 0) continue
          await replica.ingest(chunk)
          // Between deliveries the store must stay verifiable: every chain ends at a signature.
          const report = await replica.verify()
          expect(report.problems).toEqual([])
        }
        expect(replica.heldCount).toBe(0)
        expect(replica.versionVector()).toEqual(full.versionVector())
        expect(replica.heads()).toEqual(full.heads())
        expect((await replica.verify()).ok).toBe(true)
      },
    ), { numRuns: 40 })
  })

  it('tampering is caught at ingest: a flipped byte in any shipped header, body or signature names its event', async () => {
    await fc.assert(fc.asyncProperty(
      historySteps,
      fc.nat(),
      fc.constantFrom('header', 'body', 'signature'),
      fc.nat(),
      fc.integer({ min: 1, max: 255 }),
      async (steps, pick, field, position, mask) => {
        const { full } = await playHistory(steps)
        const envelopes = await full.envelopesSince({}, { signatures: 'stored' })
        const candidates = envelopes.filter((envelope) => envelope[field] !== undefined)
        const target = candidates[pick % candidates.length] as EventEnvelope
        const tampered = envelopes.map((envelope) =>
          envelope === target ? { ...envelope, [field]: flipByte(envelope[field] as Uint8Array, position, mask) } : envelope)
        const replica = await emptyReplica(full.space)
        let caught: unknown
        try {
          await replica.ingest(tampered)
        } catch (error) {
          caught = error
        }
        expect(caught).toBeInstanceOf(CairnError)
        expect((caught as CairnError).where.event).toBe(target.id)
        expect(replica.versionVector()).toEqual({})
      },
    ), { numRuns: 60 })
  })

  it('tampering is caught at rest: a flipped byte in any stored header, body or signature is the first problem verify names', async () => {
    await fc.assert(fc.asyncProperty(
      historySteps,
      fc.nat(),
      fc.constantFrom('header', 'body', 'signature'),
      fc.nat(),
      fc.integer({ min: 1, max: 255 }),
      async (steps, pick, field, position, mask) => {
        const { full } = await playHistory(steps)
        const store = await memoryStore()
        const replica = await store.openSpace(full.space)
        await replica.ingest(await full.envelopesSince({}, { signatures: 'stored' }))
        const ids: EventId[] = []
        for await (const event of replica.readApplied()) {
          if (field === 'header' || (field === 'body' && event.body) || (field === 'signature' && event.signature)) ids.push(event.id)
        }
        const target = ids[pick % ids.length] as EventId
        const before = await readStoredRecord(store, replica.space, target)
        await tamperStoredRecord(store, replica.space, target, (record) => {
          if (field === 'header') return { ...record, header: utf8Decode(flipByte(utf8Encode(record.header), position, mask & 0x7f || 1)) }
          if (field === 'body') return { ...record, body: flipByte(record.body as Uint8Array, position, mask) }
          return { ...record, signature: flipByte(record.signature as Uint8Array, position, mask) }
        })
        expect(await readStoredRecord(store, replica.space, target)).not.toEqual(before)
        const report = await replica.verify()
        expect(report.ok).toBe(false)
        expect(report.problems[0]?.event).toBe(target)
      },
    ), { numRuns: 60 })
  })
})

/**
 * Helpers for log tests: in-memory stores, hand-made events (for events a well-behaved replica
 * would never produce), and direct tampering with stored records.
 */
import { CairnError } from '../../src/errors.js'
import { utf8Encode } from '../../src/log/bytes.js'
import type { JsonValue } from '../../src/log/canonical-json.js'
import { defaultCrypto } from '../../src/log/crypto/index.js'
import type { EventEnvelope, EventKind } from '../../src/log/event.js'
import { buildEvent } from '../../src/log/event-builder.js'
import type { Hlc } from '../../src/log/hlc.js'
import type { Identity } from '../../src/log/identity.js'
import type { EventId, SpaceId } from '../../src/log/ids.js'
import type { LogEvent } from '../../src/log/log-event.js'
import { LogStore } from '../../src/log/log-store.js'
import { eventSignable } from '../../src/log/signable.js'
import type { SpaceLog } from '../../src/log/space-log.js'
import { keys } from '../../src/log/store-keys.js'
import { decodeEventRecord, encodeEventRecord, type EventRecord } from '../../src/log/store-records.js'

export async function memoryStore(): Promise<LogStore> {
  return LogStore.open()
}

/** A fresh in-memory replica of `space`, empty until something is ingested. */
export async function emptyReplica(space: SpaceId): Promise<SpaceLog> {
  return (await memoryStore()).openSpace(space)
}

/** Copies everything `from` has beyond `to`'s version vector into `to`, keeping every signature. */
export async function syncInto(from: SpaceLog, to: SpaceLog): Promise<void> {
  const envelopes = await from.envelopesSince(to.versionVector(), { signatures: 'stored' })
  if (envelopes.length > 0) await to.ingest(envelopes)
}

export interface HandMadeEvent {
  readonly author: Identity
  readonly space: SpaceId
  readonly seq: number
  readonly prev?: EventId
  readonly deps?: readonly EventId[]
  readonly clock: Hlc
  readonly kind?: EventKind
  readonly op?: string
  readonly data?: JsonValue
  readonly sign?: boolean
}

/** Builds and signs an event by hand, bypassing the store's own checks. */
export function handMadeEnvelope(spec: HandMadeEvent): EventEnvelope {
  const event = buildEvent({
    space: spec.space, author: spec.author.author, seq: spec.seq,
    ...(spec.prev ? { prev: spec.prev } : {}),
    deps: spec.deps ?? [], clock: spec.clock, kind: spec.kind ?? 'data', op: spec.op ?? 'test.note', data: spec.data ?? null,
  }, defaultCrypto())
  return {
    id: event.id,
    header: utf8Encode(event.headerText),
    ...(event.bodyBytes ? { body: event.bodyBytes } : {}),
    ...(spec.sign === false ? {} : { signature: spec.author.sign(eventSignable(event.id)) }),
  }
}

/** The error code a promise rejects with (fails the test if it resolves). */
export async function rejectionOf(promise: Promise<unknown>): Promise<CairnError> {
  try {
    await promise
  } catch (error) {
    if (error instanceof CairnError) return error
    throw new Error(`expected a CairnError, got ${String(error)}`, { cause: error })
  }
  throw new Error('expected a rejection, but the promise resolved')
}

export async function readStoredRecord(store: LogStore, space: SpaceId, id: EventId): Promise<EventRecord> {
  const key = keys.event(space, id)
  const bytes = await store.storage.get(key)
  if (!bytes) throw new Error(`no stored record for ${id}`)
  return decodeEventRecord(bytes, key)
}

/** Rewrites a stored event record, as an attacker or a disk fault might. */
export async function tamperStoredRecord(
  store: LogStore,
  space: SpaceId,
  id: EventId,
  change: (record: EventRecord) => EventRecord,
): Promise<void> {
  const record = await readStoredRecord(store, space, id)
  await store.storage.write([{ type: 'put', key: keys.event(space, id), value: encodeEventRecord(change(record)) }])
}

export async function allApplied(log: SpaceLog): Promise<LogEvent[]> {
  const events: LogEvent[] = []
  for await (const event of log.readApplied()) events.push(event)
  return events
}

/** A stable summary of a log's visible state, for before/after comparisons. */
export async function snapshot(log: SpaceLog): Promise<string> {
  const events = await allApplied(log)
  return JSON.stringify({
    vector: log.versionVector(),
    heads: log.heads(),
    events: events.map((event) => [event.id, event.local, event.bodyState]),
    held: log.heldCount,
  })
}

/**
 * One ingest of events shipped from another replica, inside the space's write lock: chains
 * authenticated, the plan split into what applies now and what is held for missing
 * dependencies, held events released in causal order, bodies filled in for header-only
 * copies, and everything written in one storage batch. All-or-nothing for the events passed in
 * (a held event released now that fails its checks is dropped alone, with its dependents).
 */
import { AuthError, CairnError, InputError, LimitError } from '../errors.js'
import { ApplyBatch, NO_DEPS, type StagedEvent } from './apply-batch.js'
import { authenticateChains, type Equivocation } from './chain-authentication.js'
import type { CryptoProvider } from './crypto/index.js'
import { assertEnvelopeList, decodeEnvelope, type DecodedEvent } from './decode-envelope.js'
import { decodeBody, decodeHeader } from './event.js'
import type { EventId, SpaceId } from './ids.js'
import { planIngest, type Candidate } from './ingest-plan.js'
import { utf8Encode } from './bytes.js'
import { isPriorityBody } from './priority-index.js'
import { requirementsOf, type SpaceState } from './space-state.js'
import type { LogStorage, StorageWrite } from './storage.js'
import { keys } from './store-keys.js'
import { decodeEventRecord, decodePending, encodeEventRecord, encodePending } from './store-records.js'

/** More held events than this in one space is refused: a peer cannot fill the disk with orphans. */
export const MAX_HELD_EVENTS = 250_000

export interface IngestContext {
  readonly storage: LogStorage
  readonly state: SpaceState
  readonly crypto: CryptoProvider
  readonly space: SpaceId
  readonly nowMs: () => number
  /** Flags an equivocating author and returns the error to throw. */
  readonly recordEquivocation: (equivocation: Equivocation) => Promise<AuthError>
  /** Wall-clock ms by which the events must be stored; checked between steps, before the write. */
  readonly deadline?: number
}

/** Events applied between two looks at the deadline. */
const DEADLINE_STRIDE = 256

function checkDeadline(context: IngestContext): void {
  if (context.deadline !== undefined && Date.now() > context.deadline) {
    throw new LimitError('SLOW_FRAME', 'the events could not be checked and stored in the time allowed; nothing was stored', { space: context.space })
  }
}

export interface IngestOutcome {
  readonly applied: readonly StagedEvent[]
  readonly held: EventId[]
  readonly duplicates: number
  readonly filled: EventId[]
  readonly rejected: { readonly id: EventId; readonly error: CairnError }[]
}

/** Decodes and checks the envelopes (outside the lock); a duplicated envelope keeps its richest copy. */
export function decodeIngestInput(events: readonly unknown[], space: SpaceId, crypto: CryptoProvider): DecodedEvent[] {
  const list = assertEnvelopeList(events)
  const decoded = new Map<EventId, DecodedEvent>()
  list.forEach((value, index) => {
    const event = decodeEnvelope(value, index, space, crypto)
    const seen = decoded.get(event.id)
    if (!seen || (!seen.signature && event.signature) || (!seen.body && event.body)) {
      decoded.set(event.id, { ...seen, ...event, ...(seen?.signature && !event.signature ? { signature: seen.signature } : {}) })
    }
  })
  return [...decoded.values()]
}

/** Runs one ingest; the caller holds the space's write lock. */
export async function ingestDecoded(context: IngestContext, decoded: readonly DecodedEvent[]): Promise<IngestOutcome> {
  const { storage, state, space } = context
  checkDeadline(context)
  const auth = await authenticateChains(decoded, state, context.crypto)
  if (auth.equivocation) throw await context.recordEquivocation(auth.equivocation)
  checkDeadline(context)
  const fresh: Candidate[] = auth.fresh.map(({ event, segmentEnd }) => ({ event, segmentEnd, wasHeld: false }))
  const plan = await planIngest(fresh, state, space, (id) => loadHeld(context, id))
  if (state.pending.size + plan.hold.length > MAX_HELD_EVENTS) {
    throw new LimitError('TOO_MANY_HELD', `holding more than ${MAX_HELD_EVENTS} events with missing dependencies`, { space })
  }

  const batch = new ApplyBatch(state, context.nowMs())
  const rejected: { id: EventId; error: CairnError }[] = []
  const dropped = new Set<EventId>()
  for (const [index, candidate] of plan.apply.entries()) {
    if (index % DEADLINE_STRIDE === 0) checkDeadline(context)
    const { event } = candidate
    if (dropped.size > 0 && requirementsOf(event.id, event.header, space).some((id) => dropped.has(id))) {
      dropped.add(event.id)
      if (candidate.wasHeld) rejected.push({ id: event.id, error: new InputError('DEPENDENCY_REJECTED', 'depends on a rejected event', { event: event.id }) })
      continue
    }
    try {
      if (event.header.deps.length > 0) await batch.apply(event)
      else batch.applyWith(event, NO_DEPS)
    } catch (error) {
      const failure = batch.equivocation ? await context.recordEquivocation(batch.equivocation) : error
      batch.equivocation = undefined
      // Fresh events are all-or-nothing; a released held event fails alone.
      if (!candidate.wasHeld || !(failure instanceof CairnError)) throw failure
      dropped.add(event.id)
      rejected.push({ id: event.id, error: failure })
    }
  }

  const writes: StorageWrite[] = batch.writes()
  const filled = await fillBodies(context, auth.duplicates, writes)
  for (const candidate of plan.apply) {
    if (candidate.wasHeld) writes.push({ type: 'del', key: keys.pending(space, candidate.event.id) })
  }
  for (const { event, segmentEnd } of plan.hold) {
    writes.push({
      type: 'put',
      key: keys.pending(space, event.id),
      value: encodePending({
        id: event.id, header: event.headerText, segmentEnd,
        ...(event.bodyBytes ? { body: event.bodyBytes } : {}),
        ...(event.signature ? { signature: event.signature } : {}),
      }),
    })
  }
  checkDeadline(context)
  await storage.write(writes)
  batch.commit()
  for (const candidate of plan.apply) if (candidate.wasHeld) state.release(candidate.event.id)
  for (const { event, segmentEnd } of plan.hold) {
    await state.hold({
      id: event.id, author: event.header.author, seq: event.header.seq,
      ...(event.header.prev ? { prev: event.header.prev } : {}),
      requires: requirementsOf(event.id, event.header, space), segmentEnd,
    })
  }
  return {
    applied: batch.applied,
    held: plan.hold.map((candidate) => candidate.event.id),
    duplicates: auth.duplicates.length,
    filled,
    rejected,
  }
}

async function loadHeld(context: IngestContext, id: EventId): Promise<Candidate> {
  const key = keys.pending(context.space, id)
  const bytes = await context.storage.get(key)
  if (!bytes) throw new InputError('UNKNOWN_EVENT', 'held event is missing from the store', { event: id })
  const record = decodePending(bytes, key)
  const header = decodeHeader(record.header, id)
  return {
    event: {
      id, header, headerText: record.header,
      ...(record.body ? { body: decodeBody(record.body, id), bodyBytes: record.body } : {}),
      ...(record.signature ? { signature: record.signature } : {}),
    },
    segmentEnd: record.segmentEnd,
    wasHeld: true,
  }
}

const LATE_BODY_MARK = new Uint8Array(0)

/** A duplicate that carries the body a stored header-only copy lacks fills it in (unless erased). */
async function fillBodies(context: IngestContext, duplicates: readonly DecodedEvent[], writes: StorageWrite[]): Promise<EventId[]> {
  const candidates = duplicates.filter((event) => event.bodyBytes !== undefined)
  if (candidates.length === 0) return []
  const values = await context.storage.getMany(candidates.map((event) => keys.event(context.space, event.id)))
  const filled: EventId[] = []
  candidates.forEach((event, i) => {
    const bytes = values[i]
    if (!bytes) return
    const record = decodeEventRecord(bytes, keys.event(context.space, event.id))
    if (record.erased || record.body !== undefined) return
    writes.push({ type: 'put', key: keys.event(context.space, event.id), value: encodeEventRecord({ ...record, body: event.bodyBytes as Uint8Array }) })
    // Indexed now that its body is here (priority-index.ts); below the index's start too, for a
    // backfill that read the record before this body came (SpaceLog.startPriorityBackfill).
    if (isPriorityBody(event.body)) {
      writes.push({ type: 'put', key: keys.priority(context.space, record.local), value: utf8Encode(event.id) })
    }
    // Until the projection has placed it (a crash may come first): SpaceLog.lateBodies.
    writes.push({ type: 'put', key: keys.lateBody(context.space, event.id), value: LATE_BODY_MARK })
    filled.push(event.id)
  })
  return filled
}

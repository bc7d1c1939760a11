/**
 * Authenticates ingested events through their authors' hash chains. An event is authentic when
 * it carries a valid signature, or when the authentic event one seq above (arriving now or held
 * from earlier) names it as `prev` (so one signature over the newest id of a segment covers the
 * whole segment), or when this store already holds the same id. Every signature that arrives with a new event is checked.
 *
 * Invariant: an event that nothing authenticates
 * is refused (UNSIGNED), never stored unverified. Two authentic events at one (author, seq) are
 * equivocation, reported with both ids; an inauthentic conflicting event frames nobody.
 */
import { VerifyError } from '../errors.js'
import type { CryptoProvider } from './crypto/index.js'
import type { DecodedEvent } from './decode-envelope.js'
import type { AuthorKey, EventId } from './ids.js'
import { eventSignable } from './signable.js'
import type { SpaceState } from './space-state.js'

export interface FreshEvent {
  readonly event: DecodedEvent
  /** The signed event that authenticates this one (itself, when it carries the signature). */
  readonly segmentEnd: EventId
}

export interface Equivocation {
  readonly author: AuthorKey
  readonly seq: number
  /** The id already known (stored, held or first seen) and the conflicting one. */
  readonly ids: readonly [EventId, EventId]
}

export interface AuthenticationResult {
  /** Events this store does not have yet, authenticated. */
  readonly fresh: FreshEvent[]
  /** Events this store already holds (their bodies may fill in ones it lacks). */
  readonly duplicates: DecodedEvent[]
  readonly equivocation?: Equivocation
}

function verifySignature(event: DecodedEvent, crypto: CryptoProvider): void {
  if (!event.signature) return
  if (!crypto.verify(event.signature, eventSignable(event.id), event.header.author)) {
    throw new VerifyError('BAD_SIGNATURE', 'signature does not verify', {
      event: event.id, author: event.header.author, seq: event.header.seq,
    })
  }
}

/**
 * @throws VerifyError BAD_SIGNATURE, UNSIGNED, BROKEN_CHAIN naming the event
 */
export async function authenticateChains(
  events: readonly DecodedEvent[],
  state: SpaceState,
  crypto: CryptoProvider,
): Promise<AuthenticationResult> {
  const byAuthor = new Map<AuthorKey, DecodedEvent[]>()
  for (const event of events) {
    const list = byAuthor.get(event.header.author)
    if (list) list.push(event)
    else byAuthor.set(event.header.author, [event])
  }
  const fresh = new Map<EventId, FreshEvent>()
  const duplicates: DecodedEvent[] = []
  let equivocation: Equivocation | undefined

  for (const [author, list] of byAuthor) {
    list.sort((a, b) => b.header.seq - a.header.seq)
    const lowest = (list[list.length - 1] as DecodedEvent).header.seq
    const highest = (list[0] as DecodedEvent).header.seq
    const tipSeq = state.tips.get(author)?.seq ?? 0
    const stored = await state.idsBySeq(author, lowest, Math.min(highest, tipSeq))

    // The authenticated expectation for the next lower seq: the prev of an authentic event.
    let expected: { seq: number; id: EventId; segmentEnd: EventId } | undefined
    let authenticAtSeq: { seq: number; id: EventId } | undefined

    for (const event of list) {
      const { seq } = event.header
      const where = { event: event.id, author, seq }
      const storedId = stored.get(seq)
      // Most ingests hold nothing: skip building slot keys then.
      const anyHeld = state.pendingSlots.size > 0
      const heldId = anyHeld ? state.pendingSlots.get(`${author}:${seq}`) : undefined
      if (expected && expected.seq > seq) expected = undefined
      if (!expected && anyHeld) {
        // A held event one seq above, already authenticated, may vouch for this one.
        const above = state.pending.get(state.pendingSlots.get(`${author}:${seq + 1}`) as EventId)
        if (above?.prev !== undefined) expected = { seq, id: above.prev, segmentEnd: above.segmentEnd }
      }

      let segmentEnd: EventId | undefined
      if (storedId === event.id) {
        duplicates.push(event)
        segmentEnd = event.id
      } else if (heldId === event.id) {
        segmentEnd = state.pending.get(heldId)?.segmentEnd ?? event.id
        expected = event.header.prev ? { seq: seq - 1, id: event.header.prev, segmentEnd } : undefined
        continue
      } else {
        verifySignature(event, crypto)
        if (expected && expected.seq === seq && expected.id === event.id) segmentEnd = expected.segmentEnd
        else if (event.signature) segmentEnd = event.id
        else if (expected && expected.seq === seq) {
          throw new VerifyError('BROKEN_CHAIN', `event is not the prev (${expected.id}) of the authenticated event above it`, where)
        } else {
          throw new VerifyError('UNSIGNED', 'no signature covers this event: a segment must end with a signed event', where)
        }
        const known = storedId ?? heldId ?? (authenticAtSeq?.seq === seq ? authenticAtSeq.id : undefined)
        if (known !== undefined) {
          equivocation ??= { author, seq, ids: [known, event.id] }
          continue
        }
        fresh.set(event.id, { event, segmentEnd })
      }
      authenticAtSeq = { seq, id: event.id }
      expected = event.header.prev ? { seq: seq - 1, id: event.header.prev, segmentEnd } : undefined
    }
  }
  // Fresh events in arrival order (each chain was walked from its top), which is a causal order
  // whenever the sender shipped one, as sync and bundles do.
  const inArrivalOrder: FreshEvent[] = []
  for (const event of events) {
    const entry = fresh.get(event.id)
    if (entry) inArrivalOrder.push(entry)
  }
  return { fresh: inArrivalOrder, duplicates, ...(equivocation ? { equivocation } : {}) }
}

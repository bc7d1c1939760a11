/**
 * Decides, for one ingest, which events can be applied now and in what order, and which must be
 * held until their dependencies arrive. Held events that the new ones unblock are pulled in.
 *
 * Invariant: a signed segment is applied whole or held whole, so every author's stored chain
 * always ends at an event carrying a signature and can be shipped on with proof.
 */
import type { DecodedEvent } from './decode-envelope.js'
import type { EventId, SpaceId } from './ids.js'
import { requirementsOf, type SpaceState } from './space-state.js'

export interface Candidate {
  readonly event: DecodedEvent
  readonly segmentEnd: EventId
  /** True when the event was already held by this store before this ingest. */
  readonly wasHeld: boolean
}

export interface IngestPlan {
  /** Events to apply, in an order where each one's requirements come first. */
  readonly apply: Candidate[]
  /** Newly arrived events to hold. */
  readonly hold: Candidate[]
}

export async function planIngest(
  fresh: readonly Candidate[],
  state: SpaceState,
  space: SpaceId,
  loadHeld: (id: EventId) => Promise<Candidate>,
): Promise<IngestPlan> {
  return (await planInArrivalOrder(fresh, state, space)) ?? planGeneral(fresh, state, space, loadHeld)
}

/**
 * The common case, cheaply: nothing held waits on what arrives, the events arrive in a causal
 * order (as sync and bundles ship them) and everything outside them is stored. Then the plan is
 * to apply them as they came. Undefined when any of that does not hold.
 */
async function planInArrivalOrder(fresh: readonly Candidate[], state: SpaceState, space: SpaceId): Promise<IngestPlan | undefined> {
  const arriving = new Set<EventId>()
  for (const { event } of fresh) arriving.add(event.id)
  const seen = new Set<EventId>()
  const outside = new Set<EventId>()
  const need = (required: EventId): boolean => {
    if (seen.has(required)) return true
    if (arriving.has(required)) return false
    outside.add(required)
    return true
  }
  for (const { event } of fresh) {
    const { id, header } = event
    if (state.waiters.has(id)) return undefined
    if (header.space !== undefined) {
      if (header.prev !== undefined && !need(header.prev)) return undefined
      for (const dep of header.deps) if (!need(dep)) return undefined
      if ((id as string) !== space && !need(space as string as EventId)) return undefined
    }
    seen.add(id)
  }
  if (outside.size > 0) {
    const stored = await state.storedIds(outside)
    if (stored.size !== outside.size) return undefined
  }
  return { apply: [...fresh], hold: [] }
}

async function planGeneral(
  fresh: readonly Candidate[],
  state: SpaceState,
  space: SpaceId,
  loadHeld: (id: EventId) => Promise<Candidate>,
): Promise<IngestPlan> {
  const candidates = new Map<EventId, Candidate>()
  for (const candidate of fresh) candidates.set(candidate.event.id, candidate)

  // Pull in held events that something arriving now may unblock, whole segments at a time.
  const queue = [...candidates.keys()]
  while (queue.length > 0) {
    const waiting = state.waiters.get(queue.pop() as EventId)
    if (!waiting) continue
    for (const heldId of waiting) {
      const segmentEnd = state.pending.get(heldId)?.segmentEnd
      for (const memberId of segmentEnd ? state.segmentMembers(segmentEnd) : [heldId]) {
        if (candidates.has(memberId)) continue
        candidates.set(memberId, await loadHeld(memberId))
        queue.push(memberId)
      }
    }
  }

  const requires = new Map<EventId, EventId[]>()
  const outside = new Set<EventId>()
  for (const [id, candidate] of candidates) {
    const list = requirementsOf(id, candidate.event.header, space)
    requires.set(id, list)
    for (const required of list) if (!candidates.has(required)) outside.add(required)
  }
  const stored = await state.storedIds(outside)

  const dependents = new Map<EventId, EventId[]>()
  const segments = new Map<EventId, EventId[]>()
  const blocked = new Set<EventId>()
  const toBlock: EventId[] = []
  for (const [id, candidate] of candidates) {
    const members = segments.get(candidate.segmentEnd)
    if (members) members.push(id)
    else segments.set(candidate.segmentEnd, [id])
    for (const required of requires.get(id) as EventId[]) {
      if (candidates.has(required)) {
        const list = dependents.get(required)
        if (list) list.push(id)
        else dependents.set(required, [id])
      } else if (!stored.has(required)) toBlock.push(id)
    }
  }
  // Blocking spreads to everything that depends on a blocked event and to its whole segment.
  while (toBlock.length > 0) {
    const id = toBlock.pop() as EventId
    if (blocked.has(id)) continue
    blocked.add(id)
    for (const next of dependents.get(id) ?? []) toBlock.push(next)
    const segmentEnd = (candidates.get(id) as Candidate).segmentEnd
    for (const member of segments.get(segmentEnd) ?? []) toBlock.push(member)
  }

  // Kahn's algorithm over the unblocked candidates, seeded in arrival order.
  const unmet = new Map<EventId, number>()
  const ready: EventId[] = []
  for (const [id] of candidates) {
    if (blocked.has(id)) continue
    const count = (requires.get(id) as EventId[]).filter((required) => candidates.has(required)).length
    unmet.set(id, count)
    if (count === 0) ready.push(id)
  }
  const apply: Candidate[] = []
  for (let i = 0; i < ready.length; i++) {
    const id = ready[i] as EventId
    apply.push(candidates.get(id) as Candidate)
    for (const next of dependents.get(id) ?? []) {
      if (blocked.has(next)) continue
      const count = (unmet.get(next) as number) - 1
      unmet.set(next, count)
      if (count === 0) ready.push(next)
    }
  }
  const hold = [...candidates.values()].filter((candidate) => blocked.has(candidate.event.id) && !candidate.wasHeld)
  return { apply, hold }
}

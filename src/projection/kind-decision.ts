/**
 * Which kind a record id has when creates of it name two kinds (two replicas chose one id for
 * different records before seeing each other's). The rule (memory-model.md §1.3), the same on
 * every replica whatever order the events came in:
 *
 * - the kind of the earliest create, by stamp (clock, then author and seq);
 * - before any create, the kind of the first operation applied (the record is absent then);
 * - once an event deletes or redacts the record, its kind no longer changes (the bodies of
 *   later creates are erased on arrival, so no replica can weigh them). A deletion inferred
 *   from a parent is no event: such a record keeps its bodies and creates still decide.
 *
 * ProjectionBatch applies the rule as events arrive and, when a create of another kind wins,
 * asks for the record to be replayed; the replay starts each record with the kind
 * `kindsDecided` finds in its events, in log order.
 */
import { compareStamps, type Stamp } from '../crdt/index.js'
import type { LogEvent } from '../log/index.js'
import type { RecordKind } from './kinds.js'
import { decodeMemoryOperation } from './operations.js'

/** The kind each of `ids` takes from `events` (in log order), for those the events touch. */
export function kindsDecided(events: readonly LogEvent[], ids: ReadonlySet<string>): Map<string, RecordKind> {
  const decided = new Map<string, { kind: RecordKind; created?: Stamp }>()
  const closed = new Set<string>()
  for (const event of events) {
    const decoded = event.body ? decodeMemoryOperation(event.body) : undefined
    if (!decoded) continue
    if (decoded.operation.type === 'tombstone') {
      for (const { id, kind } of [decoded, ...(decoded.derived ?? [])]) {
        if (!ids.has(id) || closed.has(id)) continue
        if (!decided.has(id)) decided.set(id, { kind })
        closed.add(id)
      }
      continue
    }
    const { id, kind } = decoded
    if (!ids.has(id) || closed.has(id)) continue
    const { header } = event
    const stamp: Stamp = { wall: header.clock.wall, logical: header.clock.logical, author: header.author, seq: header.seq }
    const held = decided.get(id)
    const isCreate = decoded.operation.type === 'create'
    if (held === undefined) decided.set(id, isCreate ? { kind, created: stamp } : { kind })
    else if (isCreate && (held.created === undefined || compareStamps(stamp, held.created) < 0)) {
      // An earlier create of the kind held only moves the kind's earliest create; of another kind, it wins.
      decided.set(id, { kind, created: stamp })
    }
  }
  return new Map([...decided].map(([id, { kind }]) => [id, kind]))
}

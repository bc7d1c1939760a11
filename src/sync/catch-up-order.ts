/**
 * The order of a catch-up: deletions travel first. Every deletion or redaction the peer lacks
 * goes out right after the events in its causal past (which the receiver needs before it can
 * apply it), and everything else follows in apply order. A peer far behind thus learns of
 * deletions in the first frames, not after everything else: an interrupted catch-up still
 * carries them, and content for a deleted record that comes later is erased as it arrives.
 *
 * Invariant: the result is a causal order of the same events. The first part is the union of
 * the deletions' causal pasts (a down-closed set, kept in apply order); the rest keeps apply
 * order, and its causal past is in the first part or before it.
 */
import type { EventEnvelope, VersionVector } from '../log/index.js'
import { authorAndSeq } from './frames.js'

// A body is canonical JSON with its keys in order (data, op, salt): the operation sits at the
// end, after any user data, and the hex salt closes it.
const TOMBSTONE_TAIL = /"op":"memory\.(delete|redact)","salt":"[0-9a-f]*"\}$/
const TAIL_BYTES = 96

/** Whether an event is a deletion or a redaction, read from the tail of its body. */
export function tombstoneOpOf(envelope: EventEnvelope): 'delete' | 'redact' | undefined {
  const { body } = envelope
  if (!body) return undefined
  const start = Math.max(0, body.byteLength - TAIL_BYTES)
  const match = TOMBSTONE_TAIL.exec(Buffer.from(body.buffer, body.byteOffset + start, body.byteLength - start).toString('latin1'))
  return match ? (match[1] as 'delete' | 'redact') : undefined
}

export function isTombstoneEnvelope(envelope: EventEnvelope): boolean {
  return tombstoneOpOf(envelope) !== undefined
}

/** @param causalVector each event's causal vector (itself included), as the log stores it */
export async function deletionsFirst(
  envelopes: readonly EventEnvelope[],
  causalVector: (id: string) => Promise<VersionVector | undefined>,
): Promise<EventEnvelope[]> {
  const reach: Record<string, number> = {}
  for (const envelope of envelopes) {
    if (!isTombstoneEnvelope(envelope)) continue
    const vector = await causalVector(envelope.id)
    for (const [author, seq] of Object.entries(vector ?? {})) if (seq > (reach[author] ?? 0)) reach[author] = seq
  }
  if (Object.keys(reach).length === 0) return [...envelopes]
  const first: EventEnvelope[] = []
  const rest: EventEnvelope[] = []
  for (const envelope of envelopes) {
    const { author, seq } = authorAndSeq(envelope)
    ;(seq <= (reach[author] ?? 0) ? first : rest).push(envelope)
  }
  return [...first, ...rest]
}

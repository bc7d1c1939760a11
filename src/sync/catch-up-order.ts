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
import type { EventEnvelope, SpaceLog, VersionVector } from '../log/index.js'
import { PRIORITY_OPS } from '../log/priority-index.js'
import { authorAndSeq } from './frames.js'
import { MAX_FRAME_EVENTS } from './messages.js'

// A body is canonical JSON with its keys in order (data, op, salt): the operation sits at the
// end, after any user data, and the hex salt closes it.
const OP_TAIL = /"op":"([^"\\]*)","salt":"[0-9a-f]*"\}$/
const TAIL_BYTES = 96

/**
 * Whether an event is a deletion or a redaction (the ops the log's priority index keeps,
 * PRIORITY_OPS), read from the tail of its body.
 */
export function isTombstoneEnvelope(envelope: EventEnvelope): boolean {
  const { body } = envelope
  if (!body) return false
  const start = Math.max(0, body.byteLength - TAIL_BYTES)
  const match = OP_TAIL.exec(Buffer.from(body.buffer, body.byteOffset + start, body.byteLength - start).toString('latin1'))
  return match !== null && PRIORITY_OPS.has(match[1] as string)
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

/**
 * The events a peer at `since` lacks, in the order `deletionsFirst` gives them, read from the log
 * a batch at a time as the caller asks (a session asks as its window opens), so a catch-up of
 * the whole history holds a batch in memory, not the history, and its first frame goes out at
 * once. The deletions and redactions come from the log's priority index; the first part is then
 * read from the first position beyond `since`, the rest from the first beyond their reach. Each
 * batch ends where every author's last event in it carries a signature (frames end only there).
 *
 * Falls back to `deletionsFirst` over one read of everything (a single batch) when the index
 * does not reach back to the first event beyond `since` (a store from before it), or when that
 * event lies so far back that a read in apply order would mostly pass over events the peer holds.
 */
export async function* catchUpBatches(log: SpaceLog, since: VersionVector, batch = MAX_FRAME_EVENTS): AsyncGenerator<EventEnvelope[]> {
  const start = await log.positionAfter(since)
  if (start === undefined) return
  const upTo = log.appliedCount
  let missing = 0
  for (const [author, seq] of Object.entries(log.versionVector())) missing += Math.max(0, seq - (since[author] ?? 0))
  const priority = upTo - start + 1 <= 2 * missing + batch ? await log.priorityEventsFrom(start) : undefined
  if (priority === undefined) {
    const all = await deletionsFirst(await log.envelopesSince(since, { signatures: 'stored' }), (id) => log.causalVector(id))
    if (all.length > 0) yield all
    return
  }
  // Read together: a space with thousands of deletions would otherwise pay a round trip each.
  // A body erased since no longer makes a deletion to send first (as deletionsFirst sees it).
  const tombstones = (await log.envelopesOf(priority)).filter((envelope) => {
    const { author, seq } = authorAndSeq(envelope)
    return seq > (since[author] ?? 0) && isTombstoneEnvelope(envelope)
  })
  const reach: Record<string, number> = {}
  for (const vector of (await log.causalVectors(tombstones.map((envelope) => envelope.id))).values()) {
    for (const [author, seq] of Object.entries(vector)) if (seq > (reach[author] ?? 0)) reach[author] = seq
  }
  const cutter = new SignedBatches(batch)
  let firstPart = 0
  for (const [author, seq] of Object.entries(reach)) firstPart += Math.max(0, seq - (since[author] ?? 0))
  if (firstPart > 0) {
    for await (const envelopes of log.envelopesFrom(start, { to: upTo, batch })) {
      const first = envelopes.filter((envelope) => {
        const { author, seq } = authorAndSeq(envelope)
        return seq > (since[author] ?? 0) && seq <= (reach[author] ?? 0)
      })
      firstPart -= first.length
      yield* cutter.push(first)
      if (firstPart <= 0) break
    }
  }
  const beyond: Record<string, number> = { ...since }
  for (const [author, seq] of Object.entries(reach)) if (seq > (beyond[author] ?? 0)) beyond[author] = seq
  const rest = await log.positionAfter(beyond)
  if (rest !== undefined) {
    for await (const envelopes of log.envelopesFrom(rest, { to: upTo, batch })) {
      yield* cutter.push(envelopes.filter((envelope) => {
        const { author, seq } = authorAndSeq(envelope)
        return seq > (beyond[author] ?? 0)
      }))
    }
  }
  yield* cutter.end()
}

/**
 * Regroups a stream of events into batches that each end where every author's last event in the
 * batch is signed: once `size` are pending, at the last such place among them, which may come
 * before the `size`th (on a store synced through frames most events carry no signature); the
 * last batch takes what is left.
 */
class SignedBatches {
  private pending: EventEnvelope[] = []

  constructor(private readonly size: number) {}

  *push(envelopes: readonly EventEnvelope[]): Generator<EventEnvelope[]> {
    for (const envelope of envelopes) this.pending.push(envelope)
    if (this.pending.length < this.size) return
    const cut = lastSignedCut(this.pending)
    if (cut === 0) return
    yield this.pending.slice(0, cut)
    this.pending = this.pending.slice(cut)
  }

  *end(): Generator<EventEnvelope[]> {
    if (this.pending.length > 0) yield this.pending
    this.pending = []
  }
}

/** The longest prefix after which every author's last event is signed (0: none). */
function lastSignedCut(envelopes: readonly EventEnvelope[]): number {
  const latestSigned = new Map<string, boolean>()
  let unsigned = 0
  let cut = 0
  envelopes.forEach((envelope, i) => {
    const { author } = authorAndSeq(envelope)
    const signed = envelope.signature !== undefined
    if (latestSigned.get(author) === false) unsigned--
    if (!signed) unsigned++
    latestSigned.set(author, signed)
    if (unsigned === 0) cut = i + 1
  })
  return cut
}

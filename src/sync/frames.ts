/**
 * Cuts a run of events (in apply order, with every stored signature) into frames the receiver
 * can ingest one at a time. A frame may only end where every author's newest event in it carries
 * a signature (so each author's range in the frame is a signed segment), and within a frame only
 * that newest event keeps its signature: one verification per author per frame.
 */
import type { EventEnvelope } from '../log/index.js'
import { MAX_FRAME_EVENTS, type WireEvent } from './messages.js'

/** Soft size of a frame: frames close at the first allowed cut past this. */
export const TARGET_FRAME_BYTES = 4 * 1024 * 1024

// A canonical header starts with {"author":"<64 hex>": the author is at a fixed offset.
const AUTHOR_START = '{"author":"'.length

function authorOf(envelope: { readonly header: Uint8Array }): string {
  return Buffer.from(envelope.header.buffer, envelope.header.byteOffset + AUTHOR_START, 64).toString('latin1')
}

const SEQ = /"seq":(\d+)/

/** The author and seq of an event, read from its canonical header. */
export function authorAndSeq(envelope: { readonly header: Uint8Array }): { author: string; seq: number } {
  return { author: authorOf(envelope), seq: seqOf(envelope) }
}

function seqOf(envelope: { readonly header: Uint8Array }): number {
  return Number(SEQ.exec(Buffer.from(envelope.header.buffer, envelope.header.byteOffset, envelope.header.byteLength).toString('latin1'))?.[1] ?? 0)
}

/** For each author, the highest seq among these events (headers are canonical, so parsing is cheap). */
export function vectorOfEvents(events: readonly { readonly header: Uint8Array }[]): Record<string, number> {
  const vector: Record<string, number> = {}
  for (const event of events) {
    const author = authorOf(event)
    const seq = seqOf(event)
    if (seq > (vector[author] ?? 0)) vector[author] = seq
  }
  return vector
}

/**
 * Of events just applied (in apply order), those a peer at `vector` lacks, when they continue
 * the vector with no gap and each author's last one carries a signature: then they can be sent
 * as they are. Undefined otherwise (the log must be read to fill the gap or find the signature).
 */
export function continuationOf(envelopes: readonly EventEnvelope[], vector: Readonly<Record<string, number>>): EventEnvelope[] | undefined {
  const next = new Map<string, number>()
  const signed = new Map<string, boolean>()
  const out: EventEnvelope[] = []
  for (const envelope of envelopes) {
    const author = authorOf(envelope)
    const seq = seqOf(envelope)
    const expected = next.get(author) ?? (vector[author] ?? 0) + 1
    if (seq < expected) continue
    if (seq > expected) return undefined
    next.set(author, seq + 1)
    signed.set(author, envelope.signature !== undefined)
    out.push(envelope)
  }
  for (const isSigned of signed.values()) if (!isSigned) return undefined
  return out
}

function sizeOf(envelope: EventEnvelope): number {
  return envelope.header.length + (envelope.body?.length ?? 0) + (envelope.signature ? 64 : 0) + 24
}

/** Keeps each author's newest signature in the frame and drops the others. */
function toWire(frame: readonly EventEnvelope[]): WireEvent[] {
  const last = new Map<string, number>()
  frame.forEach((envelope, i) => last.set(authorOf(envelope), i))
  return frame.map((envelope, i) => ({
    header: envelope.header,
    ...(envelope.body ? { body: envelope.body } : {}),
    ...(envelope.signature && last.get(authorOf(envelope)) === i ? { signature: envelope.signature } : {}),
  }))
}

export function cutFrames(envelopes: readonly EventEnvelope[], maxEvents = MAX_FRAME_EVENTS, targetBytes = TARGET_FRAME_BYTES): WireEvent[][] {
  const frames: WireEvent[][] = []
  let start = 0
  while (start < envelopes.length) {
    const latestSigned = new Map<string, boolean>()
    let unsigned = 0
    let bytes = 0
    let lastCut = -1
    let end = start
    for (; end < envelopes.length && end - start < maxEvents; end++) {
      const envelope = envelopes[end] as EventEnvelope
      const author = authorOf(envelope)
      const before = latestSigned.get(author)
      const signed = envelope.signature !== undefined
      if (before === false) unsigned--
      if (!signed) unsigned++
      latestSigned.set(author, signed)
      bytes += sizeOf(envelope)
      if (unsigned === 0) {
        lastCut = end + 1
        if (bytes >= targetBytes) break
      }
    }
    // No signed boundary within the limit: an author's segment is longer than a frame, so the
    // frame grows to the end of that segment (a segment is at most one append batch).
    if (lastCut === -1) {
      for (; end < envelopes.length; end++) {
        const envelope = envelopes[end] as EventEnvelope
        const author = authorOf(envelope)
        const before = latestSigned.get(author)
        if (before === false) unsigned--
        if (envelope.signature === undefined) unsigned++
        latestSigned.set(author, envelope.signature !== undefined)
        if (unsigned === 0) {
          lastCut = end + 1
          break
        }
      }
      if (lastCut === -1) lastCut = envelopes.length
    }
    frames.push(toWire(envelopes.slice(start, lastCut)))
    start = lastCut
  }
  return frames
}

/**
 * Cuts bodies for events the receiver already holds header-only (fills) into frames. They need
 * no signature, the receiver checks each against the body hash of the header it holds, so they
 * go without one and a frame may end anywhere.
 */
export function cutFills(envelopes: readonly EventEnvelope[], maxEvents = MAX_FRAME_EVENTS, targetBytes = TARGET_FRAME_BYTES): WireEvent[][] {
  const frames: WireEvent[][] = []
  let frame: WireEvent[] = []
  let bytes = 0
  for (const envelope of envelopes) {
    if (!envelope.body) continue
    frame.push({ header: envelope.header, body: envelope.body })
    bytes += sizeOf(envelope)
    if (frame.length >= maxEvents || bytes >= targetBytes) {
      frames.push(frame)
      frame = []
      bytes = 0
    }
  }
  if (frame.length > 0) frames.push(frame)
  return frames
}

/**
 * Text forms of log events for people and for programs.
 *
 * Invariants: the JSON form is complete (every header field, the body, the signature, where
 * the event sits in this store) and bigint-safe because it goes through canonical JSON; the
 * human form is one line per event in fixed-width columns computed before the first row, so a
 * listing streams without buffering the log.
 */
import { bytesToHex, canonicalJson, shortId, type JsonValue, type LogEvent, type VersionVector } from '../index.js'

const PREVIEW_CHARS = 48
const LONG_HEX = /[0-9a-f]{64}/g

/** One event as a JSON value: `header` exactly as hashed, `body` and `signature` null when absent. */
export function eventToJson(event: LogEvent): JsonValue {
  const header = event.header
  return {
    id: event.id,
    local: event.local,
    recordedAt: event.recordedAt,
    header: {
      v: header.v,
      ...(header.space !== undefined ? { space: header.space } : {}),
      author: header.author,
      seq: header.seq,
      ...(header.prev !== undefined ? { prev: header.prev } : {}),
      deps: [...header.deps],
      clock: { wall: header.clock.wall, logical: header.clock.logical },
      kind: header.kind,
      bodyHash: header.bodyHash,
      bodySize: header.bodySize,
    },
    bodyState: event.bodyState,
    body: event.body ? { op: event.body.op, data: event.body.data, salt: event.body.salt } : null,
    signature: event.signature ? bytesToHex(event.signature) : null,
  }
}

/** One line of JSON per event (JSON Lines), keys in canonical order. */
export function eventJsonLine(event: LogEvent): string {
  return `${canonicalJson(eventToJson(event))}\n`
}

/** ISO time to the second, which is as much as a listing needs. */
export function formatTime(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19)}Z`
}

/** The body's data on one line, with 64-hex ids shortened, cut to a fixed width. */
export function previewData(event: LogEvent): string {
  if (event.bodyState === 'erased') return '(erased)'
  if (!event.body) return '(no body)'
  const text = canonicalJson(event.body.data).replace(LONG_HEX, (hex) => shortId(hex))
  return text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS - 1)}…` : text
}

export interface EventTable {
  readonly heading: string
  row(event: LogEvent): string
}

/**
 * Columns sized from the version vector: its sum is the number of applied events (each
 * author's chain is 1..seq) and its largest entry is the widest seq.
 */
export function eventTable(vector: VersionVector): EventTable {
  const seqs = Object.values(vector)
  const total = seqs.reduce((sum, seq) => sum + seq, 0)
  const localWidth = Math.max(1, String(total).length)
  const seqWidth = Math.max(3, String(Math.max(0, ...seqs)).length)
  const idWidth = 13
  const opWidth = 14
  const columns = (local: string, id: string, author: string, seq: string, signed: string, time: string, op: string, data: string) =>
    [local.padStart(localWidth), id.padEnd(idWidth), author.padEnd(idWidth), seq.padStart(seqWidth), signed.padEnd(3),
      time.padEnd(20), op.padEnd(opWidth), data].join('  ').trimEnd()
  return {
    heading: columns('#', 'id', 'author', 'seq', 'sig', 'time', 'op', 'data'),
    row: (event) => columns(
      String(event.local), shortId(event.id), shortId(event.header.author), String(event.header.seq),
      event.signature ? 'yes' : '', formatTime(event.header.clock.wall), event.body?.op ?? `(${event.header.kind})`, previewData(event),
    ),
  }
}

/**
 * This replica's writes that a relay keeps as headers only (sync protocol version 2): the token
 * it syncs through does not allow them, so their content stays on this device for good (no later
 * sync sends the body again, docs/protocol.md §4). A relay says so once, in the `ack` of the frame
 * that carried the event; this keeps its word, so an app can show what was not shared
 * (`memory.withheld()`) and `cairn withheld` can list it long after the sync that learned it.
 *
 * Stored under `<space>:w:<event>:<relay hash>` (store-keys.ts), one entry per event and relay:
 * two relays with different tokens may judge the same event differently. The record and the op
 * are read from the event's body when the note is taken, since a later forget erases that body.
 * Only events this replica wrote and holds with their body are noted, and the session passes on
 * only events the acknowledged frame carried (sync-session.ts), so a relay can speak only of
 * what it was sent. The relay is kept as its URL without user info, query or fragment.
 */
import { StorageError } from '../errors.js'
import { canonicalJson, parseJson, type JsonValue, type SpaceLog } from '../log/index.js'
import type { LogStorage } from '../log/storage.js'
import { keys } from '../log/store-keys.js'
import { isRecordKind, type RecordKind } from '../projection/index.js'

/** What a relay said of one event it keeps as a header only. */
export interface WithheldWrite {
  /** The event id (64 hex). */
  readonly event: string
  /** The event's position in this store (its apply order): the list is sorted by it. */
  readonly local: number
  /** The operation (`memory.create`, `memory.patch`, …), read from the body when the relay spoke. */
  readonly op: string
  /** The record the event wrote, when its body named one. */
  readonly record?: { readonly kind: RecordKind; readonly id: string }
  /** The relay's reason, as a refusal would have given it (`PERMISSION_DENIED` and its text). */
  readonly code: string
  readonly message: string
  /** The relay's URL as this replica synced with it, without user info, query or fragment (relayName). */
  readonly relay: string
  /** When this replica learned it (ms since the epoch). */
  readonly at: number
}

/** What a relay reported: the event and its reason (`ack.withheld`, sync/messages.ts). */
export type WithheldReport = Pick<WithheldWrite, 'event' | 'code' | 'message'>

/** Notes are read from the log and written this many at a time, yielding between: a 5,000-event ack stays responsive. */
const NOTE_CHUNK = 256

/** Schemes whose URLs have a host: their user info and query are dropped from a relay's name. */
const HOST_SCHEMES = new Set(['ws:', 'wss:', 'http:', 'https:'])

/**
 * The relay as a note keeps it: scheme, host and path of its URL, so user info (a password), the
 * query and the fragment are not kept. Other text is kept as given, with any lone surrogate
 * replaced (U+FFFD), so it always encodes.
 */
export function relayName(url: string): string {
  try {
    const parsed = new URL(url)
    if (HOST_SCHEMES.has(parsed.protocol)) return `${parsed.protocol}//${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}`
  } catch {
    // Not a URL: kept as given.
  }
  return url.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD')
}

function noteKey(space: string, event: string, relayHash: string): string {
  return `${keys.withheldPrefix(space)}${event}:${relayHash}`
}

function encodeNote(note: WithheldWrite): Uint8Array {
  return new TextEncoder().encode(canonicalJson(note as unknown as JsonValue))
}

function decodeNote(key: string, bytes: Uint8Array): WithheldWrite {
  const damaged = (): never => {
    throw new StorageError('CORRUPT_STORE', 'a withheld-write entry is damaged', { key })
  }
  let value: unknown
  try {
    value = parseJson(new TextDecoder().decode(bytes))
  } catch {
    return damaged()
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return damaged()
  const note = value as Record<string, unknown>
  const texts = ['event', 'op', 'code', 'message', 'relay'] as const
  if (!texts.every((name) => typeof note[name] === 'string') || !Number.isSafeInteger(note.local) || !Number.isSafeInteger(note.at)) return damaged()
  const record = note.record as { kind?: unknown; id?: unknown } | undefined
  if (record !== undefined && (typeof record !== 'object' || record === null || !isRecordKind(record.kind) || typeof record.id !== 'string')) return damaged()
  return note as unknown as WithheldWrite
}

/**
 * Keeps what a relay reported of `reports`: those that are events of `author` this store holds
 * with their body. An event already noted for this relay keeps its first note.
 * @param relayHash identifies the relay in keys (a hash of `relay`: any text fits a key that way)
 * @returns the notes taken now, in the reports' order (not those kept from before)
 */
export async function noteWithheld(
  storage: LogStorage, log: SpaceLog, author: string, relay: string, relayHash: string, reports: readonly WithheldReport[], now: number,
): Promise<WithheldWrite[]> {
  // A relay's first word on an event stands, within one report as across them.
  const first = new Map<string, WithheldReport>()
  for (const report of reports) if (!first.has(report.event)) first.set(report.event, report)
  const unique = [...first.values()]
  const taken: WithheldWrite[] = []
  for (let start = 0; start < unique.length; start += NOTE_CHUNK) {
    if (start > 0) await new Promise((resolve) => setImmediate(resolve))
    const chunk = unique.slice(start, start + NOTE_CHUNK)
    const noteKeys = chunk.map((report) => noteKey(log.space, report.event, relayHash))
    const stored = await storage.getMany(noteKeys)
    const writes: { type: 'put'; key: string; value: Uint8Array }[] = []
    for (let i = 0; i < chunk.length; i++) {
      if (stored[i] !== undefined) continue
      const report = chunk[i] as WithheldReport
      const event = await log.get(report.event)
      if (event === undefined || event.header.author !== author || event.body === undefined) continue
      const data = event.body.data as { kind?: unknown; id?: unknown } | null
      const names = typeof data === 'object' && data !== null && isRecordKind(data.kind) && typeof data.id === 'string' && data.id.length > 0
      const note: WithheldWrite = {
        event: event.id, local: event.local, op: event.body.op,
        ...(names ? { record: { kind: data.kind as RecordKind, id: data.id as string } } : {}),
        code: report.code, message: report.message, relay, at: now,
      }
      writes.push({ type: 'put', key: noteKeys[i] as string, value: encodeNote(note) })
      taken.push(note)
    }
    if (writes.length > 0) await storage.write(writes)
  }
  return taken
}

/** Every note kept, in the order this store applied the events (then by relay). */
export async function listWithheld(storage: LogStorage, space: string): Promise<WithheldWrite[]> {
  const prefix = keys.withheldPrefix(space)
  const notes: WithheldWrite[] = []
  for await (const [key, value] of storage.entries({ gte: prefix, lt: keys.end(prefix) })) notes.push(decodeNote(key, value))
  return notes.sort((a, b) => a.local - b.local || (a.relay < b.relay ? -1 : a.relay > b.relay ? 1 : 0))
}

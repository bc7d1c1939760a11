/**
 * When another system's export (an adapter's source) wrote each record it carries, from the
 * record's own times: what its import passes to mergeRecords as `sourceTimes`, so a field written
 * here after the source last changed the entry keeps its value (merge-records.ts). Not for PAM
 * artifacts: a Cairn PAM entry's `created_at` is its record's ingestion time, older than an edit
 * the entry carries, so it would date that edit too early; a PAM import dates records by the
 * write times a Cairn entry signs (`cairn.writtenAtMs`) instead. Both warn of times in the future.
 */
import type { JsonValue } from '../log/index.js'
import type { RecordKind } from '../projection/index.js'
import type { AdapterWarning } from './adapters/index.js'

/**
 * The fields of each kind that say when its source wrote the entry (created, updated, stated,
 * stored), not when something it describes holds (valid times, expiries, access times).
 */
const SOURCE_TIME_FIELDS: Readonly<Partial<Record<RecordKind, readonly string[]>>> = {
  episode: ['eventTime', 'mentionTime', 'ingestionTime'],
  entity: ['updatedAt'],
  edge: ['ingestionTime'],
  fact: ['createdAt'],
  factLink: ['createdAt'],
  resource: ['created', 'modified'],
  context: ['createdAt'],
  secretRef: ['createdAt'],
}

/**
 * When a record was last written in its source, in ms: the latest of its source times
 * (SOURCE_TIME_FIELDS), leaving out `unsourced` ones, those the adapter filled from the import's
 * own time ("now" for a time the source lacks). Undefined when the source gives none.
 */
export function sourceTimeOf(kind: RecordKind, fields: Readonly<Record<string, JsonValue>>, unsourced: ReadonlySet<string>): number | undefined {
  let latest: number | undefined
  for (const field of SOURCE_TIME_FIELDS[kind] ?? []) {
    const value = Object.hasOwn(fields, field) ? fields[field] : undefined
    if (typeof value !== 'string' || unsourced.has(value)) continue
    const ms = Date.parse(value)
    if (Number.isSafeInteger(ms) && ms >= 0 && (latest === undefined || ms > latest)) latest = ms
  }
  return latest
}

/** How far past the import's time a source time may be before it is called future (clocks differ a little). */
const FUTURE_SLACK_MS = 5 * 60_000

/** A source time that, dated so, stays newer than an edit made here until then. */
function isFutureTime(ms: number, nowMs: number): boolean {
  return ms > nowMs + FUTURE_SLACK_MS
}

/**
 * FUTURE_TIME, when some records are dated after the import (`times`, by id; the first named,
 * with how many more): importing the source again writes over an edit made here before that
 * time. `cause` is the likely reason, for the reader. None when no time is in the future.
 */
export function futureTimeWarnings(times: ReadonlyMap<string, number>, nowMs: number, file: string, cause: string): AdapterWarning[] {
  const ids = [...times].filter(([, ms]) => isFutureTime(ms, nowMs)).map(([id]) => id)
  if (ids.length === 0) return []
  const others = ids.length > 1 ? ` and ${ids.length - 1} more` : ''
  return [{
    code: 'FUTURE_TIME',
    message: `${ids[0]}${others} ${ids.length > 1 ? 'are' : 'is'} dated after this import (${cause}): an edit made here before that time is written over when the export is imported again`,
    where: { file },
  }]
}

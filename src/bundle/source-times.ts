/**
 * When another system's export (an adapter's source) wrote each record it carries, from the
 * record's own times: what its import passes to mergeRecords as `sourceTimes`, so a field written
 * here after the source last changed the entry keeps its value (merge-records.ts). Not for PAM
 * artifacts: a Cairn PAM entry's `created_at` is its record's ingestion time, older than an edit
 * the entry carries, so it would date that edit too early.
 */
import type { JsonValue } from '../log/index.js'
import type { RecordKind } from '../projection/index.js'

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

/**
 * Validation of query inputs at the API edge: filters, tag predicates, as-of times.
 */
import { assertArray, assertNumber, assertObject, assertOptions, assertString } from '../assert.js'
import { InputError } from '../errors.js'
import { isRecordKind, normalizeTimestamp, type RecordFilter, type RecordKind, type TagFilter } from '../projection/index.js'

/** Seconds with a fraction, as RFC 3339 writes them (`…:05.250Z`). */
const FRACTION = /:\d{2}\.\d/

export const DEFAULT_QUERY_LIMIT = 50
export const MAX_QUERY_LIMIT = 1000

function stringList(value: unknown, label: string): string[] {
  return assertArray(value, label).map((item, i) => assertString(item, `${label}[${i}]`))
}

function kindOf(value: unknown, label: string): RecordKind {
  if (!isRecordKind(value)) throw new InputError('UNKNOWN_KIND', `unknown record kind ${JSON.stringify(String(value)).slice(0, 40)}`, { field: label })
  return value
}

/** A tag predicate: a list means "all of these", or `{ any, all, none }`. */
function parseTags(value: unknown, label: string): TagFilter {
  if (Array.isArray(value)) return { all: stringList(value, label) }
  const raw = assertOptions(assertObject(value, label), ['any', 'all', 'none'], label)
  return {
    ...(raw.any !== undefined ? { any: stringList(raw.any, `${label}.any`) } : {}),
    ...(raw.all !== undefined ? { all: stringList(raw.all, `${label}.all`) } : {}),
    ...(raw.none !== undefined ? { none: stringList(raw.none, `${label}.none`) } : {}),
  }
}

/** A filter, from `query` input or `search` options; `where` names the argument in errors. */
export function parseFilter(raw: Record<string, unknown>, where: 'query' | 'options' = 'query'): RecordFilter {
  const kind = raw.kind === undefined ? undefined
    : Array.isArray(raw.kind) ? assertArray(raw.kind, `${where}.kind`).map((item, i) => kindOf(item, `${where}.kind[${i}]`))
    : kindOf(raw.kind, `${where}.kind`)
  return {
    ...(kind !== undefined ? { kind } : {}),
    ...(raw.context !== undefined ? { context: assertString(raw.context, `${where}.context`) } : {}),
    ...(raw.tags !== undefined ? { tags: parseTags(raw.tags, `${where}.tags`) } : {}),
    ...(raw.entity !== undefined ? { entity: assertString(raw.entity, `${where}.entity`) } : {}),
    ...(raw.minConfidence !== undefined ? { minConfidence: assertNumber(raw.minConfidence, `${where}.minConfidence`) } : {}),
    ...(raw.validAt !== undefined ? { validAt: normalizeTimestamp(raw.validAt, `${where}.validAt`) } : {}),
  }
}

/** A recorded time as ms since the epoch, from a Date, a number of ms or an RFC 3339 string. */
export function parseAsOf(value: unknown): number {
  if (value instanceof Date && Number.isFinite(value.getTime())) return value.getTime()
  if (typeof value === 'number' && Number.isFinite(value)) return value
  if (typeof value === 'string') {
    const ms = Date.parse(normalizeTimestamp(value, 'asOf'))
    if (Number.isFinite(ms)) {
      // A whole-second timestamp names the whole second: everything recorded within it counts.
      // One with a fraction names its millisecond (normalizeTimestamp keeps whole seconds only).
      const exact = FRACTION.test(value) ? Date.parse(value) : Number.NaN
      return Number.isFinite(exact) ? exact : ms + 999
    }
  }
  throw new InputError('BAD_TIMESTAMP', 'asOf must be a Date, ms since the epoch, or an RFC 3339 time', { field: 'asOf' })
}

/**
 * Query cursors: where a page ended, bound to the query that made it. A cursor is base64url of
 * `<scope>:<key>`: `scope` is 16 hex of SHA-256 over the query (filter, as-of time and the index
 * walked, which names the space), and `key` is the index key the page ended at, after the
 * index's prefix. A cursor from another query, or a string that is no cursor at all, is refused
 * instead of being read as a position (that silently skipped or repeated records).
 */
import { isUtf8 } from 'node:buffer'
import { createHash } from 'node:crypto'
import { InputError } from '../errors.js'
import { decodeBase64urlExactly } from '../log/bytes.js'
import { canonicalJson, type JsonValue } from '../log/index.js'
import type { RecordFilter } from './projection-reader.js'

const SCOPE_LENGTH = 16

/** A list as a set: sorted, each member once (the order a caller lists kinds or tags in means nothing). */
function asSet(value: string | readonly string[] | undefined): string[] | undefined {
  if (value === undefined) return undefined
  return [...new Set(typeof value === 'string' ? [value] : value)].sort()
}

/**
 * What a cursor is bound to: the filter (members left undefined do not count, lists compared as
 * sets), the as-of time and the index walked.
 */
export function queryScope(filter: RecordFilter, asOfMs: number | undefined, prefix: string): string {
  const tags = filter.tags === undefined ? undefined : { any: asSet(filter.tags.any), all: asSet(filter.tags.all), none: asSet(filter.tags.none) }
  const normal = { ...filter, kind: asSet(filter.kind), tags }
  const query = JSON.parse(JSON.stringify({ filter: normal, asOfMs: asOfMs ?? null, prefix })) as JsonValue
  return createHash('sha256').update(canonicalJson(query)).digest('hex').slice(0, SCOPE_LENGTH)
}

export function encodeCursor(scope: string, key: string): string {
  return Buffer.from(`${scope}:${key}`, 'utf8').toString('base64url')
}

/**
 * The index key (after its prefix) a cursor of this query ends at.
 * @throws InputError BAD_CURSOR naming `query.cursor`
 */
export function decodeCursor(cursor: string, scope: string): string {
  // Only a cursor spelt as encoding spells it, of UTF-8 text, is one.
  const bytes = decodeBase64urlExactly(cursor)
  const text = bytes !== undefined && isUtf8(bytes) ? bytes.toString('utf8') : ''
  if (text.length <= SCOPE_LENGTH || text[SCOPE_LENGTH] !== ':') {
    throw new InputError('BAD_CURSOR', 'not a cursor a query returned', { field: 'query.cursor' })
  }
  if (text.slice(0, SCOPE_LENGTH) !== scope) {
    throw new InputError('BAD_CURSOR', 'the cursor belongs to another query: pass the same filter and asOf, or start without a cursor', { field: 'query.cursor' })
  }
  return text.slice(SCOPE_LENGTH + 1)
}

/**
 * Text forms of capability tokens for people: the scope in a few words, and the fields
 * `cairn token inspect` prints.
 *
 * Invariant: full keys and ids are printed (they are what other commands take); times are
 * RFC 3339 in UTC with the remaining lifetime beside them.
 */
import type { CapabilityToken, TokenScope } from '../index.js'
import { formatDuration } from './duration.js'

/** "everything", or "kinds preference, fact; tags any of a, b; ids x" */
export function describeScope(scope: TokenScope): string {
  if (scope.all) return 'everything (all records)'
  const parts: string[] = []
  if (scope.kinds?.length) parts.push(`kinds ${scope.kinds.join(', ')}`)
  if (scope.tags?.all?.length) parts.push(`tagged all of ${scope.tags.all.join(', ')}`)
  if (scope.tags?.any?.length) parts.push(`tagged any of ${scope.tags.any.join(', ')}`)
  if (scope.tags?.none?.length) parts.push(`tagged none of ${scope.tags.none.join(', ')}`)
  const predicate = parts.join(' and ')
  const ids = scope.ids?.length ? `records ${scope.ids.join(', ')}` : ''
  return [predicate, ids].filter((part) => part !== '').join('; or ')
}

/** "2025-05-01T12:00:00Z (in 23h 59m)" or "(2h 3m ago)". */
export function describeExpiry(expiresAt: number, nowMs: number): string {
  const when = `${new Date(expiresAt).toISOString().slice(0, 19)}Z`
  return expiresAt >= nowMs ? `${when} (in ${formatDuration(expiresAt - nowMs)})` : `${when} (${formatDuration(nowMs - expiresAt)} ago)`
}

/** `field  value` lines for `token inspect`. */
export function tokenLines(token: CapabilityToken, nowMs: number): [string, string][] {
  return [
    ['id', token.id],
    ['space', token.space],
    ['issuer', token.issuer],
    ['audience', token.audience],
    ['scope', describeScope(token.scope)],
    ['permissions', token.permissions.join(', ')],
    ['issued', `${new Date(token.issuedAt).toISOString().slice(0, 19)}Z`],
    ['expires', describeExpiry(token.expiresAt, nowMs)],
    ['expired', token.expiresAt < nowMs ? 'yes' : 'no'],
    ['signature', 'valid (signed by the issuer)'],
  ]
}

export function alignedLines(rows: readonly (readonly [string, string])[]): string {
  const width = Math.max(...rows.map(([left]) => left.length))
  return rows.map(([left, right]) => `${left.padEnd(width)}  ${right}\n`).join('')
}

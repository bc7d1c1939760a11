/**
 * What a capability token reaches: explicit record ids, or records of some kinds whose tags
 * satisfy a predicate, or everything (`all`). A record is in scope when `all` is set, or its id
 * is listed, or (when kinds or tags are given) its kind is among the kinds and its tags satisfy
 * every given part of the predicate. Control events (grants, revocations) are not records: every
 * token holder sees them, or authorization could not be checked.
 */
import { assertArray, assertBoolean, assertOptions, assertString } from '../assert.js'
import { InputError } from '../errors.js'
import { isRecordKind, type RecordKind } from '../projection/index.js'

export interface TokenScope {
  readonly all?: true
  readonly ids?: readonly string[]
  readonly kinds?: readonly RecordKind[]
  readonly tags?: { readonly any?: readonly string[]; readonly all?: readonly string[]; readonly none?: readonly string[] }
}

/** The facts of a record that scopes look at. */
export interface ScopedRecord {
  readonly id: string
  readonly kind: string
  readonly tags: readonly string[]
}

export const MAX_SCOPE_ENTRIES = 1024

function strings(value: unknown, label: string): string[] {
  const list = assertArray(value, label).map((item, i) => assertString(item, `${label}[${i}]`))
  if (list.length > MAX_SCOPE_ENTRIES) throw new InputError('TOO_MANY', `more than ${MAX_SCOPE_ENTRIES} entries`, { field: label })
  return [...new Set(list)].sort()
}

/**
 * Validates and normalizes a scope (sorted, deduplicated lists; empty parts dropped).
 * @throws InputError naming the field
 */
export function parseScope(value: unknown, label = 'scope'): TokenScope {
  const raw = assertOptions(value, ['all', 'ids', 'kinds', 'tags'], label)
  const scope: { -readonly [K in keyof TokenScope]: TokenScope[K] } = {}
  if (raw.all !== undefined) {
    if (!assertBoolean(raw.all, `${label}.all`)) throw new InputError('BAD_VALUE', 'all is true or absent', { field: `${label}.all` })
    scope.all = true
  }
  if (raw.ids !== undefined) scope.ids = strings(raw.ids, `${label}.ids`)
  if (raw.kinds !== undefined) {
    scope.kinds = strings(raw.kinds, `${label}.kinds`).map((kind) => {
      if (!isRecordKind(kind)) throw new InputError('UNKNOWN_KIND', `unknown record kind ${JSON.stringify(kind).slice(0, 40)}`, { field: `${label}.kinds` })
      return kind
    })
  }
  if (raw.tags !== undefined) {
    const tags = assertOptions(raw.tags, ['any', 'all', 'none'], `${label}.tags`)
    const out: { any?: string[]; all?: string[]; none?: string[] } = {}
    for (const part of ['any', 'all', 'none'] as const) {
      const list = tags[part] === undefined ? [] : strings(tags[part], `${label}.tags.${part}`)
      if (list.length > 0) out[part] = list
    }
    // A predicate with no part would hold for every record: it is no predicate at all.
    if (Object.keys(out).length > 0) scope.tags = out
  }
  if (!scope.all && !scope.ids?.length && !scope.kinds?.length && !scope.tags) {
    throw new InputError('EMPTY_SCOPE', 'a scope names ids, kinds, tags, or all', { field: label })
  }
  return scope
}

/** Whether a tag predicate names any tag (an empty one would hold for every record). */
function hasTagParts(tags: TokenScope['tags']): boolean {
  return tags !== undefined && Boolean(tags.any?.length || tags.all?.length || tags.none?.length)
}

export function scopeAllows(scope: TokenScope, record: ScopedRecord): boolean {
  if (scope.all) return true
  if (scope.ids?.includes(record.id)) return true
  // Only kinds or a tag predicate that names something reach further than the listed ids.
  if (!scope.kinds?.length && !hasTagParts(scope.tags)) return false
  if (scope.kinds?.length && !scope.kinds.includes(record.kind as RecordKind)) return false
  const tags = scope.tags
  if (tags) {
    const has = new Set(record.tags)
    if (tags.any?.length && !tags.any.some((tag) => has.has(tag))) return false
    if (tags.all?.length && !tags.all.every((tag) => has.has(tag))) return false
    if (tags.none?.some((tag) => has.has(tag))) return false
  }
  return true
}

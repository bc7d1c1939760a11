/**
 * Records between Cairn and Portable Memory: a view is a PM record plus `kind` (and, for the
 * composite-key kinds, the internal id Cairn derives from the key); a PM record is `remember`
 * input once its kind is added back. What a PM line has no place for (the Cairn `tags` and
 * `contextID` extensions on kinds without `ext`) is left out of it; a `.mem` export carries it
 * in its own file (cairn-extensions.ts).
 */
import type { JsonValue } from '../log/index.js'
import { kindSpec, RECORD_KINDS, recordIdFor, type RecordKind, type RecordView } from '../projection/index.js'
import type { JsonObject } from './mem/index.js'

/** Per kind, the extension fields its PM line cannot carry (none for episodes, which have `ext`). */
const EXTENSION_FIELDS = new Map<RecordKind, readonly string[]>(RECORD_KINDS.map((kind) => {
  const spec = kindSpec(kind)
  return [kind, spec.hasExt ? [] : Object.values(spec.fields).filter((field) => field.extension === true).map((field) => field.name)]
}))

/** The extension fields of `kind` that a `.mem` line has no place for. */
export function extensionFieldsOf(kind: RecordKind): readonly string[] {
  return EXTENSION_FIELDS.get(kind) ?? []
}

/**
 * The PM line of a view: without `kind`, without the internal id of composite-key kinds, and
 * without the Cairn extension fields its kind's PM schema has no place for.
 */
export function toPortable(view: RecordView): JsonObject {
  const { kind, ...record } = view as { kind: RecordKind } & JsonObject
  if (kindSpec(kind).keyFields !== undefined) delete record.id
  for (const name of extensionFieldsOf(kind)) delete record[name]
  return record
}

/** The Cairn id a PM record merges on: its id, or the id derived from its composite key. */
export function recordIdOf(kind: RecordKind, record: JsonObject): string {
  return recordIdFor(kind, record)
}

/** Ids of the records this one needs (a chunk its resource, an edge its endpoints…): §7 parents. */
export function parentIdsOf(kind: RecordKind, record: JsonObject): string[] {
  const ids: string[] = []
  for (const parent of kindSpec(kind).parents) {
    const value = record[parent.field]
    if (typeof value === 'string') ids.push(value)
  }
  return ids
}

/**
 * Whether merging `record` into `view` would change nothing: every key of the record already
 * holds the same value (compared as canonical JSON). A view may hold more (defaults, extensions).
 */
export function alreadyHolds(view: RecordView, record: JsonObject, canonical: (value: JsonValue) => string): boolean {
  for (const [key, value] of Object.entries(record)) {
    const held = view[key]
    if (held === undefined || canonical(held) !== canonical(value)) return false
  }
  return true
}

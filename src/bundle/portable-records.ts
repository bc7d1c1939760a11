/**
 * Records between Cairn and Portable Memory: a view is a PM record plus `kind` (and, for the
 * composite-key kinds, the internal id Cairn derives from the key); a PM record is `remember`
 * input once its kind is added back. What the `.mem` format has no place for (the Cairn `tags`
 * and `contextID` extensions on kinds without `ext`) the codec drops, with a warning.
 */
import type { JsonValue } from '../log/index.js'
import { kindSpec, recordIdFor, type RecordKind, type RecordView } from '../projection/index.js'
import type { JsonObject } from './mem/index.js'

/** The PM line of a view: without `kind`, and without the internal id of composite-key kinds. */
export function toPortable(view: RecordView): JsonObject {
  const { kind, ...record } = view as { kind: RecordKind } & JsonObject
  if (kindSpec(kind).keyFields !== undefined) delete record.id
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

/**
 * Records between Cairn and Portable Memory: a view is a PM record plus `kind` (and, for the
 * composite-key kinds, the internal id Cairn derives from the key); a PM record is `remember`
 * input once its kind is added back. What a PM line has no place for (the Cairn `tags` and
 * `contextID` extensions on kinds without `ext`) is left out of it; a `.mem` export carries it
 * in its own file (cairn-extensions.ts).
 */
import { canonicalJson, type JsonValue } from '../log/index.js'
import type { WriteTimes } from '../memory/index.js'
import { fieldOf, kindSpec, normalizeTimestamp, RECORD_KINDS, recordIdFor, type RecordKind, type RecordView } from '../projection/index.js'
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
 * holds what the merge would leave there. A view may hold more (defaults, extensions). Compared
 * as the merge treats each field: a timestamp by its instant (Cairn keeps whole UTC seconds, so
 * `…05.250Z` and `…07:04:05+02:00` hold what they say), a set by its elements (a merge adds and
 * never removes: the record's elements must all be held), a map by its entries (likewise), an
 * empty collaborative text as held whatever the text is, and anything else as canonical JSON.
 */
export function alreadyHolds(view: RecordView, record: JsonObject, canonical: (value: JsonValue) => string): boolean {
  const spec = kindSpec(view.kind)
  for (const [key, value] of Object.entries(record)) {
    const held = view[key]
    if (held === undefined) return false
    const field = fieldOf(spec, key)
    if (field?.type === 'timestamp' && typeof value === 'string' && typeof held === 'string') {
      if (!sameInstant(held, value)) return false
    } else if (field?.merge === 'set' && Array.isArray(value) && Array.isArray(held)) {
      const elements = new Set(held)
      if (!value.every((element) => elements.has(element as string))) return false
    } else if (field?.merge === 'counter' && typeof value === 'number' && typeof held === 'number') {
      // An import raises a counter to its value and never lowers it (counterCatchUp).
      if (held < value) return false
    } else if (field?.merge === 'text' && value === '') {
      // A create's empty text changes no held text (onHeldTexts): writing it would change nothing.
      continue
    } else if (field?.merge === 'map' && isObject(value) && isObject(held)) {
      if (!Object.entries(value).every(([name, item]) => Object.hasOwn(held, name) && canonical(held[name] as JsonValue) === canonical(item))) return false
    } else if (canonical(held) !== canonical(value)) return false
  }
  return true
}

function isObject(value: unknown): value is { readonly [key: string]: JsonValue } {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Whether a held timestamp is what `given` normalizes to (a malformed one never is). */
function sameInstant(held: string, given: string): boolean {
  try {
    return normalizeTimestamp(given, 'timestamp') === held
  } catch {
    return false
  }
}

/**
 * What a held record's import write carries for what was written here at or after `from` (ms
 * since the epoch: its source's second), by field or extension key, a map's by key (WriteTimes).
 */
export type KeptTimes = Record<string, JsonValue>

/**
 * One walk over `record`, the write an import makes of a record this replica holds, against the
 * held record's write times (`times`, WriteTimes: read from `from` on):
 * - with `view` (the held record), what it holds from a write at or after `from` takes the
 *   incoming value's place: a last-writer-wins field, an extension key or a text whole, a map key
 *   by key. One unset since is left out (the import's create then leaves it unset), unless the
 *   kind requires it (no honest write unsets one). `record` is the same object when nothing is kept;
 * - `keptAt`: the times of the values the write then carries that were written here at or after
 *   `from`, which its events carry (rememberMany), so those do not look as old as the source.
 *   Texts keep their own change times; sets and counters have no time.
 * Without `view` nothing is kept, and `keptAt` times what `record` carries as it is. With `view`
 * and `keep` false (rememberMany called with a source time and no kept times: the caller chose
 * the values), nothing is kept either, and `keptAt` times only the values `record` carries as
 * held: a value it replaces is as old as its source, not as new as the write it replaces (helper-86).
 */
export function keepNewerWrites(kind: RecordKind, record: JsonObject, times: WriteTimes, from: number, view?: RecordView, keep = true): { readonly record: JsonObject; readonly keptAt: KeptTimes } {
  const spec = kindSpec(kind)
  let out: JsonObject | undefined
  const keptAt: KeptTimes = {}
  for (const [key, value] of Object.entries(record)) {
    const merge = fieldOf(spec, key)?.merge
    if (merge === 'set' || merge === 'counter') continue
    const held = view !== undefined && Object.hasOwn(view, key) ? view[key] : undefined
    if (merge === 'map') {
      const written = Object.hasOwn(times.entries, key) ? times.entries[key] : undefined
      if (!written || !isObject(value)) continue
      const heldMap = isObject(held) ? held : {}
      let map: Record<string, JsonValue> | undefined
      const keys: Record<string, number> = {}
      for (const [name, item] of Object.entries(value)) {
        if (!Object.hasOwn(written, name) || (written[name] as number) < from) continue
        if (view !== undefined && !alreadyHolds(view, { [key]: { [name]: item } }, canonicalJson)) {
          if (!keep) continue
          map ??= { ...value }
          // Removed since: the write leaves it out, and has no time for it.
          if (!Object.hasOwn(heldMap, name)) {
            delete map[name]
            continue
          }
          map[name] = heldMap[name] as JsonValue
        }
        keys[name] = written[name] as number
      }
      if (map) (out ??= { ...record })[key] = map
      if (Object.keys(keys).length > 0) keptAt[key] = keys
      continue
    }
    const written = Object.hasOwn(times.fields, key) ? times.fields[key] : undefined
    if (written === undefined || written < from) continue
    if (view !== undefined && !keep) {
      if (!alreadyHolds(view, { [key]: value }, canonicalJson)) continue
    } else if (view !== undefined) {
      // Unset since: the write leaves it out, and has no time for it.
      if (held === undefined && fieldOf(spec, key)?.required !== true) {
        out ??= { ...record }
        delete out[key]
        continue
      }
      if (held !== undefined && !alreadyHolds(view, { [key]: value }, canonicalJson)) (out ??= { ...record })[key] = held
    }
    // A text's time is its latest change's, which its document keeps.
    if (merge !== 'text') keptAt[key] = written
  }
  return { record: out ?? record, keptAt }
}

/**
 * An incoming record as a create of the record `view` shows here: each counter (a sum of
 * increments, which a create adds to) carries only what the incoming value exceeds the shown
 * one by, and nothing when it does not. A create carrying the whole value added it again on
 * every import that wrote the record, so importing the same bundle again kept raising the count
 * (and kept writing). The catch-up rule of docs/memory-model.md §1.5 without its increment
 * identity: two replicas that import one bundle concurrently each add the difference (open there).
 */
export function counterCatchUp(view: RecordView, record: JsonObject): JsonObject {
  const spec = kindSpec(view.kind)
  let out: JsonObject | undefined
  for (const [key, value] of Object.entries(record)) {
    const held = view[key]
    if (fieldOf(spec, key)?.merge !== 'counter' || typeof value !== 'number' || typeof held !== 'number') continue
    out ??= { ...record }
    out[key] = Math.max(0, value - held)
  }
  return out ?? record
}

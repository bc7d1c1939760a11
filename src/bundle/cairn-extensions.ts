/**
 * Cairn's extension fields (`tags`, and `contextID` outside episodes) through a `.mem` bundle.
 * The Portable Memory schemas have no place for them on kinds without `ext`, and readers drop
 * unknown keys there (spec §8), so Cairn writes them to a vendor file of its own,
 * `items/cairnExtensions.jsonl`: one canonical line per record that has any, in record id order,
 * `{"contextID"?, "id", "kind", "tags"?}` (the id is Cairn's, also for composite-key kinds).
 * Other readers keep the file verbatim as an unknown kind (§8); Cairn reads it back into the
 * records it describes, so a Cairn → `.mem` → Cairn round trip loses nothing.
 *
 * Episodes keep their extensions in the episode line itself (their unknown keys are `ext`).
 */
import { CairnError, InputError, relocate } from '../errors.js'
import { canonicalJson, parseJson, type JsonValue } from '../log/index.js'
import { fieldOf, isRecordKind, kindSpec, type FieldSpec, type RecordKind } from '../projection/index.js'
import { readFieldValue } from '../projection/field-values.js'
import type { JsonObject, MemProblem } from './mem/index.js'
import { kindFilePath } from './mem/layout.js'
import { extensionFieldsOf } from './portable-records.js'
import { CAIRN_EXTENSIONS_KIND } from '../memory/bulk-writes.js'

/** The vendor kind (file `items/cairnExtensions.jsonl`) that carries the extension fields. */
export { CAIRN_EXTENSIONS_KIND }
/** Its bundle-relative path. */
export const CAIRN_EXTENSIONS_FILE = kindFilePath(CAIRN_EXTENSIONS_KIND)

/**
 * The line of `items/cairnExtensions.jsonl` for a record, or undefined when it has no extension
 * field to carry. Each value is checked as import reads it back, so the file never holds a line
 * that import refuses. @param field reads one top-level field of the record's view
 * @throws InputError naming the record and field when a stored value has the wrong shape (a raw
 *   event from a peer can carry one; the API never stores it), as the codec refuses its fields
 */
export function extensionLine(kind: RecordKind, id: string, field: (name: string) => JsonValue | undefined): string | undefined {
  let line: JsonObject | undefined
  for (const name of extensionFieldsOf(kind)) {
    const value = field(name)
    // A null is no value, as the codec drops it from an optional field.
    if (value === undefined || value === null) continue
    const checked = readFieldValue(fieldOf(kindSpec(kind), name) as FieldSpec, value, `records.${kind}[${JSON.stringify(id)}].${name}`)
    // No tags is no line.
    if (Array.isArray(checked) && checked.length === 0) continue
    line ??= { id, kind }
    line[name] = checked
  }
  return line === undefined ? undefined : canonicalJson(line)
}

/** Extension fields read from a bundle, by Cairn record id. */
export interface BundleExtensions {
  readonly byId: ReadonlyMap<string, { readonly kind: RecordKind; readonly line: number; readonly fields: JsonObject }>
  readonly warnings: readonly MemProblem[]
}

/**
 * Reads and checks the lines of `items/cairnExtensions.jsonl` (all of them, before anything is
 * written). Unknown keys are dropped with a warning, as for any other kind without `ext`.
 * @throws InputError naming the file and line: BAD_JSON, WRONG_TYPE, UNKNOWN_KIND, DUPLICATE_ID, and a field's own refusals
 */
export function readExtensionLines(lines: readonly string[]): BundleExtensions {
  const byId = new Map<string, { kind: RecordKind; line: number; fields: JsonObject }>()
  const warnings: MemProblem[] = []
  lines.forEach((text, index) => {
    const line = index + 1
    const where = { file: CAIRN_EXTENSIONS_FILE, line }
    let value: JsonValue
    try {
      value = parseJson(text)
    } catch (error) {
      throw error instanceof CairnError ? relocate(error, where) : error
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InputError('WRONG_TYPE', 'a line is an object', where)
    const { id, kind, ...rest } = value
    if (typeof id !== 'string' || id.length === 0) throw new InputError('WRONG_TYPE', 'id is a non-empty string', { ...where, field: 'id' })
    if (!isRecordKind(kind) || kindSpec(kind).hasExt) {
      throw new InputError('UNKNOWN_KIND', `kind must name a record kind without ext, got ${JSON.stringify(kind)}`, { ...where, field: 'kind' })
    }
    if (byId.has(id)) throw new InputError('DUPLICATE_ID', `${id} has a line already (line ${byId.get(id)?.line})`, { ...where, field: 'id' })
    const allowed = extensionFieldsOf(kind)
    const fields: JsonObject = {}
    for (const [name, raw] of Object.entries(rest)) {
      const spec = allowed.includes(name) ? fieldOf(kindSpec(kind), name) : undefined
      if (spec === undefined) {
        warnings.push({ code: 'UNKNOWN_FIELD_DROPPED', message: `unknown key ${JSON.stringify(name)} dropped`, ...where })
        continue
      }
      try {
        fields[name] = readFieldValue(spec, raw, name)
      } catch (error) {
        if (error instanceof CairnError) throw relocate(error, { ...where, field: error.where.field ?? name })
        throw error
      }
    }
    byId.set(id, { kind, line, fields })
  })
  return { byId, warnings }
}

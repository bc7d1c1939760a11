/**
 * The check every record of an import passes before the import writes anything (tombstones
 * included): the validation `remember` applies (fields, ids, reserved keys, integer range…) and
 * the event body limit. A record refused only once some batches were written would leave the
 * store half-imported; here it is refused first, named by where it came from.
 */
import { CairnError, InputError, LimitError, relocate } from '../errors.js'
import { MAX_BODY_BYTES } from '../log/index.js'
import { buildCreateEntry, entryBodySize } from '../memory/index.js'
import { RECORD_KINDS, type RecordKind } from '../projection/kinds.js'
import type { JsonObject } from './mem/index.js'

/** Author key of the measured body (collaborative text's changes name their actor). */
const AUTHOR = '0'.repeat(64)

/** Where a record came from, for the error: a bundle file, or a position in the source's records. */
export type RecordLocator = (kind: RecordKind, index: number) => { readonly file?: string; readonly path?: string }

/**
 * A bundle's or adapter's records, checked as `rememberMany` would check them.
 * @throws the refusal `rememberMany` would give (InputError, LimitError), naming the record; LimitError RECORD_TOO_LARGE
 */
export function checkRecordsWritable(records: Partial<Record<RecordKind, readonly JsonObject[]>>, locate: RecordLocator, options: { uniqueIds?: boolean } = {}): void {
  // With `uniqueIds` (a bundle, whose lines are records as they stand), an id met twice, in one
  // kind or two, is refused: Cairn holds one record per id, so one line would silently win.
  const seen = options.uniqueIds ? new Map<string, { kind: RecordKind; index: number }>() : undefined
  for (const kind of RECORD_KINDS) {
    const list = records[kind] ?? []
    for (let index = 0; index < list.length; index++) {
      const record = list[index] as JsonObject
      const where = locate(kind, index)
      if (Object.hasOwn(record, 'kind')) {
        // `remember` input names the kind in `kind`: an unknown field of that name has no place.
        throw new InputError('RESERVED_KEY', `${describe(kind, index)}: "kind" names a record's kind in Cairn and cannot be a field`, { ...where, field: `${kind}.kind` })
      }
      let size: number
      let id: string
      try {
        ({ id, size } = measureRecord(kind, record))
      } catch (error) {
        if (!(error instanceof CairnError)) throw error
        throw relocate(error, { ...where, ...(error.where.field !== undefined ? { field: error.where.field } : {}) }, `${describe(kind, index)}: ${error.reason}`)
      }
      if (seen !== undefined) {
        const first = seen.get(id)
        if (first !== undefined) {
          throw new InputError('DUPLICATE_ID', `${describe(kind, index)} has the id ${id}, as ${first.kind} record ${first.index + 1} has`, { ...where, field: `${kind}.id` })
        }
        seen.set(id, { kind, index })
      }
      if (size > MAX_BODY_BYTES) {
        throw new LimitError('RECORD_TOO_LARGE', `${describe(kind, index)} makes an event body of ${size} bytes, over the ${MAX_BODY_BYTES} one stored event holds`, where)
      }
    }
  }
}

/**
 * The id and event body size `rememberMany` would write for one record (the body built the same
 * way, so the size is exact). @throws its refusal (InputError…), naming the field
 */
function measureRecord(kind: RecordKind, record: JsonObject): { id: string; size: number } {
  const entry = buildCreateEntry({ nowMs: Date.now(), randomHex: (bytes: number) => '0'.repeat(bytes * 2), author: AUTHOR }, { ...record, kind })
  return { id: entry.id, size: entryBodySize(entry) }
}

/**
 * Why an import would refuse this record (a field of the wrong type, a required field missing,
 * over the event body limit), or undefined when it would take it. `record` as an import hands it
 * over: without `kind`, without the internal id of a composite-key kind.
 */
export function recordRefusal(kind: RecordKind, record: JsonObject): CairnError | undefined {
  if (Object.hasOwn(record, 'kind')) return new InputError('RESERVED_KEY', '"kind" names a record\'s kind in Cairn and cannot be a field', { field: `${kind}.kind` })
  try {
    const { size } = measureRecord(kind, record)
    return size > MAX_BODY_BYTES ? new LimitError('RECORD_TOO_LARGE', `the record makes an event body of ${size} bytes, over the ${MAX_BODY_BYTES} one stored event holds`) : undefined
  } catch (error) {
    if (error instanceof CairnError) return error
    throw error
  }
}

function describe(kind: RecordKind, index: number): string {
  return `${kind} record ${index + 1}`
}

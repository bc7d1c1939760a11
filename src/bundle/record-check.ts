/**
 * The check every record of an import passes before the import writes anything (tombstones
 * included): the validation `remember` applies (fields, ids, reserved keys, integer range…) and
 * the event body limit, measured on the events `rememberMany` writes (a record too large for one
 * body is split across several; only a plain field too large for any is refused). A record
 * refused only once some batches were written would leave the store half-imported; here it is
 * refused first, named by where it came from.
 */
import { CairnError, InputError, LimitError, relocate } from '../errors.js'
import { MAX_BODY_BYTES } from '../log/index.js'
import { assertCreateWritable, buildCreateEntry } from '../memory/index.js'
import { RECORD_KINDS, type RecordKind } from '../projection/kinds.js'
import type { JsonObject } from './mem/index.js'

/** Author key of the measured body (collaborative text's changes name their actor). */
const AUTHOR = '0'.repeat(64)

/** WritableCheck's ids: kind place × this + index (RECORD_KINDS has 15 kinds: well inside 2^53). */
const KIND_PLACE = 2 ** 32

/** Finds where a record came from, by its kind and place. */
export type RecordLocator = (kind: RecordKind, index: number) => RecordWhere

/** Where a record came from, for the error: a bundle file (and line), or a position in the source's records. */
export type RecordWhere = { readonly file?: string; readonly line?: number; readonly path?: string }

/**
 * A bundle's or adapter's records, checked as `rememberMany` would check them.
 * @throws the refusal `rememberMany` would give (InputError, LimitError), naming the record; LimitError RECORD_TOO_LARGE naming the field that no event can hold
 */
export function checkRecordsWritable(records: Partial<Record<RecordKind, readonly JsonObject[]>>, locate: RecordLocator, options: { uniqueIds?: boolean } = {}): void {
  const check = new WritableCheck(options)
  for (const kind of RECORD_KINDS) {
    const list = records[kind] ?? []
    for (let index = 0; index < list.length; index++) check.check(kind, list[index] as JsonObject, index, locate(kind, index))
  }
}

/**
 * checkRecordsWritable one record at a time (a bundle decoded batch by batch), remembering the
 * ids met so far when they must be unique.
 */
export class WritableCheck {
  // With `uniqueIds` (a bundle, whose lines are records as they stand), an id met twice, in one
  // kind or two, is refused: Cairn holds one record per id, so one line would silently win.
  // By id: the first record's kind (its place in RECORD_KINDS) and index, as one number, so a
  // bundle of millions of ids holds no object per id.
  private readonly seen: Map<string, number> | undefined

  constructor(options: { uniqueIds?: boolean } = {}) {
    this.seen = options.uniqueIds ? new Map() : undefined
  }

  /**
   * @param index the record's place among those of its kind (0-based)
   * @throws as checkRecordsWritable, naming the record at `where`
   */
  check(kind: RecordKind, record: JsonObject, index: number, where: RecordWhere): void {
    if (Object.hasOwn(record, 'kind')) {
      // `remember` input names the kind in `kind`: an unknown field of that name has no place.
      throw new InputError('RESERVED_KEY', `${describe(kind, index)}: "kind" names a record's kind in Cairn and cannot be a field`, { ...where, field: `${kind}.kind` })
    }
    let entry: ReturnType<typeof buildCreateEntry>
    try {
      entry = buildEntry(kind, record)
    } catch (error) {
      if (!(error instanceof CairnError)) throw error
      throw relocate(error, { ...where, ...(error.where.field !== undefined ? { field: error.where.field } : {}) }, `${describe(kind, index)}: ${error.reason}`)
    }
    const id = entry.id
    if (this.seen !== undefined) {
      const first = this.seen.get(id)
      if (first !== undefined) {
        const firstKind = RECORD_KINDS[Math.floor(first / KIND_PLACE)] as RecordKind
        throw new InputError('DUPLICATE_ID', `${describe(kind, index)} has the id ${id}, as ${firstKind} record ${(first % KIND_PLACE) + 1} has`, { ...where, field: `${kind}.id` })
      }
      this.seen.set(id, RECORD_KINDS.indexOf(kind) * KIND_PLACE + index)
    }
    try {
      // As `rememberMany` will write it: in one body, or split across events (create-split.ts).
      assertCreateWritable(entry)
    } catch (error) {
      if (!(error instanceof LimitError) || error.code !== 'BODY_TOO_LARGE') throw error
      throw new LimitError('RECORD_TOO_LARGE', `${describe(kind, index)} is too large to write in events of at most ${MAX_BODY_BYTES} bytes: ${error.reason}`, {
        ...where, ...(error.where.field !== undefined ? { field: error.where.field } : {}),
      })
    }
  }
}

/** The create `rememberMany` would build for one record. @throws its refusal (InputError…), naming the field */
function buildEntry(kind: RecordKind, record: JsonObject): ReturnType<typeof buildCreateEntry> {
  return buildCreateEntry({ nowMs: Date.now(), randomHex: (bytes: number) => '0'.repeat(bytes * 2), author: AUTHOR }, { ...record, kind })
}

/**
 * Why an import would refuse this record (a field of the wrong type, a required field missing,
 * a field no event body can hold), or undefined when it would take it. `record` as an import
 * hands it over: without `kind`, without the internal id of a composite-key kind.
 */
export function recordRefusal(kind: RecordKind, record: JsonObject): CairnError | undefined {
  if (Object.hasOwn(record, 'kind')) return new InputError('RESERVED_KEY', '"kind" names a record\'s kind in Cairn and cannot be a field', { field: `${kind}.kind` })
  try {
    assertCreateWritable(buildEntry(kind, record))
    return undefined
  } catch (error) {
    if (error instanceof CairnError) return error
    throw error
  }
}

function describe(kind: RecordKind, index: number): string {
  return `${kind} record ${index + 1}`
}

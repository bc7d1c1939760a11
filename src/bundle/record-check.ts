/**
 * The check every record of an import passes before the import writes anything (tombstones
 * included): the validation `remember` applies (fields, ids, reserved keys, integer range…) and
 * the event body limit. A record refused only once some batches were written would leave the
 * store half-imported; here it is refused first, named by where it came from.
 */
import { CairnError, LimitError, relocate } from '../errors.js'
import { canonicalJson, MAX_BODY_BYTES, type JsonValue } from '../log/index.js'
import { RECORD_KINDS, kindSpec, validateCreate, type RecordKind } from '../projection/kinds.js'
import type { JsonObject } from './mem/index.js'

/**
 * Room kept for what a body holds besides the fields: the operation, ids, salt, and the
 * collaborative text's Automerge encoding (base64 of its changes; counted below as 40% of the
 * text on top of the text itself, more than that encoding adds).
 */
const BODY_OVERHEAD_BYTES = 2048
const TEXT_ENCODING_FACTOR = 0.4

/** Where a record came from, for the error: a bundle file, or a position in the source's records. */
export type RecordLocator = (kind: RecordKind, index: number) => { readonly file?: string; readonly line?: number; readonly path?: string }

/**
 * A bundle's or adapter's records, checked as `rememberMany` would check them.
 * @throws the refusal `rememberMany` would give (InputError, LimitError), naming the record; LimitError RECORD_TOO_LARGE
 */
export function checkRecordsWritable(records: Partial<Record<RecordKind, readonly JsonObject[]>>, locate: RecordLocator): void {
  const context = { nowMs: Date.now(), randomHex: (bytes: number) => '0'.repeat(bytes * 2) }
  for (const kind of RECORD_KINDS) {
    const list = records[kind] ?? []
    const textFields = kindSpec(kind).textFields
    for (let index = 0; index < list.length; index++) {
      const record = list[index] as JsonObject
      const where = locate(kind, index)
      let size: number
      try {
        const { fields, ext } = validateCreate(kind, record, context)
        let textBytes = 0
        for (const field of textFields) {
          const value = fields[field]
          if (typeof value === 'string') textBytes += Buffer.byteLength(value)
        }
        size = Buffer.byteLength(canonicalJson({ fields, ext } as unknown as JsonValue)) + textBytes * TEXT_ENCODING_FACTOR + BODY_OVERHEAD_BYTES
      } catch (error) {
        if (!(error instanceof CairnError)) throw error
        throw relocate(error, { ...where, ...(error.where.field !== undefined ? { field: error.where.field } : {}) }, `${describe(kind, index, where)}: ${error.reason}`)
      }
      if (size > MAX_BODY_BYTES) {
        throw new LimitError('RECORD_TOO_LARGE', `${describe(kind, index, where)} is about ${Math.round(size / 1024)} KiB, over the ${MAX_BODY_BYTES / 1024} KiB one stored event holds`, where)
      }
    }
  }
}

function describe(kind: RecordKind, index: number, where: ReturnType<RecordLocator>): string {
  return where.line !== undefined ? `the ${kind} record` : `${kind} record ${index + 1}`
}

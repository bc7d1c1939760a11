/**
 * The record kinds of Cairn: the 15 Portable Memory kinds (spec §6) with their fields, merge
 * classes, ids, defaults and validation at the API edge. This is the one module the merge
 * layer, the projections and the public API code against; each part lives in a sibling file
 * with one job:
 * - kind-table.ts: the table (fields, PM names, types, required, merge class, defaults,
 *   Cairn extensions `tags` and `contextID`, id prefixes, text fields, parents, valid time);
 * - record-ids.ts: id rules, composite-key ids, random ids;
 * - timestamps.ts: RFC 3339 in, whole-second UTC out (spec §3);
 * - field-values.ts: reading one value of each field type from outside input;
 * - record-create.ts: `validateCreate`, defaults and derivations;
 * - record-patch.ts: `validatePatch`, which operation each merge class takes.
 *
 * Invariant: records that pass `validateCreate` are valid against their kind's PM JSON Schema,
 * and every refusal is an `InputError` (or `LimitError` for nesting) naming the field.
 */
export {
  RECORD_KINDS, isRecordKind, kindSpec, fieldOf,
  type RecordKind, type KindSpec, type FieldSpec, type FieldType, type MergeClass, type FieldDefault,
} from './kind-table.js'
export { hashParts, recordIdFor, newRecordId, readRecordId, MAX_ID_LENGTH, TOMBSTONE_ID_PREFIX, RANDOM_ID_BYTES, KEY_ID_HEX_LENGTH } from './record-ids.js'
export { normalizeTimestamp, formatTimestamp, parseTimestamp, MAX_TIMESTAMP_LENGTH, LAST_TIMESTAMP_MS } from './timestamps.js'
export {
  validateCreate, deriveSummary, deriveFactText, assertMaskedPreview,
  SUMMARY_MAX_CODE_POINTS, PREVIEW_MAX_UNMASKED_CODE_POINTS, PREVIEW_MIN_MASK_RUN,
  type CreateContext, type ValidatedRecord,
} from './record-create.js'
export { isEmptyPatch, mapFieldOfKey, readPatch, refuseWriteOnce, validatePatch, type PatchInput, type RecordPatch } from './record-patch.js'
export { MAX_EXT_DEPTH } from './field-values.js'

/**
 * Validates a new record at the API edge (`remember({ kind, ...fields })`, bundle lines) and
 * completes it with the documented defaults.
 *
 * Invariant: what `validateCreate` returns is a complete Portable Memory record of its kind:
 * every field the PM schema requires is present with the right type, timestamps are
 * whole-second UTC, nothing is null, and nothing else is in `fields`. Everything is checked
 * before anything is returned, and every refusal names the field.
 *
 * Defaults (the `default` column of kind-table.ts; "now" is the context's `nowMs` as
 * `YYYY-MM-DDTHH:MM:SSZ`; ids are `<prefix>` + 16 random hex):
 * - episode: id; eventTime, mentionTime, ingestionTime now; sourceType `note`; actors,
 *   categories, vaultRefs `[]`; metadata `{}`; sensitivity `low`; importance 0.5; confidence
 *   0.7; lifecycleState `HOT`; extractionState `done`; accessCount 0; pinned false. Needs
 *   `summary` or `details`: a missing summary is the first line of details (whitespace trimmed
 *   from both ends first, cut at the first `\n` or `\r`) limited to 120 code points, as the PM
 *   reference adapters do; a missing details is the summary.
 * - entity: id; aliases `[]`; summary ''; sensitivity `low`; updatedAt now.
 * - edge: id; tValidFrom, ingestionTime now; confidence 0.7; evidenceEpisodeIDs `[]`.
 * - fact: id; tValidFrom, createdAt now; confidence 0.7; importance 0.5; text is
 *   `subject predicate object` (empty parts skipped) when absent.
 * - factLink: createdAt now. episodeLink: weight 1.
 * - resource: id; created, modified now; summary ''. chunk: id; sensitivity `low`.
 * - core: content ''; charBudget 2000; version 1 (the id, a block name, is required).
 * - procedure: id; steps `[]`; successCount, failureCount 0; enabled true.
 * - context: id; archived false; createdAt now. community: id; summary ''; memberEntityIDs `[]`.
 * - category: description ''. secretRef: id; sensitivity `high`; createdAt now.
 * Everything else the schema requires has no sensible default and is MISSING_FIELD when absent.
 *
 * `null` is accepted only where the PM schema allows it (optional fields) and means absent;
 * `undefined` members mean absent everywhere. Unknown keys are refused, except on episodes,
 * where they are returned as `ext` (spec §8: episode extensions round-trip).
 */
import { assertObject, describeValue } from '../assert.js'
import { InputError } from '../errors.js'
import type { JsonValue } from '../log/index.js'
import { copyJson, fieldLabel, ownEntries, readFieldValue, readJsonValue, setOwn } from './field-values.js'
import { fieldOf, kindSpec, type FieldSpec, type RecordKind } from './kind-table.js'
import { newRecordId, readRecordId, recordIdFor } from './record-ids.js'
import { formatTimestamp } from './timestamps.js'

/** A derived episode summary holds at most this many code points (PM adapters, spec §10). */
export const SUMMARY_MAX_CODE_POINTS = 120
/** A secretRef preview longer than this (in code points) must show a mask. */
export const PREVIEW_MAX_UNMASKED_CODE_POINTS = 8
/** The shortest run of mask characters (`*` or `•`) that counts as a mask. */
export const PREVIEW_MIN_MASK_RUN = 3

const MASK_RUN = new RegExp(`[*•]{${PREVIEW_MIN_MASK_RUN},}`, 'u')

/** What a create needs from the engine: the time and randomness, injected so tests are exact. */
export interface CreateContext {
  readonly nowMs: number
  /** Lowercase hex of `bytes` random bytes. */
  readonly randomHex: (bytes: number) => string
}

export interface ValidatedRecord {
  /** The record id: the given or generated `id`, or for composite-key kinds the derived one. */
  readonly id: string
  /** The complete PM record (every required field present, defaults filled). */
  readonly fields: Record<string, JsonValue>
  /** Unknown episode keys, deep-copied, never a native key (always `{}` for other kinds). */
  readonly ext: Record<string, JsonValue>
}

/**
 * The summary derived from an episode's details: trimmed, first line, at most 120 code points
 * (never splitting a surrogate pair).
 */
export function deriveSummary(details: string): string {
  let summary = ''
  let count = 0
  for (const character of details.trim()) {
    if (character === '\n' || character === '\r' || count === SUMMARY_MAX_CODE_POINTS) break
    summary += character
    count++
  }
  return summary
}

/** A fact's text derived from its triple: the non-empty parts joined by spaces. */
export function deriveFactText(subject: string, predicate: string, object: string): string {
  return [subject, predicate, object].filter((part) => part !== '').join(' ')
}

function hasMoreCodePointsThan(text: string, limit: number): boolean {
  if (text.length <= limit) return false
  let count = 0
  for (const _ of text) if (++count > limit) return true
  return false
}

/**
 * Refuses a secretRef preview that could be secret material: longer than 8 code points with no
 * run of at least 3 mask characters (`*` or `•`). The message never repeats the preview.
 * @throws InputError UNMASKED_SECRET
 */
export function assertMaskedPreview(preview: string, label = 'secretRef.preview'): void {
  if (!hasMoreCodePointsThan(preview, PREVIEW_MAX_UNMASKED_CODE_POINTS) || MASK_RUN.test(preview)) return
  throw new InputError(
    'UNMASKED_SECRET',
    `a preview longer than ${PREVIEW_MAX_UNMASKED_CODE_POINTS} characters must be masked with a run of ${PREVIEW_MIN_MASK_RUN}+ "*" or "•"`,
    { field: label },
  )
}

interface ReadContext {
  readonly now: string
  readonly randomHex: (bytes: number) => string
}

function readContext(context: unknown): ReadContext {
  if (typeof context !== 'object' || context === null) {
    throw new InputError('WRONG_TYPE', 'expected a context { nowMs, randomHex }', { field: 'context' })
  }
  const { nowMs, randomHex } = context as Partial<CreateContext>
  const now = formatTimestamp(nowMs as number, 'context.nowMs')
  if (typeof randomHex !== 'function') throw new InputError('WRONG_TYPE', 'randomHex must be a function', { field: 'context.randomHex' })
  return { now, randomHex }
}

function missing(kind: RecordKind, field: string, message = 'required, and it has no default'): never {
  throw new InputError('MISSING_FIELD', message, { field: `${kind}.${field}` })
}

/** Fills the derived fields (episode summary/details, fact text) from what was given. */
function derive(kind: RecordKind, given: Map<string, JsonValue>): void {
  if (kind === 'episode') {
    const summary = given.get('summary')
    const details = given.get('details')
    if (summary === undefined && details === undefined) missing(kind, 'summary', 'an episode needs summary or details')
    if (summary === undefined) given.set('summary', deriveSummary(details as string))
    if (details === undefined) given.set('details', summary as string)
  } else if (kind === 'fact' && !given.has('text')) {
    const [subject, predicate, object] = ['subject', 'predicate', 'object'].map((name) => given.get(name))
    if (typeof subject === 'string' && typeof predicate === 'string' && typeof object === 'string') {
      given.set('text', deriveFactText(subject, predicate, object))
    }
  }
}

function defaultValue(kind: RecordKind, field: FieldSpec, context: ReadContext): JsonValue | undefined {
  switch (field.default?.rule) {
    case 'value':
      return copyJson(field.default.value)
    case 'now':
      return context.now
    case 'new-id':
      return newRecordId(kind, context.randomHex)
    default:
      return undefined
  }
}

/**
 * Validates the fields of a new record (the caller's object minus `kind`) and returns the
 * complete PM record with defaults filled (listed in this file's header).
 * @throws InputError UNKNOWN_KIND, WRONG_TYPE, BAD_STRING, BAD_TIMESTAMP, OUT_OF_RANGE,
 *   MISSING_FIELD, UNKNOWN_FIELD, BAD_ID, UNMASKED_SECRET, NOT_JSON, BAD_HEX, WRONG_LENGTH;
 *   LimitError TOO_DEEP (an episode extension nested too deep)
 */
export function validateCreate(kind: RecordKind, input: unknown, context: CreateContext): ValidatedRecord {
  const spec = kindSpec(kind)
  const read = readContext(context)
  const object = assertObject(input, kind)
  const given = new Map<string, JsonValue>()
  const ext: Record<string, JsonValue> = {}
  for (const [name, raw] of ownEntries(object, kind)) {
    if (raw === undefined) continue
    const label = fieldLabel(kind, name)
    const field = fieldOf(spec, name)
    if (field === undefined) {
      if (!spec.hasExt) throw new InputError('UNKNOWN_FIELD', `${kind} has no field ${describeValue(name)}`, { field: label })
      setOwn(ext, name, readJsonValue(raw, label))
    } else if (raw !== null || field.required) {
      given.set(name, name === 'id' && spec.keyFields === undefined ? readRecordId(kind, raw, label) : readFieldValue(field, raw, label))
      // A parent is named by a record id of its kind: an empty one, or another kind's, never resolves.
      const parent = spec.parents.find((candidate) => candidate.field === name)
      if (parent) readRecordId(parent.kind, given.get(name), label)
    }
  }
  derive(kind, given)
  const preview = given.get('preview')
  if (kind === 'secretRef' && typeof preview === 'string') assertMaskedPreview(preview)

  const fields: Record<string, JsonValue> = {}
  for (const field of Object.values(spec.fields)) {
    const value = given.get(field.name) ?? defaultValue(kind, field, read)
    if (value !== undefined) fields[field.name] = value
    else if (field.required) missing(kind, field.name)
  }
  const id = spec.keyFields === undefined ? (fields.id as string) : recordIdFor(kind, fields)
  return { id, fields, ext }
}

/**
 * Validates an update of a record at the API edge and normalizes it into the operations the
 * merge layer applies, one per merge class:
 * - `set`: lww fields (whole value) and map fields (`{ metadata: { k: v } }` merges per key;
 *   a null value unsets that key, as in a JSON merge patch, RFC 7396);
 * - `unset`: optional lww fields, and map keys as `metadata.<key>`; `set` of null on an
 *   optional field is the same as unsetting it;
 * - `add` / `remove`: members of add-wins sets;
 * - `increment`: counters, by a safe integer that may be negative. The materialized counter is
 *   max(0, sum of all increments), so it never goes below 0 and still converges.
 * Identity and system fields (ids, composite keys, tValidTo, supersededBy) are never patched
 * (IMMUTABLE_FIELD; supersede writes the temporal ones); collaborative text (core.content)
 * goes through the text API (TEXT_FIELD). On episodes, `set` and `unset` of unknown keys
 * become `ext` and `unsetExt`.
 *
 * Invariant: a returned patch touches each field (and each map key, set member) at most once
 * in a way that could contradict itself: set and unset of one field, or add and remove of one
 * member, are refused (CONFLICTING_PATCH) rather than resolved by an unwritten rule.
 */
import { assertArray, assertKnownKeys, assertObject } from '../assert.js'
import { InputError } from '../errors.js'
import type { JsonValue } from '../log/index.js'
import { fieldLabel, indexLabel, ownEntries, readFieldValue, readInteger, readJsonValue, readString, readStringList, setOwn } from './field-values.js'
import { fieldOf, kindSpec, type FieldSpec, type KindSpec, type MergeClass, type RecordKind } from './kind-table.js'
import { assertMaskedPreview } from './record-create.js'

/** An update as callers write it. */
export interface PatchInput {
  readonly set?: Record<string, unknown>
  readonly unset?: readonly string[]
  readonly add?: Record<string, readonly string[]>
  readonly remove?: Record<string, readonly string[]>
  readonly increment?: Record<string, number>
}

/** A checked, normalized update. Every member is present; empty ones mean nothing to do. */
export interface RecordPatch {
  /** lww fields → value; map fields → { key: value } to merge per key. */
  readonly set: Record<string, JsonValue>
  /** Optional lww fields, and map keys as `<field>.<key>`. */
  readonly unset: string[]
  readonly add: Record<string, string[]>
  readonly remove: Record<string, string[]>
  readonly increment: Record<string, number>
  /** Episode extension keys to write (lww per key). */
  readonly ext: Record<string, JsonValue>
  readonly unsetExt: string[]
}

type Operation = 'set' | 'unset' | 'add' | 'remove' | 'increment'

const PATCH_KEYS: readonly Operation[] = ['set', 'unset', 'add', 'remove', 'increment']

const ALLOWED: Readonly<Record<Operation, readonly MergeClass[]>> = {
  set: ['lww', 'map'],
  unset: ['lww'],
  add: ['set'],
  remove: ['set'],
  increment: ['counter'],
}

const HINT: Readonly<Record<MergeClass, string>> = {
  identity: 'it never changes',
  lww: 'use set or unset',
  map: 'use set with an object of keys, or unset "<field>.<key>"',
  set: 'use add or remove',
  counter: 'use increment',
  text: 'edit it with the text API',
}

/**
 * Fields a create writes and `update` never changes (docs/memory-model.md §1.1): what a fact says
 * and where it came from, an edge's endpoints and type, a chunk's resource. A fact or an edge
 * changes by `supersede`. Checked at the API only: operations already in a log keep applying.
 */
const WRITE_ONCE: Readonly<Partial<Record<RecordKind, readonly string[]>>> = {
  fact: ['episodeID', 'subject', 'predicate', 'object'],
  edge: ['srcEntityID', 'dstEntityID', 'edgeType'],
  chunk: ['resourceID'],
}

/** @throws InputError IMMUTABLE_FIELD naming a write-once field the patch sets or unsets */
export function refuseWriteOnce(kind: RecordKind, patch: RecordPatch): void {
  for (const name of WRITE_ONCE[kind] ?? []) {
    if (Object.hasOwn(patch.set, name) || patch.unset.includes(name)) {
      refuse('IMMUTABLE_FIELD', kind === 'chunk' ? 'set at creation and never changed' : 'set at creation; supersede the record to change it', fieldLabel(kind, name))
    }
  }
}

function refuse(code: string, message: string, label: string): never {
  throw new InputError(code, message, { field: label })
}

/** Refuses an operation the field's merge class does not take. */
function checkOperation(field: FieldSpec, operation: Operation, label: string): void {
  if (field.merge === 'identity') refuse('IMMUTABLE_FIELD', 'set at creation and never changed', label)
  if (field.system) refuse('IMMUTABLE_FIELD', 'written only by supersede', label)
  if (field.merge === 'text') refuse('TEXT_FIELD', 'collaborative text: edit it with the text API', label)
  if (!ALLOWED[operation].includes(field.merge)) {
    refuse('WRONG_OPERATION', `${operation} does not apply to a ${field.merge} field: ${HINT[field.merge]}`, label)
  }
}

/** An episode extension may not be called `kind`: that name is the record's kind (a bundle refuses it too). */
function refuseKindField(name: string, label: string): void {
  if (name === 'kind') refuse('RESERVED_KEY', '"kind" names the record\'s kind and cannot be changed or be a field', label)
}

function knownField(spec: KindSpec, name: string, label: string): FieldSpec {
  const field = fieldOf(spec, name)
  if (field === undefined) refuse('UNKNOWN_FIELD', `${spec.kind} has no such field`, label)
  return field
}

function readSet(spec: KindSpec, input: unknown, out: RecordPatch): void {
  const kind = spec.kind
  for (const [name, raw] of ownEntries(assertObject(input, 'patch.set'), kind)) {
    if (raw === undefined) continue
    const label = fieldLabel(kind, name)
    const field = fieldOf(spec, name)
    if (field === undefined) {
      // `metadata.key`: one key of a map field, as `unset` takes it.
      const mapField = mapFieldOfKey(spec, name)
      if (mapField !== undefined) {
        checkOperation(mapField, 'set', label)
        setMapEntries(out, mapField.name, { [name.slice(mapField.name.length + 1)]: raw }, fieldLabel(kind, mapField.name))
        continue
      }
      if (!spec.hasExt) refuse('UNKNOWN_FIELD', `${kind} has no such field`, label)
      refuseKindField(name, label)
      setOwn(out.ext, name, readJsonValue(raw, label))
      continue
    }
    checkOperation(field, 'set', label)
    if (field.merge === 'map') {
      setMapEntries(out, name, assertObject(raw, label), label)
    } else if (raw === null) {
      if (field.required) refuse('WRONG_TYPE', 'null: a required field cannot be unset', label)
      out.unset.push(name)
    } else {
      const value = readFieldValue(field, raw, label)
      if (kind === 'secretRef' && name === 'preview') assertMaskedPreview(value as string, label)
      out.set[name] = value
    }
  }
}

/** The map field a dotted name is one key of (`metadata.key` → metadata), if it is one. */
export function mapFieldOfKey(spec: KindSpec, name: string): FieldSpec | undefined {
  const dot = name.indexOf('.')
  const field = dot > 0 ? fieldOf(spec, name.slice(0, dot)) : undefined
  return field?.merge === 'map' ? field : undefined
}

/** Keys of a map field set (a string) or unset (null), added to what the patch sets of it already. */
function setMapEntries(out: RecordPatch, name: string, entries: { readonly [key: string]: unknown }, label: string): void {
  const set: Record<string, string> = { ...(out.set[name] as Record<string, string> | undefined) }
  for (const [key, value] of ownEntries(entries, label)) {
    if (value === null) out.unset.push(`${name}.${key}`)
    else if (value !== undefined) setOwn(set, key, readString(value, fieldLabel(label, key)))
  }
  if (Object.keys(set).length > 0) out.set[name] = set
}

function readUnset(spec: KindSpec, input: unknown, out: RecordPatch): void {
  const items = assertArray(input, 'patch.unset')
  for (let i = 0; i < items.length; i++) {
    const name = readString(items[i], indexLabel('patch.unset', i))
    const label = fieldLabel(spec.kind, name)
    if (mapFieldOfKey(spec, name) !== undefined) {
      out.unset.push(name)
      continue
    }
    const field = fieldOf(spec, name)
    if (field === undefined) {
      if (!spec.hasExt) refuse('UNKNOWN_FIELD', `${spec.kind} has no such field`, label)
      refuseKindField(name, label)
      out.unsetExt.push(name)
      continue
    }
    checkOperation(field, 'unset', label)
    if (field.required) refuse('REQUIRED_FIELD', 'a required field cannot be unset: set a new value instead', label)
    out.unset.push(name)
  }
}

function readMembers(spec: KindSpec, operation: 'add' | 'remove', input: unknown, out: Record<string, string[]>): void {
  for (const [name, raw] of ownEntries(assertObject(input, `patch.${operation}`), spec.kind)) {
    if (raw === undefined) continue
    const label = fieldLabel(spec.kind, name)
    checkOperation(knownField(spec, name, label), operation, label)
    const members = readStringList(raw, label, true)
    if (members.length > 0) out[name] = members
  }
}

function readIncrement(spec: KindSpec, input: unknown, out: Record<string, number>): void {
  for (const [name, raw] of ownEntries(assertObject(input, 'patch.increment'), spec.kind)) {
    if (raw === undefined) continue
    const label = fieldLabel(spec.kind, name)
    checkOperation(knownField(spec, name, label), 'increment', label)
    const amount = readInteger(raw, label)
    if (amount !== 0) out[name] = amount
  }
}

function checkConflicts(kind: RecordKind, patch: RecordPatch): void {
  const setKeys = new Set<string>()
  for (const [name, value] of Object.entries(patch.set)) {
    setKeys.add(name)
    if (fieldOf(kindSpec(kind), name)?.merge === 'map') for (const key of Object.keys(value as object)) setKeys.add(`${name}.${key}`)
  }
  for (const name of Object.keys(patch.ext)) setKeys.add(`ext:${name}`)
  for (const name of [...patch.unset, ...patch.unsetExt.map((key) => `ext:${key}`)]) {
    if (setKeys.has(name)) refuse('CONFLICTING_PATCH', 'both set and unset in one patch', fieldLabel(kind, name.replace(/^ext:/, '')))
  }
  for (const [name, added] of Object.entries(patch.add)) {
    const removed = new Set(patch.remove[name] ?? [])
    if (added.some((member) => removed.has(member))) refuse('CONFLICTING_PATCH', 'the same member both added and removed', fieldLabel(kind, name))
  }
}

function unique(items: string[]): string[] {
  return [...new Set(items)]
}

/**
 * Validates and normalizes an update (rules in this file's header).
 * @throws InputError UNKNOWN_KIND, WRONG_TYPE, UNKNOWN_FIELD, IMMUTABLE_FIELD, TEXT_FIELD,
 *   WRONG_OPERATION, REQUIRED_FIELD, CONFLICTING_PATCH, EMPTY_PATCH, BAD_STRING, BAD_TIMESTAMP,
 *   OUT_OF_RANGE, UNMASKED_SECRET, NOT_JSON; LimitError TOO_DEEP
 */
export function validatePatch(kind: RecordKind, changes: unknown): RecordPatch {
  const normalized = readPatch(kind, changes)
  if (isEmptyPatch(normalized)) refuse('EMPTY_PATCH', 'the patch changes nothing', 'patch')
  return normalized
}

/** A patch that changes nothing, unknown keys (`ext`) included. */
export function isEmptyPatch(patch: RecordPatch): boolean {
  return [patch.set, patch.add, patch.remove, patch.increment, patch.ext].every((part) => Object.keys(part).length === 0) &&
    patch.unset.length === 0 && patch.unsetExt.length === 0
}

/** `validatePatch` without the refusal of an empty patch (a stored patch may carry its unknown keys apart). */
export function readPatch(kind: RecordKind, changes: unknown): RecordPatch {
  const spec = kindSpec(kind)
  const input = assertObject(changes, 'patch')
  assertKnownKeys(input, PATCH_KEYS, 'patch')
  const [set, unset, add, remove, increment] = PATCH_KEYS.map((key) => (Object.hasOwn(input, key) ? input[key] : undefined))
  const out: RecordPatch = { set: {}, unset: [], add: {}, remove: {}, increment: {}, ext: {}, unsetExt: [] }
  if (set !== undefined) readSet(spec, set, out)
  if (unset !== undefined) readUnset(spec, unset, out)
  if (add !== undefined) readMembers(spec, 'add', add, out.add)
  if (remove !== undefined) readMembers(spec, 'remove', remove, out.remove)
  if (increment !== undefined) readIncrement(spec, increment, out.increment)
  const normalized: RecordPatch = { ...out, unset: unique(out.unset), unsetExt: unique(out.unsetExt) }
  checkConflicts(kind, normalized)
  return normalized
}

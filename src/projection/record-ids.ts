/**
 * Record ids. PM ids are stable and kind-prefixed (`ep_ ent_ edge_ fact_ chk_ res_ proc_ ctx_
 * com_ sec_`, spec §6); core blocks are named (`human`, `persona`); the id-less kinds merge on a
 * composite key, from which Cairn derives an internal id (`fl_ el_ cat_ pref_` + 24 hex of
 * SHA-256 over the canonical JSON array of the key values).
 *
 * Invariant: the same composite key gives the same id on every replica, so a link, category or
 * preference created independently on two devices is one record after merge.
 *
 * Accepted ids: imported bundles carry ids from other systems and adapters (`tx_…`, `eng_…`,
 * `ENG-2026-0131-001` in the PM fixtures), so an id need not carry its own kind's prefix. What
 * is refused (BAD_ID) is an id that carries another kind's prefix (`ent_x` as a fact id), which
 * is always a mix-up, and ids that are empty, longer than MAX_ID_LENGTH, or hold control
 * characters.
 */
import { assertHex, describeValue } from '../assert.js'
import { InputError } from '../errors.js'
import { canonicalJson, defaultCrypto } from '../log/index.js'
import { readString } from './field-values.js'
import { RECORD_KINDS, kindSpec, type RecordKind } from './kind-table.js'

/** Longer ids are refused: ids are keys in every index. */
export const MAX_ID_LENGTH = 256
/** Tombstone ids (spec §6): never the id of a record. */
export const TOMBSTONE_ID_PREFIX = 'tomb_'
/** Random bytes in a generated id: 64 bits, as the PM adapters' `ep_` + 16 hex. */
export const RANDOM_ID_BYTES = 8
/** Hex characters of SHA-256 kept in a composite-key id (96 bits, as PM's `tx_` ids). */
export const KEY_ID_HEX_LENGTH = 24

const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/

/**
 * Each kind's prefix and the kind it names. Every prefix ends at its only `_`, so an id carries
 * one exactly when the id up to its first `_` is that prefix: one map lookup (export checks
 * every record's ids with it).
 */
const PREFIX_OWNERS: ReadonlyMap<string, RecordKind | 'tombstone'> = new Map([
  ...RECORD_KINDS.flatMap((kind): [string, RecordKind][] => {
    const prefix = kindSpec(kind).idPrefix
    return prefix === undefined ? [] : [[prefix, kind]]
  }),
  [TOMBSTONE_ID_PREFIX, 'tombstone'],
])
for (const prefix of PREFIX_OWNERS.keys()) if (prefix.indexOf('_') !== prefix.length - 1) throw new Error(`id prefix ${prefix} must end at its only _`)

/**
 * Checks a record id given by the caller (or a bundle) for an id'd kind, or a core block name.
 * @throws InputError WRONG_TYPE, BAD_STRING, BAD_ID
 */
export function readRecordId(kind: RecordKind, value: unknown, label = `${kind}.id`): string {
  const id = readString(value, label)
  if (id.length === 0) throw new InputError('BAD_ID', 'an id must not be empty', { field: label })
  if (id.length > MAX_ID_LENGTH) throw new InputError('BAD_ID', `an id of ${id.length} characters is longer than ${MAX_ID_LENGTH}`, { field: label })
  if (CONTROL_CHARACTER.test(id)) throw new InputError('BAD_ID', 'an id must not hold control characters', { field: label })
  const prefix = id.slice(0, id.indexOf('_') + 1)
  const owner = PREFIX_OWNERS.get(prefix)
  if (owner !== undefined && owner !== kind) {
    throw new InputError('BAD_ID', `${describeValue(id)} has the ${owner} prefix ${prefix}, not a ${kind} id`, { field: label })
  }
  return id
}

/**
 * H(p1, …, pn) of memory-model §1.3: the first 24 hex of SHA-256 over the canonical JSON array
 * of the parts. Composite-key ids, imported units' ids and expiry tombstone ids are built on it.
 */
export function hashParts(...parts: string[]): string {
  return defaultCrypto().sha256Hex(canonicalJson(parts)).slice(0, KEY_ID_HEX_LENGTH)
}

/**
 * The record id of a validated record: `fields.id` for id'd kinds (and core), or for factLink,
 * episodeLink, category and preference `<prefix>` + the first 24 hex of SHA-256 over the
 * canonical JSON array of the key values, e.g. `cat_` + sha256('["Work"]')[:24].
 * @throws InputError UNKNOWN_KIND, MISSING_FIELD, WRONG_TYPE, BAD_STRING
 */
export function recordIdFor(kind: RecordKind, fields: Readonly<Record<string, unknown>>): string {
  const spec = kindSpec(kind)
  if (spec.keyFields === undefined) {
    const id = fields.id
    if (id === undefined) throw new InputError('MISSING_FIELD', 'the record has no id', { field: `${kind}.id` })
    return readString(id, `${kind}.id`)
  }
  const values = spec.keyFields.map((name) => {
    const value = Object.hasOwn(fields, name) ? fields[name] : undefined
    if (value === undefined) throw new InputError('MISSING_FIELD', 'required for the record key', { field: `${kind}.${name}` })
    return readString(value, `${kind}.${name}`)
  })
  return `${spec.idPrefix ?? ''}${hashParts(...values)}`
}

/**
 * A new random id: `<prefix>` + 16 hex from `randomHex(8)`. Core blocks have no generated id
 * (a block name is required) and composite-key kinds derive theirs (`recordIdFor`).
 * @throws InputError UNKNOWN_KIND, MISSING_FIELD (core), DERIVED_ID (composite-key kinds),
 *   BAD_HEX / WRONG_LENGTH (randomHex returned something other than 16 lowercase hex)
 */
export function newRecordId(kind: RecordKind, randomHex: (bytes: number) => string): string {
  const spec = kindSpec(kind)
  if (spec.idPrefix === undefined) {
    throw new InputError('MISSING_FIELD', 'a core block needs a name such as "human" or "persona"', { field: `${kind}.id` })
  }
  if (spec.keyFields !== undefined) {
    throw new InputError('DERIVED_ID', `${kind} ids derive from ${spec.keyFields.join(', ')}; use recordIdFor`, { field: `${kind}.id` })
  }
  if (typeof randomHex !== 'function') throw new InputError('WRONG_TYPE', 'randomHex must be a function', { field: 'randomHex' })
  return spec.idPrefix + assertHex(randomHex(RANDOM_ID_BYTES), 'randomHex', RANDOM_ID_BYTES)
}

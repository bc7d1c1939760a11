/**
 * The table of the 15 Portable Memory record kinds (spec §6, JSON Schemas in
 * conformance/portable-memory/Schemas): each kind's fields with their PM names, value types,
 * whether the schema requires them, their defaults, and the merge class that tells the CRDT
 * layer how concurrent writes combine. Projections (indexes, search, no-resurrection) and the
 * public API read the same table, so a field means one thing everywhere.
 *
 * Invariant: the table only grows. A field's type or merge class never changes once events
 * that write it exist, because replicas fold old events with today's table.
 *
 * Merge classes (design decisions, DESIGN.md "Merge semantics"):
 * - `identity`: set at creation, never changes (`id`, and the composite keys of id-less kinds).
 * - `set`: add-wins set of strings, materialized in insertion order.
 * - `counter`: summed increments; the materialized value is max(0, sum), a function of the set
 *   of increments, so it converges whatever the delivery order.
 * - `map`: per-key last-writer-wins, string values (episode.metadata).
 * - `text`: collaborative text, an Automerge document (core.content).
 * - `lww`: last-writer-wins register by (clock, author): everything else, including whole
 *   ordered lists (procedure.steps) and the temporal fields. `system` fields (tValidTo,
 *   supersededBy) are written by the supersede operation only, never by patches.
 *
 * Cairn extension fields, allowed on every kind and marked `extension: true`:
 * - `tags`: an add-wins set of strings. On episodes, `categories` stays the PM field and `tags`
 *   is additional.
 * - `contextID`: the scope a record belongs to; native (PM) on episodes, an extension elsewhere.
 * Both are optional and absent unless written, so PM records round-trip byte for byte. Exported
 * to `.mem`, they are unknown keys to other readers (kept on episodes, dropped elsewhere, §8).
 *
 * Optional PM fields typed `["string","null"]` are simply optional: absent means absent, and a
 * record never holds null (spec §3).
 */
import { describeValue } from '../assert.js'
import { InputError } from '../errors.js'
import type { JsonValue } from '../log/index.js'

export type FieldType = 'string' | 'timestamp' | 'integer' | 'number' | 'boolean' | 'string[]' | 'string-map'
export type MergeClass = 'identity' | 'set' | 'counter' | 'map' | 'text' | 'lww'

/** How a field left out of a create gets its value. */
export type FieldDefault =
  | { readonly rule: 'value'; readonly value: JsonValue }
  /** The create's `nowMs`, as a whole-second RFC 3339 UTC timestamp. */
  | { readonly rule: 'now' }
  /** `<idPrefix>` + 16 random hex characters. */
  | { readonly rule: 'new-id' }
  /** Computed from other fields (episode summary/details, fact text): see record-create.ts. */
  | { readonly rule: 'derived'; readonly from: readonly string[] }

export interface FieldSpec {
  /** The Portable Memory (camelCase) field name, also the key in records and events. */
  readonly name: string
  readonly type: FieldType
  readonly merge: MergeClass
  /** The PM schema lists it in `required`. Cairn extensions are never required. */
  readonly required: boolean
  /** Written only by a dedicated operation (supersede), never by ordinary patches. */
  readonly system?: boolean
  /** A Cairn extension, not a field of this kind's PM schema. */
  readonly extension?: boolean
  /** Smallest value of an integer field (counters, positions, budgets, versions). */
  readonly minimum?: number
  readonly default?: FieldDefault
  readonly description?: string
}

export interface KindSpec {
  readonly kind: RecordKind
  /** Prefix of record ids: the PM id prefix, or for composite-key kinds the internal id prefix. Core has none. */
  readonly idPrefix?: string
  /** For kinds without a PM id: the fields whose values derive the record id (spec §6). */
  readonly keyFields?: readonly string[]
  readonly fields: Readonly<Record<string, FieldSpec>>
  /** Fields indexed for full-text search, in order of weight. */
  readonly textFields: readonly string[]
  /** References whose tombstone forbids this record (no resurrection, spec §7). */
  readonly parents: readonly { readonly field: string; readonly kind: RecordKind }[]
  /** The fields of `parents`. */
  readonly parentFields: readonly string[]
  /** Valid-time fields of bi-temporal kinds. */
  readonly validTime?: { readonly from: string; readonly to: string }
  /** Unknown keys are kept as `ext` and round-trip (episodes only, spec §8); elsewhere they are refused. */
  readonly hasExt: boolean
}

/** The kinds, in the spec's import merge order (§7), which puts parents before children. */
export const RECORD_KINDS = [
  'context', 'category', 'preference', 'core', 'entity', 'episode', 'resource', 'chunk', 'edge', 'fact',
  'factLink', 'episodeLink', 'procedure', 'community', 'secretRef',
] as const

export type RecordKind = (typeof RECORD_KINDS)[number]

const NOW: FieldDefault = { rule: 'now' }
const NEW_ID: FieldDefault = { rule: 'new-id' }
const value = (fixed: JsonValue): FieldDefault => ({ rule: 'value', value: fixed })
const derived = (...from: string[]): FieldDefault => ({ rule: 'derived', from })

type Options = Omit<FieldSpec, 'name' | 'type' | 'merge' | 'required'>

/**
 * A FieldSpec that keeps its name, type, requiredness and options as literal types, so the
 * record types of the public API (record-types.ts) are read off this table rather than
 * written out a second time.
 */
export type TypedFieldSpec<N extends string, T extends FieldType, R extends boolean, O extends Options> =
  FieldSpec & { readonly name: N; readonly type: T; readonly required: R } & Readonly<O>

type WithDefault = { readonly default: FieldDefault }
type NoOptions = Record<never, never>

/** A field the PM schema requires. */
function required<const N extends string, const T extends FieldType, const O extends Options = NoOptions>(
  name: N, type: T, merge: MergeClass, options?: O,
): TypedFieldSpec<N, T, true, O> {
  return { name, type, merge, required: true, ...options } as TypedFieldSpec<N, T, true, O>
}

/** A field the PM schema allows but does not require. */
function optional<const N extends string, const T extends FieldType, const O extends Options = NoOptions>(
  name: N, type: T, merge: MergeClass, options?: O,
): TypedFieldSpec<N, T, false, O> {
  return { name, type, merge, required: false, ...options } as TypedFieldSpec<N, T, false, O>
}

const idField = required('id', 'string', 'identity', { default: NEW_ID })
const key = <const N extends string>(name: N) => required(name, 'string', 'identity', { description: 'part of the composite key' })
const now = <const N extends string>(name: N, description?: string) =>
  required(name, 'timestamp', 'lww', (description === undefined ? { default: NOW } : { default: NOW, description }) as WithDefault)
/** A required string; with `fixed`, that is its default and the field may be left out. */
function text<const N extends string>(name: N): TypedFieldSpec<N, 'string', true, NoOptions>
function text<const N extends string>(name: N, fixed: string): TypedFieldSpec<N, 'string', true, WithDefault>
function text(name: string, fixed?: string): FieldSpec {
  return required(name, 'string', 'lww', fixed === undefined ? {} : { default: value(fixed) })
}
const time = <const N extends string, const O extends Options = NoOptions>(name: N, options?: O) => optional(name, 'timestamp', 'lww', options)
const stringSet = <const N extends string>(name: N) => required(name, 'string[]', 'set', { default: value([]) })
const count = <const N extends string>(name: N) => required(name, 'integer', 'counter', { minimum: 0, default: value(0) })
const score = <const N extends string>(name: N, fixed: number) => required(name, 'number', 'lww', { default: value(fixed) })
const flag = <const N extends string>(name: N, fixed: boolean) => required(name, 'boolean', 'lww', { default: value(fixed) })
const sensitivity = (fixed: string) => text('sensitivity', fixed)

const tagsExtension = optional('tags', 'string[]', 'set', { extension: true, description: 'Cairn tags (add-wins set)' })
const contextExtension = optional('contextID', 'string', 'lww', { extension: true, description: 'Cairn scope: the context this record belongs to' })

interface KindDraft {
  readonly idPrefix?: string
  readonly keyFields?: readonly string[]
  readonly fields: readonly FieldSpec[]
  readonly textFields: readonly string[]
  readonly parents?: readonly { readonly field: string; readonly kind: RecordKind }[]
  readonly validTime?: { readonly from: string; readonly to: string }
}

const DRAFTS = {
  episode: {
    idPrefix: 'ep_',
    fields: [
      idField,
      now('eventTime', 'when it happened'),
      now('mentionTime', 'when it was stated'),
      now('ingestionTime', 'when it was stored'),
      text('sourceType', 'note'),
      optional('sourceID', 'string', 'lww'),
      stringSet('actors'),
      required('summary', 'string', 'lww', { default: derived('details'), description: 'first line of details, at most 120 code points' }),
      required('details', 'string', 'lww', { default: derived('summary') }),
      sensitivity('low'),
      time('deletedAt'),
      required('metadata', 'string-map', 'map', { default: value({}) }),
      optional('contextID', 'string', 'lww', { description: 'the context (scope) of the episode' }),
      stringSet('categories'),
      score('importance', 0.5),
      score('confidence', 0.7),
      text('lifecycleState', 'HOT'),
      text('extractionState', 'done'),
      time('lastAccessed'),
      count('accessCount'),
      flag('pinned', false),
      time('expirationDate'),
      stringSet('vaultRefs'),
      optional('speaker', 'string', 'lww'),
    ],
    textFields: ['summary', 'details'],
  },
  entity: {
    idPrefix: 'ent_',
    fields: [idField, text('type'), text('canonicalName'), stringSet('aliases'), text('summary', ''), sensitivity('low'), now('updatedAt')],
    textFields: ['canonicalName', 'aliases', 'summary'],
  },
  edge: {
    idPrefix: 'edge_',
    fields: [
      idField,
      text('srcEntityID'),
      text('dstEntityID'),
      text('edgeType'),
      now('tValidFrom'),
      time('tValidTo', { system: true, description: 'absent while currently valid; set by supersede' }),
      now('ingestionTime'),
      score('confidence', 0.7),
      required('evidenceEpisodeIDs', 'string[]', 'set', { default: value([]), description: 'episodes that justify this edge' }),
      optional('supersededBy', 'string', 'lww', { system: true, description: 'the edge that replaced this one' }),
    ],
    textFields: ['edgeType'],
    parents: [{ field: 'srcEntityID', kind: 'entity' }, { field: 'dstEntityID', kind: 'entity' }],
    validTime: { from: 'tValidFrom', to: 'tValidTo' },
  },
  fact: {
    idPrefix: 'fact_',
    fields: [
      idField,
      text('episodeID'),
      text('subject'),
      text('predicate'),
      text('object'),
      required('text', 'string', 'lww', { default: derived('subject', 'predicate', 'object') }),
      time('eventTime'),
      now('tValidFrom'),
      time('tValidTo', { system: true, description: 'absent while currently valid; set by supersede' }),
      optional('supersededBy', 'string', 'lww', { system: true, description: 'the fact that replaced this one' }),
      score('confidence', 0.7),
      score('importance', 0.5),
      optional('speaker', 'string', 'lww'),
      time('reconciledAt'),
      time('lastReinforcedAt'),
      time('prunedAt', { description: 'non-destructive prune marker' }),
      now('createdAt'),
    ],
    textFields: ['text', 'subject', 'predicate', 'object'],
    parents: [{ field: 'episodeID', kind: 'episode' }],
    validTime: { from: 'tValidFrom', to: 'tValidTo' },
  },
  factLink: {
    idPrefix: 'fl_',
    keyFields: ['srcFactID', 'dstFactID', 'linkType'],
    fields: [key('srcFactID'), key('dstFactID'), key('linkType'), now('createdAt')],
    textFields: [],
    parents: [{ field: 'srcFactID', kind: 'fact' }, { field: 'dstFactID', kind: 'fact' }],
  },
  episodeLink: {
    idPrefix: 'el_',
    keyFields: ['srcEpisodeID', 'dstEpisodeID', 'linkType'],
    fields: [key('srcEpisodeID'), key('dstEpisodeID'), key('linkType'), score('weight', 1)],
    textFields: [],
    parents: [{ field: 'srcEpisodeID', kind: 'episode' }, { field: 'dstEpisodeID', kind: 'episode' }],
  },
  resource: {
    idPrefix: 'res_',
    fields: [idField, text('uri'), text('mimeType'), text('contentHash'), text('title'), text('summary', ''), now('created'), now('modified')],
    textFields: ['title', 'summary'],
  },
  chunk: {
    idPrefix: 'chk_',
    fields: [
      idField,
      text('resourceID'),
      required('position', 'integer', 'lww', { minimum: 0 }),
      text('text'),
      sensitivity('low'),
      optional('contextPrefix', 'string', 'lww'),
    ],
    textFields: ['text'],
    parents: [{ field: 'resourceID', kind: 'resource' }],
  },
  core: {
    fields: [
      required('id', 'string', 'identity', { description: 'block name, e.g. human or persona' }),
      required('content', 'string', 'text', { default: value('') }),
      required('charBudget', 'integer', 'lww', { minimum: 0, default: value(2000) }),
      required('version', 'integer', 'lww', { minimum: 0, default: value(1) }),
    ],
    textFields: ['content'],
  },
  procedure: {
    idPrefix: 'proc_',
    fields: [
      idField,
      text('name'),
      text('triggerPattern'),
      required('steps', 'string[]', 'lww', { default: value([]), description: 'an ordered list, replaced whole' }),
      count('successCount'),
      count('failureCount'),
      time('lastUsed'),
      flag('enabled', true),
    ],
    textFields: ['name', 'triggerPattern', 'steps'],
  },
  context: {
    idPrefix: 'ctx_',
    fields: [idField, text('label'), optional('parentID', 'string', 'lww'), flag('archived', false), now('createdAt')],
    textFields: ['label'],
  },
  community: {
    idPrefix: 'com_',
    fields: [idField, text('label'), text('summary', ''), stringSet('memberEntityIDs')],
    textFields: ['label', 'summary'],
  },
  category: {
    idPrefix: 'cat_',
    keyFields: ['name'],
    fields: [key('name'), text('description', '')],
    textFields: ['name', 'description'],
  },
  preference: {
    idPrefix: 'pref_',
    keyFields: ['key'],
    fields: [key('key'), text('value')],
    textFields: ['key', 'value'],
  },
  secretRef: {
    idPrefix: 'sec_',
    fields: [
      idField,
      text('label'),
      sensitivity('high'),
      text('category'),
      required('preview', 'string', 'lww', { description: 'a masked hint only, never secret material' }),
      required('encryptionMetadata', 'string', 'lww', { description: 'how the value is protected, not the value' }),
      now('createdAt'),
      time('lastAccessed'),
    ],
    // Never the preview: even masked, it is a hint about a secret.
    textFields: ['label'],
  },
} as const satisfies Readonly<Record<RecordKind, KindDraft>>

/** The table's literal type: record-types.ts derives each kind's record and input types from it. */
export type KindDrafts = typeof DRAFTS
/** The extension fields every kind has (buildSpec adds them). */
export type ExtensionFields = typeof contextExtension | typeof tagsExtension

function buildSpec(kind: RecordKind, draft: KindDraft): KindSpec {
  // No prototype: `fields.constructor` must be undefined, not Object.
  const fields = Object.create(null) as Record<string, FieldSpec>
  for (const field of [...draft.fields, contextExtension, tagsExtension]) {
    if (fields[field.name] === undefined) fields[field.name] = Object.freeze(field)
  }
  return Object.freeze({
    kind,
    ...(draft.idPrefix === undefined ? {} : { idPrefix: draft.idPrefix }),
    ...(draft.keyFields === undefined ? {} : { keyFields: Object.freeze([...draft.keyFields]) }),
    fields: Object.freeze(fields),
    textFields: Object.freeze([...draft.textFields]),
    parents: Object.freeze([...(draft.parents ?? [])]),
    parentFields: Object.freeze((draft.parents ?? []).map((parent) => parent.field)),
    ...(draft.validTime === undefined ? {} : { validTime: draft.validTime }),
    hasExt: kind === 'episode',
  })
}

const SPECS = new Map<string, KindSpec>(RECORD_KINDS.map((kind) => [kind, buildSpec(kind, DRAFTS[kind])]))

/** True for the 15 PM kinds; false for vendor kinds (`vendorThing`), which bundles keep as raw lines. */
export function isRecordKind(value: unknown): value is RecordKind {
  return typeof value === 'string' && SPECS.has(value)
}

/**
 * The spec of a kind.
 * @throws InputError UNKNOWN_KIND when `kind` is not one of RECORD_KINDS
 */
export function kindSpec(kind: RecordKind): KindSpec {
  const spec = typeof kind === 'string' ? SPECS.get(kind) : undefined
  if (spec === undefined) throw new InputError('UNKNOWN_KIND', `${describeValue(kind)} is not a record kind`, { field: 'kind' })
  return spec
}

/** A field of a kind by name, or undefined. Own fields only, so `constructor` or `__proto__` is never a field. */
export function fieldOf(spec: KindSpec, name: string): FieldSpec | undefined {
  return Object.hasOwn(spec.fields, name) ? spec.fields[name] : undefined
}

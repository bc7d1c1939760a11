/**
 * fast-check arbitraries of bundle content: records of every Portable Memory kind built from the
 * kind table's field types (with optional fields, nulls, episode ext values including UInt64
 * integers, and unknown keys on other kinds, which the codec drops), vendor-kind lines,
 * tombstones, audit rows and Evidence Pack edges.
 */
import fc from 'fast-check'
import type { JsonObject, MemBundleContent } from '../../../src/bundle/mem/index.js'
import { kindSpec, RECORD_KINDS, type FieldType, type RecordKind } from '../../../src/projection/kinds.js'

const text = fc.oneof(
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }), weight: 4 },
  { arbitrary: fc.constantFrom('', 'ep_1', '😀！', 'Київ', 'tab\there "q" \\ \u0000\u001f\u007f\u2028 /'), weight: 1 },
)

/** RFC 3339: mostly canonical whole-second Z, sometimes a fraction or an offset (kept as given). */
const timestamp = fc
  .tuple(fc.integer({ min: Date.UTC(1000, 0, 1), max: Date.UTC(8999, 11, 31) }), fc.constantFrom('Z', 'Z', 'Z', 'fraction', 'offset'))
  .map(([ms, form]) => {
    const millis = ((ms % 1000) + 1000) % 1000
    const base = new Date(ms - millis).toISOString().slice(0, 19)
    if (form === 'fraction') return `${base}.${String(millis).padStart(3, '0')}Z`
    return form === 'offset' ? `${base}+05:30` : `${base}Z`
  })

const uint64 = fc.bigInt({ min: 2n ** 53n, max: 2n ** 64n - 1n })
const int64 = fc.bigInt({ min: 2n ** 53n, max: 2n ** 63n - 1n })
const number = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer({ min: -1_000_000, max: 1_000_000 }),
  fc.constantFrom(0.92, 0.7, 1e16, 1e-7, 0.1 + 0.2, 5e-324, 1e21),
  uint64,
)
/** Cairn refuses __proto__ as a key or set element (crdt/own-keys.ts); fast-check likes to try it. */
const RESERVED_KEY = '__proto__'
const keyText = text.filter((value) => value !== RESERVED_KEY)
const stringList = fc.array(keyText, { maxLength: 3 })

function valueOf(type: FieldType): fc.Arbitrary<unknown> {
  switch (type) {
    case 'string': return text
    case 'timestamp': return timestamp
    case 'integer': return fc.oneof({ arbitrary: fc.nat({ max: 1000 }), weight: 4 }, { arbitrary: int64, weight: 1 })
    case 'number': return number
    case 'boolean': return fc.boolean()
    case 'string[]': return stringList
    case 'string-map': return fc.dictionary(keyText, text, { maxKeys: 3 })
  }
}

function hasReservedKey(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false
  return Object.keys(value).some((key) => key === RESERVED_KEY || hasReservedKey((value as Record<string, unknown>)[key]))
}

const extValue = fc.oneof({ arbitrary: fc.jsonValue({ maxDepth: 2 }).filter((value) => !hasReservedKey(value)), weight: 4 }, { arbitrary: uint64, weight: 1 })

function withoutUndefined(row: Record<string, unknown>): JsonObject {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(row)) if (value !== undefined) Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true })
  return out as JsonObject
}

/** A record of `kind`: required fields always, optional ones sometimes (or null), and unknown keys. */
export function recordOf(kind: RecordKind): fc.Arbitrary<JsonObject> {
  const fields = Object.values(kindSpec(kind).fields).filter((field) => field.extension !== true)
  const names = new Set(fields.map((field) => field.name))
  const shape: Record<string, fc.Arbitrary<unknown>> = {}
  for (const field of fields) {
    const value = valueOf(field.type)
    shape[field.name] = field.required ? value : fc.oneof(fc.constant(undefined), fc.constant(null), value)
  }
  const unknownKeys = fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }).filter((key) => !names.has(key) && key !== RESERVED_KEY), extValue, { maxKeys: kind === 'episode' ? 3 : 1 })
  return fc.tuple(fc.record(shape), unknownKeys).map(([native, unknown]) => withoutUndefined({ ...unknown, ...native }))
}

const derived = fc.record(
  {
    sentenceIDs: stringList, factIDs: stringList, edgeIDs: stringList, entityIDs: stringList, chunkIDs: stringList,
    episodeLinkCount: fc.nat({ max: 50 }), embeddingCacheKeys: stringList,
  },
  { requiredKeys: [] },
)

export const tombstoneRow: fc.Arbitrary<JsonObject> = fc
  .record({
    id: text, op: fc.constantFrom('delete', 'redact'), targetKind: text, targetID: text, deletedAt: timestamp, actor: text,
    derived: fc.option(derived, { nil: undefined }), reason: fc.option(text, { nil: undefined }), signature: fc.option(text, { nil: undefined }),
  })
  .map((row) => withoutUndefined(row))

export const auditRow: fc.Arbitrary<JsonObject> = fc
  .record({ ts: timestamp, actor: text, op: text, targetID: text, reason: fc.option(text, { nil: undefined }) })
  .map((row) => withoutUndefined(row))

const RESERVED = new Set<string>([...RECORD_KINDS, 'tombstone', 'audit', 'provenanceEdge'])
const vendorKind = fc.stringMatching(/^[a-z][A-Za-z0-9_-]{0,12}$/).filter((name) => !RESERVED.has(name))
const vendorLine = fc.string({ unit: 'grapheme', maxLength: 24 }).filter((line) => !line.includes('\n'))

export const bundleContent: fc.Arbitrary<MemBundleContent> = fc.record({
  records: fc.record(Object.fromEntries(RECORD_KINDS.map((kind) => [kind, fc.array(recordOf(kind), { maxLength: 3 })])), { requiredKeys: [] }),
  passthrough: fc.dictionary(vendorKind, fc.array(vendorLine, { maxLength: 4 }), { maxKeys: 2 }),
  tombstones: fc.array(tombstoneRow, { maxLength: 3 }),
  auditLog: fc.array(auditRow, { maxLength: 3 }),
  provenanceEdges: fc.option(fc.array(recordOf('edge'), { maxLength: 2 }), { nil: undefined }),
}) as fc.Arbitrary<MemBundleContent>

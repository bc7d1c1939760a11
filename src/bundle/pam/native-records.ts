/**
 * Cairn records in PAM entries (the export side of docs/memory-model.md §2.7, "Records without
 * a PAM origin"), and back. A record becomes an entry of its component; the entry's PAM fields
 * carry what PAM has a field for, and a `cairn` field carries the rest, so import gives the
 * record back exactly:
 *
 *   cairn = { record?: {kind, id, set?, unset?}, attached?: [record, …], writtenAtMs?: {id: ms, …} }
 *
 * `record` is the entry's primary record, stored as a difference from `baseRecordOf(entry)`,
 * the record the PAM fields alone describe: `set` holds the fields whose canonical JSON differs
 * from the base (or that the base lacks), `unset` the base fields the record does not have.
 * `attached` holds further records whole: links that start at the primary record, contexts it
 * is scoped to, and in the identity entry the core blocks and preferences. `writtenAtMs` holds
 * when each of those records was last written (ms since the epoch, by record id): signed with
 * the entry, it lets an import keep what its replica wrote after that (merge-records.ts).
 *
 * Invariant: `applyDifference(baseRecordOf(entry), difference(record, base))` is the record,
 * field for field, for any record; the mapping below only decides how small `set` is.
 * An entry edited by a PAM tool must drop `cairn`, and then imports as a foreign entry.
 */
import { describeType, describeValue, isPlainObject } from '../../assert.js'
import { InputError } from '../../errors.js'
import { canonicalJson, type JsonValue } from '../../log/index.js'
import { deriveFactText, deriveSummary, isRecordKind, parseTimestamp } from '../../projection/index.js'
import type { JsonObject, PamComponentName, PamRecord } from './pam-types.js'
import { WORKING_TAG } from './import-foreign.js'

export interface NativeExtension {
  readonly record?: { readonly kind: string; readonly id: string; readonly set?: JsonObject; readonly unset?: string[] }
  readonly attached?: PamRecord[]
  /** When each of the entry's records was last written, in ms since the epoch, by record id. */
  readonly writtenAtMs?: Readonly<Record<string, number>>
}

/** The record an entry stands for (its primary record), by entry id. */
export type EntryResolver = (entryId: string) => { readonly kind: string; readonly id: string } | undefined

/** What the content of an entry may depend on besides its record. */
export interface ContentEnvironment {
  /** `created_at` of entries whose record has no time of its own, and the fallback time. */
  readonly now: string
  readonly agentName: string
  readonly entityName: (id: string) => string
}

export const PRIMARY_KINDS: Readonly<Record<PamComponentName, readonly string[]>> = {
  episodic: ['episode'],
  working: ['episode'],
  semantic: ['fact', 'entity', 'edge'],
  procedural: ['procedure'],
  identity: ['core'],
}

const ACTOR = /^(user|agent|system|tool):./s
const PROCEDURE_NAME = /^[a-z][a-z0-9_]{0,127}$/
const PREFERENCE_KEY = /^[a-z][a-z0-9_]*$/
/** `is_a`: the predicate of an entity's semantic entry (a Cairn choice; PAM has no entities). */
export const ENTITY_PREDICATE = 'is_a'

const str = (value: JsonValue | undefined, fallback = ''): string => (typeof value === 'string' ? value : fallback)
const unit = (value: JsonValue | undefined, fallback: number): number => (typeof value === 'number' && value >= 0 && value <= 1 ? value : fallback)
const count = (value: JsonValue | undefined): number => (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : 0)
const strings = (value: JsonValue | undefined): string[] => (Array.isArray(value) && value.every((item) => typeof item === 'string') ? (value as string[]) : [])

function stamp<T extends string | null>(value: JsonValue | undefined, fallback: T): string | T {
  if (typeof value !== 'string') return fallback
  try {
    parseTimestamp(value)
    return value
  } catch {
    return fallback
  }
}

/** A PAM procedure name (`^[a-z][a-z0-9_]{0,127}$`) close to a free-text name. */
export function procedureNameOf(name: string): string {
  if (PROCEDURE_NAME.test(name)) return name
  const slug = name.toLowerCase().replace(/[^a-z0-9_]+/g, '_').replace(/^_+|_+$/g, '')
  return (/^[a-z]/.test(slug) ? slug : `p_${slug}`).slice(0, 128)
}

/** The component of a single-record entry, or undefined for kinds that go elsewhere. */
export function componentOfRecord(record: PamRecord): PamComponentName | undefined {
  switch (record.kind) {
    case 'episode':
      return strings(record.tags).includes(WORKING_TAG) ? 'working' : 'episodic'
    case 'fact':
    case 'entity':
    case 'edge':
      return 'semantic'
    case 'procedure':
      return 'procedural'
    default:
      return undefined
  }
}

/** The PAM fields of a single-record entry, without id, parent_ids and source_event_ids. */
export function contentOfRecord(component: PamComponentName, record: PamRecord, env: ContentEnvironment): JsonObject {
  switch (record.kind) {
    case 'episode': {
      const created = stamp(record.ingestionTime, env.now)
      if (component === 'working') return { created_at: created, goals: [str(record.details)], subgoals: [], scratch: {}, pending_actions: [] }
      return {
        created_at: created, timestamp: stamp(record.eventTime, created),
        actor: strings(record.actors).find((actor) => ACTOR.test(actor)) ?? 'system:cairn',
        observation: str(record.details), salience: unit(record.importance, 0.5), tags: strings(record.categories),
      }
    }
    case 'fact':
      return { created_at: stamp(record.createdAt, env.now), subject: str(record.subject), predicate: str(record.predicate), object: str(record.object), confidence: unit(record.confidence, 0.7) }
    case 'entity':
      return { created_at: stamp(record.updatedAt, env.now), subject: str(record.canonicalName), predicate: ENTITY_PREDICATE, object: str(record.type), confidence: 1 }
    case 'edge':
      return {
        created_at: stamp(record.ingestionTime, env.now), subject: env.entityName(str(record.srcEntityID)), predicate: str(record.edgeType),
        object: env.entityName(str(record.dstEntityID)), confidence: unit(record.confidence, 0.7),
      }
    default: {
      const trigger = str(record.triggerPattern)
      return {
        created_at: env.now, name: procedureNameOf(str(record.name)), params: [], body: strings(record.steps).join('\n'),
        preconditions: trigger === '' ? [] : trigger.split('\n'), usage_count: count(record.successCount) + count(record.failureCount),
        last_used: stamp(record.lastUsed, null),
      }
    }
  }
}

/** The PAM fields of the identity entry: the persona block and the preferences (§2.7). */
export function identityContent(persona: PamRecord | undefined, preferences: readonly PamRecord[], env: ContentEnvironment): JsonObject {
  const values: JsonObject = {}
  for (const preference of preferences) {
    const key = str(preference.key)
    if (PREFERENCE_KEY.test(key) && typeof preference.value === 'string') values[key] = preference.value
  }
  const content = persona === undefined ? '' : str(persona.content)
  const language = preferences.find((preference) => preference.key === 'language')?.value
  return {
    created_at: env.now, preferences: values,
    persona: { name: env.agentName, role: 'agent', ...(content === '' ? {} : { description: content }) },
    language: typeof language === 'string' && language !== '' ? language : 'und', policies: [],
  }
}

/** The record an entry's PAM fields describe: what the primary record is stored against. */
export function baseRecordOf(kind: string, id: string, component: PamComponentName, entry: JsonObject, resolve: EntryResolver): PamRecord {
  const created = str(entry.created_at)
  const recordsOf = (field: string, wanted: string): string[] =>
    strings(entry[field]).flatMap((entryId) => {
      const record = resolve(entryId)
      return record?.kind === wanted ? [record.id] : []
    })
  switch (kind) {
    case 'episode': {
      const details = component === 'working' ? str(strings(entry.goals)[0]) : str(entry.observation)
      const episode: PamRecord = {
        kind, id, eventTime: component === 'working' ? created : str(entry.timestamp), mentionTime: created, ingestionTime: created,
        sourceType: component === 'working' ? 'note' : 'event', actors: component === 'working' ? [] : [str(entry.actor)],
        summary: deriveSummary(details), details, sensitivity: 'low', metadata: {}, categories: strings(entry.tags),
        importance: unit(entry.salience, 0.5), confidence: 0.7, lifecycleState: 'HOT', extractionState: 'done', accessCount: 0, pinned: false, vaultRefs: [],
      }
      if (component === 'working') episode.tags = [WORKING_TAG]
      return episode
    }
    case 'fact': {
      const [subject, predicate, object] = [str(entry.subject), str(entry.predicate), str(entry.object)]
      const episodeID = recordsOf('source_event_ids', 'episode')[0]
      return {
        kind, id, ...(episodeID === undefined ? {} : { episodeID }), subject, predicate, object, text: deriveFactText(subject, predicate, object),
        tValidFrom: created, confidence: unit(entry.confidence, 0.7), importance: 0.5, createdAt: created,
      }
    }
    case 'entity':
      return { kind, id, type: str(entry.object), canonicalName: str(entry.subject), aliases: [], summary: '', sensitivity: 'low', updatedAt: created }
    case 'edge':
      return {
        kind, id, edgeType: str(entry.predicate), tValidFrom: created, ingestionTime: created, confidence: unit(entry.confidence, 0.7),
        evidenceEpisodeIDs: recordsOf('source_event_ids', 'episode'),
      }
    case 'procedure': {
      const lastUsed = entry.last_used
      return {
        kind, id, name: str(entry.name), triggerPattern: strings(entry.preconditions).join('\n'), steps: str(entry.body).split('\n'),
        successCount: count(entry.usage_count), failureCount: 0, enabled: true, ...(typeof lastUsed === 'string' ? { lastUsed } : {}),
      }
    }
    default: {
      const persona = entry.persona
      const description = isPlainObject(persona) ? persona.description : undefined
      return { kind, id, content: str(description as JsonValue | undefined), charBudget: 2000, version: 1 }
    }
  }
}

/** The fields that turn `base` into `record` (see the file header). */
export function differenceOf(record: PamRecord, base: PamRecord): { set?: JsonObject; unset?: string[] } {
  const set: JsonObject = {}
  for (const key of Object.keys(record)) {
    if (key === 'kind' || key === 'id') continue
    const value = record[key] as JsonValue
    if (!Object.hasOwn(base, key) || canonicalJson(value) !== canonicalJson(base[key] as JsonValue)) set[key] = value
  }
  const unset = Object.keys(base).filter((key) => key !== 'kind' && key !== 'id' && !Object.hasOwn(record, key))
  return { ...(Object.keys(set).length > 0 ? { set } : {}), ...(unset.length > 0 ? { unset } : {}) }
}

export function applyDifference(base: PamRecord, set: JsonObject | undefined, unset: readonly string[] | undefined): PamRecord {
  const record = { ...base }
  for (const key of unset ?? []) delete record[key]
  for (const [key, value] of Object.entries(set ?? {})) {
    Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true })
  }
  return record
}

function fail(message: string, path: string): never {
  throw new InputError('BAD_CAIRN_FIELD', message, { path })
}

/**
 * `writtenAtMs`: whole ms since 1970 by the id of one of the entry's records (an earlier time
 * tells an import nothing: no event is older).
 */
function readWrittenAt(value: JsonValue, ids: ReadonlySet<string>, path: string): Record<string, number> {
  if (!isPlainObject(value)) fail(`expected an object, got ${describeType(value)}`, path)
  for (const [id, ms] of Object.entries(value)) {
    if (!ids.has(id)) fail(`${JSON.stringify(id)} names no record of this entry`, `${path}.${id}`)
    if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 0) fail(`expected whole milliseconds since 1970, got ${describeValue(ms)}`, `${path}.${id}`)
  }
  return value as Record<string, number>
}

function readRecordHead(value: unknown, path: string): { kind: string; id: string } {
  if (!isPlainObject(value)) fail(`expected an object, got ${describeType(value)}`, path)
  if (typeof value.kind !== 'string' || !isRecordKind(value.kind)) fail('kind must be a record kind', `${path}.kind`)
  if (typeof value.id !== 'string' || value.id.length === 0) fail('id must be a non-empty string', `${path}.id`)
  return { kind: value.kind, id: value.id }
}

/**
 * Reads the `cairn` field of an entry.
 * @throws InputError BAD_CAIRN_FIELD naming the path
 */
export function readNativeExtension(value: JsonValue, component: PamComponentName, path: string): NativeExtension {
  if (!isPlainObject(value)) fail(`expected an object, got ${describeType(value)}`, path)
  for (const key of Object.keys(value)) if (!['record', 'attached', 'writtenAtMs'].includes(key)) fail(`unknown field ${JSON.stringify(key)}`, `${path}.${key}`)
  const out: { record?: NativeExtension['record']; attached?: PamRecord[]; writtenAtMs?: Record<string, number> } = {}
  if (value.record !== undefined) {
    const at = `${path}.record`
    const head = readRecordHead(value.record, at)
    const record = value.record as JsonObject
    if (!PRIMARY_KINDS[component].includes(head.kind)) fail(`a ${component} entry cannot stand for a ${head.kind}`, `${at}.kind`)
    for (const key of Object.keys(record)) if (!['kind', 'id', 'set', 'unset'].includes(key)) fail(`unknown field ${JSON.stringify(key)}`, `${at}.${key}`)
    if (record.set !== undefined && !isPlainObject(record.set)) fail('set must be an object', `${at}.set`)
    if (record.unset !== undefined && !(Array.isArray(record.unset) && record.unset.every((key) => typeof key === 'string'))) fail('unset must be an array of strings', `${at}.unset`)
    out.record = { ...head, ...(record.set === undefined ? {} : { set: record.set as JsonObject }), ...(record.unset === undefined ? {} : { unset: record.unset as string[] }) }
  }
  if (value.attached !== undefined) {
    if (!Array.isArray(value.attached)) fail('attached must be an array', `${path}.attached`)
    out.attached = value.attached.map((item, i) => {
      readRecordHead(item, `${path}.attached[${i}]`)
      return item as PamRecord
    })
  }
  if (value.writtenAtMs !== undefined) {
    const ids = new Set([...(out.record === undefined ? [] : [out.record.id]), ...(out.attached ?? []).map((record) => record.id)])
    out.writtenAtMs = readWrittenAt(value.writtenAtMs, ids, `${path}.writtenAtMs`)
  }
  return out
}

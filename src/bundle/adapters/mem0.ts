/**
 * mem0 adapter (spec §10): a mem0 export (a list, or `{results|memories|data: […]}`, the
 * platform's paginated envelope included) → episodes, plus entities and edges for the graph
 * `relations` that come beside `results` when graph memory is on.
 *
 * Mapping (the PM reference's): text = the first string of `memory`, `text`, `data`;
 * event/ingestion time ← `created_at` (else now); mention time ← `updated_at` (else created);
 * `expiration_date` → expirationDate; actors = user_id, agent_id, actor_id; contextID = run_id;
 * sourceType chat when there is a role, else text; speaker = the role when user or assistant;
 * id and sourceID = the mem0 id (else `ep_` + 16 random hex); metadata = the memory's own
 * `metadata` (strings as they are, booleans "1"/"0", other values canonical JSON), then
 * `mem0_{id,hash,role,user_id,agent_id,actor_id,run_id,created_at,updated_at,attributed_to,
 * expiration_date}`, then every other non-null key as `mem0_<key>`, never overwriting.
 *
 * Beyond the reference, so nothing is lost: a text key that lost to an earlier one is kept as
 * `mem0_<key>`; relations become graph records (graph-records.ts); an id Cairn cannot use is
 * replaced by `ep_` + H("mem0", id) (the original stays in mem0_id); unparseable times and
 * root keys that are not memories are reported as warnings.
 */
import { InputError } from '../../errors.js'
import { describeType } from '../../assert.js'
import type { JsonValue } from '../../log/index.js'
import { assertInput, hashId, ImportContext, isUsableId } from './import-context.js'
import { isObject, jsonDocuments, objectItems, type FieldReader, type JsonObject } from './json-fields.js'
import { addRelation } from './graph-records.js'
import { MetadataBuilder, metadataString } from './metadata.js'
import { firstCodePoints, looseTimestamp, pyStrip } from './text-values.js'
import type { AdapterInput, AdapterOptions, AdapterResult } from './types.js'

/** Keys the mapping reads itself; every other key is swept into `mem0_<key>`. */
const HANDLED = new Set([
  'memory', 'text', 'data', 'role', 'user_id', 'agent_id', 'actor_id', 'run_id', 'created_at', 'updated_at', 'metadata', 'categories', 'id',
  'hash', 'attributed_to', 'expiration_date',
])
const PROVENANCE = ['id', 'hash', 'role', 'user_id', 'agent_id', 'actor_id', 'run_id', 'created_at', 'updated_at', 'attributed_to', 'expiration_date']
const WRAPPERS = ['results', 'memories', 'data'] as const

/** A time field: the normalized time, or undefined with a warning when the text is no time (the raw text stays in mem0_<key>). */
function timeField(context: ImportContext, item: FieldReader, key: string): string | undefined {
  const raw = item.string(key)
  if (raw === undefined || raw === '') return undefined
  const time = looseTimestamp(raw)
  if (time === undefined) context.warn('BAD_TIME', `${JSON.stringify(raw.slice(0, 64))} is not a timestamp; kept in mem0_${key}`, item.where(key))
  return time
}

function addMemory(context: ImportContext, item: FieldReader): void {
  const where = item.where()
  const textKey = (['memory', 'text', 'data'] as const).find((key) => typeof item.raw(key) === 'string')
  const text = textKey === undefined ? '' : (item.raw(textKey) as string)
  if (pyStrip(text) === '') {
    context.skip('EMPTY_MEMORY', 'a memory without text (memory, text or data); skipped', where)
    return
  }
  const [role, userId, agentId, actorId, runId] = (['role', 'user_id', 'agent_id', 'actor_id', 'run_id'] as const).map((key) => item.string(key))
  for (const key of ['hash', 'attributed_to'] as const) item.string(key)
  const created = timeField(context, item, 'created_at') ?? context.now
  const updated = timeField(context, item, 'updated_at')
  const expiration = timeField(context, item, 'expiration_date')
  const rawId = item.string('id')

  const metadata = new MetadataBuilder()
  const own = item.object_('metadata')
  for (const [key, value] of Object.entries(own ?? {})) metadata.set(key, metadataString(value))
  for (const key of PROVENANCE) {
    const value = item.raw(key)
    if (typeof value !== 'string' || value === '') continue
    // The reference overlays its provenance on the memory's own metadata; say so when that hides a value.
    const replaced = metadata.overwrite(`mem0_${key}`, value)
    if (replaced !== undefined) context.warn('METADATA_CONFLICT', `metadata key mem0_${key} is also mem0 provenance; the provenance value is kept`, where)
  }
  for (const [key, value] of Object.entries(item.object)) {
    const isLostText = (key === 'memory' || key === 'text' || key === 'data') && key !== textKey
    if ((!HANDLED.has(key) || isLostText) && value !== null) metadata.set(`mem0_${key}`, metadataString(value))
  }

  let id = rawId !== undefined && rawId !== '' ? rawId : context.randomEpisodeId()
  if (!isUsableId('episode', id)) {
    id = hashId('ep_', 'mem0', id)
    context.warn('UNUSABLE_ID', `the mem0 id cannot be a Cairn id; ${id} is used (the original is in mem0_id)`, where)
  }
  context.add('episode', {
    id, eventTime: created, mentionTime: updated ?? created, ingestionTime: created, sourceType: role === undefined ? 'text' : 'chat',
    ...(rawId !== undefined && rawId !== '' ? { sourceID: rawId } : {}),
    actors: [userId, agentId, actorId].filter((actor): actor is string => actor !== undefined && actor !== ''),
    summary: firstCodePoints(text), details: text, metadata: metadata.toObject(), categories: item.strings('categories') ?? [],
    ...(runId !== undefined && runId !== '' ? { contextID: runId } : {}),
    ...(expiration === undefined ? {} : { expirationDate: expiration }),
    ...(role === 'user' || role === 'assistant' ? { speaker: role } : {}),
  }, where)
}

/** mem0 graph relations: `{source, relationship, target|destination, …}`. */
function addGraphRelation(context: ImportContext, relation: FieldReader): void {
  const from = relation.string('source')
  const type = relation.string('relationship') ?? relation.string('relation')
  const to = relation.string('target') ?? relation.string('destination')
  const where = relation.where()
  if (from === undefined || type === undefined || to === undefined || from === '' || type === '' || to === '') {
    throw new InputError('MISSING_FIELD', 'a relation needs source, relationship and target (or destination)', where)
  }
  const metadata = new MetadataBuilder()
  for (const [key, value] of Object.entries(relation.object)) metadata.set(`mem0_${key}`, metadataString(value))
  metadata.set('mem0_record', 'relation')
  addRelation(context, { namespace: 'mem0', from, type, to, metadata, where, isDanglingUnusual: false })
}

/** The memory list of a document and its path; the wrapper's other keys are reported. */
function memoryList(context: ImportContext, root: JsonValue, file: string): { items: JsonValue[]; path: string; relations?: JsonValue[] } {
  if (Array.isArray(root)) return { items: root, path: '$' }
  if (!isObject(root)) throw new InputError('WRONG_TYPE', `a mem0 export is a list or {results|memories|data: [...]}, got ${describeType(root)}`, { file, path: '$' })
  const object: JsonObject = root
  const key = WRAPPERS.find((name) => Array.isArray(object[name]) && (object[name] as JsonValue[]).length > 0)
    ?? WRAPPERS.find((name) => Array.isArray(object[name]))
  if (key === undefined) throw new InputError('MISSING_FIELD', 'no memory list: expected results, memories or data', { file, path: '$' })
  const relations = object.relations
  if (relations !== undefined && relations !== null && !Array.isArray(relations)) {
    throw new InputError('WRONG_TYPE', `expected an array, got ${describeType(relations)}`, { file, path: '$.relations' })
  }
  const others = Object.keys(object).filter((name) => name !== key && name !== 'relations' && object[name] !== null)
  if (others.length > 0) context.warn('ROOT_KEYS_NOT_IMPORTED', `envelope keys that are not memories are not imported: ${others.join(', ')}`, { file, path: '$' })
  return { items: object[key] as JsonValue[], path: `$.${key}`, ...(Array.isArray(relations) ? { relations } : {}) }
}

/**
 * Maps a mem0 export to episodes (and graph records).
 * @throws InputError BAD_JSON, WRONG_TYPE, MISSING_FIELD; LimitError FILE_TOO_LARGE, TOO_DEEP
 */
export function parseMem0(input: AdapterInput, options?: AdapterOptions): AdapterResult {
  assertInput(input)
  const context = new ImportContext('mem0', 'mem0_', options)
  for (const { value, file } of jsonDocuments(input, 'mem0.json')) {
    const { items, path, relations } = memoryList(context, value, file)
    const memories = objectItems(items, file, path)
    const graph = relations === undefined ? [] : objectItems(relations, file, '$.relations')
    for (const item of memories) addMemory(context, item)
    for (const relation of graph) addGraphRelation(context, relation)
  }
  return context.result()
}

/**
 * OpenMemory adapter (mem0's local memory app): its backup export → episodes and categories.
 * The export zip holds `memories.json` (the relational dump: user, apps, categories, memories,
 * memory_categories, status_history, access_controls, export_meta) and `memories.jsonl.gz`
 * (one logical memory per line: id, content, metadata, created_at, updated_at, state, app,
 * categories); unzip it and pass either file (the .gz as it is).
 *
 * Mapping (metadata prefix `mem0_`, OpenMemory being mem0's):
 * - memory → episode `ep_` + H("openmemory", id): content → details; created_at → event and
 *   ingestion time, updated_at → mention time; deleted_at → deletedAt; state active → HOT,
 *   paused → COLD, archived and deleted → ARCHIVED (`mem0_state` keeps the word); category
 *   names → categories; the memory's `metadata` → metadata (as mem0's); app name and id,
 *   archived_at, state history and the rest → `mem0_<key>`; actors = the export's user_id;
 *   sourceID = the import episode.
 * - category → a `category` record {name, description}.
 * - the export itself → one import episode `ep_` + H("openmemory", user id) holding user,
 *   apps, categories, access_controls and export_meta as canonical JSON.
 */
import { gunzipSync } from 'node:zlib'
import { InputError, LimitError } from '../../errors.js'
import { canonicalJson, type JsonValue } from '../../log/index.js'
import { assertInput, hashId, ImportContext } from './import-context.js'
import { parseJsonLines, parseJsonSource } from './json-source.js'
import { FieldReader, isObject, objectItems, type JsonObject } from './json-fields.js'
import { MetadataBuilder, metadataString } from './metadata.js'
import { decodeSource, MAX_SOURCE_BYTES } from './source-text.js'
import { firstCodePoints, looseTimestamp } from './text-values.js'
import type { AdapterInput, AdapterOptions, AdapterResult, SourceFile } from './types.js'

const LIFECYCLE: Readonly<Record<string, string>> = { active: 'HOT', paused: 'COLD', archived: 'ARCHIVED', deleted: 'ARCHIVED' }
const MAPPED = new Set(['id', 'content', 'metadata', 'created_at', 'updated_at', 'deleted_at', 'state', 'categories', 'category_ids', 'user_id'])
const CONTAINER_KEYS = ['user', 'apps', 'categories', 'access_controls', 'export_meta']

interface Lookups {
  readonly categoryNames: ReadonlyMap<string, string>
  readonly appNames: ReadonlyMap<string, string>
  readonly history: ReadonlyMap<string, JsonValue[]>
  readonly userId: string | undefined
  readonly importId: string | undefined
}

const NO_LOOKUPS: Lookups = { categoryNames: new Map(), appNames: new Map(), history: new Map(), userId: undefined, importId: undefined }

function time(context: ImportContext, memory: FieldReader, key: string): string | undefined {
  const raw = memory.string(key)
  if (raw === undefined || raw === '') return undefined
  const value = looseTimestamp(raw)
  if (value === undefined) context.warn('BAD_TIME', `${JSON.stringify(raw.slice(0, 64))} is not a timestamp; kept in mem0_${key}`, memory.where(key))
  return value
}

function addMemory(context: ImportContext, memory: FieldReader, lookups: Lookups): void {
  const where = memory.where()
  const id = memory.string('id')
  if (id === undefined || id === '') throw new InputError('MISSING_FIELD', 'a memory needs an id', where)
  const content = memory.string('content') ?? ''
  const state = memory.string('state')
  const created = time(context, memory, 'created_at') ?? context.now
  const updated = time(context, memory, 'updated_at')
  const deleted = time(context, memory, 'deleted_at')
  const names = memory.strings('categories') ?? (memory.strings('category_ids') ?? []).map((categoryId) => lookups.categoryNames.get(categoryId) ?? categoryId)

  const metadata = new MetadataBuilder()
  for (const [key, value] of Object.entries(memory.object_('metadata') ?? {})) metadata.set(key, metadataString(value))
  metadata.set('mem0_id', id)
  for (const key of ['state', 'created_at', 'updated_at', 'deleted_at', 'user_id']) metadata.put(`mem0_${key}`, memory.raw(key))
  const appId = memory.string('app_id')
  if (appId !== undefined) metadata.put('mem0_app', lookups.appNames.get(appId))
  const categoryIds = memory.strings('category_ids')
  if (categoryIds !== undefined) metadata.set('mem0_category_ids', canonicalJson(categoryIds))
  for (const [key, value] of Object.entries(memory.object)) if (!MAPPED.has(key) && value !== null) metadata.set(`mem0_${key}`, metadataString(value))
  const history = lookups.history.get(id)
  if (history !== undefined) metadata.set('mem0_status_history', canonicalJson(history))
  if (content === '') context.warn('EMPTY_MEMORY', 'a memory without content; imported with empty details', where)

  context.add('episode', {
    id: hashId('ep_', 'openmemory', id), eventTime: created, mentionTime: updated ?? created, ingestionTime: created, sourceType: 'text',
    actors: lookups.userId === undefined ? [] : [lookups.userId], summary: firstCodePoints(content), details: content,
    metadata: metadata.toObject(), categories: names, lifecycleState: LIFECYCLE[state ?? 'active'] ?? 'HOT',
    ...(deleted === undefined ? {} : { deletedAt: deleted }),
    ...(lookups.importId === undefined ? {} : { sourceID: lookups.importId }),
  }, where)
}

/** The relational dump: categories and the import episode first, then the memories. */
function addDump(context: ImportContext, root: JsonObject, file: string): void {
  const dump = new FieldReader(root, file, '$')
  const user = dump.child('user')
  const userId = user.string('user_id') ?? user.string('id')
  const categories = objectItems(dump.array('categories') ?? [], file, '$.categories')
  const apps = objectItems(dump.array('apps') ?? [], file, '$.apps')
  const history = new Map<string, JsonValue[]>()
  for (const row of objectItems(dump.array('status_history') ?? [], file, '$.status_history')) {
    const memoryId = row.string('memory_id')
    if (memoryId !== undefined) history.set(memoryId, [...(history.get(memoryId) ?? []), row.object])
  }
  const categoryNames = new Map<string, string>()
  for (const category of categories) {
    const categoryId = category.string('id')
    const name = category.string('name')
    if (name === undefined || name === '') throw new InputError('MISSING_FIELD', 'a category needs a name', category.where())
    if (categoryId !== undefined) categoryNames.set(categoryId, name)
  }
  const appNames = new Map(apps.flatMap((app) => {
    const [appId, name] = [app.string('id'), app.string('name')]
    return appId !== undefined && name !== undefined ? [[appId, name] as [string, string]] : []
  }))
  const memories = objectItems(dump.array('memories') ?? [], file, '$.memories')
  // memory_categories repeats each memory's category_ids; rows that say more are kept on the import episode.
  const listed = new Set(memories.flatMap((memory) => (memory.strings('category_ids') ?? []).map((categoryId) => `${memory.string('id') ?? ''}\n${categoryId}`)))
  const extraLinks = objectItems(dump.array('memory_categories') ?? [], file, '$.memory_categories')
    .filter((link) => !listed.has(`${link.string('memory_id') ?? ''}\n${link.string('category_id') ?? ''}`))

  const metadata = new MetadataBuilder()
  for (const key of CONTAINER_KEYS) metadata.set(`mem0_${key}`, metadataString(dump.raw(key)))
  if (extraLinks.length > 0) metadata.set('mem0_memory_categories', canonicalJson(extraLinks.map((link) => link.object)))
  for (const [key, value] of Object.entries(root)) {
    if (!['memories', 'memory_categories', 'status_history', ...CONTAINER_KEYS].includes(key)) metadata.set(`mem0_${key}`, metadataString(value))
  }
  const importId = hashId('ep_', 'openmemory', 'export', userId ?? '')
  const details = `OpenMemory export${userId === undefined ? '' : ` of ${userId}`}`
  context.add('episode', {
    id: importId, sourceType: 'event', summary: details, details, metadata: metadata.toObject(),
    ...(userId === undefined ? {} : { actors: [userId] }),
  }, { file, path: '$' })
  for (const category of categories) {
    context.add('category', { name: category.string('name'), description: category.string('description') ?? '' }, category.where())
  }
  const lookups: Lookups = { categoryNames, appNames, history, userId, importId }
  for (const memory of memories) addMemory(context, memory, lookups)
}

function isGzip(content: string | Uint8Array): content is Uint8Array {
  return content instanceof Uint8Array && content[0] === 0x1f && content[1] === 0x8b
}

function gunzip(file: SourceFile & { content: Uint8Array }): SourceFile {
  try {
    return { path: file.path, content: new Uint8Array(gunzipSync(file.content, { maxOutputLength: MAX_SOURCE_BYTES })) }
  } catch (error) {
    const code = (error as { code?: string }).code
    if (code === 'ERR_BUFFER_TOO_LARGE') throw new LimitError('FILE_TOO_LARGE', `unzips to more than ${MAX_SOURCE_BYTES} bytes`, { file: file.path })
    throw new InputError('BAD_GZIP', 'the file is not valid gzip', { file: file.path })
  }
}

/**
 * Maps OpenMemory's memories.json or memories.jsonl(.gz) to records.
 * @throws InputError BAD_JSON, BAD_GZIP, WRONG_TYPE, MISSING_FIELD; LimitError
 */
export function parseOpenMemory(input: AdapterInput, options?: AdapterOptions): AdapterResult {
  assertInput(input)
  const context = new ImportContext('openmemory', 'mem0_', options)
  if (!('files' in input)) {
    const file = input.path ?? 'memories.json'
    if (Array.isArray(input.json)) for (const memory of objectItems(input.json as JsonValue[], file, '$')) addMemory(context, memory, NO_LOOKUPS)
    else if (isObject(input.json)) addDump(context, input.json, file)
    else throw new InputError('WRONG_TYPE', 'expected the memories.json object or a list of memories', { file, path: '$' })
    return context.result()
  }
  for (const given of input.files) {
    const file = isGzip(given.content) ? gunzip(given as SourceFile & { content: Uint8Array }) : given
    const text = decodeSource(file)
    const head = text.replace(/^\s+/, '')
    const isLines = /\.jsonl(\.gz)?$/i.test(given.path) || (!head.startsWith('[') && head.includes('\n{'))
    if (isLines) {
      for (const { value, line } of parseJsonLines(text, given.path)) {
        if (!isObject(value)) throw new InputError('WRONG_TYPE', 'each line must be a memory object', { file: given.path, line })
        addMemory(context, new FieldReader(value, given.path, '$', line), NO_LOOKUPS)
      }
      continue
    }
    const root = parseJsonSource(text, given.path)
    if (Array.isArray(root)) for (const memory of objectItems(root, given.path, '$')) addMemory(context, memory, NO_LOOKUPS)
    else if (isObject(root)) addDump(context, root, given.path)
    else throw new InputError('WRONG_TYPE', 'expected the memories.json object or a list of memories', { file: given.path, path: '$' })
  }
  return context.result()
}

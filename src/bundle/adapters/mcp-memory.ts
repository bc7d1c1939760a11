/**
 * MCP memory server adapter (`@modelcontextprotocol/server-memory`): its knowledge graph file
 * (`memory.jsonl`: `{"type":"entity","name","entityType","observations":[…]}` and
 * `{"type":"relation","from","to","relationType"}` lines; `read_graph`'s `{entities, relations}`
 * too) → entity, edge and episode records.
 *
 * Mapping (docs/memory-model.md §1.4; ids in graph-records.ts):
 * - entity → entity {type: entityType (else "unknown"), canonicalName: name} and a carrier
 *   episode `ep_` + H("mcp", "entity", name): the observations, one per line, → details;
 *   summary = "name: first observation"; categories = [entityType]; metadata `mcp_type`,
 *   `mcp_name`, `mcp_entityType`, `mcp_observations` (canonical JSON, which keeps their
 *   boundaries), `cairn_derived` = [the entity], other keys as `mcp_<key>`.
 * - relation → edge {edgeType: relationType, evidenceEpisodeIDs: [carrier]} and a carrier
 *   "from relationType to" with `mcp_type`, `mcp_from`, `mcp_to`, `mcp_relationType`; an
 *   endpoint that is no entity of the file is created as an "unknown" entity (with a warning).
 * - a line of another type → an episode holding it whole as `mcp_raw` (memory-model §5.6).
 * Entities are read before relations, whatever the line order.
 */
import { InputError } from '../../errors.js'
import { canonicalJson } from '../../log/index.js'
import { addRelation, ensureEntity } from './graph-records.js'
import { assertInput, hashId, ImportContext } from './import-context.js'
import { FieldReader, objectItems } from './json-fields.js'
import { MetadataBuilder, metadataString } from './metadata.js'
import { recordLines } from './record-lines.js'
import { firstCodePoints } from './text-values.js'
import type { AdapterInput, AdapterOptions, AdapterResult } from './types.js'

const NAMESPACE = 'mcp'

function required(item: FieldReader, key: string): string {
  const value = item.string(key)
  if (value === undefined || value === '') throw new InputError('MISSING_FIELD', `a ${item.string('type') ?? 'graph'} line needs ${key}`, item.where(key))
  return value
}

function extras(item: FieldReader, metadata: MetadataBuilder, mapped: readonly string[]): void {
  for (const [key, value] of Object.entries(item.object)) if (!mapped.includes(key)) metadata.set(`mcp_${key}`, metadataString(value))
}

function addEntity(context: ImportContext, item: FieldReader): void {
  const name = required(item, 'name')
  const type = item.string('entityType') ?? ''
  const observations = item.strings('observations') ?? []
  const where = item.where()
  const { id: entity } = ensureEntity(context, NAMESPACE, name, type, where)
  const metadata = new MetadataBuilder()
  metadata.set('mcp_type', 'entity')
  metadata.set('mcp_name', name)
  metadata.put('mcp_entityType', type)
  metadata.set('mcp_observations', canonicalJson(observations))
  metadata.set('cairn_derived', canonicalJson([entity]))
  extras(item, metadata, ['type', 'name', 'entityType', 'observations'])
  const details = observations.length > 0 ? observations.join('\n') : name
  context.add('episode', {
    id: hashId('ep_', NAMESPACE, 'entity', name), sourceType: 'note', details, metadata: metadata.toObject(),
    summary: firstCodePoints(observations.length > 0 ? `${name}: ${observations[0] as string}` : name), categories: type === '' ? [] : [type],
  }, where)
}

function addGraphRelation(context: ImportContext, item: FieldReader): void {
  const [from, to, type] = [required(item, 'from'), required(item, 'to'), required(item, 'relationType')]
  const metadata = new MetadataBuilder()
  metadata.set('mcp_type', 'relation')
  metadata.set('mcp_from', from)
  metadata.set('mcp_to', to)
  metadata.set('mcp_relationType', type)
  extras(item, metadata, ['type', 'from', 'to', 'relationType'])
  addRelation(context, { namespace: NAMESPACE, from, type, to, metadata, where: item.where(), isDanglingUnusual: true })
}

function addRaw(context: ImportContext, item: FieldReader): void {
  const raw = canonicalJson(item.object)
  const kind = typeof item.object.type === 'string' ? item.object.type : 'untyped'
  context.warn('UNKNOWN_LINE', `a ${kind} line is neither an entity nor a relation; kept whole in mcp_raw`, item.where())
  const details = `MCP memory ${kind} line`
  context.add('episode', { id: hashId('ep_', NAMESPACE, 'raw', raw), sourceType: 'note', summary: details, details, metadata: { mcp_raw: raw } }, item.where())
}

/** `read_graph` output: `{entities: [...], relations: [...]}` as typed lines. */
function graphItems(item: FieldReader): FieldReader[] | undefined {
  if (item.has('type') || (!item.has('entities') && !item.has('relations'))) return undefined
  const typed = (key: string, type: string): FieldReader[] =>
    objectItems(item.array(key) ?? [], item.file, `${item.path}.${key}`, item.line).map((entry) => new FieldReader({ type, ...entry.object }, entry.file, entry.path, entry.line))
  return [...typed('entities', 'entity'), ...typed('relations', 'relation')]
}

/**
 * Maps an MCP memory graph to records.
 * @throws InputError BAD_JSON, WRONG_TYPE, MISSING_FIELD; LimitError LINE_TOO_LONG, FILE_TOO_LARGE
 */
export function parseMcpMemory(input: AdapterInput, options?: AdapterOptions): AdapterResult {
  assertInput(input)
  const context = new ImportContext('mcp-memory', 'mcp_', options)
  const items = recordLines(input, 'memory.jsonl').flatMap((item) => graphItems(item) ?? [item])
  for (const item of items) if (item.object.type === 'entity') addEntity(context, item)
  for (const item of items) {
    if (item.object.type === 'relation') addGraphRelation(context, item)
    else if (item.object.type !== 'entity') addRaw(context, item)
  }
  return context.result()
}

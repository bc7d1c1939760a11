/**
 * OAMS adapter (seed 003, docs/memory-model.md §4): OAMS memory JSONL (one `OAMSMemory` per
 * line, or a JSON array) → carrier episodes and their namespace contexts. Federation envelopes
 * (`payload` lists) and consolidation pipelines may appear as lines too.
 *
 * Mapping (memory-model §4.1–4.3):
 * - memory → episode `ep_` + H("oams", id), sourceType note: content → details (summary its
 *   first 120 code points); confidence; created_at → event, mention and ingestion time
 *   (`oams_created_at` keeps the text when it was normalized); namespace → contextID
 *   `ctx_` + H("oams-namespace", namespace), a context labelled with it; `metadata` →
 *   metadata as it is (strings as they are, booleans "1"/"0", numbers and containers as
 *   canonical JSON, null omitted), plus `oams_metadata` with the whole object when a value was
 *   converted; `oams_id`; other keys `oams_<key>` (a key starting with `oams_` keeps its name).
 *   The embedding is derived data and is not stored (memory-model §5.6); `oams_embedding_dim`
 *   records its size and a warning counts them. A missing required field (id, namespace,
 *   content, confidence, created_at) is an error naming it.
 * - envelope → an import episode `ep_` + H("oams-envelope", sha256 of its canonical JSON) that
 *   is the carriers' sourceID: `oams_source_agent` (also added to the carriers' actors),
 *   `oams_target_agents`, `oams_scope` (read and read_write tag the carriers `oams-view`),
 *   `oams_ttl` (ttl > 0 sets expirationDate = now + ttl; ttl 0, "never persist", marks the
 *   carriers `cairn_ephemeral` and warns), `oams_audit`.
 * - pipeline → episodeLinks `derived_from` from each output to each input, and an episode
 *   holding the pipeline as `oams_pipeline`.
 * - any other object → an episode holding it as `oams_raw` (memory-model §5.6), with a warning.
 */
import { InputError } from '../../errors.js'
import { canonicalJson, type JsonValue } from '../../log/index.js'
import { assertInput, hashId, ImportContext, sha256Hex } from './import-context.js'
import { objectItems, type FieldReader } from './json-fields.js'
import { MetadataBuilder, metadataString } from './metadata.js'
import { recordLines } from './record-lines.js'
import { firstCodePoints, looseTimestamp } from './text-values.js'
import type { AdapterInput, AdapterOptions, AdapterResult } from './types.js'

const REQUIRED = ['id', 'namespace', 'content', 'confidence', 'created_at'] as const
const MAPPED = new Set([...REQUIRED, 'metadata', 'embedding'])

interface Envelope {
  readonly importId: string
  readonly sourceAgent: string | undefined
  readonly isView: boolean
  readonly expirationDate: string | undefined
  readonly isEphemeral: boolean
}

const oamsKey = (key: string): string => (key.startsWith('oams_') ? key : `oams_${key}`)
const carrierId = (id: string): string => hashId('ep_', 'oams', id)

function addMemory(context: ImportContext, item: FieldReader, envelope: Envelope | undefined, embeddings: Map<string, number>): void {
  const where = item.where()
  for (const key of REQUIRED) {
    if (!item.has(key)) throw new InputError('MISSING_FIELD', `an OAMS memory needs ${key}`, item.where(key))
  }
  const id = item.string('id') as string
  const namespace = item.string('namespace') as string
  const content = item.string('content') as string
  const confidence = item.number('confidence') as number
  const createdRaw = item.string('created_at') as string
  const created = looseTimestamp(createdRaw)
  if (created === undefined) throw new InputError('BAD_TIMESTAMP', `created_at ${JSON.stringify(createdRaw.slice(0, 64))} is not ISO 8601`, item.where('created_at'))
  const embedding = item.array('embedding')

  const metadata = new MetadataBuilder()
  const own = item.object_('metadata') ?? {}
  let isConverted = false
  for (const [key, value] of Object.entries(own)) {
    if (value !== null && typeof value !== 'string') isConverted = true
    metadata.set(key, metadataString(value))
  }
  if (isConverted) metadata.set('oams_metadata', canonicalJson(own))
  metadata.set('oams_id', id)
  metadata.set('oams_namespace', namespace)
  if (created !== createdRaw) metadata.set('oams_created_at', createdRaw)
  if (embedding !== undefined) {
    metadata.set('oams_embedding_dim', String(embedding.length))
    embeddings.set(item.file, (embeddings.get(item.file) ?? 0) + 1)
  }
  for (const [key, value] of Object.entries(item.object)) if (!MAPPED.has(key)) metadata.set(oamsKey(key), metadataString(value))
  if (envelope?.isEphemeral === true) metadata.set('cairn_ephemeral', '1')

  const contextId = hashId('ctx_', 'oams-namespace', namespace)
  if (context.get(contextId) === undefined) context.add('context', { id: contextId, label: namespace, createdAt: context.now }, where)
  context.add('episode', {
    id: carrierId(id), eventTime: created, mentionTime: created, ingestionTime: created, sourceType: 'note',
    summary: firstCodePoints(content), details: content, confidence, metadata: metadata.toObject(), contextID: contextId,
    ...(envelope?.sourceAgent === undefined ? {} : { actors: [envelope.sourceAgent] }),
    ...(envelope === undefined ? {} : { sourceID: envelope.importId }),
    ...(envelope?.isView === true ? { tags: ['oams-view'] } : {}),
    ...(envelope?.expirationDate === undefined ? {} : { expirationDate: envelope.expirationDate }),
  }, where)
}

function addEnvelope(context: ImportContext, item: FieldReader, embeddings: Map<string, number>): void {
  const importId = hashId('ep_', 'oams-envelope', sha256Hex(canonicalJson(item.object)))
  const sourceAgent = item.string('source_agent')
  const scope = item.string('scope')
  const ttl = item.number('ttl')
  const payload = objectItems(item.array('payload') ?? [], item.file, `${item.path}.payload`, item.line)
  // OAMS counts ttl from receipt and an envelope carries no time: the first import's receipt stands.
  const expirationDate = ttl !== undefined && ttl > 0 ? context.timeFromImport(ttl * 1000) : undefined
  const isEphemeral = ttl === 0
  if (isEphemeral) context.warn('EPHEMERAL_ENVELOPE', 'ttl 0 means "never persist": the carriers are marked cairn_ephemeral; keep them out of a durable store', item.where())
  const metadata = new MetadataBuilder()
  for (const [key, value] of Object.entries(item.object)) if (key !== 'payload') metadata.set(oamsKey(key), metadataString(value))
  metadata.set('oams_payload_ids', canonicalJson(payload.map((memory) => memory.raw('id') ?? null)))
  const details = `OAMS envelope${sourceAgent === undefined ? '' : ` from ${sourceAgent}`}`
  context.add('episode', {
    id: importId, sourceType: 'event', summary: firstCodePoints(details), details, metadata: metadata.toObject(),
    ...(sourceAgent === undefined ? {} : { actors: [sourceAgent] }),
    ...(expirationDate === undefined ? {} : { expirationDate }),
  }, item.where())
  const envelope: Envelope = { importId, sourceAgent, isView: scope === 'read' || scope === 'read_write', expirationDate, isEphemeral }
  for (const memory of payload) addMemory(context, memory, envelope, embeddings)
}

function addPipeline(context: ImportContext, item: FieldReader): void {
  const inputs = item.strings('inputs') ?? []
  const outputs = item.strings('outputs') ?? []
  const strategy = item.string('strategy') ?? 'unknown'
  const pipeline = canonicalJson(item.object)
  const details = `OAMS ${strategy} pipeline: ${outputs.length} outputs from ${inputs.length} inputs`
  context.add('episode', {
    id: hashId('ep_', 'oams-pipeline', sha256Hex(pipeline)), sourceType: 'event', summary: firstCodePoints(details), details,
    metadata: { oams_pipeline: pipeline },
  }, item.where())
  for (const output of outputs) {
    for (const input of inputs) {
      context.add('episodeLink', { srcEpisodeID: carrierId(output), dstEpisodeID: carrierId(input), linkType: 'derived_from', weight: 1 }, item.where())
    }
  }
}

function addRaw(context: ImportContext, item: FieldReader): void {
  const raw = canonicalJson(item.object)
  context.warn('UNKNOWN_OBJECT', 'neither a memory, an envelope nor a pipeline; kept whole in oams_raw', item.where())
  const details = 'Unrecognized OAMS object'
  context.add('episode', { id: hashId('ep_', 'oams', 'raw', raw), sourceType: 'note', summary: details, details, metadata: { oams_raw: raw } }, item.where())
}

/**
 * Maps OAMS memory JSONL (and envelopes or pipelines among its lines) to records.
 * @throws InputError BAD_JSON, WRONG_TYPE, MISSING_FIELD, BAD_TIMESTAMP; LimitError
 */
export function parseOams(input: AdapterInput, options?: AdapterOptions): AdapterResult {
  assertInput(input)
  const context = new ImportContext('oams', 'oams_', options)
  const embeddings = new Map<string, number>()
  for (const item of recordLines(input, 'memories.jsonl')) {
    const object: Record<string, JsonValue> = item.object
    if (Array.isArray(object.payload)) addEnvelope(context, item, embeddings)
    else if (object.strategy !== undefined && (object.inputs !== undefined || object.outputs !== undefined)) addPipeline(context, item)
    else if (object.content !== undefined || object.namespace !== undefined || object.id !== undefined) addMemory(context, item, undefined, embeddings)
    else addRaw(context, item)
  }
  for (const [file, count] of embeddings) {
    context.warn('EMBEDDINGS_NOT_STORED', `${count} embeddings are derived data and were not imported (receivers re-derive them; oams_embedding_dim keeps each size)`, { file })
  }
  return context.result()
}

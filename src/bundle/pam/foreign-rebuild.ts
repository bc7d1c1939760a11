/**
 * Rebuilding an imported PAM entry from its carrier (docs/memory-model.md §2.7, "Export
 * inverts these tables"): the inverse of import-foreign.ts. The carrier's `pam_*` metadata
 * restores the fields with no Cairn home (and the originals of normalized values), its Cairn
 * fields and derived records (fact, procedure) restore the rest.
 *
 * Invariant: none needed for safety. The rebuild is a best guess; the exporter emits it only
 * when it hashes to the carrier's `pam_id` and importing it gives back the records held
 * (pam-export.ts). A wrong guess, or records edited since the import, makes the exporter fall
 * back to a Cairn entry, which is exact.
 */
import { isPlainObject } from '../../assert.js'
import type { JsonValue } from '../../log/index.js'
import type { JsonObject, PamComponentName, PamEntry, PamRecord } from './pam-types.js'
import { PAM_HASH_PATTERN } from './pam-types.js'
import { factIdOf, procedureIdOf, valueFromMetadata } from './pam-values.js'

export type RecordLookup = (kind: string, id: string) => PamRecord | undefined

/** Metadata keys that hold an original beside a mapped value, not a field of their own. */
const ORIGINALS = new Set(['pam_created_at', 'pam_timestamp', 'pam_last_used', 'pam_tags', 'pam_raw', 'pam_component'])
/** Fields the import writes verbatim when they are strings. */
const STRING_FIELDS = new Set(['id', 'version', 'schema_version', 'event_type', 'language', 'custom_instructions', 'description', 'scratch', 'persona'])

/** The component an imported carrier came from, by the `pam_*` keys each one always writes. */
function componentOf(carrier: PamRecord, metadata: Record<string, string>): PamComponentName | undefined {
  if (metadata.pam_goals !== undefined) return 'working'
  if (metadata.pam_persona !== undefined) return 'identity'
  if (metadata.pam_usage_count !== undefined) return 'procedural'
  if (metadata.pam_source_event_ids !== undefined) return 'semantic'
  return carrier.sourceType === 'event' ? 'episodic' : undefined
}

function fieldValue(field: string, text: string): JsonValue {
  if (field === 'scratch' || field === 'persona') {
    const parsed = valueFromMetadata(text)
    return isPlainObject(parsed) ? parsed : text
  }
  return STRING_FIELDS.has(field) ? text : valueFromMetadata(text)
}

/** The entry a carrier was imported from, as well as the records allow, or undefined. */
export function rebuildForeignEntry(carrier: PamRecord, lookup: RecordLookup): { component: PamComponentName; entry: PamEntry } | undefined {
  if (!isPlainObject(carrier.metadata)) return undefined
  const metadata = carrier.metadata as Record<string, string>
  const pamId = metadata.pam_id
  if (typeof pamId !== 'string' || !PAM_HASH_PATTERN.test(pamId) || metadata.pam_raw !== undefined) return undefined
  const component = componentOf(carrier, metadata)
  if (component === undefined) return undefined
  const entry: JsonObject = {}
  for (const key of Object.keys(metadata).sort()) {
    if (!key.startsWith('pam_') || ORIGINALS.has(key)) continue
    const field = key.slice(4)
    entry[field] = fieldValue(field, metadata[key] as string)
  }
  entry.created_at = metadata.pam_created_at ?? (carrier.ingestionTime as JsonValue)
  const categories = Array.isArray(carrier.categories) ? carrier.categories : []
  if (metadata.pam_tags !== undefined) entry.tags = valueFromMetadata(metadata.pam_tags)
  else if (component === 'episodic' || categories.length > 0) entry.tags = categories
  switch (component) {
    case 'episodic':
      entry.timestamp = metadata.pam_timestamp ?? (carrier.eventTime as JsonValue)
      entry.actor = (Array.isArray(carrier.actors) ? carrier.actors[0] : undefined) ?? ''
      entry.observation = carrier.details as JsonValue
      entry.salience = carrier.importance as JsonValue
      break
    case 'semantic': {
      const fact = lookup('fact', factIdOf(pamId))
      if (fact === undefined) return undefined
      for (const field of ['subject', 'predicate', 'object', 'confidence']) entry[field] = fact[field] as JsonValue
      break
    }
    case 'procedural': {
      const procedure = lookup('procedure', procedureIdOf(pamId))
      if (procedure === undefined) return undefined
      entry.name = procedure.name as JsonValue
      entry.body = Array.isArray(procedure.steps) ? procedure.steps.join('\n') : ''
      entry.last_used = metadata.pam_last_used ?? (procedure.lastUsed as JsonValue | undefined) ?? null
      const params = entry.params ?? entry.parameters
      const names = (Array.isArray(params) ? params : []).flatMap((param) => (isPlainObject(param) && typeof param.name === 'string' && param.name !== '' ? [param.name] : []))
      if (carrier.details !== `${String(entry.name)}(${names.join(', ')})\n${entry.body}`) entry.description = carrier.details as JsonValue
      break
    }
    case 'identity':
    case 'working':
      break
  }
  return { component, entry: { ...entry, id: pamId } as PamEntry }
}

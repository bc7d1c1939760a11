/**
 * One PAM entry of foreign origin (no `cairn` field) → Cairn records, as docs/memory-model.md
 * §2.1–2.6 maps it: a carrier episode holding the entry, the records derived from it, and
 * `derived_from` links to the records of its parents.
 *
 * Invariant: the result depends only on the entry and the context, so the exporter can run this
 * on an entry it rebuilt and compare the records with the ones it holds (pam-export.ts).
 * Nothing is dropped (§5): a field with a Cairn home is mapped (and its original kept when the
 * value was normalized), every other field goes to carrier metadata as `pam_<field>`.
 */
import { canonicalJson, type JsonValue } from '../../log/index.js'
import { deriveFactText, normalizeTimestamp } from '../../projection/index.js'
import type { JsonObject, PamComponentName, PamEntry, PamRecord } from './pam-types.js'
import {
  actorEntityIdOf, carrierIdOf, episodeLinkIdOf, factIdOf, factLinkIdOf, metadataKeyOf, metadataValueOf,
  preferenceIdOf, procedureIdOf, summaryOf, taskContextIdOf,
} from './pam-values.js'

/** The records a parent entry stands for, for links: its carrier (or episode) and its fact. */
export interface ParentRecords {
  readonly episodeID?: string
  readonly factID?: string
}

export interface ForeignContext {
  readonly importEpisodeID?: string
  readonly agentContextID?: string
  /** `expirationDate` of working carriers: import time + the working TTL (§2.5). */
  readonly workingExpiry?: string
  readonly resolveParent: (entryId: string) => ParentRecords
}

export interface ForeignImport {
  /** The carrier first, then the records only this entry derives, then its links. */
  readonly own: PamRecord[]
  /** Records other entries may derive too: actor and persona entities, preferences. */
  readonly shared: PamRecord[]
  /** Text to append to the core `persona` block (identity entries, §2.6). */
  readonly personaAppend?: string
}

export const LINK_TYPE = 'derived_from'
export const WORKING_TAG = 'working'
const WORKING_LABEL = 'PAM working state'

const text = (value: JsonValue | undefined): string => (typeof value === 'string' ? value : '')
const list = (value: JsonValue | undefined): JsonValue[] => (Array.isArray(value) ? value : [])
const capitalized = (word: string): string => word.charAt(0).toUpperCase() + word.slice(1)
const asText = (value: JsonValue): string => (typeof value === 'string' ? value : canonicalJson(value))

class CarrierBuilder {
  readonly metadata: Record<string, string> = {}
  readonly carrier: PamRecord
  readonly derived: PamRecord[] = []
  readonly shared: PamRecord[] = []
  readonly derivedIds: string[] = []
  readonly mapped = new Set<string>(['id', 'created_at', 'tags'])
  readonly created: string
  personaAppend: string | undefined

  constructor(readonly entry: PamEntry, readonly context: ForeignContext) {
    this.created = normalizeTimestamp(entry.created_at)
    this.carrier = {
      kind: 'episode', id: carrierIdOf(entry.id), eventTime: this.created, mentionTime: this.created, ingestionTime: this.created,
      sourceType: 'note', actors: [], summary: '', details: '', sensitivity: 'low', metadata: {}, categories: [],
      importance: 0.5, confidence: 0.7, lifecycleState: 'HOT', extractionState: 'done', accessCount: 0, pinned: false, vaultRefs: [],
    }
    if (context.importEpisodeID !== undefined) this.carrier.sourceID = context.importEpisodeID
    if (context.agentContextID !== undefined) this.carrier.contextID = context.agentContextID
    this.put('pam_id', entry.id)
    if (this.created !== entry.created_at) this.put('pam_created_at', entry.created_at)
    const tags = list(entry.tags) as string[]
    const categories = [...new Set(tags)]
    this.carrier.categories = categories
    if (categories.length !== tags.length) this.put('pam_tags', canonicalJson(tags))
  }

  /** First write wins (§5 rule 5). */
  put(key: string, value: string | undefined): void {
    if (value !== undefined && !Object.hasOwn(this.metadata, key)) this.metadata[key] = value
  }

  /** A time field: normalized, with the original kept when normalizing changed it (§5 rule 4). */
  time(field: string, value: string): string {
    const normalized = normalizeTimestamp(value)
    if (normalized !== value) this.put(`pam_${field}`, value)
    return normalized
  }

  /** Marks a field as mapped: it gets no generic `pam_<field>` copy. */
  map(...fields: string[]): void {
    for (const field of fields) this.mapped.add(field)
  }

  derive(record: PamRecord, listed: boolean): void {
    if (this.carrier.contextID !== undefined && record.contextID === undefined) record.contextID = this.carrier.contextID
    this.derived.push(record)
    if (listed) this.derivedIds.push(record.id)
  }

  share(record: PamRecord): void {
    if (this.carrier.contextID !== undefined) record.contextID = this.carrier.contextID
    this.shared.push(record)
    this.derivedIds.push(record.id)
  }

  setDetails(details: string): void {
    this.carrier.details = details
    this.carrier.summary = summaryOf(details)
  }
}

function entityOf(id: string, type: string, name: string, aliases: string[], updatedAt: string): PamRecord {
  return { kind: 'entity', id, type, canonicalName: name, aliases, summary: '', sensitivity: 'low', updatedAt }
}

const COMPONENT_RULES: Readonly<Record<PamComponentName, (b: CarrierBuilder) => void>> = {
  episodic(b) {
    const { entry, carrier } = b
    b.map('timestamp', 'actor', 'observation', 'salience')
    carrier.sourceType = 'event'
    carrier.eventTime = b.time('timestamp', text(entry.timestamp))
    const actor = text(entry.actor)
    carrier.actors = [actor]
    b.setDetails(text(entry.observation))
    carrier.importance = entry.salience as number
    const colon = actor.indexOf(':')
    const type = actor.slice(0, colon)
    const identifier = actor.slice(colon + 1)
    if (colon > 0 && (type === 'user' || type === 'agent')) {
      carrier.speaker = type
      if (identifier.length > 0) b.share(entityOf(actorEntityIdOf(type, identifier), type === 'user' ? 'person' : 'agent', identifier, [actor], b.created))
    }
  },
  semantic(b) {
    const { entry, carrier } = b
    b.map('subject', 'predicate', 'object', 'confidence')
    const [subject, predicate, object] = [text(entry.subject), text(entry.predicate), text(entry.object)]
    b.setDetails(deriveFactText(subject, predicate, object))
    carrier.confidence = entry.confidence as number
    b.derive({
      kind: 'fact', id: factIdOf(entry.id), episodeID: carrier.id, subject, predicate, object, text: carrier.details as string,
      tValidFrom: b.created, confidence: entry.confidence as number, importance: 0.5, createdAt: b.created,
    }, false)
  },
  procedural(b) {
    const { entry } = b
    b.map('name', 'body')
    const name = text(entry.name)
    const body = text(entry.body)
    const params = list(entry.params ?? entry.parameters)
    const names = params.map((param) => text((param as JsonObject).name)).filter((paramName) => paramName.length > 0)
    if (typeof entry.description === 'string') b.map('description')
    b.setDetails(typeof entry.description === 'string' ? entry.description : `${name}(${names.join(', ')})\n${body}`)
    const procedure: PamRecord = {
      kind: 'procedure', id: procedureIdOf(entry.id), name, triggerPattern: list(entry.preconditions).map(asText).join('\n'),
      steps: body.split('\n'), successCount: entry.usage_count as number, failureCount: 0, enabled: true,
    }
    if (typeof entry.last_used === 'string') {
      b.map('last_used')
      procedure.lastUsed = b.time('last_used', entry.last_used)
    }
    b.derive(procedure, true)
  },
  working(b) {
    const { entry, carrier, context } = b
    const goals = list(entry.goals).map(asText)
    const subgoals = list(entry.subgoals).map((item) => (typeof item === 'object' && item !== null && !Array.isArray(item) ? asText(item.goal ?? item) : asText(item)))
    const scratch = entry.scratch as JsonValue
    const lines: string[] = []
    if (goals.length > 0) lines.push(`Goals: ${goals.join('; ')}`)
    if (subgoals.length > 0) lines.push(`Subgoals: ${subgoals.join('; ')}`)
    const scratchText = asText(scratch)
    if (scratchText !== '' && scratchText !== '{}') lines.push(`Scratch: ${scratchText}`)
    for (const action of list(entry.pending_actions) as JsonObject[]) {
      lines.push(['Pending:', text(action.action), text(action.tool), `[${text(action.status)}]`].filter((part) => part.length > 0).join(' '))
    }
    b.setDetails(lines.length > 0 ? lines.join('\n') : WORKING_LABEL)
    const taskContext: PamRecord = { kind: 'context', id: taskContextIdOf(entry.id), label: goals[0] ?? WORKING_LABEL, archived: false, createdAt: b.created }
    if (context.agentContextID !== undefined) taskContext.parentID = context.agentContextID
    b.derive(taskContext, true)
    carrier.contextID = taskContext.id
    carrier.tags = [WORKING_TAG]
    if (context.workingExpiry !== undefined) carrier.expirationDate = context.workingExpiry
  },
  identity(b) {
    const { entry } = b
    const preferences = entry.preferences as JsonObject
    const keys = Object.keys(preferences).sort()
    const language = text(entry.language)
    // `preferences` and `language` also stay on the carrier (`pam_preferences`, `pam_language`,
    // by the generic rule): preference records are shared by every identity entry and the first
    // write wins (§5 rule 5), so without the originals a second entry naming a key would lose it.
    const persona = entry.persona as JsonValue
    const personaLines = typeof persona === 'string'
      ? [persona]
      : Object.keys(persona as JsonObject).sort().map((key) => `${capitalized(key)}: ${asText((persona as JsonObject)[key] as JsonValue)}`)
    const policies = list(entry.policies).map(asText)
    if (policies.length > 0) personaLines.push('Policies:', ...policies)
    if (typeof entry.custom_instructions === 'string') personaLines.push('Instructions:', entry.custom_instructions)
    const personaText = personaLines.join('\n')
    if (personaText.length > 0) b.personaAppend = personaText
    b.setDetails([personaText, `Language: ${language}`, ...keys.map((key) => `Preference ${key}: ${asText(preferences[key] as JsonValue)}`)].filter((line) => line.length > 0).join('\n'))
    for (const key of keys) b.share({ kind: 'preference', id: preferenceIdOf(key), key, value: asText(preferences[key] as JsonValue) })
    b.share({ kind: 'preference', id: preferenceIdOf('language'), key: 'language', value: language })
    if (typeof persona === 'object' && persona !== null && !Array.isArray(persona) && typeof persona.name === 'string' && persona.name.length > 0) {
      b.share(entityOf(actorEntityIdOf('agent', persona.name), 'agent', persona.name, [], b.created))
    }
  },
}

/** The parents an entry derives from: parent_ids, then source_event_ids, then a redaction's original. */
function derivationSources(entry: PamEntry): string[] {
  const sources: string[] = [...entry.parent_ids]
  for (const id of list(entry.source_event_ids)) if (typeof id === 'string') sources.push(id)
  const redaction = entry._redaction_metadata
  if (typeof redaction === 'object' && redaction !== null && !Array.isArray(redaction) && typeof redaction.original_id === 'string') sources.push(redaction.original_id)
  return [...new Set(sources)]
}

function linksOf(b: CarrierBuilder, component: PamComponentName): PamRecord[] {
  const links: PamRecord[] = []
  const contextID = b.carrier.contextID
  const withContext = (record: PamRecord): PamRecord => (contextID === undefined ? record : { ...record, contextID })
  for (const source of derivationSources(b.entry)) {
    const parent = b.context.resolveParent(source)
    const src = b.carrier.id
    if (parent.episodeID !== undefined && parent.episodeID !== src) {
      links.push(withContext({ kind: 'episodeLink', id: episodeLinkIdOf(src, parent.episodeID, LINK_TYPE), srcEpisodeID: src, dstEpisodeID: parent.episodeID, linkType: LINK_TYPE, weight: 1 }))
    }
    if (component === 'semantic' && parent.factID !== undefined) {
      const fact = factIdOf(b.entry.id)
      links.push(withContext({ kind: 'factLink', id: factLinkIdOf(fact, parent.factID, LINK_TYPE), srcFactID: fact, dstFactID: parent.factID, linkType: LINK_TYPE, createdAt: b.created }))
    }
  }
  return links
}

/** Maps one foreign entry of a known component. */
export function importForeignEntry(component: PamComponentName, entry: PamEntry, context: ForeignContext): ForeignImport {
  const b = new CarrierBuilder(entry, context)
  COMPONENT_RULES[component](b)
  for (const field of Object.keys(entry).sort()) {
    if (!b.mapped.has(field)) b.put(metadataKeyOf(field), metadataValueOf(entry[field] as JsonValue))
  }
  if (b.derivedIds.length > 0) b.put('cairn_derived', canonicalJson([...new Set(b.derivedIds)]))
  b.carrier.metadata = b.metadata
  return {
    own: [b.carrier, ...b.derived, ...linksOf(b, component)],
    shared: b.shared,
    ...(b.personaAppend === undefined ? {} : { personaAppend: b.personaAppend }),
  }
}

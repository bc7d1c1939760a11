/**
 * Cairn records → a signed PAM artifact (docs/memory-model.md §2.7 "Export"). Records a PAM
 * import produced go back as their original entries where that is exact (foreign-export.ts);
 * every other record becomes a Cairn entry (native-records.ts):
 *
 *   episode → episodic (tagged `working` → working)    fact, entity, edge → semantic
 *   procedure → procedural                              core blocks + preferences → one identity entry
 *   episodeLink, factLink → attached to the entry of their source record; `derived_from`
 *     links also become `parent_ids`
 *   context → attached to the first entry whose record is in it
 *   resource, chunk, community, category, secretRef → not exported (§6.2), listed in `skipped`
 *
 * Parents: an episode's `derived_from` episodes; a fact's episode and `derived_from` facts; an
 * edge's entities and evidence episodes. A link that would close a cycle stays attached but is
 * not a parent (content ids cannot form cycles).
 *
 * Invariant: the output does not depend on the order of `records`, and `recordsFromPam` of it
 * gives back every exported record field for field (apart from the artifact-scoped values of
 * records on the foreign path, see foreign-export.ts).
 */
import { assertArray, assertInteger, assertObject, assertOptions, describeType } from '../../assert.js'
import { InputError } from '../../errors.js'
import { assertIdentity, canonicalJson, compareCodePoints, type Identity, type JsonValue } from '../../log/index.js'
import { RECORD_KINDS, formatTimestamp } from '../../projection/index.js'
import { LINK_TYPE } from './import-foreign.js'
import { exportForeignEntries, recordKey } from './foreign-export.js'
import {
  baseRecordOf, componentOfRecord, contentOfRecord, differenceOf, identityContent,
  type ContentEnvironment, type EntryResolver,
} from './native-records.js'
import { computeEntryId } from './pam-hash.js'
import { sealArtifact, sortByInstant } from './pam-sign.js'
import { PAM_COMPONENTS, PAM_ENTRY_VERSION, type JsonObject, type PamArtifact, type PamComponentName, type PamEntry, type PamRecord } from './pam-types.js'
import { carrierIdOf } from './pam-values.js'

export interface PamExportOptions {
  /** The operator key that signs the artifact. */
  readonly identity: Identity
  readonly nowMs: number
  /** `source_agent` of the envelope; by default named after the identity. */
  readonly sourceAgent?: { readonly name: string; readonly model_family: string; readonly runtime: string }
  readonly capabilityTokens?: readonly JsonObject[]
  /**
   * When each record was last written (ms since the epoch, by record id; Memory.lookup's write
   * times). A Cairn entry signs its records' times (`cairn.writtenAtMs`), so an import keeps what
   * its replica wrote after them; entries on the foreign path carry none (their bytes are kept).
   */
  readonly writtenAtMs?: ReadonlyMap<string, number>
}

export interface PamSkipped {
  readonly kind: string
  readonly id: string
  readonly reason: string
}

export interface PamExport {
  readonly artifact: PamArtifact
  /** Records with no place in PAM; nothing is left out silently. */
  readonly skipped: PamSkipped[]
}

interface Group {
  readonly component: PamComponentName
  /** The record the entry stands for (absent for an identity entry without a persona block). */
  readonly primary?: PamRecord
  readonly attached: PamRecord[]
  entryId?: string
}

const rank = (kind: string): number => {
  const index = (RECORD_KINDS as readonly string[]).indexOf(kind)
  return index < 0 ? RECORD_KINDS.length : index
}

function readRecords(value: unknown): PamRecord[] {
  const seen = new Set<string>()
  return assertArray(value, 'records').map((item, i) => {
    const record = assertObject(item, `records[${i}]`)
    if (typeof record.kind !== 'string' || typeof record.id !== 'string' || record.id.length === 0) {
      throw new InputError('WRONG_TYPE', `a record needs a string kind and a non-empty string id, got ${describeType(record.kind)} and ${describeType(record.id)}`, { field: `records[${i}]` })
    }
    canonicalJson(record)
    const key = recordKey(record.kind, record.id)
    if (seen.has(key)) throw new InputError('DUPLICATE_RECORD', `${record.kind} ${record.id} appears twice`, { field: `records[${i}]` })
    seen.add(key)
    return record as PamRecord
  }).sort((a, b) => rank(a.kind) - rank(b.kind) || compareCodePoints(a.id, b.id))
}

function readWrittenAt(value: unknown): ReadonlyMap<string, number> {
  if (value === undefined) return new Map()
  if (!(value instanceof Map)) throw new InputError('WRONG_TYPE', `expected a Map of record ids to times, got ${describeType(value)}`, { field: 'options.writtenAtMs' })
  for (const [id, ms] of value) assertInteger(ms, `options.writtenAtMs.${String(id)}`, 0)
  return value as ReadonlyMap<string, number>
}

/** The `writtenAtMs` of an entry holding `records`: the times known for them, by id; undefined for none. */
function writtenAtOf(records: readonly PamRecord[], writtenAt: ReadonlyMap<string, number>): JsonObject | undefined {
  const times: JsonObject = {}
  for (const record of records) {
    const ms = writtenAt.get(record.id)
    // Defined, not assigned: an id such as "__proto__" stays a key (as applyDifference does).
    if (ms !== undefined) Object.defineProperty(times, record.id, { value: ms, enumerable: true, writable: true, configurable: true })
  }
  return Object.keys(times).length > 0 ? times : undefined
}

const linkSource = (link: PamRecord): string | undefined => (link.kind === 'episodeLink' ? link.srcEpisodeID : link.srcFactID) as string | undefined

/** The records (kind, id) an entry's record derives from, in order. */
function parentRecords(group: Group): { keys: string[]; sources: string[] } {
  const { primary } = group
  const sources: string[] = []
  const keys: string[] = []
  const add = (kind: string, id: JsonValue | undefined, isSource: boolean): void => {
    if (typeof id !== 'string') return
    keys.push(recordKey(kind, id))
    if (isSource) sources.push(recordKey(kind, id))
  }
  const derivedFrom = (kind: string, field: string): void => {
    for (const link of group.attached) if (link.kind === kind && link.linkType === LINK_TYPE && linkSource(link) === primary?.id) add(kind === 'episodeLink' ? 'episode' : 'fact', link[field], false)
  }
  switch (primary?.kind) {
    case 'episode':
      derivedFrom('episodeLink', 'dstEpisodeID')
      break
    case 'fact':
      add('episode', primary.episodeID, true)
      derivedFrom('factLink', 'dstFactID')
      break
    case 'edge':
      add('entity', primary.srcEntityID, false)
      add('entity', primary.dstEntityID, false)
      for (const evidence of Array.isArray(primary.evidenceEpisodeIDs) ? primary.evidenceEpisodeIDs : []) add('episode', evidence, true)
      break
  }
  return { keys, sources }
}

/**
 * Builds and signs the PAM artifact of a set of records (each `{kind, id, …fields}`, as the
 * projections show them).
 * @throws InputError WRONG_TYPE, DUPLICATE_RECORD, NOT_JSON, NOTHING_TO_EXPORT, and the option
 *   checks; LimitError PAM_ARTIFACT_OVERSIZED when a component exceeds the spec's limits
 */
export function pamFromRecords(records: readonly PamRecord[], options: PamExportOptions): PamExport {
  const option = assertOptions(options, ['identity', 'nowMs', 'sourceAgent', 'capabilityTokens', 'writtenAtMs'], 'options')
  const identity = assertIdentity(option.identity, 'options.identity')
  const nowMs = assertInteger(option.nowMs, 'options.nowMs')
  const sourceAgent = (option.sourceAgent as PamExportOptions['sourceAgent']) ?? { name: `cairn-${identity.author.slice(0, 16)}`, model_family: 'unknown', runtime: 'cairn' }
  const input = readRecords(records)
  const writtenAt = readWrittenAt(option.writtenAtMs)
  const byKey = new Map(input.map((record) => [recordKey(record.kind, record.id), record]))
  const lookup = (kind: string, id: string): PamRecord | undefined => byKey.get(recordKey(kind, id))

  const foreign = exportForeignEntries(input, lookup)
  const isTaken = (record: PamRecord): boolean => {
    const key = recordKey(record.kind, record.id)
    return foreign.consumed.has(key) || (foreign.regenerated.get(key)?.has(canonicalJson(record)) ?? false)
  }
  const entryOfRecord = foreign.consumed

  const groups: Group[] = []
  const groupOf = new Map<string, Group>()
  let identityGroup: { component: PamComponentName; primary?: PamRecord; attached: PamRecord[] } | undefined
  const skipped: PamSkipped[] = []
  const later: PamRecord[] = []
  for (const record of input) {
    if (isTaken(record)) continue
    const component = componentOfRecord(record)
    if (component !== undefined) {
      const group: Group = { component, primary: record, attached: [] }
      groups.push(group)
      groupOf.set(recordKey(record.kind, record.id), group)
    } else if (record.kind === 'core' || record.kind === 'preference') {
      identityGroup ??= { component: 'identity', attached: [] }
      if (record.kind === 'core' && record.id === 'persona') identityGroup.primary = record
      else identityGroup.attached.push(record)
    } else later.push(record)
  }
  if (identityGroup !== undefined) groups.push(identityGroup)
  const groupInContext = new Map<JsonValue, Group>()
  for (const group of groups) {
    for (const member of group.primary === undefined ? group.attached : [group.primary, ...group.attached]) {
      if (typeof member.contextID === 'string' && !groupInContext.has(member.contextID)) groupInContext.set(member.contextID, group)
    }
  }
  for (const record of later) {
    if (record.kind === 'episodeLink' || record.kind === 'factLink') {
      const source = linkSource(record)
      const group = typeof source === 'string' ? groupOf.get(recordKey(record.kind === 'episodeLink' ? 'episode' : 'fact', source)) : undefined
      if (group !== undefined) group.attached.push(record)
      else skipped.push({ kind: record.kind, id: record.id, reason: 'its source record is not exported as a Cairn entry' })
    } else if (record.kind === 'context') {
      const group = groupInContext.get(record.id)
      if (group !== undefined) group.attached.push(record)
      else skipped.push({ kind: record.kind, id: record.id, reason: 'no exported Cairn entry is in this context' })
    } else skipped.push({ kind: record.kind, id: record.id, reason: 'PAM has no component for this kind (docs/memory-model.md §2.7)' })
  }

  const now = formatTimestamp(nowMs, 'options.nowMs')
  const env: ContentEnvironment = {
    now, agentName: sourceAgent.name,
    entityName: (id) => {
      const name = lookup('entity', id)?.canonicalName
      return typeof name === 'string' ? name : id
    },
  }
  const primaryOfEntry = new Map<string, { kind: string; id: string }>()
  for (const [pamId] of foreign.entries) primaryOfEntry.set(pamId, { kind: 'episode', id: carrierIdOf(pamId) })
  const resolve: EntryResolver = (entryId) => primaryOfEntry.get(entryId)
  const components: Record<PamComponentName, PamEntry[]> = { episodic: [], semantic: [], procedural: [], working: [], identity: [] }
  for (const { component, entry } of foreign.entries.values()) components[component].push(entry)

  const entryOf = (group: Group, keys: readonly string[], sources: readonly string[]): PamEntry => {
    const parentIds: string[] = []
    const sourceIds: string[] = []
    for (const key of keys) {
      // A parent still open is on a cycle with this entry: the link stays attached, not a parent.
      const entryId = groupOf.get(key)?.entryId ?? entryOfRecord.get(key)
      if (entryId === undefined) continue
      if (!parentIds.includes(entryId)) parentIds.push(entryId)
      if (sources.includes(key) && !sourceIds.includes(entryId)) sourceIds.push(entryId)
    }
    const fields = group.component === 'identity'
      ? identityContent(group.primary, group.attached.filter((record) => record.kind === 'preference'), env)
      : contentOfRecord(group.component, group.primary as PamRecord, env)
    const entry: JsonObject = { ...fields, parent_ids: parentIds, version: PAM_ENTRY_VERSION }
    if (group.component === 'semantic') entry.source_event_ids = sourceIds
    const cairn: JsonObject = {}
    if (group.primary !== undefined) {
      const { kind, id } = group.primary
      cairn.record = { kind, id, ...differenceOf(group.primary, baseRecordOf(kind, id, group.component, entry, resolve)) }
    }
    if (group.attached.length > 0) cairn.attached = group.attached
    const times = writtenAtOf(group.primary === undefined ? group.attached : [group.primary, ...group.attached], writtenAt)
    if (times !== undefined) cairn.writtenAtMs = times
    entry.cairn = cairn
    return { ...entry, id: computeEntryId(entry) } as PamEntry
  }
  // Parents first, by an iterative post-order walk (a chain of derived episodes can be long).
  const visited = new Set<Group>()
  for (const root of groups) {
    if (visited.has(root)) continue
    visited.add(root)
    const stack = [{ group: root, ...parentRecords(root), next: 0 }]
    while (stack.length > 0) {
      const top = stack[stack.length - 1] as (typeof stack)[number]
      if (top.next < top.keys.length) {
        const parent = groupOf.get(top.keys[top.next++] as string)
        if (parent !== undefined && !visited.has(parent)) {
          visited.add(parent)
          stack.push({ group: parent, ...parentRecords(parent), next: 0 })
        }
        continue
      }
      stack.pop()
      const entry = entryOf(top.group, top.keys, top.sources)
      top.group.entryId = entry.id
      if (top.group.primary !== undefined) primaryOfEntry.set(entry.id, { kind: top.group.primary.kind, id: top.group.primary.id })
      components[top.group.component].push(entry)
    }
  }

  if (PAM_COMPONENTS.every((component) => components[component].length === 0)) {
    throw new InputError('NOTHING_TO_EXPORT', 'none of the records has a PAM component', { field: 'records' })
  }
  for (const component of PAM_COMPONENTS) if (component !== 'episodic') components[component] = sortByInstant(components[component], 'created_at')
  // Every id was computed here or checked by the foreign path, so no id is recomputed.
  const artifact = sealArtifact({
    components, sourceAgent, identity, nowMs,
    ...(option.capabilityTokens === undefined ? {} : { capabilityTokens: option.capabilityTokens as JsonObject[] }),
  })
  return { artifact, skipped }
}

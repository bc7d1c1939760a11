/**
 * PAM artifact → Cairn records (docs/memory-model.md §2, §5): what an import writes, computed
 * without touching a store. The caller verifies the artifact first (`openPam`), then writes
 * the records in one batch.
 *
 * - The envelope becomes the import episode `ep_` + H("pam-artifact", root_hash), the source
 *   agent's entity `ent_` + H("agent", name) and context `ctx_` + H("pam-agent", name) (§2.7).
 * - A foreign entry becomes a carrier and its derived records (import-foreign.ts).
 * - An entry with a `cairn` field gives back the Cairn records it was exported from
 *   (native-records.ts), with their own ids and nothing else, and when each was last written
 *   where the entry signs it (`writtenAtMs`).
 * - A component this version does not know becomes carriers holding each element as `pam_raw`.
 *
 * Invariant: output records are unique by (kind, id). When two entries yield the same record,
 * one restored from a `cairn` field wins over a derived one; among derived ones the first wins
 * field by field and sets (aliases, actors, …) are united, as §5 rule 5 writes first-wins.
 * Records come in the spec's import order of kinds (parents first).
 */
import { assertBoolean, assertInteger, assertOptions } from '../../assert.js'
import { canonicalJson, type JsonValue } from '../../log/index.js'
import { RECORD_KINDS, formatTimestamp, normalizeTimestamp } from '../../projection/index.js'
import { importForeignEntry, type ForeignContext, type ParentRecords } from './import-foreign.js'
import { applyDifference, baseRecordOf, readNativeExtension, type NativeExtension } from './native-records.js'
import { readPamArtifact } from './pam-schema.js'
import { compareInstants } from './pam-sign.js'
import { PAM_COMPONENTS, entryPath, type PamArtifact, type PamComponentName, type PamEntry, type PamRecord } from './pam-types.js'
import { H, actorEntityIdOf, carrierIdOf, factIdOf, metadataKeyOf, metadataValueOf } from './pam-values.js'

/** Working memory expires this long after import unless the caller says otherwise (§2.5). */
export const DEFAULT_WORKING_TTL_MS = 24 * 60 * 60 * 1000

export interface PamImportOptions {
  readonly nowMs: number
  readonly workingTtlMs?: number
  /**
   * Restore the records of entries that carry a `cairn` field (default true). Such an entry can
   * name any record id, so an import from a signer the user does not speak for may set this to
   * false: the entries then import as foreign ones, the field kept as `pam_cairn` metadata.
   */
  readonly restoreCairnRecords?: boolean
}

/** A PAM precedence (spec §2.4): the later fact supersedes the earlier one at `at`. */
export interface PamSupersession {
  readonly oldID: string
  readonly newID: string
  readonly at: string
}

export interface PamImport {
  readonly importEpisodeID: string
  readonly records: PamRecord[]
  /** Text for the core `persona` block, in entry order. Append each unless the block holds it already. */
  readonly personaAppends: string[]
  /** Apply with `supersede` after writing the records. */
  readonly supersessions: PamSupersession[]
  /**
   * When each record restored from a `cairn` field was last written (ms since the epoch, by
   * record id), where its entry signs it; none for derived records, whose entries carry no time.
   */
  readonly writtenAtMs: ReadonlyMap<string, number>
}

export interface ArtifactIds {
  readonly importEpisodeID: string
  readonly agentContextID: string
  readonly agentEntityID: string
}

export function artifactIdsOf(artifact: PamArtifact): ArtifactIds {
  return {
    importEpisodeID: `ep_${H('pam-artifact', artifact.root_hash)}`,
    agentContextID: `ctx_${H('pam-agent', artifact.source_agent.name)}`,
    agentEntityID: actorEntityIdOf('agent', artifact.source_agent.name),
  }
}

function episodeOf(id: string, time: string, details: string, metadata: Record<string, string>, extra: PamRecord | object): PamRecord {
  return {
    kind: 'episode', id, eventTime: time, mentionTime: time, ingestionTime: time, sourceType: 'event', actors: [],
    summary: details.split('\n')[0] ?? '', details, sensitivity: 'low', metadata, categories: [], importance: 0.5, confidence: 0.7,
    lifecycleState: 'HOT', extractionState: 'done', accessCount: 0, pinned: false, vaultRefs: [], ...extra,
  }
}

function envelopeRecords(artifact: PamArtifact, ids: ArtifactIds): PamRecord[] {
  const { name, model_family: family, runtime } = artifact.source_agent
  const created = normalizeTimestamp(artifact.created_at)
  const metadata: Record<string, string> = {}
  if (created !== artifact.created_at) metadata.pam_created_at = artifact.created_at
  for (const field of Object.keys(artifact).sort()) {
    if (field === 'components' || field === 'created_at') continue
    const key = metadataKeyOf(field)
    const value = metadataValueOf(artifact[field] as JsonValue)
    if (value !== undefined && !Object.hasOwn(metadata, key)) metadata[key] = value
  }
  const counts = PAM_COMPONENTS.map((component) => `${artifact.components[component].length} ${component}`).join(', ')
  const summary = `Imported PAM artifact from ${name}`
  return [
    episodeOf(ids.importEpisodeID, created, `${summary}\n${counts}`, metadata, { contextID: ids.agentContextID }),
    { kind: 'context', id: ids.agentContextID, label: name, archived: false, createdAt: created },
    {
      kind: 'entity', id: ids.agentEntityID, type: 'agent', canonicalName: name, aliases: [], summary: `${family} ${runtime}`,
      sensitivity: 'low', updatedAt: created, contextID: ids.agentContextID,
    },
  ]
}

interface Source {
  readonly component: PamComponentName
  readonly native?: NativeExtension
}

const SET_FIELDS = new Set(['aliases', 'actors', 'categories', 'vaultRefs', 'evidenceEpisodeIDs', 'memberEntityIDs', 'tags'])

/** Collects records unique by (kind, id) with the precedence of the file header; a native one with its entry's time. */
class RecordSet {
  private readonly records = new Map<string, { record: PamRecord; isNative: boolean; writtenAtMs?: number }>()

  add(record: PamRecord, isNative: boolean, writtenAtMs?: number): void {
    const key = `${record.kind}\u0000${record.id}`
    const held = this.records.get(key)
    const added = { record, isNative, ...(writtenAtMs === undefined ? {} : { writtenAtMs }) }
    if (held === undefined) this.records.set(key, added)
    else if (isNative && !held.isNative) this.records.set(key, added)
    else if (!isNative && !held.isNative) {
      const merged = { ...held.record }
      for (const [field, value] of Object.entries(record)) {
        const current = merged[field]
        if (current === undefined) merged[field] = value
        else if (SET_FIELDS.has(field) && Array.isArray(current) && Array.isArray(value)) merged[field] = [...new Set([...current, ...value])] as JsonValue
      }
      this.records.set(key, { record: merged, isNative: false })
    }
  }

  ordered(): PamRecord[] {
    const rank = (kind: string): number => {
      const index = (RECORD_KINDS as readonly string[]).indexOf(kind)
      return index < 0 ? RECORD_KINDS.length : index
    }
    return [...this.records.values()].map((held) => held.record).sort((a, b) => rank(a.kind) - rank(b.kind))
  }

  /** The time of each record that came with one, by id (the first such record of an id). */
  writtenAtMs(): Map<string, number> {
    const times = new Map<string, number>()
    for (const { record, writtenAtMs } of this.records.values()) if (writtenAtMs !== undefined && !times.has(record.id)) times.set(record.id, writtenAtMs)
    return times
  }
}

/** PAM spec §2.4 among imported facts: by (subject, predicate), a later different object wins. */
function supersessionsOf(facts: readonly { id: string; entry: PamEntry }[]): PamSupersession[] {
  const groups = new Map<string, { id: string; entry: PamEntry }[]>()
  for (const fact of facts) {
    const key = canonicalJson([fact.entry.subject as string, fact.entry.predicate as string])
    const group = groups.get(key)
    if (group === undefined) groups.set(key, [fact])
    else group.push(fact)
  }
  const out: PamSupersession[] = []
  for (const group of groups.values()) {
    group.sort((a, b) => compareInstants(a.entry.created_at, b.entry.created_at) || (a.id < b.id ? -1 : 1))
    let current: { id: string; entry: PamEntry }[] = []
    for (const fact of group) {
      const replaced = current.filter((held) => held.entry.object !== fact.entry.object)
      if (replaced.length > 0 && compareInstants(replaced[0]?.entry.created_at as string, fact.entry.created_at) < 0) {
        const at = normalizeTimestamp(fact.entry.created_at)
        for (const held of replaced) out.push({ oldID: held.id, newID: fact.id, at })
        current = current.filter((held) => !replaced.includes(held))
      }
      current.push(fact)
    }
  }
  return out
}

/**
 * The records an import of `artifact` writes. The artifact should have been verified.
 * @throws InputError for a malformed artifact or options, BAD_CAIRN_FIELD for a malformed
 *   `cairn` field (naming its path)
 */
export function recordsFromPam(artifact: PamArtifact, options: PamImportOptions): PamImport {
  readPamArtifact(artifact, true)
  const record = assertOptions(options, ['nowMs', 'workingTtlMs', 'restoreCairnRecords'], 'options')
  const isRestoring = record.restoreCairnRecords === undefined ? true : assertBoolean(record.restoreCairnRecords, 'options.restoreCairnRecords')
  const nowMs = assertInteger(record.nowMs, 'options.nowMs')
  const ttlMs = record.workingTtlMs === undefined ? DEFAULT_WORKING_TTL_MS : assertInteger(record.workingTtlMs, 'options.workingTtlMs', 0)
  const ids = artifactIdsOf(artifact)
  const sources = new Map<string, Source>()
  for (const component of PAM_COMPONENTS) {
    artifact.components[component].forEach((entry, i) => {
      if (sources.has(entry.id)) return
      const cairn = entry.cairn
      sources.set(entry.id, cairn === undefined || !isRestoring ? { component } : { component, native: readNativeExtension(cairn, component, `${entryPath(component, i)}.cairn`) })
    })
  }
  const primaryOf = (entryId: string): { kind: string; id: string } | undefined => {
    const source = sources.get(entryId)
    if (source === undefined) return undefined
    return source.native === undefined ? { kind: 'episode', id: carrierIdOf(entryId) } : source.native.record
  }
  const resolveParent = (entryId: string): ParentRecords => {
    const source = sources.get(entryId)
    if (source === undefined) return { episodeID: carrierIdOf(entryId) }
    if (source.native === undefined) return { episodeID: carrierIdOf(entryId), ...(source.component === 'semantic' ? { factID: factIdOf(entryId) } : {}) }
    const primary = source.native.record
    if (primary?.kind === 'episode') return { episodeID: primary.id }
    return primary?.kind === 'fact' ? { factID: primary.id } : {}
  }
  const context: ForeignContext = {
    importEpisodeID: ids.importEpisodeID, agentContextID: ids.agentContextID,
    workingExpiry: formatTimestamp(nowMs + ttlMs, 'options.nowMs'), resolveParent,
  }
  const out = new RecordSet()
  for (const envelopeRecord of envelopeRecords(artifact, ids)) out.add(envelopeRecord, false)
  const personaAppends: string[] = []
  const facts: { id: string; entry: PamEntry }[] = []
  for (const component of PAM_COMPONENTS) {
    for (const entry of artifact.components[component]) {
      const native = sources.get(entry.id)?.native
      if (native !== undefined) {
        const timeOf = (id: string): number | undefined => (native.writtenAtMs !== undefined && Object.hasOwn(native.writtenAtMs, id) ? native.writtenAtMs[id] : undefined)
        if (native.record !== undefined) {
          const { kind, id, set, unset } = native.record
          out.add(applyDifference(baseRecordOf(kind, id, component, entry, primaryOf), set, unset), true, timeOf(id))
        }
        for (const attached of native.attached ?? []) out.add(attached, true, timeOf(attached.id))
        continue
      }
      const result = importForeignEntry(component, entry, context)
      for (const own of result.own) out.add(own, false)
      for (const shared of result.shared) out.add(shared, false)
      if (result.personaAppend !== undefined) personaAppends.push(result.personaAppend)
      if (component === 'semantic') facts.push({ id: factIdOf(entry.id), entry })
    }
  }
  const created = normalizeTimestamp(artifact.created_at)
  for (const component of Object.keys(artifact.components).sort()) {
    if ((PAM_COMPONENTS as readonly string[]).includes(component)) continue
    const value = artifact.components[component] as JsonValue
    for (const element of Array.isArray(value) ? value : [value]) {
      const raw = canonicalJson(element)
      out.add(episodeOf(`ep_${H('pam', component, raw)}`, created, `Unrecognized PAM component ${component}`, { pam_component: component, pam_raw: raw }, {
        sourceType: 'note', sourceID: ids.importEpisodeID, contextID: ids.agentContextID,
      }), false)
    }
  }
  return { importEpisodeID: ids.importEpisodeID, records: out.ordered(), personaAppends, supersessions: supersessionsOf(facts), writtenAtMs: out.writtenAtMs() }
}

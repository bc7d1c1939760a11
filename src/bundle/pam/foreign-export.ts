/**
 * The foreign path of an export: imported carriers whose PAM entry can be emitted unchanged
 * (docs/memory-model.md §2.7: "If the rebuilt entry hashes to its pam_id, it is emitted
 * unchanged"), so a memory that passes through Cairn keeps its PAM content ids.
 *
 * A carrier takes this path only when all of these hold, and otherwise becomes a Cairn entry:
 * - the rebuilt entry is well formed and hashes to the carrier's `pam_id`;
 * - every parent in `parent_ids` takes this path too (its id must be the one referenced);
 * - importing the rebuilt entry gives exactly the carrier and its derived records as held,
 *   field for field, with the artifact-scoped values (import episode, agent context, working
 *   expiry) taken from the carrier;
 * - no link held starts at those records other than the ones the import derives.
 * Invariant: what the import of an emitted entry derives is what the store holds, apart from
 * the artifact-scoped values, which a new import takes from the new artifact.
 */
import { canonicalJson } from '../../log/index.js'
import { importForeignEntry, type ForeignContext } from './import-foreign.js'
import { rebuildForeignEntry, type RecordLookup } from './foreign-rebuild.js'
import { computeEntryId } from './pam-hash.js'
import { isWellFormedEntry } from './pam-schema.js'
import { PAM_HASH_PATTERN, type PamComponentName, type PamEntry, type PamRecord } from './pam-types.js'
import { carrierIdOf, factIdOf, taskContextIdOf } from './pam-values.js'

export const recordKey = (kind: string, id: string): string => `${kind}\u0000${id}`

export interface ForeignExport {
  /** Emitted entries by PAM id. */
  readonly entries: Map<string, { component: PamComponentName; entry: PamEntry }>
  /** Keys of the records those entries stand for, with the PAM id of their entry. */
  readonly consumed: Map<string, string>
  /** Records the import of those entries derives that other entries may derive too (canonical JSON forms). */
  readonly regenerated: Map<string, Set<string>>
}

function linkSources(records: readonly PamRecord[]): Map<string, PamRecord[]> {
  const bySource = new Map<string, PamRecord[]>()
  for (const record of records) {
    const source = record.kind === 'episodeLink' ? record.srcEpisodeID : record.kind === 'factLink' ? record.srcFactID : undefined
    if (typeof source !== 'string') continue
    const list = bySource.get(source)
    if (list === undefined) bySource.set(source, [record])
    else list.push(record)
  }
  return bySource
}

/** Finds the carriers that can be emitted as their original entries. */
export function exportForeignEntries(records: readonly PamRecord[], lookup: RecordLookup): ForeignExport {
  const carriers = new Map<string, PamRecord>()
  for (const record of records) {
    const metadata = record.metadata
    if (record.kind !== 'episode' || typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) continue
    const pamId = metadata.pam_id
    if (typeof pamId === 'string' && PAM_HASH_PATTERN.test(pamId) && record.id === carrierIdOf(pamId)) carriers.set(pamId, record)
  }
  const links = linkSources(records)
  const result: ForeignExport = { entries: new Map(), consumed: new Map(), regenerated: new Map() }
  const resolveParent: ForeignContext['resolveParent'] = (entryId) => {
    const emitted = result.entries.get(entryId)
    return { episodeID: carrierIdOf(entryId), ...(emitted?.component === 'semantic' ? { factID: factIdOf(entryId) } : {}) }
  }

  const reproduces = (component: PamComponentName, entry: PamEntry, carrier: PamRecord): boolean => {
    const taskContext = component === 'working' ? lookup('context', taskContextIdOf(entry.id)) : undefined
    const agentContext = component === 'working' ? taskContext?.parentID : carrier.contextID
    const context: ForeignContext = {
      ...(typeof carrier.sourceID === 'string' ? { importEpisodeID: carrier.sourceID } : {}),
      ...(typeof agentContext === 'string' ? { agentContextID: agentContext } : {}),
      ...(typeof carrier.expirationDate === 'string' ? { workingExpiry: carrier.expirationDate } : {}),
      resolveParent,
    }
    const derived = importForeignEntry(component, entry, context)
    const ownIds = new Set(derived.own.map((record) => record.id))
    for (const record of derived.own) {
      const held = lookup(record.kind, record.id)
      if (held === undefined || canonicalJson(held) !== canonicalJson(record)) return false
      if ((links.get(record.id) ?? []).some((link) => !ownIds.has(link.id))) return false
    }
    result.entries.set(entry.id, { component, entry })
    for (const record of derived.own) result.consumed.set(recordKey(record.kind, record.id), entry.id)
    for (const record of derived.shared) {
      const key = recordKey(record.kind, record.id)
      result.regenerated.set(key, (result.regenerated.get(key) ?? new Set()).add(canonicalJson(record)))
    }
    return true
  }

  // Rebuild every carrier, then decide parents before children: an iterative post-order walk,
  // since an imported session can chain 100,000 entries. An entry on a cycle is not emitted.
  const rebuilt = new Map<string, { component: PamComponentName; entry: PamEntry }>()
  for (const [pamId, carrier] of carriers) {
    const candidate = rebuildForeignEntry(carrier, lookup)
    if (candidate !== undefined && isWellFormedEntry(candidate.component, candidate.entry) && computeEntryId(candidate.entry) === pamId) rebuilt.set(pamId, candidate)
  }
  const order: string[] = []
  const onCycle = new Set<string>()
  const color = new Map<string, 'grey' | 'black'>()
  for (const start of [...rebuilt.keys()].sort()) {
    if (color.has(start)) continue
    const stack = [{ id: start, next: 0 }]
    color.set(start, 'grey')
    while (stack.length > 0) {
      const top = stack[stack.length - 1] as { id: string; next: number }
      const parents = rebuilt.get(top.id)?.entry.parent_ids ?? []
      if (top.next >= parents.length) {
        color.set(top.id, 'black')
        order.push(top.id)
        stack.pop()
        continue
      }
      const parent = parents[top.next++] as string
      if (!rebuilt.has(parent)) continue
      if (color.get(parent) === 'grey') onCycle.add(top.id)
      else if (!color.has(parent)) {
        color.set(parent, 'grey')
        stack.push({ id: parent, next: 0 })
      }
    }
  }
  for (const pamId of order) {
    const candidate = rebuilt.get(pamId) as { component: PamComponentName; entry: PamEntry }
    if (onCycle.has(pamId) || !candidate.entry.parent_ids.every((parent) => result.entries.has(parent))) continue
    reproduces(candidate.component, candidate.entry, carriers.get(pamId) as PamRecord)
  }
  return result
}

/**
 * Selective disclosure (seed 000 §3.2 `selective_disclose`, PAM spec §3.4.3): a smaller
 * artifact holding the chosen entries and all their transitive ancestors, so every disclosed
 * entry still verifies back to its roots.
 *
 * How the subset is signed (a Cairn choice; the spec filters and leaves re-signing open): the
 * PAM root hash covers the whole `components` object, so it has no inclusion proofs and the
 * exporter's signature cannot cover a subset. A disclosure is therefore a new, ordinary PAM
 * artifact: entries are copied unchanged (same bytes, same content ids, original order), the
 * root hash is recomputed over the disclosed components, and the discloser signs it. A
 * recipient verifies it with the same three phases, trusting the discloser's key, and any PAM
 * verifier accepts it. The envelope keeps `source_agent` and records where the subset came
 * from as `disclosed_from: {root_hash, signature}` of the source; like every envelope field
 * outside `components` this is not covered by the new signature, so it is a claim to check
 * with `checkDisclosure` against the source, never evidence by itself. Capability tokens and
 * unknown envelope fields of the source are not carried over.
 *
 * Invariant: the disclosed set is closed under `parent_ids`, so phase 2 holds for it whenever
 * it holds for the source; `disclose` refuses a source that fails phase 1 or 2.
 */
import { assertArray, assertOptions, assertString, describeValue } from '../../assert.js'
import { InputError, VerifyError } from '../../errors.js'
import type { Identity } from '../../log/index.js'
import { computeEntryId } from './pam-hash.js'
import { readPamArtifact } from './pam-schema.js'
import { sealArtifact } from './pam-sign.js'
import { PAM_COMPONENTS, entryPath, type JsonObject, type PamArtifact, type PamComponentName, type PamEntry } from './pam-types.js'
import { checkProvenance, closeOverAncestors, indexEntries } from './provenance.js'

export interface DiscloseOptions {
  /** The discloser's key, which signs the new root hash. */
  readonly identity: Identity
  readonly nowMs: number
  readonly capabilityTokens?: readonly JsonObject[]
}

function assertSourceIntact(artifact: PamArtifact): void {
  for (const component of PAM_COMPONENTS) {
    artifact.components[component].forEach((entry, i) => {
      if (computeEntryId(entry) !== entry.id) throw new VerifyError('PAM_HASH_MISMATCH', 'the entry id does not match its content', { path: entryPath(component, i) })
    })
  }
  const broken = checkProvenance(artifact.components)[0]
  if (broken !== undefined) throw new VerifyError(broken.code, broken.reason, { path: broken.path })
}

/**
 * The sub-artifact of `entryIds` and their ancestors, signed by the discloser.
 * @throws InputError WRONG_TYPE, EMPTY (no ids), UNKNOWN_ENTRY (an id not in the artifact);
 *   VerifyError when the source fails phase 1 or 2
 */
export function disclose(artifact: PamArtifact, entryIds: readonly string[], options: DiscloseOptions): PamArtifact {
  readPamArtifact(artifact, true)
  const record = assertOptions(options, ['identity', 'nowMs', 'capabilityTokens'], 'options')
  const chosen = assertArray(entryIds, 'entryIds').map((id, i) => assertString(id, `entryIds[${i}]`))
  if (chosen.length === 0) throw new InputError('EMPTY', 'choose at least one entry to disclose', { field: 'entryIds' })
  assertSourceIntact(artifact)
  const index = indexEntries(artifact.components)
  chosen.forEach((id, i) => {
    if (!index.has(id)) throw new InputError('UNKNOWN_ENTRY', `${describeValue(id, 80)} is not an entry of the artifact`, { field: `entryIds[${i}]` })
  })
  const { closed } = closeOverAncestors(index, chosen)
  const components: Partial<Record<PamComponentName, PamEntry[]>> = {}
  for (const component of PAM_COMPONENTS) components[component] = artifact.components[component].filter((entry) => closed.has(entry.id))
  // assertSourceIntact checked every id, so sealing does not recompute them.
  return sealArtifact({
    components,
    sourceAgent: artifact.source_agent,
    identity: record.identity as Identity,
    nowMs: record.nowMs as number,
    ...(record.capabilityTokens === undefined ? {} : { capabilityTokens: record.capabilityTokens as JsonObject[] }),
    extra: { disclosed_from: { root_hash: artifact.root_hash, signature: artifact.signature } },
  })
}

/**
 * Checks a disclosure against the artifact it claims to come from: `disclosed_from` names the
 * source's root hash and signature, and every disclosed entry is an entry of the source. Both
 * artifacts should have been verified first. Returns the problems; empty means it is a subset.
 */
export function checkDisclosure(disclosed: PamArtifact, source: PamArtifact): string[] {
  readPamArtifact(disclosed, true)
  readPamArtifact(source, true)
  const problems: string[] = []
  const claim = disclosed.disclosed_from as JsonObject | undefined
  if (claim?.root_hash !== source.root_hash || claim.signature !== source.signature) {
    problems.push('disclosed_from does not name the source root hash and signature')
  }
  const index = indexEntries(source.components)
  for (const component of PAM_COMPONENTS) {
    disclosed.components[component].forEach((entry, i) => {
      const place = index.get(entry.id)
      if (place === undefined || place.component !== component) problems.push(`${entryPath(component, i)} (${entry.id}) is not a ${component} entry of the source`)
    })
  }
  return problems
}

/**
 * The PAM artifact model (seed 000 §3.1; PAM spec v1.0 §2, §4.3, field names as spelled there
 * and in docs/memory-model.md §2): an envelope holding the five components M = (E, S, P, W, I),
 * each an ordered array of content-addressed entries whose `parent_ids` form the provenance DAG.
 *
 * Invariant: a `PamArtifact` value has passed `readPamArtifact` (every field the spec requires
 * is present with its type, every id and timestamp is well formed, component sizes are within
 * the spec's limits). It is not yet verified: hashes, DAG and signature are `verifyPam`'s job.
 * Fields the spec does not define are kept as they are (spec §12.2) and are covered by the
 * entry ids and the root hash like any other field.
 */
import type { JsonObject, JsonValue } from '../../log/index.js'

export type { JsonObject }

/** The five components, in the order the spec lists them (and verification walks them). */
export const PAM_COMPONENTS = ['episodic', 'semantic', 'procedural', 'working', 'identity'] as const
export type PamComponentName = (typeof PAM_COMPONENTS)[number]

/** What this implementation writes, and the only major version it reads (spec §12.1). */
export const PAM_VERSION = '1.0'
export const PAM_SCHEMA_VERSION = '1.0'
export const PAM_ENTRY_VERSION = '1.0'

/** `.pam.cbor` files start with "PAM" and the format version byte 0x01 (spec §4.4). */
export const PAM_MAGIC = Uint8Array.of(0x50, 0x41, 0x4d, 0x01)

/** Larger inputs are refused before parsing. 64 MiB holds the spec's largest components. */
export const MAX_PAM_BYTES = 64 * 1024 * 1024

/** Entries per component (spec §2.8); more is PAM_ARTIFACT_OVERSIZED. */
export const MAX_COMPONENT_ENTRIES: Readonly<Record<PamComponentName, number>> = {
  episodic: 100_000,
  semantic: 50_000,
  procedural: 10_000,
  working: 1_000,
  identity: 100,
}

/** Parents of one entry. The spec sets no bound; this one only bounds the work per entry. */
export const MAX_PARENT_IDS = 4096

/** `blake3:` + 64 lowercase hex (spec Appendix A `entry-id`, `root-hash`). */
export const PAM_HASH_PATTERN = /^blake3:[0-9a-f]{64}$/
/** `ed25519:` + 128 lowercase hex (spec Appendix A `signature`). */
export const PAM_SIGNATURE_PATTERN = /^ed25519:[0-9a-f]{128}$/

/** One entry: the common base (spec §2.2) plus its component's fields and any others. */
export type PamEntry = JsonObject & {
  id: string
  parent_ids: string[]
  created_at: string
}

export type PamComponents = JsonObject & { [name in PamComponentName]: PamEntry[] }

export type PamSourceAgent = JsonObject & { name: string; model_family: string; runtime: string }

declare const validated: unique symbol

/** An envelope that passed `readPamArtifact` (see the invariant above). */
export type PamArtifact = JsonObject & {
  pam_version: string
  schema_version: string
  created_at: string
  source_agent: PamSourceAgent
  root_hash: string
  signature: string
  capability_tokens: JsonValue[]
  components: PamComponents
} & { readonly [validated]: true }

/** A Cairn record as the projections show it (`RecordView`): kind, id and PM fields. */
export type PamRecord = JsonObject & { kind: string; id: string }

/** Where an entry sits in its artifact. */
export interface EntryPlace {
  readonly component: PamComponentName
  readonly index: number
  readonly entry: PamEntry
}

export function entryPath(component: string, index: number): string {
  return `$.components.${component}[${index}]`
}

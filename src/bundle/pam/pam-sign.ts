/**
 * Building and signing artifacts: `createPamEntry` (the seed's `derive`: content plus parents
 * in, content-addressed entry out) and `signPam`, which assembles the envelope, orders episodic
 * entries as the spec requires, computes the root hash and signs it. `sealArtifact` is the same
 * for entries this module built or checked, without recomputing their ids.
 *
 * Invariant: the key signs only artifacts that pass structure, phase 1 and phase 2; a signer
 * never vouches for a broken DAG.
 */
import { assertInteger, assertObject, assertOptions, describeType } from '../../assert.js'
import { InputError, VerifyError } from '../../errors.js'
import { assertIdentity, canonicalJson, type Identity, type JsonValue } from '../../log/index.js'
import { formatTimestamp, parseTimestamp } from '../../projection/index.js'
import { computeEntryId, computeRootHash, signRoot } from './pam-hash.js'
import { readPamArtifact } from './pam-schema.js'
import {
  PAM_COMPONENTS, PAM_SCHEMA_VERSION, PAM_VERSION,
  type JsonObject, type PamArtifact, type PamComponentName, type PamComponents, type PamEntry,
} from './pam-types.js'
import { checkProvenance } from './provenance.js'

/**
 * An entry from its content: everything but `id`, which is computed (PAM spec §3.1). The
 * fields are not checked against a component's schema here; `signPam` does that.
 * @throws InputError WRONG_TYPE, UNEXPECTED_FIELD (an `id` was given), NOT_JSON
 */
export function createPamEntry(fields: JsonObject): PamEntry {
  assertObject(fields, 'fields')
  if (Object.hasOwn(fields, 'id')) throw new InputError('UNEXPECTED_FIELD', 'an entry id is computed from its content, never given', { field: 'fields.id' })
  canonicalJson(fields)
  return { id: computeEntryId(fields), ...fields } as PamEntry
}

const FRACTION = /\.(\d+)/
/** A well-formed placeholder, replaced by the signature once the checks pass. */
const UNSIGNED = `ed25519:${'0'.repeat(128)}`
/** 0000-01-01T00:00:00Z is this many ms before the epoch: the offset that makes keys positive. */
const YEAR_ZERO_MS = 62_167_219_200_000

/**
 * A key whose string order is the instant order of RFC 3339 timestamps, fractions of a second
 * included (to 12 digits). Sorting by precomputed keys parses each timestamp once.
 */
export function instantKey(timestamp: string): string {
  const seconds = String(parseTimestamp(timestamp) + YEAR_ZERO_MS).padStart(15, '0')
  return seconds + (FRACTION.exec(timestamp)?.[1] ?? '').slice(0, 12).padEnd(12, '0')
}

/** Orders RFC 3339 timestamps by instant. */
export function compareInstants(a: string, b: string): number {
  const ka = instantKey(a)
  const kb = instantKey(b)
  return ka < kb ? -1 : ka > kb ? 1 : 0
}

/** Entries sorted by the instant in `field`, then by id (PAM spec §2.3 for episodic `timestamp`). */
export function sortByInstant(entries: readonly PamEntry[], field: string): PamEntry[] {
  return entries
    .map((entry) => ({ entry, key: `${instantKey(String(entry[field]))} ${entry.id}` }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .map(({ entry }) => entry)
}

export interface SignPamInput {
  /** Entries per component; missing components are empty. Episodic entries are sorted here. */
  readonly components: Partial<Record<PamComponentName, readonly PamEntry[]>>
  readonly sourceAgent: { readonly name: string; readonly model_family: string; readonly runtime: string }
  /** The operator key that signs the root hash. */
  readonly identity: Identity
  /** The artifact's `created_at`, truncated to the second. */
  readonly nowMs: number
  readonly capabilityTokens?: readonly JsonObject[]
  /** Further envelope fields. Like `source_agent`, they are not covered by the root hash. */
  readonly extra?: JsonObject
}

/**
 * Assembles and signs an artifact.
 * @throws InputError for a malformed input (readPamArtifact's codes, UNKNOWN_FIELD, WRONG_TYPE);
 *   VerifyError PAM_HASH_MISMATCH or a phase-2 code when an entry id does not match its content
 *   or the DAG is broken
 */
export function signPam(input: SignPamInput): PamArtifact {
  const options = assertOptions(input, ['components', 'sourceAgent', 'identity', 'nowMs', 'capabilityTokens', 'extra'], 'input')
  const given = assertOptions(assertObject(options.components, 'input.components'), PAM_COMPONENTS, 'input.components') as Partial<Record<PamComponentName, unknown>>
  const components = {} as PamComponents
  for (const name of PAM_COMPONENTS) {
    const entries = given[name] ?? []
    if (!Array.isArray(entries)) throw new InputError('WRONG_TYPE', `expected an array, got ${describeType(entries)}`, { field: `input.components.${name}` })
    components[name] = entries as PamEntry[]
    components[name].forEach((entry, i) => {
      // Also the check that entries hold only JSON: computeEntryId serializes them.
      if (typeof entry?.id === 'string' && computeEntryId(entry) !== entry.id) {
        throw new VerifyError('PAM_HASH_MISMATCH', 'the entry id does not match its content', { path: `$.components.${name}[${i}]` })
      }
    })
  }
  return sealArtifact({ ...(options as unknown as SignPamInput), components })
}

/**
 * `signPam` for entries whose ids are known to match their content (built or checked by the
 * caller in this module): skips recomputing every id, which is most of the cost of signing.
 */
export function sealArtifact(input: SignPamInput): PamArtifact {
  const identity = assertIdentity(input.identity, 'input.identity')
  const nowMs = assertInteger(input.nowMs, 'input.nowMs')
  const components = {} as PamComponents
  for (const name of PAM_COMPONENTS) components[name] = [...(input.components[name] ?? [])]
  components.episodic = sortByInstant(components.episodic, 'timestamp')
  const extra = input.extra === undefined ? {} : assertObject(input.extra, 'input.extra')
  const envelope: Record<string, JsonValue> = {
    ...(extra as JsonObject),
    pam_version: PAM_VERSION,
    schema_version: PAM_SCHEMA_VERSION,
    created_at: formatTimestamp(nowMs, 'input.nowMs'),
    source_agent: input.sourceAgent as JsonObject,
    root_hash: '',
    signature: '',
    capability_tokens: (input.capabilityTokens ?? []) as JsonObject[],
  }
  // Everything but the components is small: check it is JSON here; the root hash serializes the rest.
  canonicalJson(envelope)
  const rootHash = computeRootHash(components)
  envelope.root_hash = rootHash
  envelope.signature = UNSIGNED
  envelope.components = components
  // Structure and DAG first: the key signs nothing that fails them.
  const artifact = readPamArtifact(envelope, true)
  const broken = checkProvenance(artifact.components)[0]
  if (broken !== undefined) throw new VerifyError(broken.code, broken.reason, { path: broken.path })
  envelope.signature = signRoot(identity, rootHash)
  return artifact
}

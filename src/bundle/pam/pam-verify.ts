/**
 * Verification of a PAM artifact in the three phases of seed 000 §3.2 (PAM spec §3.3):
 *
 *   1 hashes     every entry's id is the BLAKE3 of its content (PAM_HASH_MISMATCH)
 *   2 dag        unique ids, no dangling parents, no cycles, a root (provenance.ts)
 *   3 signature  root_hash = BLAKE3(canonical_json(components)) (PAM_HASH_MISMATCH at
 *                $.root_hash) and an Ed25519 signature over it by a trusted key
 *                (PAM_INVALID_SIGNATURE)
 *
 * Structure (required fields and types) is checked before any phase, by the decoders and
 * `readPamArtifact`; a `PamArtifact` value has passed it.
 *
 * Invariant: `ok` is true only when all three phases pass; there is no partial acceptance. All
 * phases run, so a report lists every problem (up to MAX_REPORTED_PROBLEMS) and `phase` names
 * the first failing one. The spec halts at the first failure; running on only adds detail,
 * since every phase is a pure check.
 */
import { assertArray, assertHex, assertOptions } from '../../assert.js'
import { VerifyError } from '../../errors.js'
import { defaultCrypto, type CryptoProvider } from '../../log/index.js'
import { decodePam } from './pam-codec.js'
import { computeEntryId, computeRootHash, verifyRoot } from './pam-hash.js'
import { readPamArtifact } from './pam-schema.js'
import { PAM_COMPONENTS, entryPath, type PamArtifact } from './pam-types.js'
import { checkProvenance } from './provenance.js'

/** Reports stop listing problems after this many; `omitted` counts the rest. */
export const MAX_REPORTED_PROBLEMS = 100

export type PamPhase = 1 | 2 | 3

export const PAM_PHASE_NAMES: Readonly<Record<PamPhase, string>> = { 1: 'hashes', 2: 'dag', 3: 'signature' }

export interface PamProblem {
  readonly phase: PamPhase
  /** PAM spec Appendix C codes, plus PAM_DUPLICATE_ENTRY and PAM_NO_ROOT. */
  readonly code: string
  readonly reason: string
  /** JSON path of the offending entry or field. */
  readonly path: string
  /** The declared id of the offending entry. */
  readonly entry?: string
}

export type PamReport =
  | { readonly ok: true; readonly rootHash: string; readonly signer: string; readonly entryCount: number }
  | { readonly ok: false; readonly phase: PamPhase; readonly problems: readonly PamProblem[]; readonly omitted: number }

export interface VerifyOptions {
  /** Ed25519 public keys (64 lowercase hex) whose signature is accepted. */
  readonly trustedKeys: readonly string[]
  readonly crypto?: CryptoProvider
}

function readOptions(options: unknown): { trustedKeys: string[]; crypto: CryptoProvider } {
  const record = assertOptions(options, ['trustedKeys', 'crypto'], 'options')
  const keys = assertArray(record.trustedKeys, 'options.trustedKeys').map((key, i) => assertHex(key, `options.trustedKeys[${i}]`, 32))
  return { trustedKeys: keys, crypto: (record.crypto as CryptoProvider | undefined) ?? defaultCrypto() }
}

/**
 * Runs the three phases. Expected failures are in the report, never thrown.
 * @throws InputError when the options are malformed (trustedKeys not an array of hex keys) or
 *   the artifact's structure is (readPamArtifact's codes)
 */
export function verifyPam(artifact: PamArtifact, options: VerifyOptions): PamReport {
  const { trustedKeys, crypto } = readOptions(options)
  // An API edge: a value typed PamArtifact by a cast rather than by a decoder is checked here.
  readPamArtifact(artifact, true)
  const problems: PamProblem[] = []
  let entryCount = 0
  for (const component of PAM_COMPONENTS) {
    artifact.components[component].forEach((entry, i) => {
      entryCount++
      const computed = computeEntryId(entry)
      if (computed !== entry.id) {
        problems.push({ phase: 1, code: 'PAM_HASH_MISMATCH', reason: `the id does not match the content, which hashes to ${computed}`, path: entryPath(component, i), entry: entry.id })
      }
    })
  }
  for (const problem of checkProvenance(artifact.components)) problems.push({ phase: 2, ...problem })
  const rootHash = computeRootHash(artifact.components)
  if (rootHash !== artifact.root_hash) {
    problems.push({ phase: 3, code: 'PAM_HASH_MISMATCH', reason: `root_hash does not match the components, which hash to ${rootHash}`, path: '$.root_hash' })
  }
  const signer = trustedKeys.find((key) => verifyRoot(crypto, artifact.signature, artifact.root_hash, key))
  if (signer === undefined) {
    const reason = trustedKeys.length === 0 ? 'no trusted keys were given' : `the signature does not verify under any of the ${trustedKeys.length} trusted keys`
    problems.push({ phase: 3, code: 'PAM_INVALID_SIGNATURE', reason, path: '$.signature' })
  }
  if (problems.length === 0) return { ok: true, rootHash, signer: signer as string, entryCount }
  const phase = Math.min(...problems.map((problem) => problem.phase)) as PamPhase
  return { ok: false, phase, problems: problems.slice(0, MAX_REPORTED_PROBLEMS), omitted: Math.max(0, problems.length - MAX_REPORTED_PROBLEMS) }
}

/**
 * Decodes an artifact in either form and verifies it; what an import calls.
 * @throws InputError/LimitError from the decoders; VerifyError with the first problem's code,
 *   naming its phase and JSON path
 */
export function openPam(bytes: Uint8Array, options: VerifyOptions): PamArtifact {
  return assertVerified(decodePam(bytes), options)
}

/**
 * Verifies an artifact and returns it, or throws.
 * @throws VerifyError PAM_HASH_MISMATCH, PAM_DUPLICATE_ENTRY, PAM_DANGLING_REFERENCE,
 *   PAM_PROVENANCE_CYCLE, PAM_NO_ROOT, PAM_INVALID_SIGNATURE (the first problem of the first
 *   failing phase)
 */
export function assertVerified(artifact: PamArtifact, options: VerifyOptions): PamArtifact {
  const report = verifyPam(artifact, options)
  if (report.ok) return artifact
  const first = report.problems.find((problem) => problem.phase === report.phase) as PamProblem
  const more = report.problems.length + report.omitted - 1
  throw new VerifyError(
    first.code,
    `phase ${report.phase} (${PAM_PHASE_NAMES[report.phase]}): ${first.reason}${more > 0 ? ` (and ${more} more problem${more === 1 ? '' : 's'})` : ''}`,
    { path: first.path, ...(first.entry === undefined ? {} : { key: first.entry }) },
  )
}

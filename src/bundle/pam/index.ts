/**
 * PAM artifacts (seed 000, PAM spec v1.0, docs/memory-model.md §2): the artifact model and its
 * `.pam` / `.pam.cbor` encodings, content ids, the provenance DAG, the three verification
 * phases, selective disclosure, and the mapping to and from Cairn records. Pure: no store, no
 * engine; an importer verifies (`openPam`), maps (`recordsFromPam`) and writes; an exporter
 * reads records and calls `pamFromRecords`.
 */
export {
  PAM_COMPONENTS, PAM_VERSION, PAM_SCHEMA_VERSION, PAM_ENTRY_VERSION, PAM_MAGIC, MAX_PAM_BYTES, MAX_COMPONENT_ENTRIES, MAX_PARENT_IDS,
  type PamArtifact, type PamEntry, type PamComponents, type PamComponentName, type PamSourceAgent, type PamRecord, type JsonObject,
} from './pam-types.js'
export { computeEntryId, computeRootHash, rootSignable } from './pam-hash.js'
export { readPamArtifact } from './pam-schema.js'
export { encodePamJson, encodePamCbor, decodePamJson, decodePamCbor, decodePam } from './pam-codec.js'
export { encodeCbor, MAX_CBOR_DEPTH } from './cbor-encode.js'
export { decodeCbor } from './cbor-decode.js'
export { checkProvenance, type ProvenanceProblem } from './provenance.js'
export {
  verifyPam, openPam, assertVerified, MAX_REPORTED_PROBLEMS, PAM_PHASE_NAMES,
  type PamReport, type PamProblem, type PamPhase, type VerifyOptions,
} from './pam-verify.js'
export { createPamEntry, signPam, type SignPamInput } from './pam-sign.js'
export { disclose, checkDisclosure, type DiscloseOptions } from './disclose.js'
export { recordsFromPam, artifactIdsOf, DEFAULT_WORKING_TTL_MS, type PamImport, type PamImportOptions, type PamSupersession } from './pam-import.js'
export { pamFromRecords, type PamExport, type PamExportOptions, type PamSkipped } from './pam-export.js'

/**
 * The Portable Memory `.mem` codec: bundle content to bytes on disk and back, byte-exact with
 * the reference implementations (../shared/specs/portable-memory.md). Pure: it knows nothing of
 * the engine; `Memory.export`/`import` map records to and from this content.
 *
 * Files here import `projection/kinds.js` rather than `projection/index.js` (STYLE.md: import a
 * folder through its index): the kind table alone, without the projection engine and the
 * Automerge runtime it loads, which a pure codec does not need.
 */
export { writeMemBundle, writeBuiltBundle } from './write-bundle.js'
export { readMemBundle, readMemBundleRecordFiles, validateAndReadMemBundle, validateMemBundle } from './read-bundle.js'
export { recordRowBatches, type RecordRow } from './decode-streams.js'
export { SIGNATURE_REMOVED } from './inspect-bundle.js'
export { encodeMemBundle, buildMemBundle, MemBundleBuilder, type EncodedBundle, type BuiltBundle } from './encode-bundle.js'
export { decodeRecord, decodeTombstone, decodeAuditRow, TOMBSTONE_OPS, type DecodedRow } from './record-codec.js'
export { decodeManifest, checksumsText, formatMajor } from './manifest.js'
export {
  signatureToken, manifestSignatureBytes, checkSignatureToken, signTombstone, verifyTombstone, SIGNATURE_SCHEME,
  type TokenCheck,
} from './signature.js'
export {
  MEM_FORMAT_VERSION, MAX_FILE_BYTES, MAX_LINE_BYTES, MANIFEST_FILE, SIGNATURE_FILE, CHECKSUMS_FILE, TOMBSTONES_FILE,
  AUDIT_LOG_FILE, PROVENANCE_EDGES_FILE, BASE_CAPABILITIES, isSafeBundlePath, isPassthroughKindName, kindFilePath,
  isPassthroughLine, passthroughLineFault, type PassthroughLineFault,
} from './layout.js'
export { DEFAULT_SCHEMA_VERSION } from './options.js'
export { readBundleFile } from './bundle-files.js'
export type {
  JsonObject, MemBundleContent, MemManifest, MemFileEntry, MemSigner, MemLimits, MemProblem, ConformanceLevel, ExportMode,
  WriteOptions, ReadOptions, ReadResult, RecordFilesReadResult, MemRecordFile, WriteResult, ValidationReport, ProgressCallback,
} from './types.js'

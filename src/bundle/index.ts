/**
 * Portable bundles: memory in and out of a replica as Portable Memory `.mem` directories, native
 * log snapshots, PAM artifacts, and other systems' exports through adapters. `Memory.export` and
 * `Memory.import` call `exportMemory`/`importMemory`; the codecs below them are pure.
 */
export {
  exportMemory, importMemory, detectBundleFormat, BUNDLE_FORMATS,
  type BundleFormat, type ExportOptions, type ExportResult, type ImportOptions, type ImportReport,
} from './bundle-io.js'
export { exportMem, CAIRN_GENERATOR, type MemExportOptions, type MemExportResult, type MemExportSkipped } from './mem-export.js'
export { importMem, readMemImport, type ImportPhase, type MemImportOptions, type MemImportPlan, type MemImportReport } from './mem-import.js'
export { exportPam, importPam, type PamExportOptions, type PamExportResult, type PamImportOptions, type PamImportReport } from './pam-io.js'
export { importFromSource, type SourceImportOptions, type SourceImportReport } from './source-import.js'
export { mergeRecords, MERGE_BATCH, type MergeReport, type MergeOptions } from './merge-records.js'
export { auditRows } from './audit-trail.js'
export { toPortable } from './portable-records.js'
export { exportLogSnapshot, readLogSnapshot, verifyLogSnapshot, SNAPSHOT_FORMAT, type SnapshotManifest } from './log-snapshot.js'
export {
  readMemBundle, validateMemBundle, writeMemBundle, encodeMemBundle, MEM_FORMAT_VERSION,
  type MemBundleContent, type MemManifest, type MemProblem, type ValidationReport, type ReadResult, type WriteResult,
  type ConformanceLevel, type ExportMode, type ProgressCallback,
} from './mem/index.js'
export {
  decodePam, encodePamJson, encodePamCbor, verifyPam, disclose, checkDisclosure, PAM_MAGIC, MAX_PAM_BYTES, PAM_PHASE_NAMES, PAM_COMPONENTS,
  type PamArtifact, type PamReport, type PamProblem, type PamSkipped, type PamComponents, type PamComponentName, type PamEntry, type PamRecord, type PamSourceAgent,
} from './pam/index.js'
export { SOURCE_NAMES, ADAPTERS, detectSource, type SourceName, type AdapterResult, type AdapterWarning } from './adapters/index.js'

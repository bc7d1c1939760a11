/**
 * Cairn: a local-first memory engine for AI agents. The package root re-exports the public API
 * of each part.
 */
export * from './log/index.js'
export {
  CairnError, InputError, VerifyError, ProtocolError, StorageError, AuthError, LimitError, isCairnError,
  type ErrorLocation,
} from './errors.js'
export * from './memory/index.js'
export {
  RECORD_KINDS, isRecordKind, kindSpec, type RecordKind, type KindSpec, type FieldSpec, type RecordView, type RecordFilter,
  type TagFilter, type RecordChange, type ChangeAction, type ConflictEntry, type PatchInput, type MemoryRecord, type RecordInput, type FieldValue,
  type ProjectionFeatures,
} from './projection/index.js'
export { CLAIM_CLASSES, type ClaimClass } from './crdt/index.js'
export * from './sync/index.js'
export * from './auth/index.js'
export * from './bundle/index.js'

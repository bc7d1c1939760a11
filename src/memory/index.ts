/** The public engine API: Memory, and the seed-004 memory-store interface on top of it. */
export { Memory, type MemoryOptions, type Tombstone } from './memory.js'
export type * from './memory-types.js'
export type { DerivedBlock } from './forget-plan.js'
export { CairnMemoryStore, type CairnMemoryStoreOptions } from './cairn-memory-store.js'
export {
  DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, MAX_NAME_LENGTH,
  type MemoryStore, type ConversationContext, type ConversationMessage, type ConversationSummary, type ListOptions, type JsonObject,
} from './memory-store.js'
export { buildCreateEntry, entryBodySize, oversizedRecordRefusal, redactionSkeleton, refuseEndBeforeStart } from './record-entries.js'
export { assertCreateWritable } from './create-split.js'
export type { WithheldWrite, WithheldReport } from './withheld-writes.js'
export type { ProjectionCheck, ProjectionCheckOptions, ProjectionDifference } from './projection-check.js'

/** The public engine API: Memory, and the seed-004 memory-store interface on top of it. */
export { Memory, type MemoryOptions, type RememberInput, type QueryInput, type FilterInput, type Tombstone, type HistoryItem, type MemoryChange } from './memory.js'
export type { DerivedBlock } from './forget-plan.js'

/** Merge semantics: registers, add-wins sets, collaborative text, supersession, record state. */
export { compareStamps, stampSeenBy, type Stamp } from './stamp.js'
export { writeRegister, type Register } from './register.js'
export { addToSet, removeFromSet, setValues, type AddWinsSet, type Dot } from './add-wins-set.js'
export { baseTextDocument, lastTextChangeTime, textOf, applyTextChanges, applyAuthoredTextChanges, isAuthoredBy, editText, spliceText, markText } from './collaborative-text.js'
export {
  resolveSupersessions, concurrentSupersessions, CLAIM_CLASSES, RECENCY_WINDOW_MS, CONFIDENCE_MARGIN,
  type Supersession, type SupersessionOutcome, type ClaimClass,
} from './supersession.js'
export {
  applyRecordOperation, emptyRecordState, newTombstoneWins, INFERRED_STAMP,
  type RecordState, type RecordOperation, type OperationContext, type OperationResult, type MergeClass, type Tombstone,
} from './record-state.js'

/**
 * The named option and result types of the Memory API, so an app can write `SearchHit` rather
 * than `Awaited<ReturnType<Memory['search']>>[number]`.
 */
import type { ClaimClass } from '../crdt/index.js'
import type { MemoryRecord, PatchInput, RecordChange, RecordFilter, RecordInput, RecordKind, TagFilter } from '../projection/index.js'

/** The input of `remember`: one record of any kind (see `RecordInput`). */
export type RememberInput = RecordInput

/** A recorded time: a Date, ms since the epoch, or an RFC 3339 string. */
export type TimeInput = Date | number | string

/** Query filters; `tags` may be a list (all of them) or `{ any, all, none }`. */
export type FilterInput = Omit<RecordFilter, 'tags'> & { readonly tags?: TagFilter | readonly string[] }

export interface QueryInput extends FilterInput {
  /** Recorded time: the records as this replica showed them then. */
  readonly asOf?: TimeInput
  /** Records per page, 1 to 1,000 (default 50). */
  readonly limit?: number
  /** The `cursor` of the previous page. */
  readonly cursor?: string
}

/** One page of `query`. `cursor` is absent on the last page, full or not (memory-model.md §1.7 has the one exception). */
export interface QueryPage {
  readonly records: MemoryRecord[]
  readonly cursor?: string
}

export interface SearchOptions extends FilterInput {
  /** Hits to return, 1 to 1,000 (default 10). */
  readonly limit?: number
}

/** One hit of `search`: the record and its BM25 score (higher is better). */
export interface SearchHit {
  readonly record: MemoryRecord
  readonly score: number
}

export interface GetOptions {
  /** Recorded time: the record as this replica showed it then. */
  readonly asOf?: TimeInput
}

/** Options of `forget` and `redact`. */
export interface ForgetOptions {
  /** Why, kept in the tombstone (never the forgotten content). */
  readonly reason?: string
}

export interface SupersedeOptions {
  /** When the replacement takes over (RFC 3339); by default now. */
  readonly validFrom?: string
  /** Where the replacement claim comes from, for the claim-class rule of conflicting supersedes. */
  readonly source?: ClaimClass
}

/** Options of `editText` and `appendText`. */
export interface TextEditOptions {
  /** The collaborative text field (default `content`). */
  readonly field?: string
}

/** One item of `updateMany`. */
export interface RecordUpdate {
  readonly id: string
  readonly changes: PatchInput
}

/** Where a record stands on this replica (see `Memory.status`). */
export type RecordStatus = 'absent' | 'visible' | 'redacted' | 'deleted'

/** One item of `lookup`: `view` unless deleted or absent; `kind` of a deleted record (its tombstone's). */
export interface LookupResult {
  readonly status: RecordStatus
  readonly view?: MemoryRecord
  readonly kind?: RecordKind
  /** With `LookupOptions.writeTimes`, beside a `view`. */
  readonly writeTimes?: WriteTimes
}

export interface RememberManyOptions {
  /**
   * When the records' source was made (ms since the epoch): an import's (Memory.rememberMany). One
   * time for all, or one per record (`undefined` for a record with none).
   */
  readonly madeAt?: number | readonly (number | undefined)[]
}

export interface LookupOptions {
  /**
   * Also tell when what each field holds was written (`WriteTimes`). With `{ from }` (ms since
   * the epoch), only whether each time is before `from` is sure: a write whose event is older is
   * given its event's time without reading the event (an import's source time may be earlier).
   * What an import needs, at a fraction of the reads.
   */
  readonly writeTimes?: boolean | { readonly from: number }
}

/**
 * When what a record holds was written: the wall-clock time (ms since the epoch) of the event
 * whose write each field holds, by whichever replica wrote it, or, for an import's write, when
 * its source was made (the event's `madeAt`, at most its own time). Last-writer-wins fields and
 * extension keys by their winning write (a written "unset" too); collaborative texts by their
 * latest change (Automerge keeps whole seconds; an import changes them at its source's time);
 * map fields per key. Sets and counters have no single write that wins, and are not listed.
 */
export interface WriteTimes {
  readonly fields: Readonly<Record<string, number>>
  readonly entries: Readonly<Record<string, Readonly<Record<string, number>>>>
}

export interface SubscribeOptions {
  /** Receives what a listener throws or rejects with; without it, that is thrown outside the write. */
  readonly onError?: (error: unknown) => void
}

export interface IngestDeferredOptions {
  /** A wall-clock time (ms since the epoch) by which the events must be stored; past it nothing is written (SLOW_FRAME). */
  readonly deadline?: number
  /** More events follow at once (a peer's catch-up). */
  readonly more?: boolean
}

export interface HistoryItem {
  readonly event: string
  readonly local: number
  readonly type: 'content' | 'tombstone'
  readonly op?: string
  readonly author: string
  readonly clock: { readonly wall: number; readonly logical: number }
  readonly recordedAt: number
  readonly bodyState: 'present' | 'erased' | 'absent'
}

export interface MemoryChange {
  readonly changes: readonly RecordChange[]
}

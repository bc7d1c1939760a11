/**
 * Encodings of what the projection stores. Merge states use msgpack with 64-bit integers as
 * bigint (Portable Memory integers are exact through UInt64); views are canonical JSON, the
 * same bytes the digest and exports use.
 */
import { Packr } from 'msgpackr'
import type { RecordState } from '../crdt/index.js'
import { StorageError } from '../errors.js'
import { canonicalJson, parseJson, type JsonValue } from '../log/index.js'
import type { RecordView } from './materialize.js'

const packr = new Packr({ useRecords: false, mapsAsObjects: true, useBigInt64: true, variableMapSize: true } as never)
// States share one stamp object among every field an event wrote; encoding shared references once
// makes a typical state ~3x smaller and ~2x faster to encode (measured on a created episode).
const statePackr = new Packr({ useRecords: false, mapsAsObjects: true, useBigInt64: true, variableMapSize: true, structuredClone: true } as never)
const encoder = new TextEncoder()
const decoder = new TextDecoder()

export function encodeState(state: RecordState): Uint8Array {
  return statePackr.pack(state)
}

export function decodeState(bytes: Uint8Array, key: string): RecordState {
  try {
    const value = statePackr.unpack(bytes) as RecordState
    if (typeof value?.id !== 'string' || typeof value.kind !== 'string') throw new Error('not a record state')
    return value
  } catch (error) {
    throw new StorageError('CORRUPT_STORE', `record state does not decode: ${(error as Error).message}`, { key }, { cause: error })
  }
}

export function encodeView(view: RecordView): Uint8Array {
  return encoder.encode(canonicalJson(view))
}

export function decodeView(bytes: Uint8Array): RecordView {
  return parseJson(decoder.decode(bytes)) as RecordView
}

export interface ProjectionMeta {
  /** The last log position (local seq) whose event is applied. */
  readonly cursor: number
  /** Event ids whose bodies must still be erased from the log (survives a crash mid-erase). */
  readonly erasing: readonly string[]
  /** Recorded time of the last applied event (the time index's running maximum). */
  readonly recordedAt: number
  /** Log position where the current run of equal recorded time began. */
  readonly runStart: number
  /** How many views are stored (records shown, redaction skeletons included); absent in stores from before it was kept. */
  readonly views?: number
  /** Records being withdrawn (Projection.withdrawRecords), until their replay is stored; `keep`: the author whose bodies stay. */
  readonly withdrawing?: { readonly ids: readonly string[]; readonly keep?: string }
  /** What the stored projection holds (PROJECTION_LAYOUT); absent before layouts were numbered (1). */
  readonly layout?: number
  /** Set while a rebuild is under way: the layout the store had before it (Projection.rebuild). */
  readonly rebuilding?: number
  /**
   * Records whose kind another kind's create won (ProjectionBatch.kindChanges), stored with the
   * batch that found it, until their replay is stored: a crash between the two resumes it on open.
   */
  readonly kindReplays?: readonly string[]
}

/**
 * The projection's stored layout. A store opened with an older one is rebuilt from the log.
 *   1  (unnumbered)
 *   2  successors (supersededBy candidates) and the ids an episode lists in
 *      `metadata.cairn_derived` are in the reference index (q:r)
 *   3  deletions found through a parent that no event names are listed (q:u); a layout-2
 *      store gains the list from its states when it opens (no rebuild)
 *   4  a patch that changes only unknown episode keys (ext) applies; before, it was read as
 *      empty and dropped. A `set` key naming a map field's key (`metadata.key`) is that key.
 *      A layout-3 store whose log holds such a patch is rebuilt when it opens; any other only
 *      records the new layout
 *   5  one id created as two kinds takes its earliest create's kind, whatever arrived first,
 *      and the other kind's operations are in its history as `o` (projection-batch.ts); a
 *      deletion or redaction takes the id whatever its kind. An `ext` key (or `unsetExt`) of a
 *      stored body that names a field of its kind is dropped. A layout-4 store whose log holds
 *      either is rebuilt when it opens; any other only records the new layout
 *   6  between two tombstones of one record, the line's `deletedAt` and id rank before the
 *      stamp (record-state's tombstoneBeats), and a text change that is not its event author's
 *      is refused (collaborative-text's applyAuthoredTextChanges); `__proto__` in a body's `ext`
 *      or `unsetExt` is dropped. A `memory.foreign` body whose kind or a line a `.mem` vendor
 *      file cannot hold (no file-name stem, a newline, a lone surrogate) is skipped; kept, it
 *      made every export throw. A deletion or redaction whose tombstone line is no `.mem`
 *      tombstone line for its op and record, or a redaction whose skeleton is no `.mem` line of
 *      its kind (nor the id alone), is skipped (tombstoneSkippedSinceLayout6). A store
 *      of an earlier layout whose log holds two tombstones reaching one record, such a change,
 *      such a key, such foreign lines or such a tombstone is rebuilt when it opens; any other
 *      only records the new layout
 *   7: a null in a create's `fields` shows as absent, as `remember` and a patch's `set` read it
 *      (materialize.ts; it was shown as null, which no `.mem` line holds). A store of an earlier
 *      layout whose log holds such a create is rebuilt when it opens.
 */
export const PROJECTION_LAYOUT = 7

export function encodeMeta(meta: ProjectionMeta): Uint8Array {
  return packr.pack(meta)
}

export function decodeMeta(bytes: Uint8Array | undefined): ProjectionMeta {
  if (!bytes) return { cursor: 0, erasing: [], recordedAt: 0, runStart: 0, views: 0, layout: PROJECTION_LAYOUT }
  const value = packr.unpack(bytes) as ProjectionMeta
  return {
    cursor: value.cursor, erasing: value.erasing ?? [], recordedAt: value.recordedAt ?? 0, runStart: value.runStart ?? 0,
    ...(value.views !== undefined ? { views: value.views } : {}),
    ...(value.withdrawing ? { withdrawing: value.withdrawing } : {}),
    ...(value.layout !== undefined ? { layout: value.layout } : {}),
    ...(value.rebuilding !== undefined ? { rebuilding: value.rebuilding } : {}),
    ...(value.kindReplays !== undefined && value.kindReplays.length > 0 ? { kindReplays: value.kindReplays } : {}),
  }
}

export function encodeJson(value: JsonValue): Uint8Array {
  return encoder.encode(canonicalJson(value))
}

export function decodeJson(bytes: Uint8Array): JsonValue {
  return parseJson(decoder.decode(bytes))
}

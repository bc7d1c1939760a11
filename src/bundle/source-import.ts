/**
 * Imports another system's export (mem0, ChatGPT, Claude, Letta…) through its adapter: the
 * adapter maps the source to complete Portable Memory records, and they merge like a bundle's
 * (merge-records.ts). Re-importing the same export writes nothing: adapters give stable ids,
 * the import's own `ingestionTime` is left out of the comparison, and so is any time the
 * adapter could only fill with "now" (a source time missing or unreadable): a record already
 * held keeps the time its first import gave it.
 *
 * Each record is dated by the latest time its source gives it (`sourceTimeOf`): a field written
 * here after it keeps its value, so importing the same export again after an edit does not
 * undo the edit, while an export in which the entry changed later writes over it.
 */
import type { Memory } from '../memory/index.js'
import { formatTimestamp, type RecordKind } from '../projection/index.js'
import { InputError } from '../errors.js'
import { hashId } from './adapters/import-context.js'
import { importSource, type AdapterWarning, type SourceName, type WholeDocument } from './adapters/index.js'
import type { JsonObject } from './mem/index.js'
import { mergeRecords, type MergeReport } from './merge-records.js'
import { futureTimeWarnings, sourceTimeOf } from './source-times.js'

export interface SourceImportOptions {
  /** The source; detected from the file names and contents when absent. */
  readonly from?: SourceName
  /** Who produced a transfer text (`chatgpt`, `claude`, `gemini`…). */
  readonly source?: string
  readonly onProgress?: (done: number, total: number) => void
}

export interface SourceImportReport extends MergeReport {
  readonly source: SourceName
  /** Chunks held here whose document is now shorter: emptied (see emptyStaleChunks). */
  readonly emptiedChunks: number
  readonly warnings: readonly AdapterWarning[]
}

/** Stale chunks are emptied in batches of this many updates. */
const EMPTY_BATCH = 1000

/** Why an update of a chunk looked up a moment ago can be refused: it was deleted or redacted since (a peer's sync). */
const GONE_SINCE = new Set(['FORGOTTEN', 'REDACTED', 'UNKNOWN_RECORD'])

/**
 * A document an adapter read whole has all its chunks in the import; chunks the adapter made
 * for it before that the import lacks (the document shrank) are emptied: their text becomes '',
 * so search no longer finds the old words, and their ids stay usable for when the document
 * grows again (a deletion would block an id forever, delete-wins). Only the adapter's own chunks
 * are touched: same resource, and the id its scheme gives their position. Chunks already empty
 * are left alone, so importing the same export again writes nothing; nothing is emptied under a
 * resource that is not shown here (deleted, redacted).
 */
async function emptyStaleChunks(memory: Memory, documents: readonly WholeDocument[], importedChunks: ReadonlySet<string>): Promise<number> {
  const resources = await memory.lookup(documents.map(({ resource }) => resource))
  const stale = new Set<string>()
  for (const [i, document] of documents.entries()) {
    if (resources[i]?.status !== 'visible') continue
    const referrers = await memory.referrers(document.resource)
    const held = await memory.lookup(referrers)
    referrers.forEach((id, j) => {
      const view = held[j]?.view
      if (importedChunks.has(id) || held[j]?.status !== 'visible' || view?.kind !== 'chunk' || view.resourceID !== document.resource || view.text === '') return
      const position = view.position
      if (typeof position === 'number' && id === hashId('chk_', ...document.chunkIdParts, String(position))) stale.add(id)
    })
  }
  const ids = [...stale]
  let emptied = 0
  for (let start = 0; start < ids.length; start += EMPTY_BATCH) {
    const batch = ids.slice(start, start + EMPTY_BATCH)
    try {
      await memory.updateMany(batch.map((id) => ({ id, changes: { set: { text: '' } } })))
      emptied += batch.length
    } catch (error) {
      if (!(error instanceof InputError && GONE_SINCE.has(error.code))) throw error
      // updateMany checks every id before it writes any: empty the others one by one.
      for (const id of batch) {
        try {
          await memory.update(id, { set: { text: '' } })
          emptied++
        } catch (single) {
          if (!(single instanceof InputError && GONE_SINCE.has(single.code))) throw single
        }
      }
    }
  }
  return emptied
}

/** @throws InputError / LimitError from reading and mapping the source, naming the file and line; nothing is written then */
export async function importFromSource(memory: Memory, path: string, options: SourceImportOptions = {}): Promise<SourceImportReport> {
  const nowMs = Date.now()
  const result = await importSource(path, {
    nowMs,
    ...(options.from !== undefined ? { from: options.from } : {}),
    ...(options.source !== undefined ? { source: options.source } : {}),
  })
  const records: Partial<Record<RecordKind, JsonObject[]>> = {}
  // Times the adapter took from the import, not the source: neither written over held values nor source times.
  const importTimes = new Set([formatTimestamp(nowMs), ...(result.importTimes ?? [])])
  const sourceTimes = new Map<string, number>()
  const undated = new Set(result.undated ?? [])
  for (const record of result.records) {
    (records[record.kind] ??= []).push(record.fields as JsonObject)
    const time = undated.has(record.id) ? undefined : sourceTimeOf(record.kind, record.fields, importTimes)
    if (time !== undefined) sourceTimes.set(record.id, time)
  }
  // Dated so, they stay newer than an edit made here until then (docs/design-decisions.md, Adapters).
  const warnings = [...result.warnings, ...futureTimeWarnings(sourceTimes, nowMs, path, 'a time without a zone, read as UTC?')]
  const merged = await mergeRecords(memory, records, {
    ignore: ['ingestionTime'],
    placeholders: [...importTimes],
    sourceTimes,
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  })
  const emptiedChunks = result.documents === undefined ? 0 : await emptyStaleChunks(memory, result.documents, new Set((records.chunk ?? []).map((chunk) => chunk.id as string)))
  return { ...merged, source: result.source, emptiedChunks, warnings }
}

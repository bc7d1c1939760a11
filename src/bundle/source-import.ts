/**
 * Imports another system's export (mem0, ChatGPT, Claude, Letta…) through its adapter: the
 * adapter maps the source to complete Portable Memory records, and they merge like a bundle's
 * (merge-records.ts). Re-importing the same export writes nothing: adapters give stable ids,
 * the import's own `ingestionTime` is left out of the comparison, and so is any time the
 * adapter could only fill with "now" (a source time missing or unreadable): a record already
 * held keeps the time its first import gave it.
 */
import type { Memory } from '../memory/index.js'
import { formatTimestamp, type RecordKind } from '../projection/index.js'
import { importSource, type AdapterWarning, type SourceName } from './adapters/index.js'
import type { JsonObject } from './mem/index.js'
import { mergeRecords, type MergeReport } from './merge-records.js'

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

/**
 * An adapter reads each document whole, so the chunks it gives a resource are all of that
 * resource's chunks. A chunk held here for one of its resources that the import lacks (the
 * document shrank since the last import) is emptied: its text becomes '', so search no longer
 * finds the old words, and its id stays usable for when the document grows again (a deletion
 * would block that id forever, delete-wins). Already empty, it is left alone, so importing the
 * same export again writes nothing.
 */
async function emptyStaleChunks(memory: Memory, records: Partial<Record<RecordKind, JsonObject[]>>): Promise<number> {
  const imported = new Set((records.chunk ?? []).map((chunk) => chunk.id))
  const candidates: { id: string; resource: string }[] = []
  for (const resource of records.resource ?? []) {
    const id = resource.id as string
    for (const referrer of await memory.referrers(id)) if (!imported.has(referrer)) candidates.push({ id: referrer, resource: id })
  }
  if (candidates.length === 0) return 0
  const held = await memory.lookup(candidates.map(({ id }) => id))
  const stale = candidates.filter(({ resource }, i) => {
    const view = held[i]?.view
    return held[i]?.status === 'visible' && view?.kind === 'chunk' && view.resourceID === resource && view.text !== ''
  })
  for (let start = 0; start < stale.length; start += EMPTY_BATCH) {
    await memory.updateMany(stale.slice(start, start + EMPTY_BATCH).map(({ id }) => ({ id, changes: { set: { text: '' } } })))
  }
  return stale.length
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
  for (const record of result.records) (records[record.kind] ??= []).push(record.fields as JsonObject)
  const merged = await mergeRecords(memory, records, {
    ignore: ['ingestionTime'],
    placeholder: formatTimestamp(nowMs),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  })
  const emptiedChunks = await emptyStaleChunks(memory, records)
  return { ...merged, source: result.source, emptiedChunks, warnings: result.warnings }
}

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
  readonly warnings: readonly AdapterWarning[]
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
  return { ...merged, source: result.source, warnings: result.warnings }
}

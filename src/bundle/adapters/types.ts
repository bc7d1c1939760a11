/**
 * The shapes every import adapter shares: what it reads (files or parsed JSON), the options that
 * make it deterministic (`nowMs`, `randomHex`, a `source` label), and what it returns (complete
 * Portable Memory records plus warnings).
 *
 * Invariant: an adapter is pure. It never touches a store or the file system (read-source.ts
 * does the reading), returns every record through `validateCreate`, and either returns a whole
 * result or throws; it never returns part of one.
 */
import type { ErrorLocation } from '../../errors.js'
import type { JsonValue } from '../../log/index.js'
import type { RecordKind } from '../../projection/index.js'

/** The sources `cairn import --from <source>` accepts. */
export const SOURCE_NAMES = [
  'mem0', 'openmemory', 'chatgpt', 'claude-export', 'claude-memory', 'transfer', 'engram', 'letta', 'mcp-memory', 'oams',
] as const

export type SourceName = (typeof SOURCE_NAMES)[number]

/** One file of a source: its path (used in metadata and error locations) and its bytes or text. */
export interface SourceFile {
  readonly path: string
  readonly content: string | Uint8Array
}

/**
 * What an adapter reads: the files of a source, or a value already parsed from JSON (`path`
 * then names it in errors). Text formats (transfer, Claude memory files, YAML) need files;
 * JSON formats take either.
 */
export type AdapterInput =
  | { readonly files: readonly SourceFile[] }
  | { readonly json: unknown; readonly path?: string }

export interface AdapterOptions {
  /** The import instant in ms: ingestion time, and the time of undated entries. Default: Date.now(). */
  readonly nowMs?: number
  /** Lowercase hex of `bytes` random bytes, for fallback ids. Default: node:crypto. */
  readonly randomHex?: (bytes: number) => string
  /** Who produced the source (transfer text: `chatgpt`, `claude`, `gemini`, …). */
  readonly source?: string
}

/** One complete Portable Memory record, as `validateCreate` returned it. */
export interface ImportedRecord {
  readonly kind: RecordKind
  readonly id: string
  readonly fields: Record<string, JsonValue>
}

/** Something unusual the adapter did not stop for: a skipped entry, a repaired id, a dropped branch. */
export interface AdapterWarning {
  readonly code: string
  readonly message: string
  readonly where: ErrorLocation
}

/**
 * A document the adapter read whole and cut into chunks: its resource, and how its chunk ids are
 * made (`hashId('chk_', ...chunkIdParts, String(position))`), so the import can find the chunks
 * it made earlier that the document no longer has. One per resource.
 */
export interface WholeDocument {
  readonly resource: string
  readonly chunkIdParts: readonly string[]
}

export interface AdapterResult {
  readonly source: SourceName
  readonly records: readonly ImportedRecord[]
  readonly warnings: readonly AdapterWarning[]
  /**
   * Entries of the source left out (each has its warning): none when absent. No record and some
   * skipped means nothing in the source read as this system's entries (NOTHING_RECOGNIZED).
   */
  readonly skipped?: number
  /**
   * Timestamps the adapter computed from the time of the import, not from the source (an OAMS
   * envelope's expiry, now + ttl): in a record already held they are left as they are, so
   * importing the same export later changes nothing. Absent when none.
   */
  readonly importTimes?: readonly string[]
  /**
   * Ids of records whose times the source does not give for the entry itself (a Claude project
   * document dated by its project): the import does not date them by their source (sourceTimeOf).
   * Absent when none.
   */
  readonly undated?: readonly string[]
  /** Documents given whole (Claude project documents); absent when the source has none. */
  readonly documents?: readonly WholeDocument[]
}

export interface Adapter {
  readonly name: SourceName
  readonly description: string
  /** True when `text` (the start of the file at `path`) looks like this source. */
  detect?(path: string, text: string): boolean
  /**
   * Maps the source to records.
   * @throws InputError on malformed input (naming the file and line, or the JSON path); LimitError
   *   when a line or a file is larger than the adapters accept
   */
  parse(input: AdapterInput, options?: AdapterOptions): AdapterResult
}

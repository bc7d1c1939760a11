/**
 * Decodes the data files of a bundle into content (spec notes §3, §7, §8): known-kind streams,
 * tombstones, the audit log and Evidence Pack edges strictly, row by row; vendor kinds as raw
 * lines. Every refusal names the file and the line.
 *
 * Invariant: known rows are decoded by record-codec.ts exactly as the writer decodes them, so
 * what is read writes back to the same lines. Blank lines carry no row and are skipped (the
 * reference strips them); vendor lines are kept byte for byte, untrimmed, empty ones dropped.
 */
import { parseJson } from '../../log/index.js'
import type { RecordKind } from '../../projection/kinds.js'
import { forEachJsonlLine } from './jsonl.js'
import { COUNT_KEY_AUDIT, COUNT_KEY_PROVENANCE_EDGE, COUNT_KEY_TOMBSTONE, type FileRole } from './layout.js'
import type { DroppedKeys, ProblemList } from './problems.js'
import { decodeAuditRow, decodeParsedRecord, decodeTombstone, type DecodedRow } from './record-codec.js'
import type { JsonObject, MemBundleContent, MemRecordFile } from './types.js'

/** Lines between progress reports while decoding. */
const PROGRESS_EVERY_LINES = 4096

export interface StreamContext {
  readonly problems: ProblemList
  readonly dropped: DroppedKeys
  readonly maxLineBytes: number
  /** Called with the byte offset reached in the current file. */
  readonly onOffset?: (offset: number) => void
}

/**
 * Content as it is decoded, file by file, with the row count of each count key. With
 * `keepRecordRows` false, known-kind rows are decoded and checked but not kept: their files'
 * bytes are (`recordFiles`), to be decoded again batch by batch (recordRowBatches).
 */
export class ContentBuilder {
  readonly records: Partial<Record<RecordKind, JsonObject[]>> = {}
  readonly recordFiles: MemRecordFile[] = []
  readonly passthrough: Record<string, string[]> = {}
  tombstones: JsonObject[] = []
  auditLog: JsonObject[] = []
  provenanceEdges: JsonObject[] | undefined
  readonly counts = new Map<string, number>()

  constructor(readonly keepRecordRows = true) {}

  content(): MemBundleContent {
    return {
      records: this.records,
      passthrough: this.passthrough,
      tombstones: this.tombstones,
      auditLog: this.auditLog,
      ...(this.provenanceEdges === undefined ? {} : { provenanceEdges: this.provenanceEdges }),
    }
  }
}

function reportProgress(line: number, end: number, context: StreamContext): void {
  if (context.onOffset !== undefined && line % PROGRESS_EVERY_LINES === 0) context.onOffset(end)
}

/** Decodes every row of a file, handing each on; a refused row is a problem naming its line. */
function visitRows(bytes: Uint8Array, file: string, context: StreamContext, decode: (value: unknown) => DecodedRow, visit: (row: JsonObject) => void): void {
  forEachJsonlLine(bytes, file, context.maxLineBytes, context.problems, (text, line, end) => {
    reportProgress(line, end, context)
    if (isBlank(text)) return
    try {
      const { record, dropped } = decode(parseJson(text))
      if (dropped.length > 0) context.dropped.note(file, dropped, line)
      visit(record)
    } catch (error) {
      context.problems.addError(error, file, line)
    }
  })
}

function decodeRows(bytes: Uint8Array, file: string, context: StreamContext, decode: (value: unknown) => DecodedRow): JsonObject[] {
  const rows: JsonObject[] = []
  visitRows(bytes, file, context, decode, (row) => rows.push(row))
  return rows
}

/** A blank line carries no row (the reference strips them). */
const isBlank = (text: string): boolean => text.trim() === ''

/** A row decoded again from a checked record file, with its 1-based line. */
export interface RecordRow {
  readonly record: JsonObject
  readonly line: number
}

/**
 * The rows of a record file that decoded without a problem (ContentBuilder kept its bytes), in
 * batches of at most `size`, decoded again as they are taken: the same rows the first decoding
 * gave, since the bytes and the decoder are the same.
 * @throws Error when a row no longer decodes (the bytes were not the checked ones)
 */
export function* recordRowBatches(source: MemRecordFile, size: number): Generator<RecordRow[]> {
  const bytes = Buffer.from(source.bytes.buffer, source.bytes.byteOffset, source.bytes.byteLength)
  let batch: RecordRow[] = []
  let start = 0
  let line = 1
  // The file was checked: every line ends with a newline and is UTF-8 within the line cap.
  while (start < bytes.length) {
    const end = bytes.indexOf(0x0a, start)
    if (end === -1) throw new Error(`${source.file}: the checked bytes end without a newline`)
    const text = bytes.toString('utf8', start, end)
    if (!isBlank(text)) {
      batch.push({ record: decodeParsedRecord(source.kind, parseJson(text)).record, line })
      if (batch.length === size) {
        yield batch
        batch = []
      }
    }
    start = end + 1
    line++
  }
  if (batch.length > 0) yield batch
}

/** Decodes one listed file by its role into `into`; problems and dropped keys go to the context. */
export function decodeBundleFile(role: FileRole, bytes: Uint8Array, file: string, context: StreamContext, into: ContentBuilder): void {
  switch (role.role) {
    case 'other':
      context.problems.warn('IGNORED_FILE', 'listed and checked, but not a stream this reader carries', file)
      break
    case 'bad-kind':
      context.problems.add('BAD_KIND_NAME', `${JSON.stringify(role.kind.slice(0, 64))} cannot be a record kind name`, file)
      break
    case 'records': {
      const kind = role.kind
      const decode = (value: unknown): DecodedRow => decodeParsedRecord(kind, value)
      if (into.keepRecordRows) {
        const rows = decodeRows(bytes, file, context, decode)
        if (rows.length > 0) into.records[kind] = rows
        into.counts.set(kind, rows.length)
        break
      }
      let rows = 0
      visitRows(bytes, file, context, decode, () => rows++)
      if (rows > 0) into.recordFiles.push({ kind, file, bytes, rows })
      into.counts.set(kind, rows)
      break
    }
    case 'passthrough': {
      const kept: string[] = []
      forEachJsonlLine(bytes, file, context.maxLineBytes, context.problems, (text, line, end) => {
        reportProgress(line, end, context)
        if (text !== '') kept.push(text)
      })
      // Defined, not assigned: a vendor kind (a file name) may be `__proto__`, which assigning
      // makes the object's prototype, and the lines vanish from the import.
      if (kept.length > 0) Object.defineProperty(into.passthrough, role.kind, { value: kept, enumerable: true, writable: true, configurable: true })
      into.counts.set(role.kind, kept.length)
      break
    }
    case 'tombstones':
      into.tombstones = decodeRows(bytes, file, context, (value) => decodeTombstone(value))
      into.counts.set(COUNT_KEY_TOMBSTONE, into.tombstones.length)
      break
    case 'audit-log':
      into.auditLog = decodeRows(bytes, file, context, (value) => decodeAuditRow(value))
      into.counts.set(COUNT_KEY_AUDIT, into.auditLog.length)
      break
    case 'provenance-edges': {
      const edges = decodeRows(bytes, file, context, (value) => decodeParsedRecord('edge', value))
      if (edges.length > 0) into.provenanceEdges = edges
      into.counts.set(COUNT_KEY_PROVENANCE_EDGE, edges.length)
      break
    }
  }
}

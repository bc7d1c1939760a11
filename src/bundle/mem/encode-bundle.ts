/**
 * Encodes bundle content into the exact bytes of a `.mem` bundle (spec notes §1–§5): the data
 * files, CHECKSUMS, the 1.1 manifest and, with a signer, `manifest.sig`. Whole content at once
 * (`encodeMemBundle`), or row by row (`MemBundleBuilder`, for exports too large to hold as rows).
 * Knows nothing of the file system; write-bundle.ts puts the bytes on disk.
 *
 * Invariant: every row is decoded exactly as a reader would decode it before it is written (so
 * a written bundle always reads back), then written as its canonical line. The one exception is
 * `canonicalRecord`, a line the caller already holds in that form (export, view-lines.ts). Line order:
 * episodes by id, every other kind and the audit files by the whole line in code-point order,
 * vendor lines in their given order. A file exists only when it has lines; `counts` holds only
 * what was written. Nothing is returned unless all of it encoded.
 */
import { assertArray, assertKnownKeys, assertObject } from '../../assert.js'
import { createHash } from 'node:crypto'
import { InputError, LimitError } from '../../errors.js'
import { canonicalJson, compareCodePoints, defaultCrypto } from '../../log/index.js'
import { isRecordKind, parseTimestamp, RECORD_KINDS, type RecordKind } from '../../projection/kinds.js'
import {
  ALWAYS_CREATED_DIRECTORIES, AUDIT_LOG_FILE, BASE_CAPABILITIES, COUNT_KEY_AUDIT, COUNT_KEY_PROVENANCE_EDGE,
  COUNT_KEY_TOMBSTONE, isPassthroughKindName, kindFilePath, MEM_FORMAT_VERSION, passthroughLineFault, PROVENANCE_EDGES_FILE,
  SIGNED_CAPABILITY, TOMBSTONES_FILE,
} from './layout.js'
import { checksumsText, sortFiles } from './manifest.js'
import { readWriteOptions, type ResolvedWriteOptions } from './options.js'
import { DroppedKeys, ProblemList } from './problems.js'
import { decodeAuditRow, decodeRecord, decodeTombstone, type DecodedRow } from './record-codec.js'
import { manifestSignatureBytes } from './signature.js'
import { canonicalTimestampMs } from './timestamp-check.js'
import type { JsonObject, MemBundleContent, MemFileEntry, MemManifest, MemProblem, WriteOptions } from './types.js'

/** A bundle as bytes, ready to be written. */
export interface EncodedBundle {
  readonly manifest: MemManifest
  readonly manifestBytes: Uint8Array
  readonly checksumsBytes: Uint8Array
  /** `manifest.sig`, when a signer was given. */
  readonly signatureBytes?: Uint8Array
  /** Data files by bundle-relative path, in path order. */
  readonly files: ReadonlyMap<string, Uint8Array>
  /** Directories to create (even empty ones: `items/` and `audit/`). */
  readonly directories: readonly string[]
  readonly warnings: readonly MemProblem[]
}

/** A bundle whose data files are lists of chunks, each a run of whole lines: written chunk by chunk. */
export interface BuiltBundle extends Omit<EncodedBundle, 'files'> {
  /** Data files by bundle-relative path, in path order: their bytes, in chunks. */
  readonly files: ReadonlyMap<string, readonly Uint8Array[]>
}

/** Lines are gathered into chunks of about this size (hashed and written one chunk at a time). */
const CHUNK_BYTES = 1 << 20

/** A file's lines as chunks of whole lines, each line followed by `\n`. */
function chunked(lines: readonly Uint8Array[]): Buffer[] {
  const chunks: Buffer[] = []
  let start = 0
  while (start < lines.length) {
    let size = 0
    let end = start
    while (end < lines.length && (end === start || size + (lines[end] as Uint8Array).length + 1 <= CHUNK_BYTES)) size += (lines[end++] as Uint8Array).length + 1
    const chunk = Buffer.allocUnsafe(size)
    let offset = 0
    for (let i = start; i < end; i++) {
      const line = lines[i] as Uint8Array
      chunk.set(line, offset)
      offset += line.length
      chunk[offset++] = 0x0a
    }
    chunks.push(chunk)
    start = end
  }
  return chunks
}

/** Progress is reported after this many rows. */
const PROGRESS_EVERY_ROWS = 4096
const textEncoder = new TextEncoder()

/** One data file being built: its lines, with the id episodes are ordered by. */
interface Stream {
  readonly countKey: string
  readonly lines: { bytes: Buffer; id: string }[]
}

/**
 * Builds a bundle one row at a time (spec notes §1–§5). Each row is decoded exactly as a reader
 * would decode it and kept only as its canonical line, so a caller streaming a large store into
 * it holds one encoded line per row (outside the JavaScript heap), never the rows themselves.
 * `finish` orders the lines and computes CHECKSUMS, the manifest and the signature. Rows are
 * checked as they come (the error names the row); nothing is written here.
 */
export class MemBundleBuilder {
  private readonly options: ResolvedWriteOptions
  private readonly streams = new Map<string, Stream>()
  private readonly passthroughFiles = new Map<string, { countKey: string; lines: Buffer[] }>()
  private readonly dropped = new DroppedKeys()
  private readonly facts = new RecordFacts()
  private readonly counters: Record<string, number> = {}
  private done = 0

  /** @param total rows expected, for progress (a caller that cannot count them ahead gives an estimate) */
  constructor(options: WriteOptions, private total = 0) {
    this.options = readWriteOptions(options)
  }

  /** A Portable Memory record of `kind`; `label` names it in errors (default `records.<kind>[n]`). */
  record(kind: RecordKind, row: unknown, label?: string): void {
    const observe = kind === 'episode' ? (record: JsonObject) => this.facts.episode(record) : kind === 'context' ? (record: JsonObject) => this.facts.context(record) : undefined
    this.row(kindFilePath(kind), kind, row, label ?? `records.${kind}[${this.counters[kind] ?? 0}]`, (value, where) => decodeRecord(kind, value, where), observe)
  }

  /**
   * A record's line already in the form `record` would write (export cuts it from the stored
   * view, view-lines.ts, which a property holds equal to `record`'s line): kept as given, only
   * its size is checked. `facts`: the fields the manifest reads (an episode's eventTime and
   * contextID, a context's id).
   * @throws LimitError LINE_TOO_LONG
   */
  canonicalRecord(kind: RecordKind, line: Buffer, facts: { readonly id: string; readonly eventTime?: string; readonly contextID?: string }): void {
    if (kind === 'episode') this.facts.episode(facts as JsonObject)
    else if (kind === 'context') this.facts.context(facts as JsonObject)
    this.keep(kindFilePath(kind), kind, line, kind === 'episode' ? facts.id : '')
  }

  /**
   * Lines of an unknown (vendor) kind, kept byte for byte in the order given (empty ones dropped).
   * @throws InputError BAD_KIND_NAME, WRONG_TYPE, BAD_LINE, BAD_STRING naming the line
   */
  passthrough(kind: string, lines: readonly unknown[]): void {
    const field = `content.passthrough.${String(kind).slice(0, 64)}`
    if (typeof kind !== 'string' || !isPassthroughKindName(kind)) throw new InputError('BAD_KIND_NAME', 'a vendor kind is a safe file-name stem, not a Portable Memory kind or a reserved count key', { field })
    const file = kindFilePath(kind)
    const entry = this.passthroughFiles.get(file) ?? { countKey: kind, lines: [] }
    this.passthroughFiles.set(file, entry)
    lines.forEach((line, i) => {
      if (typeof line !== 'string') throw new InputError('WRONG_TYPE', 'a passthrough line is a string', { field: `${field}[${i}]` })
      const fault = passthroughLineFault(line)
      if (fault !== undefined) throw new InputError(fault.code, fault.message, { field: `${field}[${i}]` })
      if (line !== '') entry.lines.push(this.checkedLine(Buffer.from(line, 'utf8'), file, entry.lines.length + 1))
    })
    this.step(lines.length)
  }

  tombstone(row: unknown, label = `tombstones[${this.counters[COUNT_KEY_TOMBSTONE] ?? 0}]`): void {
    this.row(TOMBSTONES_FILE, COUNT_KEY_TOMBSTONE, row, label, decodeTombstone)
  }

  auditRow(row: unknown, label = `auditLog[${this.counters[COUNT_KEY_AUDIT] ?? 0}]`): void {
    this.row(AUDIT_LOG_FILE, COUNT_KEY_AUDIT, row, label, decodeAuditRow)
  }

  /** An Evidence Pack edge (`provenance/edges.jsonl`). */
  provenanceEdge(row: unknown, label = `provenanceEdges[${this.counters[COUNT_KEY_PROVENANCE_EDGE] ?? 0}]`): void {
    this.row(PROVENANCE_EDGES_FILE, COUNT_KEY_PROVENANCE_EDGE, row, label, (value, where) => decodeRecord('edge', value, where))
  }

  private row(file: string, countKey: string, value: unknown, label: string, decode: (row: unknown, label: string) => DecodedRow, observe?: (record: JsonObject) => void): void {
    const { record, dropped } = decode(value, label)
    if (dropped.length > 0) this.dropped.note(file, dropped)
    observe?.(record)
    // Encoded at once: the serializer's string is garbage before the next row; UTF-8 byte order
    // is code-point order (§3), so lines sort as bytes.
    this.keep(file, countKey, Buffer.from(canonicalJson(record), 'utf8'), countKey === 'episode' ? (record.id as string) : '')
  }

  /** Adds one encoded line to its file (`id`: what episodes are ordered by). */
  private keep(file: string, countKey: string, line: Buffer, id: string): void {
    let stream = this.streams.get(file)
    if (stream === undefined) this.streams.set(file, (stream = { countKey, lines: [] }))
    const bytes = this.checkedLine(line, file, stream.lines.length + 1)
    stream.lines.push({ bytes, id })
    this.counters[countKey] = (this.counters[countKey] ?? 0) + 1
    this.step()
  }

  private checkedLine(bytes: Buffer, file: string, line?: number): Buffer {
    const { maxLineBytes } = this.options.limits
    if (bytes.length > maxLineBytes) {
      throw new LimitError('LINE_TOO_LONG', `a line of ${bytes.length} bytes is over the ${maxLineBytes}-byte limit`, { file, ...(line !== undefined ? { line } : {}) })
    }
    return bytes
  }

  private step(count = 1): void {
    const before = this.done
    this.done += count
    if (this.done > this.total) this.total = this.done
    if (this.options.onProgress !== undefined && Math.floor(before / PROGRESS_EVERY_ROWS) !== Math.floor(this.done / PROGRESS_EVERY_ROWS)) {
      this.options.onProgress(this.done, this.total)
    }
  }

  /**
   * Orders every file's lines (§3: episodes by id, every other stream by its whole line, vendor
   * lines as given), then CHECKSUMS, the manifest and `manifest.sig`. A file exists only when it
   * has lines; `counts` holds only what was written.
   * @throws LimitError FILE_TOO_LARGE
   */
  finish(): BuiltBundle {
    const crypto = defaultCrypto()
    const { maxFileBytes } = this.options.limits
    const files = new Map<string, readonly Uint8Array[]>()
    const counts: Record<string, number> = {}
    const unsorted: MemFileEntry[] = []
    const add = (file: string, countKey: string, lines: readonly Uint8Array[]): void => {
      if (lines.length === 0) return
      let total = 0
      for (const line of lines) total += line.length + 1
      if (total > maxFileBytes) throw new LimitError('FILE_TOO_LARGE', `the file is over the ${maxFileBytes}-byte limit`, { file })
      const chunks = chunked(lines)
      const hash = createHash('sha256')
      for (const chunk of chunks) hash.update(chunk)
      files.set(file, chunks)
      unsorted.push({ bytes: total, path: file, sha256: hash.digest('hex') })
      counts[countKey] = lines.length
    }
    const ordered = (file: string): void => {
      const stream = this.streams.get(file)
      if (stream === undefined) return
      stream.lines.sort((a, b) => compareCodePoints(a.id, b.id) || Buffer.compare(a.bytes, b.bytes))
      add(file, stream.countKey, stream.lines.map((line) => line.bytes))
      // The chunks hold the bytes now: the lines can go.
      this.streams.delete(file)
    }
    for (const kind of RECORD_KINDS) ordered(kindFilePath(kind))
    for (const [file, { countKey, lines }] of this.passthroughFiles) add(file, countKey, lines)
    for (const file of [TOMBSTONES_FILE, AUDIT_LOG_FILE, PROVENANCE_EDGES_FILE]) ordered(file)
    const entries = sortFiles(unsorted)
    const checksumsBytes = textEncoder.encode(checksumsText(entries))
    const { coverage, scopes } = this.facts
    const options = this.options
    const manifest: MemManifest = {
      format: MEM_FORMAT_VERSION,
      generator: options.generator,
      conformanceLevel: options.conformanceLevel,
      createdAt: options.createdAt,
      exportMode: options.exportMode,
      ...(options.since === undefined ? {} : { since: options.since }),
      schemaVersion: options.schemaVersion,
      embeddingModel: options.embeddingModel,
      embeddingDim: options.embeddingDim,
      embeddingsIncluded: false,
      capabilities: options.signer === undefined ? [...BASE_CAPABILITIES] : [...BASE_CAPABILITIES, SIGNED_CAPABILITY],
      counts,
      files: entries,
      ...(options.specURL === undefined ? {} : { specURL: options.specURL }),
      ...(coverage === undefined ? {} : { coverage }),
      ...(scopes.length === 0 ? {} : { scopes }),
      bundleDigest: crypto.sha256Hex(checksumsBytes),
    }
    const manifestBytes = textEncoder.encode(canonicalJson(manifest))
    const problems = new ProblemList()
    this.dropped.report(problems)
    options.onProgress?.(this.total, this.total)
    return {
      manifest,
      manifestBytes,
      checksumsBytes,
      ...(options.signer === undefined ? {} : { signatureBytes: manifestSignatureBytes(manifestBytes, options.signer, crypto) }),
      files: new Map(entries.map((entry) => [entry.path, files.get(entry.path) as readonly Uint8Array[]])),
      directories: [...ALWAYS_CREATED_DIRECTORIES, ...(files.has(PROVENANCE_EDGES_FILE) ? ['provenance'] : [])],
      warnings: problems.warnings,
    }
  }
}

const CONTENT_KEYS = ['records', 'passthrough', 'tombstones', 'auditLog', 'provenanceEdges'] as const

function readContent(value: unknown): MemBundleContent {
  const content = assertObject(value, 'content')
  assertKnownKeys(content, CONTENT_KEYS, 'content')
  for (const key of CONTENT_KEYS) {
    if (content[key] === undefined && key !== 'provenanceEdges') throw new InputError('MISSING_FIELD', 'required', { field: `content.${key}` })
  }
  const records = assertObject(content.records, 'content.records')
  for (const [kind, rows] of Object.entries(records)) {
    if (!isRecordKind(kind)) throw new InputError('UNKNOWN_KIND', `${JSON.stringify(kind.slice(0, 64))} is not a Portable Memory kind; vendor kinds go in passthrough`, { field: `content.records.${kind.slice(0, 64)}` })
    if (rows !== undefined) assertArray(rows, `content.records.${kind}`)
  }
  const passthrough = assertObject(content.passthrough, 'content.passthrough')
  for (const [kind, lines] of Object.entries(passthrough)) assertArray(lines, `content.passthrough.${kind.slice(0, 64)}`)
  const list = (key: string): readonly JsonObject[] => (content[key] === undefined ? [] : (assertArray(content[key], `content.${key}`) as JsonObject[]))
  return {
    records: records as MemBundleContent['records'],
    passthrough: passthrough as MemBundleContent['passthrough'],
    tombstones: list('tombstones'),
    auditLog: list('auditLog'),
    provenanceEdges: list('provenanceEdges'),
  }
}

function rowTotal(content: MemBundleContent): number {
  let total = content.tombstones.length + content.auditLog.length + (content.provenanceEdges?.length ?? 0)
  for (const rows of Object.values(content.records)) total += rows?.length ?? 0
  for (const lines of Object.values(content.passthrough)) total += lines.length
  return total
}

/** What the 1.1 manifest says about the records (§2): coverage of episode eventTimes, and scopes. */
class RecordFacts {
  private from: { text: string; ms: number } | undefined
  private to: { text: string; ms: number } | undefined
  private readonly scopeSet = new Set<string>()

  /** Earliest and latest eventTime by instant (ties by text), kept as written. */
  episode(record: JsonObject): void {
    const text = record.eventTime as string
    const ms = canonicalTimestampMs(text) ?? parseTimestamp(text)
    if (this.from === undefined || ms < this.from.ms || (ms === this.from.ms && compareCodePoints(text, this.from.text) < 0)) this.from = { text, ms }
    if (this.to === undefined || ms > this.to.ms || (ms === this.to.ms && compareCodePoints(text, this.to.text) > 0)) this.to = { text, ms }
    if (typeof record.contextID === 'string' && record.contextID !== '') this.scopeSet.add(record.contextID)
  }

  context(record: JsonObject): void {
    if (record.id !== '') this.scopeSet.add(record.id as string)
  }

  get coverage(): { from: string; to: string } | undefined {
    return this.from === undefined || this.to === undefined ? undefined : { from: this.from.text, to: this.to.text }
  }

  /** Non-empty episode contextIDs and context ids, deduplicated, in code-point order. */
  get scopes(): string[] {
    return [...this.scopeSet].sort(compareCodePoints)
  }
}

/** A builder holding all of `content`. */
export function buildMemBundle(contentValue: MemBundleContent, optionsValue: WriteOptions): BuiltBundle {
  const content = readContent(contentValue)
  const builder = new MemBundleBuilder(optionsValue, rowTotal(content))
  for (const kind of RECORD_KINDS) (content.records[kind] ?? []).forEach((row, i) => builder.record(kind, row, `records.${kind}[${i}]`))
  for (const [kind, lines] of Object.entries(content.passthrough)) builder.passthrough(kind, lines)
  content.tombstones.forEach((row, i) => builder.tombstone(row, `tombstones[${i}]`))
  content.auditLog.forEach((row, i) => builder.auditRow(row, `auditLog[${i}]`))
  ;(content.provenanceEdges ?? []).forEach((row, i) => builder.provenanceEdge(row, `provenanceEdges[${i}]`))
  return builder.finish()
}

/**
 * Encodes content into the bytes of a bundle.
 * @throws InputError (options, content, or a row: the field names the row, e.g.
 *   `records.episode[3].actors[1]`), LimitError LINE_TOO_LONG, FILE_TOO_LARGE, TOO_DEEP
 */
export function encodeMemBundle(contentValue: MemBundleContent, optionsValue: WriteOptions): EncodedBundle {
  const built = buildMemBundle(contentValue, optionsValue)
  const files = new Map<string, Uint8Array>()
  for (const [path, chunks] of built.files) files.set(path, chunks.length === 1 ? (chunks[0] as Uint8Array) : Buffer.concat(chunks))
  return { ...built, files }
}

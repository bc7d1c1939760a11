/**
 * Encodes bundle content into the exact bytes of a `.mem` bundle, in memory (spec notes §1–§5):
 * the data files, CHECKSUMS, the 1.1 manifest and, with a signer, `manifest.sig`. Knows nothing
 * of the file system; write-bundle.ts puts the bytes on disk.
 *
 * Invariant: every row is decoded exactly as a reader would decode it before it is written (so
 * a written bundle always reads back), then written as its canonical line. Line order:
 * episodes by id, every other kind and the audit files by the whole line in code-point order,
 * vendor lines in their given order. A file exists only when it has lines; `counts` holds only
 * what was written. Nothing is returned unless all of it encoded.
 */
import { assertArray, assertKnownKeys, assertObject } from '../../assert.js'
import { InputError } from '../../errors.js'
import { canonicalJson, compareCodePoints, defaultCrypto } from '../../log/index.js'
import { isRecordKind, parseTimestamp, RECORD_KINDS } from '../../projection/kinds.js'
import { joinJsonl } from './jsonl.js'
import {
  ALWAYS_CREATED_DIRECTORIES, AUDIT_LOG_FILE, BASE_CAPABILITIES, COUNT_KEY_AUDIT, COUNT_KEY_PROVENANCE_EDGE,
  COUNT_KEY_TOMBSTONE, isPassthroughKindName, kindFilePath, MEM_FORMAT_VERSION, PROVENANCE_EDGES_FILE,
  SIGNED_CAPABILITY, TOMBSTONES_FILE,
} from './layout.js'
import { checksumsText, sortFiles } from './manifest.js'
import { readWriteOptions, type ResolvedWriteOptions } from './options.js'
import { DroppedKeys, ProblemList } from './problems.js'
import { decodeAuditRow, decodeRecord, decodeTombstone, type DecodedRow } from './record-codec.js'
import { manifestSignatureBytes } from './signature.js'
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

/** Progress is reported after this many rows. */
const PROGRESS_EVERY_ROWS = 4096
const textEncoder = new TextEncoder()

class Encoder {
  readonly files = new Map<string, Uint8Array>()
  readonly counts: Record<string, number> = {}
  readonly dropped = new DroppedKeys()
  private done = 0

  constructor(private readonly options: ResolvedWriteOptions, private readonly total: number) {}

  /**
   * Decodes every row, then writes the file and its count. Decoded rows are not kept (only their
   * lines): `observe` sees each one, so holding 100k decoded copies never adds to memory.
   */
  rows(file: string, countKey: string, rows: readonly unknown[], label: string, decode: (row: unknown, label: string) => DecodedRow, observe?: (record: JsonObject) => void): void {
    // §3: episodes are ordered by id; every other stream by its whole line.
    const byId = countKey === 'episode'
    const lines: { bytes: Buffer; id: string }[] = new Array(rows.length)
    for (let i = 0; i < rows.length; i++) {
      const { record, dropped } = decode(rows[i], `${label}[${i}]`)
      if (dropped.length > 0) this.dropped.note(file, dropped)
      observe?.(record)
      // Encoded at once: the serializer's string is garbage before the next row, which cut
      // garbage collection on 100k-row exports; UTF-8 byte order is code-point order (§3).
      lines[i] = { bytes: Buffer.from(canonicalJson(record), 'utf8'), id: byId ? (record.id as string) : '' }
      this.step()
    }
    lines.sort((a, b) => compareCodePoints(a.id, b.id) || Buffer.compare(a.bytes, b.bytes))
    this.file(file, countKey, lines.map((entry) => entry.bytes))
  }

  file(file: string, countKey: string, lines: readonly Uint8Array[]): void {
    if (lines.length === 0) return
    const { maxLineBytes, maxFileBytes } = this.options.limits
    this.files.set(file, joinJsonl(lines, file, maxLineBytes, maxFileBytes))
    this.counts[countKey] = lines.length
  }

  step(count = 1): void {
    const before = this.done
    this.done += count
    if (this.options.onProgress !== undefined && Math.floor(before / PROGRESS_EVERY_ROWS) !== Math.floor(this.done / PROGRESS_EVERY_ROWS)) {
      this.options.onProgress(this.done, this.total)
    }
  }

  finish(): void {
    this.options.onProgress?.(this.total, this.total)
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
  for (const [kind, lines] of Object.entries(passthrough)) {
    const field = `content.passthrough.${kind.slice(0, 64)}`
    if (!isPassthroughKindName(kind)) throw new InputError('BAD_KIND_NAME', 'a vendor kind is a safe file-name stem, not a Portable Memory kind or a reserved count key', { field })
    assertArray(lines, field).forEach((line, i) => {
      if (typeof line !== 'string') throw new InputError('WRONG_TYPE', 'a passthrough line is a string', { field: `${field}[${i}]` })
      if (line.includes('\n')) throw new InputError('BAD_LINE', 'a passthrough line cannot hold a newline', { field: `${field}[${i}]` })
      if (!line.isWellFormed()) throw new InputError('BAD_STRING', 'a passthrough line holds a lone surrogate', { field: `${field}[${i}]` })
    })
  }
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
    const ms = parseTimestamp(text)
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

/**
 * Encodes content into the bytes of a bundle.
 * @throws InputError (options, content, or a row: the field names the row, e.g.
 *   `records.episode[3].actors[1]`), LimitError LINE_TOO_LONG, FILE_TOO_LARGE, TOO_DEEP
 */
export function encodeMemBundle(contentValue: MemBundleContent, optionsValue: WriteOptions): EncodedBundle {
  const options = readWriteOptions(optionsValue)
  const content = readContent(contentValue)
  const encoder = new Encoder(options, rowTotal(content))
  const facts = new RecordFacts()
  for (const kind of RECORD_KINDS) {
    const rows = content.records[kind] ?? []
    const decode = (row: unknown, label: string): DecodedRow => decodeRecord(kind, row, label)
    const observe = kind === 'episode' ? (record: JsonObject) => facts.episode(record) : kind === 'context' ? (record: JsonObject) => facts.context(record) : undefined
    encoder.rows(kindFilePath(kind), kind, rows, `records.${kind}`, decode, observe)
  }
  for (const [kind, lines] of Object.entries(content.passthrough)) {
    encoder.file(kindFilePath(kind), kind, lines.filter((line) => line !== '').map((line) => Buffer.from(line, 'utf8')))
    encoder.step(lines.length)
  }
  encoder.rows(TOMBSTONES_FILE, COUNT_KEY_TOMBSTONE, content.tombstones, 'tombstones', decodeTombstone)
  encoder.rows(AUDIT_LOG_FILE, COUNT_KEY_AUDIT, content.auditLog, 'auditLog', decodeAuditRow)
  const decodeEdge = (row: unknown, label: string): DecodedRow => decodeRecord('edge', row, label)
  encoder.rows(PROVENANCE_EDGES_FILE, COUNT_KEY_PROVENANCE_EDGE, content.provenanceEdges ?? [], 'provenanceEdges', decodeEdge)

  const crypto = defaultCrypto()
  const files: MemFileEntry[] = sortFiles(
    [...encoder.files].map(([path, bytes]) => ({ bytes: bytes.length, path, sha256: crypto.sha256Hex(bytes) })),
  )
  const checksumsBytes = textEncoder.encode(checksumsText(files))
  const { coverage, scopes } = facts
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
    counts: encoder.counts,
    files,
    ...(options.specURL === undefined ? {} : { specURL: options.specURL }),
    ...(coverage === undefined ? {} : { coverage }),
    ...(scopes.length === 0 ? {} : { scopes }),
    bundleDigest: crypto.sha256Hex(checksumsBytes),
  }
  const manifestBytes = textEncoder.encode(canonicalJson(manifest))
  const problems = new ProblemList()
  encoder.dropped.report(problems)
  encoder.finish()
  return {
    manifest,
    manifestBytes,
    checksumsBytes,
    ...(options.signer === undefined ? {} : { signatureBytes: manifestSignatureBytes(manifestBytes, options.signer, crypto) }),
    files: new Map(files.map((file) => [file.path, encoder.files.get(file.path) as Uint8Array])),
    directories: [...ALWAYS_CREATED_DIRECTORIES, ...(encoder.files.has(PROVENANCE_EDGES_FILE) ? ['provenance'] : [])],
    warnings: problems.warnings,
  }
}

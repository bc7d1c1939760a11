/**
 * The shapes the `.mem` codec reads and writes (Portable Memory spec, implementer notes §1–§9):
 * the bundle content, the manifest, the options of the writer and the readers, and the
 * problems a validation reports.
 *
 * Invariant: content is plain JSON (`JsonValue`, integers beyond 2^53 as bigint) and holds
 * records in their Portable Memory form, so `canonicalJson` of a record is its bundle line.
 */
import type { JsonObject } from '../../log/index.js'
import type { RecordKind } from '../../projection/kinds.js'

export type { JsonObject }

export type ConformanceLevel = 'L0' | 'L1' | 'L2' | 'L3'
export type ExportMode = 'full' | 'incremental'

/** What a bundle carries, independent of files and bytes. */
export interface MemBundleContent {
  /** Portable Memory records by kind. Episodes carry their unknown (`ext`) keys inline. */
  readonly records: Partial<Record<RecordKind, readonly JsonObject[]>>
  /** Unknown (vendor) kinds: their raw lines, in original order, bytes untouched. */
  readonly passthrough: Readonly<Record<string, readonly string[]>>
  /** `audit/tombstones.jsonl` rows; a row may carry a `signature` token. */
  readonly tombstones: readonly JsonObject[]
  /** `audit/log.jsonl` rows `{ts, actor, op, targetID, reason?}`. */
  readonly auditLog: readonly JsonObject[]
  /** Evidence Pack `provenance/edges.jsonl`: edges with their evidence episodes. */
  readonly provenanceEdges?: readonly JsonObject[]
}

/**
 * A known kind's file of a checked bundle, kept as its bytes (held outside the JS heap) rather
 * than decoded rows: an importer decodes it again batch by batch, so a large bundle is never held
 * decoded whole.
 */
export interface MemRecordFile {
  readonly kind: RecordKind
  /** Bundle-relative path. */
  readonly file: string
  readonly bytes: Uint8Array
  /** Rows it holds (blank lines carry none). */
  readonly rows: number
}

/** One row of `manifest.files` (and one line of `CHECKSUMS`). */
export interface MemFileEntry {
  readonly path: string
  readonly sha256: string
  readonly bytes: number
}

/** `manifest.json`: the 1.0 required fields and the optional 1.1 ones. Unknown keys are not kept. */
export interface MemManifest {
  readonly format: string
  readonly generator: string
  readonly conformanceLevel: ConformanceLevel
  readonly createdAt: string
  readonly exportMode: ExportMode
  readonly since?: string
  readonly schemaVersion: number
  readonly embeddingModel: string
  readonly embeddingDim: number
  readonly embeddingsIncluded: boolean
  readonly capabilities: readonly string[]
  readonly counts: Readonly<Record<string, number>>
  readonly files: readonly MemFileEntry[]
  readonly specURL?: string
  readonly coverage?: { readonly from: string; readonly to: string }
  readonly scopes?: readonly string[]
  readonly bundleDigest?: string
}

/** Signs bytes with Ed25519 (RFC 8032, pure): an `Identity` or a `Signer` fits in two lines. */
export interface MemSigner {
  sign(bytes: Uint8Array): Uint8Array
  /** Lowercase hex of the 32-byte public key. */
  readonly publicKeyHex: string
}

/** Caps for reading untrusted bundles (and for writing, so a written bundle always reads back). */
export interface MemLimits {
  /** Largest file, in bytes (spec: 256 MiB). */
  readonly maxFileBytes?: number
  /** Longest JSONL line, in bytes, without its `\n`. */
  readonly maxLineBytes?: number
}

/** Progress of a long read or write: `done` of `total`, called often but not per record. */
export type ProgressCallback = (done: number, total: number) => void

export interface WriteOptions {
  /** `<vendor>/<version>`. */
  readonly generator: string
  /** RFC 3339; written as given. */
  readonly createdAt: string
  readonly exportMode: ExportMode
  /** Only with `exportMode: 'incremental'`. */
  readonly since?: string
  readonly conformanceLevel: ConformanceLevel
  readonly embeddingModel: string
  readonly embeddingDim: number
  /** Defaults to 1. */
  readonly schemaVersion?: number
  readonly specURL?: string
  /** Writes `manifest.sig` and adds the `signed` capability. */
  readonly signer?: MemSigner
  /** Called with records written so far and the total. */
  readonly onProgress?: ProgressCallback
  readonly limits?: MemLimits
}

export interface ReadOptions {
  /** Lowercase hex Ed25519 public keys. When non-empty, a valid `manifest.sig` by one of them is required. */
  readonly trustedKeys?: readonly string[]
  /** Called with bytes read and checked so far and the total of the listed files. */
  readonly onProgress?: ProgressCallback
  readonly limits?: MemLimits
}

/** Something wrong (or, as a warning, something dropped) in a bundle, and where. */
export interface MemProblem {
  /** Stable code, e.g. `CHECKSUM_MISMATCH`, `WRONG_TYPE`, `UNKNOWN_FIELD_DROPPED`. */
  readonly code: string
  readonly message: string
  /** Bundle-relative path of the file concerned. */
  readonly file?: string
  /** 1-based line in `file`. */
  readonly line?: number
}

export interface ValidationReport {
  readonly valid: boolean
  readonly problems: readonly MemProblem[]
  /** Data the codec will not carry (unknown keys on kinds without `ext`, ignored files). */
  readonly warnings: readonly MemProblem[]
  /** The manifest, when it parsed. */
  readonly manifest?: MemManifest
}

export interface ReadResult {
  readonly manifest: MemManifest
  readonly content: MemBundleContent
  readonly warnings: readonly MemProblem[]
}

/**
 * A valid bundle as an importer reads it: the content without records (`records` is empty), and
 * the record files as checked bytes, in path order.
 */
export interface RecordFilesReadResult extends ReadResult {
  readonly recordFiles: readonly MemRecordFile[]
}

export interface WriteResult {
  readonly manifest: MemManifest
  /** The manifest's `files`: every data file written, with its size and sha256. */
  readonly files: readonly MemFileEntry[]
  /** Unknown keys dropped from kinds that have no `ext`. */
  readonly warnings: readonly MemProblem[]
}

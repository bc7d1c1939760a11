/**
 * The file layout of a `.mem` bundle (spec notes §1, §4) and the rules a bundle-relative path
 * must keep: names, reserved files, the directories that may hold only listed files, limits.
 *
 * Invariant: a path accepted by `isSafeBundlePath` names a file strictly inside the bundle
 * directory by its text alone (no `..`, `.`, empty or absolute segments, no backslash, colon or
 * control character); symlinks are checked separately, on disk.
 */
import { isRecordKind, type RecordKind } from '../../projection/kinds.js'
import type { MemLimits } from './types.js'

/** The format this codec writes. Readers accept any 1.x.y (spec §2: only the major version gates). */
export const MEM_FORMAT_VERSION = '1.1.0'
export const MEM_FORMAT_MAJOR = 1

export const MANIFEST_FILE = 'manifest.json'
export const SIGNATURE_FILE = 'manifest.sig'
export const CHECKSUMS_FILE = 'CHECKSUMS'
export const TOMBSTONES_FILE = 'audit/tombstones.jsonl'
export const AUDIT_LOG_FILE = 'audit/log.jsonl'
export const PROVENANCE_EDGES_FILE = 'provenance/edges.jsonl'

/** Directories whose every file must be listed in `manifest.files` (§7 plus the Evidence Pack's). */
export const POLICED_DIRECTORIES = ['items', 'audit', 'embeddings', 'provenance'] as const
/** Directories an export always creates, even empty (§1). */
export const ALWAYS_CREATED_DIRECTORIES = ['items', 'audit'] as const

/** Files at the root that are never listed and never checksummed. */
export const UNLISTED_ROOT_FILES = [MANIFEST_FILE, SIGNATURE_FILE, CHECKSUMS_FILE] as const

/** Count keys beside the kinds (§2); a vendor kind may not take one of these names. */
export const COUNT_KEY_TOMBSTONE = 'tombstone'
export const COUNT_KEY_AUDIT = 'audit'
export const COUNT_KEY_PROVENANCE_EDGE = 'provenanceEdge'
const RESERVED_COUNT_KEYS = new Set([COUNT_KEY_TOMBSTONE, COUNT_KEY_AUDIT, COUNT_KEY_PROVENANCE_EDGE])

/** The capabilities the reference exporter writes (§2), in its order; `signed` is appended when signing. */
export const BASE_CAPABILITIES = ['bitemporal', 'tombstones', 'redaction', 'evidence-pack', 'ext', 'passthrough'] as const
export const SIGNED_CAPABILITY = 'signed'

/** Spec §7: the reference reader's per-file cap. */
export const MAX_FILE_BYTES = 256 * 1024 * 1024
/**
 * Longest JSONL line. The spec sets no line cap; 16 MiB is far above any record the reference
 * writes, and it bounds what one `JSON.parse` call is handed.
 */
export const MAX_LINE_BYTES = 16 * 1024 * 1024
/** `manifest.sig` holds one ~200-byte token; anything much larger is not a signature. */
export const MAX_SIGNATURE_FILE_BYTES = 4096
/** Directory nesting followed when looking for unlisted files. */
export const MAX_DIRECTORY_DEPTH = 16
/** A validation stops collecting after this many problems (a corrupt stream must not flood memory). */
export const MAX_PROBLEMS = 200
/** A vendor kind name is a file name stem: at most this many characters. */
export const MAX_KIND_NAME_LENGTH = 128

export interface ResolvedLimits {
  readonly maxFileBytes: number
  readonly maxLineBytes: number
}

export function resolveLimits(limits: MemLimits | undefined): ResolvedLimits {
  return {
    maxFileBytes: limits?.maxFileBytes ?? MAX_FILE_BYTES,
    maxLineBytes: limits?.maxLineBytes ?? MAX_LINE_BYTES,
  }
}

const UNSAFE_CHARACTER = /[\u0000-\u001f\u007f\\:]/

/**
 * True when `path` is a bundle-relative path that stays inside the bundle by its text: not
 * empty, not absolute, no `~` root, no backslash or colon (Windows roots and separators), no
 * control characters, and no empty, `.` or `..` segment. The root files (`manifest.json`,
 * `manifest.sig`, `CHECKSUMS`) are refused too: they are never listed.
 */
export function isSafeBundlePath(path: string): boolean {
  if (path.length === 0 || path.length > 4096 || path.startsWith('/') || path.startsWith('~')) return false
  if (UNSAFE_CHARACTER.test(path) || !path.isWellFormed()) return false
  for (const segment of path.split('/')) if (segment === '' || segment === '.' || segment === '..') return false
  return !(UNLISTED_ROOT_FILES as readonly string[]).includes(path)
}

/**
 * True when `name` can be a vendor (passthrough) kind: a file-name stem that is safe in a path,
 * does not start with a dot, is not a Portable Memory kind and is not a reserved count key.
 */
export function isPassthroughKindName(name: string): boolean {
  if (name.length === 0 || name.length > MAX_KIND_NAME_LENGTH || name.startsWith('.')) return false
  if (name.includes('/') || UNSAFE_CHARACTER.test(name) || !name.isWellFormed()) return false
  return !isRecordKind(name) && !RESERVED_COUNT_KEYS.has(name)
}

/** Why a string cannot be a vendor (passthrough) line of a `.mem` file. */
export interface PassthroughLineFault {
  readonly code: 'BAD_LINE' | 'BAD_STRING'
  readonly message: string
}

/**
 * Why `line` cannot be a line of a vendor file, or undefined when it can: a JSONL line holds no
 * newline, and a file is UTF-8, which has no lone surrogate. An empty line is kept out of the
 * file, not refused.
 */
export function passthroughLineFault(line: string): PassthroughLineFault | undefined {
  if (line.includes('\n')) return { code: 'BAD_LINE', message: 'a passthrough line cannot hold a newline' }
  if (!line.isWellFormed()) return { code: 'BAD_STRING', message: 'a passthrough line holds a lone surrogate' }
  return undefined
}

/** True when `line` can be a line of a vendor file (passthroughLineFault). */
export function isPassthroughLine(line: string): boolean {
  return passthroughLineFault(line) === undefined
}

export function kindFilePath(kind: string): string {
  return `items/${kind}.jsonl`
}

/** What a listed path holds, by its name. */
export type FileRole =
  | { readonly role: 'records'; readonly kind: RecordKind }
  | { readonly role: 'passthrough'; readonly kind: string }
  | { readonly role: 'tombstones' }
  | { readonly role: 'audit-log' }
  | { readonly role: 'provenance-edges' }
  /** An `items/*.jsonl` whose stem cannot be a kind name. */
  | { readonly role: 'bad-kind'; readonly kind: string }
  /** Listed and checked, but not data this codec reads (embeddings, other files). */
  | { readonly role: 'other' }

export function fileRole(path: string): FileRole {
  if (path === TOMBSTONES_FILE) return { role: 'tombstones' }
  if (path === AUDIT_LOG_FILE) return { role: 'audit-log' }
  if (path === PROVENANCE_EDGES_FILE) return { role: 'provenance-edges' }
  const match = /^items\/([^/]+)\.jsonl$/.exec(path)
  if (match === null) return { role: 'other' }
  const kind = match[1] as string
  if (isRecordKind(kind)) return { role: 'records', kind }
  return isPassthroughKindName(kind) ? { role: 'passthrough', kind } : { role: 'bad-kind', kind }
}

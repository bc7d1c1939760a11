/**
 * `manifest.json` and `CHECKSUMS` (spec notes §2, §4): building the 1.1 manifest an export
 * writes, the exact CHECKSUMS bytes for a list of files, and strict decoding of a manifest read
 * from a bundle.
 *
 * Invariant: `files` and CHECKSUMS lines are sorted by path in code-point order, and CHECKSUMS
 * covers exactly `manifest.files`; `counts` never holds a zero; `bundleDigest` is the sha256 of
 * the exact CHECKSUMS bytes. A decoded manifest has every 1.0 field with its type, and the 1.1
 * fields only when present and well-typed; unknown keys are dropped (the exporter rebuilds the
 * manifest, §2).
 */
import { describeType } from '../../assert.js'
import { InputError } from '../../errors.js'
import { compareCodePoints } from '../../log/index.js'
import { parseTimestamp } from '../../projection/kinds.js'
import type { ConformanceLevel, ExportMode, MemFileEntry, MemManifest } from './types.js'

export const CONFORMANCE_LEVELS: readonly ConformanceLevel[] = ['L0', 'L1', 'L2', 'L3']
export const EXPORT_MODES: readonly ExportMode[] = ['full', 'incremental']

const SHA256_HEX = /^[0-9a-f]{64}$/
/** Semantic version (semver.org §2, §9, §10). */
const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/

/** The exact CHECKSUMS bytes for `files`: `<sha256>  <path>\n` per file sorted by path; `\n` when none. */
export function checksumsText(files: readonly MemFileEntry[]): string {
  if (files.length === 0) return '\n'
  return sortFiles(files).map((file) => `${file.sha256}  ${file.path}\n`).join('')
}

export function sortFiles(files: readonly MemFileEntry[]): MemFileEntry[] {
  return [...files].sort((a, b) => compareCodePoints(a.path, b.path))
}

/** The major version of a semver `format`, or undefined when it is not semver. */
export function formatMajor(format: string): number | undefined {
  const match = SEMVER.exec(format)
  return match === null ? undefined : Number(match[1])
}

function fail(field: string, message: string): never {
  throw new InputError('BAD_MANIFEST', message, { field })
}

function readString(object: Record<string, unknown>, key: string, label = key): string {
  const value = object[key]
  if (typeof value !== 'string') fail(label, `expected a string, got ${describeType(value)}`)
  return value
}

function readTimestamp(object: Record<string, unknown>, key: string, label = key): string {
  const value = readString(object, key, label)
  try {
    parseTimestamp(value, label)
  } catch {
    fail(label, 'expected an RFC 3339 timestamp')
  }
  return value
}

function readInteger(value: unknown, field: string, minimum?: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) fail(field, `expected an integer, got ${describeType(value)}`)
  if (minimum !== undefined && value < minimum) fail(field, `must be at least ${minimum}`)
  return value
}

function readStringList(value: unknown, field: string): string[] {
  if (!Array.isArray(value)) fail(field, `expected an array of strings, got ${describeType(value)}`)
  return value.map((item, i) => {
    if (typeof item !== 'string') fail(`${field}[${i}]`, `expected a string, got ${describeType(item)}`)
    return item
  })
}

function readOneOf<T extends string>(object: Record<string, unknown>, key: string, choices: readonly T[]): T {
  const value = readString(object, key)
  if (!(choices as readonly string[]).includes(value)) fail(key, `expected one of ${choices.join(', ')}`)
  return value as T
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function readFiles(value: unknown): MemFileEntry[] {
  if (!Array.isArray(value)) fail('files', `expected an array, got ${describeType(value)}`)
  const seen = new Set<string>()
  return value.map((entry, i) => {
    const field = `files[${i}]`
    if (!isObject(entry)) fail(field, `expected an object, got ${describeType(entry)}`)
    const path = entry.path
    if (typeof path !== 'string') fail(`${field}.path`, `expected a string, got ${describeType(path)}`)
    if (seen.has(path)) fail(`${field}.path`, `${JSON.stringify(path.slice(0, 200))} is listed twice`)
    seen.add(path)
    const sha256 = entry.sha256
    if (typeof sha256 !== 'string' || !SHA256_HEX.test(sha256)) fail(`${field}.sha256`, 'expected 64 lowercase hex characters')
    return { path, sha256, bytes: readInteger(entry.bytes, `${field}.bytes`, 0) }
  })
}

function readCounts(value: unknown): Record<string, number> {
  if (!isObject(value)) fail('counts', `expected an object, got ${describeType(value)}`)
  const counts: Record<string, number> = {}
  for (const [key, count] of Object.entries(value)) {
    Object.defineProperty(counts, key, { value: readInteger(count, `counts.${key}`, 0), enumerable: true, writable: true, configurable: true })
  }
  return counts
}

/** `null` means absent for the optional fields (as in records, §3). */
function present(object: Record<string, unknown>, key: string): boolean {
  return Object.hasOwn(object, key) && object[key] !== null && object[key] !== undefined
}

/**
 * Decodes a parsed `manifest.json`: every required field with its type, the optional ones when
 * present. Does not check the version (the caller reports an unsupported major separately).
 * @throws InputError BAD_MANIFEST naming the field
 */
export function decodeManifest(value: unknown): MemManifest {
  if (!isObject(value)) fail('manifest', `expected an object, got ${describeType(value)}`)
  const format = readString(value, 'format')
  if (formatMajor(format) === undefined) fail('format', 'expected a semantic version such as 1.1.0')
  const embeddingsIncluded = value.embeddingsIncluded
  if (typeof embeddingsIncluded !== 'boolean') fail('embeddingsIncluded', `expected a boolean, got ${describeType(embeddingsIncluded)}`)
  const manifest: { -readonly [K in keyof MemManifest]: MemManifest[K] } = {
    format,
    generator: readString(value, 'generator'),
    conformanceLevel: readOneOf(value, 'conformanceLevel', CONFORMANCE_LEVELS),
    createdAt: readTimestamp(value, 'createdAt'),
    exportMode: readOneOf(value, 'exportMode', EXPORT_MODES),
    schemaVersion: readInteger(value.schemaVersion, 'schemaVersion'),
    embeddingModel: readString(value, 'embeddingModel'),
    embeddingDim: readInteger(value.embeddingDim, 'embeddingDim', 0),
    embeddingsIncluded,
    capabilities: readStringList(value.capabilities, 'capabilities'),
    counts: readCounts(value.counts),
    files: readFiles(value.files),
  }
  if (present(value, 'since')) manifest.since = readTimestamp(value, 'since')
  if (present(value, 'specURL')) manifest.specURL = readString(value, 'specURL')
  if (present(value, 'coverage')) {
    const coverage = value.coverage
    if (!isObject(coverage)) fail('coverage', `expected an object, got ${describeType(coverage)}`)
    manifest.coverage = { from: readTimestamp(coverage, 'from', 'coverage.from'), to: readTimestamp(coverage, 'to', 'coverage.to') }
  }
  if (present(value, 'scopes')) manifest.scopes = readStringList(value.scopes, 'scopes')
  if (present(value, 'bundleDigest')) {
    const digest = readString(value, 'bundleDigest')
    if (!SHA256_HEX.test(digest)) fail('bundleDigest', 'expected 64 lowercase hex characters')
    manifest.bundleDigest = digest
  }
  return manifest
}

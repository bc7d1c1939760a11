/**
 * One entry point for moving memory in and out of a replica, whatever the format:
 *   mem   Portable Memory `.mem` directory (mem-export.ts, mem-import.ts)
 *   log   Cairn's native log snapshot: signed events exactly (log-snapshot.ts)
 *   pam   PAM artifact, `.pam` JSON or `.pam.cbor` (pam-io.ts)
 * plus other systems' exports through their adapters (`from`, source-import.ts).
 * On import the format is detected from the path when not given.
 */
import { promises as fs } from 'node:fs'
import path from 'node:path'
import { assertNonEmptyString, assertOneOf, assertOptions } from '../assert.js'
import { InputError, relocate } from '../errors.js'
import { parseJson } from '../log/index.js'
import type { Memory } from '../memory/index.js'
import { formatTimestamp } from '../projection/index.js'
import type { SourceName } from './adapters/index.js'
import { exportLogSnapshot, readLogSnapshot, SNAPSHOT_FORMAT, type SnapshotManifest } from './log-snapshot.js'
import { CAIRN_GENERATOR, exportMem, type MemExportOptions, type MemExportResult } from './mem-export.js'
import { importMem, type ImportPhase, type MemImportReport } from './mem-import.js'
import { exportPam, importPam, type PamExportResult, type PamImportReport } from './pam-io.js'
import { importFromSource, type SourceImportReport } from './source-import.js'
import { statSourcePath } from './source-path.js'

export const BUNDLE_FORMATS = ['mem', 'log', 'pam'] as const
export type BundleFormat = (typeof BUNDLE_FORMATS)[number]

export interface ExportOptions extends MemExportOptions {
  /** Default `mem`. */
  readonly format?: BundleFormat
  /** PAM only: encode as CBOR (`.pam.cbor`) rather than JSON. */
  readonly cbor?: boolean
  /** PAM only, selective disclosure: just these entries (content ids) and their transitive ancestors. */
  readonly disclose?: readonly string[]
}

export type ExportResult =
  | ({ readonly format: 'mem' } & MemExportResult)
  | ({ readonly format: 'log' } & { readonly manifest: SnapshotManifest; readonly records: number })
  | ({ readonly format: 'pam' } & PamExportResult)

export interface ImportOptions {
  /** Detected from the path when absent. */
  readonly format?: BundleFormat
  /** Import another system's export through its adapter instead of a bundle. */
  readonly from?: SourceName
  /**
   * With `from`: who produced the export, for sources that do not say (a transfer text from
   * `chatgpt`, `claude`, `gemini`…; kept as the episodes' `transfer_source`).
   */
  readonly source?: string
  /** `.mem` and `.pam`: the bundle must be signed by one of these keys (hex). */
  readonly trustedKeys?: readonly string[]
  /** Called in each phase (ImportPhase: `check` for `.mem` only) before its first step and after each. */
  readonly onProgress?: (phase: ImportPhase, done: number, total: number) => void
}

export type ImportReport =
  | ({ readonly format: 'mem' } & MemImportReport)
  | ({ readonly format: 'log' } & { readonly events: number; readonly applied: number; readonly duplicates: number })
  | ({ readonly format: 'pam' } & PamImportReport)
  | ({ readonly format: 'source' } & SourceImportReport)

export async function exportMemory(memory: Memory, target: string, options: ExportOptions = {}): Promise<ExportResult> {
  const { format: rawFormat, cbor, disclose, ...rest } = assertOptions(options, ['format', 'cbor', 'disclose', 'since', 'sign', 'audit', 'evidencePack', 'onProgress', 'generator'], 'options') as ExportOptions
  const format = rawFormat === undefined ? 'mem' : assertOneOf(rawFormat, BUNDLE_FORMATS, 'options.format')
  if (cbor !== undefined && format !== 'pam') throw new InputError('UNSUPPORTED_OPTION', 'cbor applies to PAM artifacts only', { field: 'options.cbor' })
  if (disclose !== undefined && format !== 'pam') throw new InputError('UNSUPPORTED_OPTION', 'disclose applies to PAM artifacts only', { field: 'options.disclose' })
  if (format === 'mem') return { format, ...(await exportMem(memory, target, rest)) }
  if (format === 'pam') {
    // A PAM artifact is always signed (by this replica), whole, and names its own generator.
    for (const option of ['since', 'audit', 'evidencePack', 'generator'] as const) {
      if (rest[option] !== undefined) throw new InputError('UNSUPPORTED_OPTION', `a PAM artifact takes no ${option}`, { field: `options.${option}` })
    }
    return { format, ...(await exportPam(memory, target, { ...(cbor !== undefined ? { cbor } : {}), ...(disclose !== undefined ? { disclose } : {}), ...(rest.onProgress ? { onProgress: rest.onProgress } : {}) })) }
  }
  for (const option of ['since', 'audit', 'evidencePack', 'sign'] as const) {
    if (rest[option] !== undefined) throw new InputError('UNSUPPORTED_OPTION', `a log snapshot is every signed event; ${option} does not apply`, { field: `options.${option}` })
  }
  const manifest = await exportLogSnapshot(memory.log, target, {
    generator: rest.generator ?? CAIRN_GENERATOR,
    createdAt: formatTimestamp(Date.now()),
    ...(rest.onProgress ? { onProgress: rest.onProgress } : {}),
  })
  return { format, manifest, records: manifest.events }
}

/**
 * The format of the bundle at `source`: a `.pam`/`.pam.cbor` file, or a directory with a `.mem`
 * or snapshot manifest. The refusal names only what Cairn bundles are: a caller that can also
 * read another system's export (`importMemory`, `cairn import`) says how.
 * @throws InputError NOT_FOUND, SYMLINK_LOOP, UNREADABLE, NOT_A_FILE (statSourcePath), UNKNOWN_FORMAT
 */
export async function detectBundleFormat(source: string): Promise<BundleFormat> {
  const info = await statSourcePath(source)
  if (info.isFile()) {
    if (/\.pam(\.cbor)?$/i.test(source)) return 'pam'
    throw new InputError('UNKNOWN_FORMAT', 'a bundle file must be .pam or .pam.cbor', { file: source })
  }
  const manifestFile = path.join(source, 'manifest.json')
  const text = await fs.readFile(manifestFile, 'utf8').catch(() => undefined)
  if (text === undefined) throw new InputError('UNKNOWN_FORMAT', 'the directory has no manifest.json: not a .mem bundle or a log snapshot', { file: source })
  let manifest: unknown
  try {
    manifest = parseJson(text)
  } catch {
    return 'mem' // the .mem reader names what is wrong with it
  }
  return (manifest as { format?: unknown })?.format === SNAPSHOT_FORMAT ? 'log' : 'mem'
}

/** An UNKNOWN_FORMAT from detection, with how to import another system's export instead; other errors as they are. */
function suggestSource(error: unknown, how: string): unknown {
  if (!(error instanceof InputError) || error.code !== 'UNKNOWN_FORMAT') return error
  return relocate(error, error.where, `${error.reason}; for another system's export, ${how}`)
}

export async function importMemory(memory: Memory, source: string, options: ImportOptions = {}): Promise<ImportReport> {
  const raw = assertOptions(options, ['format', 'from', 'source', 'trustedKeys', 'onProgress'], 'options') as ImportOptions
  const producer = raw.source === undefined ? undefined : assertNonEmptyString(raw.source, 'options.source')
  if (raw.from !== undefined) {
    if (raw.format !== undefined || raw.trustedKeys !== undefined) throw new InputError('CONFLICTING_OPTIONS', 'an adapter import (from) takes no format or trusted keys', { field: 'options.from' })
    return {
      format: 'source',
      ...(await importFromSource(memory, source, {
        from: raw.from,
        ...(producer !== undefined ? { source: producer } : {}),
        ...(raw.onProgress ? { onProgress: (done, total) => raw.onProgress?.('import', done, total) } : {}),
      })),
    }
  }
  if (producer !== undefined) throw new InputError('UNSUPPORTED_OPTION', 'source names who produced another system\'s export; it applies with from', { field: 'options.source' })
  const format = raw.format === undefined
    ? await detectBundleFormat(source).catch((error: unknown) => { throw suggestSource(error, 'give its source as the from option') })
    : assertOneOf(raw.format, BUNDLE_FORMATS, 'options.format')
  const { format: _format, source: _source, ...rest } = raw
  if (format === 'mem') return { format, ...(await importMem(memory, source, rest)) }
  if (format === 'pam') return { format, ...(await importPam(memory, source, rest)) }
  if (raw.trustedKeys !== undefined) throw new InputError('UNSUPPORTED_OPTION', 'a log snapshot is authenticated by its event signatures and the space\'s grants, not trusted keys', { field: 'options.trustedKeys' })
  const { manifest, envelopes } = await readLogSnapshot(source)
  if (manifest.space !== memory.space) {
    throw new InputError('WRONG_SPACE', `the snapshot is of space ${manifest.space}, this replica holds ${memory.space} (open a replica of that space to import it)`, { file: source })
  }
  raw.onProgress?.('import', 0, envelopes.length)
  // One ingest: every signature and grant is checked, and nothing is stored unless all pass.
  const result = await memory.ingest(envelopes)
  raw.onProgress?.('import', envelopes.length, envelopes.length)
  return { format, events: envelopes.length, applied: result.applied.length, duplicates: result.duplicates }
}

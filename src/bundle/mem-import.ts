/**
 * `.mem` import into a replica (spec §7): the codec checks the whole bundle first (checksums,
 * sizes, paths, symlinks, unlisted files, digest, the signature against trusted keys) and
 * nothing is written unless all of it passes. Then tombstones apply first, records merge in the
 * spec's kind order as ordinary signed events (merge-records.ts: no resurrection, re-import a
 * no-op), so an import syncs like any write, and unknown-kind lines are kept verbatim (once).
 * Cairn's own vendor file (`items/cairnExtensions.jsonl`, cairn-extensions.ts) is not kept as
 * lines: its fields go back into the records it describes.
 */
import { assertOptions } from '../assert.js'
import type { Memory } from '../memory/index.js'
import { RECORD_KINDS, type RecordKind } from '../projection/index.js'
import { CAIRN_EXTENSIONS_FILE, CAIRN_EXTENSIONS_KIND, readExtensionLines, type BundleExtensions } from './cairn-extensions.js'
import {
  readMemBundleRecordFiles, recordRowBatches, type JsonObject, type MemBundleContent, type MemManifest, type MemProblem, type MemRecordFile,
  type ProgressCallback, type ReadOptions, type RecordFilesReadResult, type RecordRow,
} from './mem/index.js'
import { madeAtOf, mergeRecordBatches, MERGE_BATCH, type MergeReport } from './merge-records.js'
import { recordIdOf } from './portable-records.js'
import { WritableCheck } from './record-check.js'

/**
 * The phases of an import, as `onProgress` names them: `verify`, the bundle's bytes checked
 * (bytes); `check`, its records checked as they will be written (records; `.mem` only); `import`,
 * the records written (records; a log snapshot's events).
 */
export type ImportPhase = 'verify' | 'check' | 'import'

export interface MemImportOptions {
  /** Ed25519 public keys (hex): when given, the bundle must carry a valid `manifest.sig` by one of them. */
  readonly trustedKeys?: readonly string[]
  /** Called in each phase (ImportPhase) before its first step and after each: `done` of `total`. */
  readonly onProgress?: (phase: ImportPhase, done: number, total: number) => void
}

export interface MemImportReport extends MergeReport {
  readonly manifest: MemManifest
  /** Tombstones applied (ones already in effect here are not counted). */
  readonly tombstones: number
  /** Unknown-kind lines added. */
  readonly passthrough: number
  /** What the bundle carried that Cairn does not keep (unknown keys on kinds without `ext`…). */
  readonly warnings: readonly MemProblem[]
}

export async function importMem(memory: Memory, dir: string, options: MemImportOptions = {}): Promise<MemImportReport> {
  const raw = assertOptions(options, ['trustedKeys', 'onProgress'], 'options')
  const onProgress = raw.onProgress as MemImportOptions['onProgress']
  const readOptions: ReadOptions = {
    ...(raw.trustedKeys !== undefined ? { trustedKeys: raw.trustedKeys as readonly string[] } : {}),
    ...(onProgress ? { onProgress: ((done, total) => onProgress('verify', done, total)) as ProgressCallback } : {}),
  }
  const plan = await readMemImport(dir, readOptions, onProgress ? (done, total) => onProgress('check', done, total) : undefined)
  const { manifest, content, passthroughKinds } = plan
  const warnings = [...plan.bundleWarnings, ...plan.extensionWarnings]

  // Tombstones first; a redaction takes its skeleton from the bundle's line for the record.
  const tombstones = await memory.importTombstones(content.tombstones, { skeletons: plan.skeletons })

  // What this replica wrote after the bundle was made stays (a stale backup undoes nothing).
  // Records are decoded again batch by batch as they are written: a large bundle is never held
  // decoded whole (its checked bytes are).
  const madeAt = madeAtOf(manifest.createdAt)
  const merged = await mergeRecordBatches(memory, plan.recordBatches(MERGE_BATCH), plan.recordCount, {
    ...(madeAt !== undefined ? { madeAt } : {}),
    ...(onProgress ? { onProgress: (done: number, total: number) => onProgress('import', done, total) } : {}),
  })

  let passthrough = 0
  const kept = await memory.foreignLines()
  for (const [kind, lines] of Object.entries(passthroughKinds)) {
    // A file may repeat a line: each copy counts. Every copy of a text that has new copies is
    // sent, so rememberForeign numbers them as the bundle holds them and the held ones change nothing.
    const held = copiesOf(Object.hasOwn(kept, kind) ? kept[kind] as string[] : [])
    const given = copiesOf(lines)
    const growing = new Set([...given].filter(([line, count]) => count > (held.get(line) ?? 0)).map(([line]) => line))
    if (growing.size === 0) continue
    await memory.rememberForeign(kind, lines.filter((line) => growing.has(line)))
    for (const line of growing) passthrough += (given.get(line) as number) - (held.get(line) ?? 0)
  }
  return { manifest, ...merged, tombstones, passthrough, warnings }
}

/** How many times each line occurs. */
function copiesOf(lines: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>()
  for (const line of lines) counts.set(line, (counts.get(line) ?? 0) + 1)
  return counts
}

/** A `.mem` bundle read and checked as an import writes it, before anything is written. */
export interface MemImportPlan {
  readonly manifest: MemManifest
  /** The bundle's content but its records (`content.records` is empty: they are in `recordFiles`). */
  readonly content: MemBundleContent
  /** The record files, as their checked bytes. */
  readonly recordFiles: readonly MemRecordFile[]
  /** How many records they hold. */
  readonly recordCount: number
  /**
   * The records with Cairn's extension fields put back, kind by kind in RECORD_KINDS order (the
   * spec's: parents first), in batches of at most `size`, decoded again at each call.
   */
  recordBatches(size: number): Generator<readonly [RecordKind, readonly JsonObject[]]>
  /** The bundle's line (extensions put back) of each record a redaction tombstone names, by id: its skeleton. */
  readonly skeletons: ReadonlyMap<string, JsonObject>
  /** Lines of unknown kinds, Cairn's extensions file left out. */
  readonly passthroughKinds: Readonly<Record<string, readonly string[]>>
  /** The reader's warnings (as validateMemBundle reports them), then those of putting extensions back. */
  readonly bundleWarnings: readonly MemProblem[]
  readonly extensionWarnings: readonly MemProblem[]
}

/**
 * Reads a `.mem` bundle as `importMem` does and checks every record as the merge will write it
 * (`cairn validate` runs this too, so a bundle it passes imports).
 * @throws what readMemBundle throws; InputError naming the file, line and field of a record no store would take
 */
export async function readMemImport(dir: string, readOptions: ReadOptions = {}, onCheck?: ProgressCallback): Promise<MemImportPlan> {
  return planMemImport(await readMemBundleRecordFiles(dir, readOptions), onCheck)
}

/**
 * The import plan of a bundle read already (`readMemBundleRecordFiles`' result): extensions put
 * back and every record checked as the merge will write it, decoding the records once more
 * without keeping them.
 * @throws InputError naming the file, line and field of a record no store would take
 */
export function planMemImport({ manifest, content, recordFiles, warnings: bundleWarnings }: RecordFilesReadResult, onCheck?: ProgressCallback): MemImportPlan {
  // Checked whole before anything is written, like the rest of the bundle.
  const { [CAIRN_EXTENSIONS_KIND]: extensionLines, ...passthroughKinds } = content.passthrough
  const extensions = readExtensionLines(extensionLines ?? [])
  const fileOf = new Map(recordFiles.map((file) => [file.kind, file]))
  const rowBatches = function* (size: number): Generator<[RecordKind, MemRecordFile, RecordRow[]]> {
    for (const kind of RECORD_KINDS) {
      const file = fileOf.get(kind)
      if (file === undefined) continue
      for (const rows of recordRowBatches(file, size)) yield [kind, file, rows]
    }
  }
  const redacted = redactionTargets(content.tombstones)
  const skeletons = new Map<string, JsonObject>()
  const used = new Set<string>()
  // Every record is checked as the merge will write it before anything is written, tombstones
  // included: the codec's checks are the format's, not all of what a record must be here.
  const check = new WritableCheck({ uniqueIds: true })
  // Each record's place among those of its kind (one file per kind), for the refusal's message.
  const placed = new Map<RecordKind, number>()
  const recordCount = recordFiles.reduce((sum, file) => sum + file.rows, 0)
  let checked = 0
  onCheck?.(0, recordCount)
  for (const [kind, file, rows] of rowBatches(MERGE_BATCH)) {
    for (const { record: row, line } of rows) {
      const index = placed.get(kind) ?? 0
      placed.set(kind, index + 1)
      const id = recordIdOf(kind, row)
      const record = withExtension(kind, id, row, extensions.byId, used)
      check.check(kind, record, index, { file: file.file, line })
      if (redacted.get(kind)?.has(id)) skeletons.set(id, record)
    }
    checked += rows.length
    onCheck?.(checked, recordCount)
  }
  const recordBatches = function* (size: number): Generator<readonly [RecordKind, readonly JsonObject[]]> {
    for (const [kind, , rows] of rowBatches(size)) yield [kind, rows.map(({ record }) => withExtension(kind, recordIdOf(kind, record), record, extensions.byId))]
  }
  return {
    manifest, content, recordFiles, recordCount, recordBatches, skeletons, passthroughKinds, bundleWarnings,
    extensionWarnings: [...extensions.warnings, ...unusedExtensionWarnings(extensions.byId, used)],
  }
}

/** The ids redaction tombstones name, by the kind they name. */
function redactionTargets(tombstones: readonly JsonObject[]): Map<string, Set<string>> {
  const targets = new Map<string, Set<string>>()
  for (const { op, targetKind, targetID } of tombstones) {
    if (op !== 'redact' || typeof targetKind !== 'string' || typeof targetID !== 'string') continue
    targets.set(targetKind, (targets.get(targetKind) ?? new Set()).add(targetID))
  }
  return targets
}

/** A bundle's record with the extension fields of `items/cairnExtensions.jsonl` put back (noted in `used`). */
function withExtension(kind: RecordKind, id: string, record: JsonObject, byId: BundleExtensions['byId'], used?: Set<string>): JsonObject {
  const extension = byId.get(id)
  if (extension === undefined || extension.kind !== kind) return record
  used?.add(id)
  return { ...record, ...extension.fields }
}

/** One warning for the extension lines no record took, however many: a bundle can hold many. */
function unusedExtensionWarnings(byId: BundleExtensions['byId'], used: ReadonlySet<string>): MemProblem[] {
  const unused = [...byId].filter(([id]) => !used.has(id))
  const first = unused[0]
  if (first === undefined) return []
  const [id, { kind, line }] = first
  const others = unused.length > 1 ? ` (and ${unused.length - 1} more lines)` : ''
  return [{ code: 'EXTENSION_WITHOUT_RECORD', message: `no ${kind} ${id} in the bundle; its line is ignored${others}`, file: CAIRN_EXTENSIONS_FILE, line }]
}

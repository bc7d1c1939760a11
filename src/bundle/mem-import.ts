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
import type { RecordKind } from '../projection/index.js'
import { CAIRN_EXTENSIONS_FILE, CAIRN_EXTENSIONS_KIND, readExtensionLines, type BundleExtensions } from './cairn-extensions.js'
import { kindFilePath, readMemBundle, type JsonObject, type MemBundleContent, type MemManifest, type MemProblem, type ProgressCallback, type ReadOptions, type ReadResult } from './mem/index.js'
import { madeAtOf, mergeRecords, type MergeReport } from './merge-records.js'
import { recordIdOf } from './portable-records.js'
import { checkRecordsWritable } from './record-check.js'

export interface MemImportOptions {
  /** Ed25519 public keys (hex): when given, the bundle must carry a valid `manifest.sig` by one of them. */
  readonly trustedKeys?: readonly string[]
  /** Called while checking (phase `verify`: bytes) and writing (phase `import`: records). */
  readonly onProgress?: (phase: 'verify' | 'import', done: number, total: number) => void
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
  const { manifest, content, records, passthroughKinds, bundleWarnings, extensionWarnings } = await readMemImport(dir, readOptions)
  const warnings = [...bundleWarnings, ...extensionWarnings]

  // Tombstones first; a redaction takes its skeleton from the bundle's line for the record.
  const skeletons = new Map<string, JsonObject>()
  const byId = new Map<RecordKind, Map<string, JsonObject>>()
  for (const tombstone of content.tombstones) {
    const kind = tombstone.targetKind as RecordKind
    const target = tombstone.targetID
    if (tombstone.op !== 'redact' || typeof target !== 'string' || records[kind] === undefined) continue
    if (!byId.has(kind)) byId.set(kind, new Map((records[kind] ?? []).map((record) => [recordIdOf(kind, record), record])))
    const line = byId.get(kind)?.get(target)
    if (line) skeletons.set(target, line)
  }
  const tombstones = await memory.importTombstones(content.tombstones, { skeletons })

  // What this replica wrote after the bundle was made stays (a stale backup undoes nothing).
  const madeAt = madeAtOf(manifest.createdAt)
  const merged = await mergeRecords(memory, records, {
    checked: true,
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
  readonly content: MemBundleContent
  /** The records with Cairn's extension fields put back. */
  readonly records: MemBundleContent['records']
  /** Lines of unknown kinds, Cairn's extensions file left out. */
  readonly passthroughKinds: Readonly<Record<string, readonly string[]>>
  /** The reader's warnings (as validateMemBundle reports them), then those of putting extensions back. */
  readonly bundleWarnings: readonly MemProblem[]
  readonly extensionWarnings: readonly MemProblem[]
}

/**
 * Reads a `.mem` bundle as `importMem` does and checks every record as the merge will write it
 * (`cairn validate` runs this too, so a bundle it passes imports).
 * @throws what readMemBundle throws; InputError naming the file and field of a record no store would take
 */
export async function readMemImport(dir: string, readOptions: ReadOptions = {}): Promise<MemImportPlan> {
  return planMemImport(await readMemBundle(dir, readOptions))
}

/**
 * The import plan of a bundle read already (`readMemBundle`'s result): extensions put back and
 * every record checked as the merge will write it.
 * @throws InputError naming the file and field of a record no store would take
 */
export function planMemImport({ manifest, content, warnings: bundleWarnings }: ReadResult): MemImportPlan {
  // Checked whole before anything is written, like the rest of the bundle.
  const { [CAIRN_EXTENSIONS_KIND]: extensionLines, ...passthroughKinds } = content.passthrough
  const extensions = readExtensionLines(extensionLines ?? [])
  const { records, warnings: recordWarnings } = withExtensions(content.records, extensions.byId)
  // Every record is checked as the merge will write it before anything is written, tombstones
  // included: the codec's checks are the format's, not all of what a record must be here.
  checkRecordsWritable(records, (kind: RecordKind) => ({ file: kindFilePath(kind) }), { uniqueIds: true })
  return { manifest, content, records, passthroughKinds, bundleWarnings, extensionWarnings: [...extensions.warnings, ...recordWarnings] }
}

/** The bundle's records with the extension fields of `items/cairnExtensions.jsonl` put back. */
function withExtensions(records: MemBundleContent['records'], byId: BundleExtensions['byId']): { records: MemBundleContent['records']; warnings: MemProblem[] } {
  if (byId.size === 0) return { records, warnings: [] }
  const used = new Set<string>()
  const out: Partial<Record<RecordKind, JsonObject[]>> = {}
  for (const [kind, list] of Object.entries(records) as [RecordKind, readonly JsonObject[]][]) {
    out[kind] = list.map((record) => {
      const id = recordIdOf(kind, record)
      const extension = byId.get(id)
      if (extension === undefined || extension.kind !== kind) return record
      used.add(id)
      return { ...record, ...extension.fields }
    })
  }
  // One warning however many lines: a bundle can hold many.
  const unused = [...byId].filter(([id]) => !used.has(id))
  const first = unused[0]
  if (first === undefined) return { records: out, warnings: [] }
  const [id, { kind, line }] = first
  const others = unused.length > 1 ? ` (and ${unused.length - 1} more lines)` : ''
  return { records: out, warnings: [{ code: 'EXTENSION_WITHOUT_RECORD', message: `no ${kind} ${id} in the bundle; its line is ignored${others}`, file: CAIRN_EXTENSIONS_FILE, line }] }
}

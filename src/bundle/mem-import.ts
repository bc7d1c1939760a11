/**
 * `.mem` import into a replica (spec §7): the codec checks the whole bundle first (checksums,
 * sizes, paths, symlinks, unlisted files, digest, the signature against trusted keys) and
 * nothing is written unless all of it passes. Then tombstones apply first, records merge in the
 * spec's kind order as ordinary signed events (merge-records.ts: no resurrection, re-import a
 * no-op), so an import syncs like any write, and unknown-kind lines are kept verbatim (once).
 */
import { assertOptions } from '../assert.js'
import type { Memory } from '../memory/index.js'
import type { RecordKind } from '../projection/index.js'
import { readMemBundle, type JsonObject, type MemManifest, type MemProblem, type ProgressCallback, type ReadOptions } from './mem/index.js'
import { mergeRecords, type MergeReport } from './merge-records.js'
import { recordIdOf } from './portable-records.js'

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
  const { manifest, content, warnings } = await readMemBundle(dir, readOptions)

  // Tombstones first; a redaction takes its skeleton from the bundle's line for the record.
  const skeletons = new Map<string, JsonObject>()
  const byId = new Map<RecordKind, Map<string, JsonObject>>()
  for (const tombstone of content.tombstones) {
    const kind = tombstone.targetKind as RecordKind
    const target = tombstone.targetID
    if (tombstone.op !== 'redact' || typeof target !== 'string' || content.records[kind] === undefined) continue
    if (!byId.has(kind)) byId.set(kind, new Map((content.records[kind] ?? []).map((record) => [recordIdOf(kind, record), record])))
    const line = byId.get(kind)?.get(target)
    if (line) skeletons.set(target, line)
  }
  const tombstones = await memory.importTombstones(content.tombstones, { skeletons })

  const merged = await mergeRecords(memory, content.records, onProgress ? { onProgress: (done, total) => onProgress('import', done, total) } : {})

  let passthrough = 0
  const kept = await memory.foreignLines()
  for (const [kind, lines] of Object.entries(content.passthrough)) {
    const have = new Set(kept[kind] ?? [])
    const fresh = lines.filter((line) => !have.has(line))
    if (fresh.length > 0) await memory.rememberForeign(kind, fresh)
    passthrough += fresh.length
  }
  return { manifest, ...merged, tombstones, passthrough, warnings }
}

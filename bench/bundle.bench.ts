/**
 * Bundle benchmark (issue 5), in one run on one machine:
 *  1. a 100k-record Portable Memory bundle (episodes, entities, edges with evidence) is written
 *     by the `.mem` codec alone, then read back and checked by it alone: the format's own cost,
 *     with SHA-256 over the same bytes as the physical floor;
 *  2. `Memory.import` of that bundle into an empty on-disk replica (every check of §7/§9, then
 *     signed events, the log and the projection), timed per phase;
 *  3. `Memory.export` of the replica to a fresh `.mem` directory, and whether its data files
 *     equal the ones imported byte for byte: once in the process that imported, and once after
 *     closing and reopening the store, as `cairn export` runs (the target needs both);
 *  4. the same import again after editing some of the records: everything is held, the edited
 *     ones keep their edits (their write times read), nothing is written;
 *  5. the same import in a process whose heap is capped (CAPPED_HEAP_MB): it decodes the records
 *     batch by batch from the checked bytes, so the heap it needs does not grow with the bundle.
 * Writes bench/results/bundle.json. Records per second count bundle records (lines), not events.
 */
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { Memory } from '../src/index.js'
import { readMemBundle, writeMemBundle, type JsonObject } from '../src/bundle/mem/index.js'
import { recordText, seeded, vocabulary, zipf } from './corpus.js'

/** The V8 heap cap of phase 5: under what the records would take decoded whole at 100k (~3 KB each). */
const CAPPED_HEAP_MB = 192

const RECORDS = Number(process.env.CAIRN_BENCH_BUNDLE_RECORDS ?? 100_000)
const random = seeded(0xb0d1e)
const words = vocabulary(random)
const rank = zipf(words.length, random)

function stamp(i: number): string {
  return new Date(Date.UTC(2025, 0, 1) + i * 61_000).toISOString().replace(/\.\d{3}Z$/, 'Z')
}

/** 70% episodes, 15% entities, 15% edges between entities citing episodes: full PM records, as another system would export them. */
function bundleRecords(total: number): { episode: JsonObject[]; entity: JsonObject[]; edge: JsonObject[] } {
  const entities = Math.floor(total * 0.15)
  const edges = Math.floor(total * 0.15)
  const episodes = total - entities - edges
  const episode = Array.from({ length: episodes }, (_, i): JsonObject => {
    const details = recordText(words, rank, random)
    return {
      accessCount: 0, actors: [], categories: [], confidence: 0.7, details, eventTime: stamp(i), extractionState: 'done',
      id: `ep_${String(i).padStart(7, '0')}`, importance: 0.5, ingestionTime: stamp(i), lifecycleState: 'HOT', mentionTime: stamp(i),
      metadata: {}, pinned: false, sensitivity: 'low', sourceType: 'note', summary: details.slice(0, 60), vaultRefs: [],
    }
  })
  const entity = Array.from({ length: entities }, (_, i): JsonObject => ({
    aliases: [], canonicalName: `${words[i % words.length]} ${i}`, id: `ent_${String(i).padStart(7, '0')}`, sensitivity: 'low',
    summary: recordText(words, rank, random).slice(0, 80), type: 'project', updatedAt: stamp(i),
  }))
  const edge = Array.from({ length: edges }, (_, i): JsonObject => ({
    confidence: 0.9, dstEntityID: `ent_${String((i * 7 + 1) % entities).padStart(7, '0')}`, edgeType: 'relates_to',
    evidenceEpisodeIDs: [`ep_${String(i % episodes).padStart(7, '0')}`], id: `edge_${String(i).padStart(7, '0')}`, ingestionTime: stamp(i),
    srcEntityID: `ent_${String(i % entities).padStart(7, '0')}`, tValidFrom: stamp(i),
  }))
  return { episode, entity, edge }
}

async function filesUnder(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true, withFileTypes: true })).filter((entry) => entry.isFile()).map((entry) => path.join(entry.parentPath, entry.name))
}

async function bytesUnder(dir: string): Promise<number> {
  let total = 0
  for (const file of await filesUnder(dir)) total += (await stat(file)).size
  return total
}

/** Exports `memory` to `target`, timed; whether its data files equal those of `source`. */
async function timedExport(memory: Memory, source: string, target: string): Promise<{ recordsPerSecond: number; ms: number; records: number; dataFilesIdentical: boolean }> {
  const start = performance.now()
  const result = await memory.export(target)
  const ms = performance.now() - start
  const records = result.format === 'mem' ? result.records : 0
  return { recordsPerSecond: perSecond(records, ms), ms, records, dataFilesIdentical: await sameDataFiles(source, target) }
}

/** SHA-256 over every file of the bundle, read from disk: the floor for anything that checks a bundle. */
/** Phase 5: the import in a child process with a capped heap; `finished` false when it died (its last stderr line). */
async function cappedImport(source: string, replica: string): Promise<{ heapCapMB: number; finished: boolean; ms?: number; peakHeapMB?: number; failure?: string }> {
  const child = new URL('./bundle-import-child.ts', import.meta.url).pathname
  return new Promise((resolve) => {
    execFile(process.execPath, [`--max-old-space-size=${CAPPED_HEAP_MB}`, '--import', 'tsx', child, source, replica], { maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error !== null) {
        resolve({ heapCapMB: CAPPED_HEAP_MB, finished: false, failure: stderr.trim().split('\n').find((line) => /heap|memory/i.test(line)) ?? error.message.slice(0, 200) })
        return
      }
      const { ms, peakHeapBytes } = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as { ms: number; peakHeapBytes: number }
      resolve({ heapCapMB: CAPPED_HEAP_MB, finished: true, ms, peakHeapMB: peakHeapBytes / 1e6 })
    })
  })
}

async function sha256Floor(dir: string): Promise<number> {
  const start = performance.now()
  for (const file of await filesUnder(dir)) createHash('sha256').update(await readFile(file)).digest()
  return performance.now() - start
}

async function sameDataFiles(a: string, b: string): Promise<boolean> {
  for (const kind of ['episode', 'entity', 'edge']) {
    const [left, right] = await Promise.all([readFile(path.join(a, 'items', `${kind}.jsonl`)), readFile(path.join(b, 'items', `${kind}.jsonl`))])
    if (!left.equals(right)) return false
  }
  return true
}

const perSecond = (count: number, ms: number): number => count / (ms / 1000)

export async function run(): Promise<void> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'cairn-bench-bundle-'))
  try {
    console.log(`node ${process.version}, ${os.cpus()[0]?.model}, ${os.cpus().length} cores, load ${os.loadavg()[0]?.toFixed(1)}`)
    const records = bundleRecords(RECORDS)
    const source = path.join(root, 'source.mem')
    let start = performance.now()
    await writeMemBundle(source, { records, passthrough: {}, tombstones: [], auditLog: [] }, {
      generator: 'bench/1.0.0', createdAt: stamp(0), exportMode: 'full', conformanceLevel: 'L1', embeddingModel: '', embeddingDim: 0,
    })
    const codecWriteMs = performance.now() - start
    const bundleBytes = await bytesUnder(source)
    start = performance.now()
    await readMemBundle(source)
    const codecReadMs = performance.now() - start
    const shaMs = Math.min(await sha256Floor(source), await sha256Floor(source))

    const memory = await Memory.open({ path: path.join(root, 'replica') })
    let verifiedAt = 0
    start = performance.now()
    const report = await memory.import(source, { onProgress: (phase) => { if (phase === 'import' && verifiedAt === 0) verifiedAt = performance.now() } })
    const importMs = performance.now() - start
    const verifyMs = verifiedAt - start
    const imported = report.format === 'mem' ? Object.values(report.imported).reduce((sum, n) => sum + (n ?? 0), 0) : 0

    const first = await timedExport(memory, source, path.join(root, 'export.mem'))
    const exportBytes = await bytesUnder(path.join(root, 'export.mem'))
    await memory.close()
    // As `cairn export` runs: a process that opens the store and exports it. The export above
    // runs in the process that just imported (its heap and LevelDB's unmerged files included).
    const reopened = await Memory.open({ path: path.join(root, 'replica') })
    const again = await timedExport(reopened, source, path.join(root, 'export-reopened.mem'))
    // Restoring the backup again over a replica that edited some of it since: every record is
    // held, the edited ones keep their edits (read with their write times), nothing is written.
    const edited = Math.min(2000, Math.floor(RECORDS / 10))
    await reopened.updateMany(records.episode.slice(0, edited).map((record) => ({ id: record.id as string, changes: { set: { summary: `edited ${String(record.id)}` } } })))
    start = performance.now()
    const restore = await reopened.import(source)
    const restoreMs = performance.now() - start
    if (restore.format !== 'mem' || restore.keptNewer !== edited || Object.keys(restore.imported).length > 0) throw new Error(`the restore wrote or kept other than expected: ${JSON.stringify(restore)}`)
    await reopened.close()
    const capped = await cappedImport(source, path.join(root, 'capped-replica'))

    const figures = {
      records: RECORDS, bundleBytes, exportBytes, bytesPerRecord: bundleBytes / RECORDS,
      sha256MBps: bundleBytes / 1e6 / (shaMs / 1000),
      codec: { writeRecordsPerSecond: perSecond(RECORDS, codecWriteMs), readRecordsPerSecond: perSecond(RECORDS, codecReadMs) },
      import: {
        recordsPerSecond: perSecond(imported, importMs), ms: importMs, imported,
        verifyMs, verifyRecordsPerSecond: perSecond(RECORDS, verifyMs), writeMs: importMs - verifyMs, writeRecordsPerSecond: perSecond(imported, importMs - verifyMs),
      },
      export: first,
      exportReopened: again,
      restoreOverEdits: { edited, ms: restoreMs, recordsPerSecond: perSecond(RECORDS, restoreMs), keptNewer: restore.keptNewer, unchanged: restore.unchanged },
      cappedHeapImport: capped,
    }
    const ratios = {
      importVsCodecRead: figures.import.recordsPerSecond / figures.codec.readRecordsPerSecond,
      exportVsCodecWrite: figures.export.recordsPerSecond / figures.codec.writeRecordsPerSecond,
      exportReopenedVsCodecWrite: figures.exportReopened.recordsPerSecond / figures.codec.writeRecordsPerSecond,
      codecReadVsSha256: codecReadMs / shaMs,
    }
    // Export meets its target only if both runs do.
    const targets = {
      import50kPerSecond: figures.import.recordsPerSecond >= 50_000,
      export50kPerSecond: Math.min(figures.export.recordsPerSecond, figures.exportReopened.recordsPerSecond) >= 50_000,
    }
    console.log(`${RECORDS} records, ${(bundleBytes / 1e6).toFixed(1)} MB (${figures.bytesPerRecord.toFixed(0)} B/record); sha256 ${figures.sha256MBps.toFixed(0)} MB/s`)
    console.log(`codec alone: write ${Math.round(figures.codec.writeRecordsPerSecond)}/s, read+check ${Math.round(figures.codec.readRecordsPerSecond)}/s (${ratios.codecReadVsSha256.toFixed(1)}x the sha256 time)`)
    console.log(`import: ${Math.round(figures.import.recordsPerSecond)} records/s (${(importMs / 1000).toFixed(1)} s; checks ${(verifyMs / 1000).toFixed(1)} s, writes ${((importMs - verifyMs) / 1000).toFixed(1)} s)`)
    console.log(`export: ${Math.round(first.recordsPerSecond)} records/s (${(first.ms / 1000).toFixed(1)} s), data files identical to the imported ones: ${first.dataFilesIdentical}`)
    console.log(`export of the reopened store: ${Math.round(again.recordsPerSecond)} records/s (${(again.ms / 1000).toFixed(1)} s), identical: ${again.dataFilesIdentical}`)
    console.log(`the same import again over ${edited} records edited since: ${Math.round(figures.restoreOverEdits.recordsPerSecond)} records/s (${(restoreMs / 1000).toFixed(1)} s), nothing written, ${restore.keptNewer} kept newer`)
    console.log(capped.finished
      ? `the import in a process with a ${CAPPED_HEAP_MB} MB heap: finished in ${((capped.ms ?? 0) / 1000).toFixed(1)} s, peak heap ${(capped.peakHeapMB ?? 0).toFixed(0)} MB`
      : `the import in a process with a ${CAPPED_HEAP_MB} MB heap did not finish: ${capped.failure}`)
    console.log('targets', targets)
    await mkdir(new URL('./results/', import.meta.url), { recursive: true })
    await writeFile(new URL('./results/bundle.json', import.meta.url), `${JSON.stringify({
      date: new Date().toISOString(), node: process.version, cpu: os.cpus()[0]?.model, cores: os.cpus().length, loadAverage: os.loadavg(),
      ...figures, ratios, targets,
    }, null, 2)}\n`)
    console.log('wrote bench/results/bundle.json')
  } finally {
    await rm(root, { recursive: true, force: true })
  }
}

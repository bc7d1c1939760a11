/**
 * PAM artifacts in and out of a replica. Export: every record this replica shows becomes an
 * entry of one of the five components (pam/pam-export.ts), the artifact is signed by this
 * replica's key and written as `.pam` (canonical JSON) or `.pam.cbor`; with `disclose`, only the
 * chosen entries and their ancestors (selective disclosure). Each Cairn entry signs when its
 * records were last written (`cairn.writtenAtMs`). Import: the three verification phases
 * (hashes, DAG, signature by a trusted key) pass before anything is written; then the records
 * merge like a bundle's (merge-records.ts), each dated by the time its entry signs, so a field
 * written here after it keeps its value; persona text is appended once, and precedences become
 * supersessions.
 *
 * Trusted keys default to the keys that may already write this space (this replica, the owner,
 * admins): re-importing one's own export needs no flag, anyone else's artifact needs its key.
 */
import { randomBytes } from 'node:crypto'
import { promises as fs } from 'node:fs'
import path from 'node:path'
import { assertArray, assertBoolean, assertOptions, assertString } from '../assert.js'
import { CairnError, InputError, LimitError, relocate, StorageError } from '../errors.js'
import type { JsonValue } from '../log/index.js'
import type { Memory, WriteTimes } from '../memory/index.js'
import { isRecordKind, kindSpec, type RecordKind } from '../projection/index.js'
import type { AdapterWarning } from './adapters/index.js'
import type { JsonObject } from './mem/index.js'
import { mergeRecords, type MergeReport } from './merge-records.js'
import { recordRefusal } from './record-check.js'
import { futureTimeWarnings } from './source-times.js'
import { statSourcePath } from './source-path.js'
import {
  artifactIdsOf, assertVerified, decodePam, disclose, encodePamCbor, encodePamJson, MAX_PAM_BYTES, pamFromRecords, recordsFromPam, verifyPam,
  type PamArtifact, type PamRecord, type PamSkipped,
} from './pam/index.js'

export interface PamExportOptions {
  /** Write `.pam.cbor` (the `PAM\x01` magic, then deterministic CBOR) rather than `.pam` JSON. */
  readonly cbor?: boolean
  /** Selective disclosure: only these entries (content ids) and their transitive ancestors. */
  readonly disclose?: readonly string[]
  readonly onProgress?: (done: number, total: number) => void
}

export interface PamExportResult {
  readonly artifact: PamArtifact
  readonly bytes: number
  /** Records the artifact holds (before selective disclosure); those left out are in `skipped`. */
  readonly records: number
  /** Records PAM has no place for, and records an import would refuse, each with the reason. */
  readonly skipped: readonly PamSkipped[]
}

export interface PamImportOptions {
  readonly trustedKeys?: readonly string[]
  readonly onProgress?: (phase: 'verify' | 'import', done: number, total: number) => void
}

export interface PamImportReport extends MergeReport {
  /** The key whose signature verified. */
  readonly signer: string
  readonly entries: number
  readonly supersessions: number
  /** FUTURE_TIME: records whose entries sign a write time after this replica's now. */
  readonly warnings: readonly AdapterWarning[]
}

/** Write times are read for this many records at a time. */
const WRITE_TIME_BATCH = 2000

/** Writes bytes to `target` whole or not at all (a sibling temporary file, then a rename); never over an existing file. */
async function writeWhole(target: string, bytes: Uint8Array): Promise<void> {
  const exists = await fs.lstat(target).then(() => true, () => false)
  if (exists) throw new InputError('TARGET_EXISTS', 'the export file exists; remove it or choose another name', { file: target })
  const staging = path.join(path.dirname(target), `.${path.basename(target)}.partial-${randomBytes(6).toString('hex')}`)
  try {
    await fs.mkdir(path.dirname(target), { recursive: true })
    await fs.writeFile(staging, bytes, { flag: 'wx' })
    await fs.rename(staging, target)
  } catch (error) {
    await fs.rm(staging, { force: true })
    throw new StorageError('WRITE_FAILED', `could not write the artifact: ${error instanceof Error ? error.message : String(error)}`, { file: target }, { cause: error })
  }
}

export async function exportPam(memory: Memory, target: string, options: PamExportOptions = {}): Promise<PamExportResult> {
  const raw = assertOptions(options, ['cbor', 'disclose', 'onProgress'], 'options')
  const cbor = raw.cbor === undefined ? /\.cbor$/i.test(target) : assertBoolean(raw.cbor, 'options.cbor')
  const chosen = raw.disclose === undefined ? undefined : assertArray(raw.disclose, 'options.disclose').map((id, i) => assertString(id, `options.disclose[${i}]`))
  const records: PamRecord[] = []
  // A record an import would refuse (a peer's raw event; the API never stores one) is left out and
  // named: kept, it made an artifact that no replica, this one included, could import.
  const unimportable: PamSkipped[] = []
  // A redacted record's skeleton is no entry: PAM carries no tombstones, so an importer would
  // hold a blank live record where the .mem bundle says the record was redacted.
  const redacted = new Set((await memory.tombstones()).filter((row) => row.op === 'redact').map((row) => row.targetID))
  for await (const view of memory.records()) {
    if (redacted.has(view.id)) {
      unimportable.push({ kind: view.kind, id: view.id, reason: 'redacted: a PAM artifact carries no tombstones' })
      continue
    }
    const refusal = importRefusal(view as unknown as JsonObject)
    if (refusal === undefined) records.push(view as unknown as PamRecord)
    else unimportable.push({ kind: view.kind, id: view.id, reason: `${refusal.code}: ${refusal.reason}${refusal.where.field !== undefined ? ` (${refusal.where.field})` : ''}` })
  }
  const nowMs = Date.now()
  const writtenAtMs = await lastWritesOf(memory, records)
  const { artifact: whole, skipped: noPlace } = pamFromRecords(records, { identity: memory.identity, nowMs, writtenAtMs })
  const skipped = [...unimportable, ...noPlace]
  const artifact = chosen === undefined ? whole : disclose(whole, chosen, { identity: memory.identity, nowMs })
  const bytes = cbor ? encodePamCbor(artifact) : encodePamJson(artifact)
  await writeWhole(target, bytes)
  ;(raw.onProgress as PamExportOptions['onProgress'])?.(records.length, records.length)
  // Records with no place in PAM's components are in `skipped`, not among those it holds.
  return { artifact, bytes: bytes.length, records: records.length - noPlace.length, skipped }
}

/** The latest of a record's write times: sets and counters have none, so a record of only those has no time. */
function lastWriteOf(times: WriteTimes | undefined): number | undefined {
  if (times === undefined) return undefined
  let latest: number | undefined
  for (const ms of [...Object.values(times.fields), ...Object.values(times.entries).flatMap((map) => Object.values(map))]) {
    if (Number.isSafeInteger(ms) && ms >= 0 && (latest === undefined || ms > latest)) latest = ms
  }
  return latest
}

/**
 * When each record was last written, by id, in the space's clock (write times are event walls,
 * or an import's source time): what its entry signs, so an import of the artifact keeps only
 * what its replica wrote after that (docs/design-decisions.md). It reads each record's winning
 * events: about 1 s per 20,000 records, on an export of 2–2.5 s without it (bench/README).
 */
async function lastWritesOf(memory: Memory, records: readonly PamRecord[]): Promise<Map<string, number>> {
  const times = new Map<string, number>()
  for (let start = 0; start < records.length; start += WRITE_TIME_BATCH) {
    const ids = records.slice(start, start + WRITE_TIME_BATCH).map((record) => record.id)
    const found = await memory.lookup(ids, { writeTimes: true })
    ids.forEach((id, i) => {
      const latest = lastWriteOf(found[i]?.writeTimes)
      if (latest !== undefined) times.set(id, latest)
    })
  }
  return times
}

/** Why an import of this view, as a PAM import hands it over (less kind and a composite id), would refuse it. */
function importRefusal(view: JsonObject): CairnError | undefined {
  const { kind, ...rest } = view
  if (typeof kind !== 'string' || !isRecordKind(kind)) return new InputError('UNKNOWN_KIND', `no record kind ${JSON.stringify(kind)}`)
  if (kindSpec(kind).keyFields !== undefined) delete rest.id
  return recordRefusal(kind, rest)
}

/** The same error, naming the artifact file too (the codec names only the JSON path inside it). */
function inFile(error: CairnError, file: string): CairnError {
  return relocate(error, { ...error.where, file })
}

/** The keys that may already write this space: this replica, the owner, and admins. */
function spaceKeys(memory: Memory): string[] {
  const keys = new Set([memory.author])
  if (memory.log.owner) keys.add(memory.log.owner)
  for (const author of memory.log.authors()) if (memory.log.rightsOf(author).includes('admin')) keys.add(author)
  return [...keys]
}

export async function importPam(memory: Memory, source: string, options: PamImportOptions = {}): Promise<PamImportReport> {
  const raw = assertOptions(options, ['trustedKeys', 'onProgress'], 'options')
  const onProgress = raw.onProgress as PamImportOptions['onProgress']
  const trustedKeys = raw.trustedKeys === undefined ? spaceKeys(memory) : (raw.trustedKeys as readonly string[])
  const info = await statSourcePath(source)
  if (!info.isFile()) throw new InputError('NOT_A_FILE', 'a PAM artifact is one .pam or .pam.cbor file, not a directory', { file: source })
  if (info.size > MAX_PAM_BYTES) throw new LimitError('FILE_TOO_LARGE', `the artifact is ${info.size} bytes, over ${MAX_PAM_BYTES}`, { file: source })
  const bytes = new Uint8Array(await fs.readFile(source))
  onProgress?.('verify', 0, bytes.length)
  let artifact: PamArtifact
  let signer: string
  try {
    artifact = decodePam(bytes)
    const report = verifyPam(artifact, { trustedKeys })
    if (!report.ok) assertVerified(artifact, { trustedKeys })
    signer = (report as { signer: string }).signer
  } catch (error) {
    throw error instanceof CairnError ? inFile(error, source) : error
  }
  onProgress?.('verify', bytes.length, bytes.length)
  const imported = recordsFromPam(artifact, { nowMs: Date.now() })
  const byKind: Partial<Record<RecordKind, JsonObject[]>> = {}
  for (const record of imported.records) {
    const { kind, ...fields } = record as PamRecord & { kind: RecordKind }
    const rest: JsonObject = fields
    if (kindSpec(kind).keyFields !== undefined) delete rest.id
    ;(byKind[kind] ??= []).push(rest)
  }
  const envelope = artifactIdsOf(artifact)
  const companions = new Set([envelope.importEpisodeID, envelope.agentContextID, envelope.agentEntityID])
  // Each record is dated by the write time its entry signs (`sourceTimes`), never by the
  // artifact's created_at: that is outside what the signature covers (pam-hash.ts), so anyone
  // passing the artifact on could backdate it and have newer values dropped. Records of entries
  // without a time (other producers, the foreign path) pass none: the artifact's values are written.
  const sourceTimes = imported.writtenAtMs
  const nowMs = memory.log.clockWall()
  const warnings = futureTimeWarnings(sourceTimes, nowMs, source, 'the signer\'s clock ran ahead?')
  const merged = await mergeRecords(memory, byKind, { ignore: ['ingestionTime'], companions, sourceTimes, ...(onProgress ? { onProgress: (done, total) => onProgress('import', done, total) } : {}) })

  if (imported.personaAppends.length > 0) {
    const persona = await memory.get('persona')
    let text = typeof persona?.content === 'string' ? persona.content : ''
    if (!persona) await memory.remember({ kind: 'core', id: 'persona', content: '' })
    for (const addition of imported.personaAppends) {
      if (text.includes(addition)) continue
      await memory.appendText('persona', text.length > 0 ? `\n${addition}` : addition)
      text += addition
    }
  }
  let supersessions = 0
  for (const { oldID, newID, at } of imported.supersessions) {
    const old = await memory.get(oldID)
    const replacement = imported.records.find((record) => record.id === newID)
    if (!old || old.supersededBy === newID || !replacement || (await memory.status(oldID)) !== 'visible') continue
    const { kind: _kind, ...fields } = replacement as PamRecord
    await memory.supersede(oldID, fields as { [key: string]: JsonValue }, { validFrom: at })
    supersessions++
  }
  return { ...merged, signer, entries: imported.records.length, supersessions, warnings }
}

/**
 * `.mem` export of a replica: its records as Portable Memory lines (redaction skeletons
 * included), the tombstones of everything deleted or redacted (each signed by whoever made it),
 * unknown-kind lines verbatim, and on request the audit trail and the Evidence Pack; then the
 * codec writes the bundle (manifest 1.1, CHECKSUMS, optional `manifest.sig`) whole or not at all.
 * Records stream from the projection into the codec's builder, which keeps each only as its
 * encoded line: memory grows with the bundle's size, not with record objects.
 *
 * Cairn's extension fields on kinds without `ext` (`tags`, `contextID`) go to a vendor file of
 * Cairn's own, `items/cairnExtensions.jsonl` (cairn-extensions.ts), so Cairn → `.mem` → Cairn
 * loses nothing.
 *
 * Incremental (`since`, spec §9 L1): episodes by `ingestionTime`, facts and factLinks by
 * `createdAt`, resources by `created`, chunks with their resource; other kinds in full;
 * tombstones by `deletedAt` and audit rows by their time. Also every record a change recorded
 * here at or after `since` touched (Memory.changedSince): an older record edited since then
 * is in the increment, which the spec's rule alone would leave out.
 */
import { assertBoolean, assertOptions, assertString } from '../assert.js'
import { CairnError, InputError, relocate } from '../errors.js'
import type { Memory } from '../memory/index.js'
import { compareCodePoints, parseJson, type JsonValue } from '../log/index.js'
import { assertMaskedPreview, formatTimestamp, kindSpec, LAST_TIMESTAMP_MS, normalizeTimestamp, RECORD_KINDS, readRecordId, recordIdFor, type RecordKind, type RecordView } from '../projection/index.js'
import { auditRows } from './audit-trail.js'
import { CAIRN_EXTENSIONS_KIND, extensionLine } from './cairn-extensions.js'
import { MemBundleBuilder, writeBuiltBundle, type ProgressCallback, type WriteResult } from './mem/index.js'
import { toPortable } from './portable-records.js'
import { LineArena, ViewLine } from './view-lines.js'

export interface MemExportOptions {
  /** Only what changed at or after this time (RFC 3339, a Date, or ms since the epoch): an incremental bundle. */
  readonly since?: string | Date | number
  /** Sign the manifest with this replica's key (`manifest.sig`). */
  readonly sign?: boolean
  /** Add `audit/log.jsonl`: one row per mutation (who, what, when). Off by default: it names every author's key. */
  readonly audit?: boolean
  /** Add the Evidence Pack: the audit trail plus `provenance/edges.jsonl` (edges with their evidence). */
  readonly evidencePack?: boolean
  /** Called with records written so far and the total. */
  readonly onProgress?: ProgressCallback
  /** `<vendor>/<version>` in the manifest; defaults to Cairn's. */
  readonly generator?: string
}

export interface MemExportResult extends WriteResult {
  /** Records written. */
  readonly records: number
  /** Records left out because no `.mem` line, or no Cairn import, can take them (MemExportSkipped). */
  readonly skipped: readonly MemExportSkipped[]
}

/**
 * A record the export left out: its view is no Portable Memory line (a field of the wrong type,
 * a required field missing…) or one Cairn's import refuses (checkImportRules). Cairn's API never
 * stores such a record; any granted writer can sign one, and it reaches every replica. Refusing
 * the whole export for it made every export of every replica fail until someone deleted the
 * record, so the export writes everything else and names each record it left out, with the
 * refusal.
 */
export interface MemExportSkipped {
  readonly kind: RecordKind
  readonly id: string
  /** The refusal: WRONG_TYPE, MISSING_FIELD, BAD_TIMESTAMP, BAD_ID… */
  readonly code: string
  /** The field refused, as `records.<kind>["<id>"].<field>` when the refusal names one. */
  readonly field?: string
  readonly reason: string
}

export const CAIRN_GENERATOR = 'cairn/0.1.0'

/** The field each incremental filter reads, per kind; kinds not listed are exported in full. */
const SINCE_FIELDS: Partial<Record<RecordKind, string>> = { episode: 'ingestionTime', fact: 'createdAt', factLink: 'createdAt', resource: 'created' }

function sinceOf(value: unknown): { text: string; ms: number } | undefined {
  if (value === undefined) return undefined
  let ms: number
  if (value instanceof Date) ms = value.getTime()
  else if (typeof value === 'number') ms = value
  else ms = Date.parse(normalizeTimestamp(assertString(value, 'options.since'), 'options.since'))
  if (!Number.isFinite(ms)) throw new InputError('BAD_TIMESTAMP', 'since must be an RFC 3339 time, a Date or ms since the epoch', { field: 'options.since' })
  return { text: formatTimestamp(ms), ms: Math.floor(ms / 1000) * 1000 }
}

function isAtOrAfter(value: unknown, sinceMs: number): boolean {
  return typeof value === 'string' && Date.parse(value) >= sinceMs
}

const decoder = new TextDecoder()

/** Per kind, its number and integer fields that are not counters: what an import reads as a double. */
const NUMBER_FIELDS = new Map<RecordKind, readonly string[]>(RECORD_KINDS.map((kind) => [kind,
  Object.values(kindSpec(kind).fields).filter((field) => (field.type === 'number' || field.type === 'integer') && field.merge !== 'counter').map((field) => field.name)]))

/**
 * One stored record on its way into the bundle: its line cut from the stored bytes
 * (view-lines.ts), or, for a view that cannot vouch for its line that way, the parsed view,
 * which the codec checks and encodes. A class, not closures per record: there is one per record.
 */
class ExportRow {
  readonly kind: RecordKind
  readonly id: string
  private readonly cut: ViewLine | undefined
  private parsed: RecordView | undefined

  constructor(private readonly bytes: Uint8Array) {
    this.cut = ViewLine.of(bytes)
    if (this.cut !== undefined) {
      this.kind = this.cut.kind
      this.id = this.cut.id
    } else {
      const view = this.view()
      this.kind = view.kind
      this.id = view.id
    }
  }

  /**
   * Refuses what Cairn's import refuses beyond the codec's field checks (ids and parent ids of
   * the wrong kind or length, a composite-key id its key fields do not make, an unmasked secret
   * preview), so no export writes a bundle that a Cairn import refuses whole. A few string tests
   * (and a hash for composite keys): the line itself is not parsed again.
   * @throws InputError BAD_ID, WRONG_TYPE, UNMASKED_SECRET naming the record and field
   */
  checkImportRules(): void {
    const spec = kindSpec(this.kind)
    try {
      if (spec.keyFields === undefined) readRecordId(this.kind, this.id, 'id')
      else {
        // A composite-key record's id is made from its key fields; an import makes it again, so a
        // stored id that is not that one (a raw create) would meet the record that has it.
        const made = recordIdFor(this.kind, Object.fromEntries(spec.keyFields.map((name) => [name, this.value(name)])))
        if (made !== this.id) throw new InputError('BAD_ID', `the id ${JSON.stringify(this.id).slice(0, 80)} is not the one its key fields make (${made})`, { field: 'id' })
      }
      for (const parent of spec.parents) {
        const value = this.value(parent.field)
        if (value !== undefined && value !== null) readRecordId(parent.kind, value, parent.field)
      }
      const preview = this.kind === 'secretRef' ? this.value('preview') : undefined
      if (typeof preview === 'string') assertMaskedPreview(preview, 'preview')
      // A cut line's numbers are doubles (view-lines.ts); a parsed view may hold an integer kept
      // exact beyond 2^53, which an import refuses in a number field (a counter takes it).
      if (this.cut === undefined) {
        const view = this.view()
        for (const field of NUMBER_FIELDS.get(this.kind) ?? []) {
          if (typeof view[field] === 'bigint') throw new InputError('OUT_OF_RANGE', 'integers beyond 2^53 - 1 are not supported here', { field })
        }
      }
    } catch (error) {
      // Located only when refused: a label per record was a measurable part of the export.
      if (!(error instanceof CairnError)) throw error
      const field = error.where.field?.replace(new RegExp(`^${this.kind}\\.`), '')
      throw relocate(error, { ...error.where, field: `records.${this.kind}[${JSON.stringify(this.id)}]${field !== undefined ? `.${field}` : ''}` })
    }
  }

  /** A top-level field of its view. */
  value(name: string): JsonValue | undefined {
    return this.cut !== undefined ? this.cut.value(name) : this.view()[name]
  }

  view(): RecordView {
    return (this.parsed ??= parseJson(decoder.decode(this.bytes)) as RecordView)
  }

  /**
   * A redaction of a record this replica never held (a bundle's tombstone without the record's
   * line) keeps a skeleton of id and kind only: it has no Portable Memory line, and its
   * tombstone, exported with the others, says all there is.
   */
  isBareSkeleton(): boolean {
    if (this.cut !== undefined) return false
    // Nothing but id and kind: any other view that lacks a required field still fails the export loudly.
    return Object.keys(this.view()).every((name) => name === 'id' || name === 'kind')
  }

  /**
   * Hands its line to the builder.
   * @throws the codec's refusal (InputError, LimitError TOO_DEEP) for a view that is no line; the builder is left as it was
   */
  write(builder: MemBundleBuilder, arena: LineArena): void {
    if (this.cut === undefined) {
      builder.record(this.kind, toPortable(this.view()), `records.${this.kind}[${JSON.stringify(this.id)}]`)
      return
    }
    let facts: { id: string; eventTime?: string; contextID?: string } = { id: this.id }
    if (this.kind === 'episode') {
      const eventTime = this.cut.value('eventTime')
      const contextID = this.cut.value('contextID')
      facts = { id: this.id, ...(typeof eventTime === 'string' ? { eventTime } : {}), ...(typeof contextID === 'string' ? { contextID } : {}) }
    }
    builder.canonicalRecord(this.kind, this.cut.line(arena), facts)
  }
}

/**
 * @throws InputError for bad options or a non-empty target; the codec's errors for tombstones,
 *   foreign lines or audit rows it refuses (records it refuses are left out, `skipped`)
 */
export async function exportMem(memory: Memory, dir: string, options: MemExportOptions = {}): Promise<MemExportResult> {
  const raw = assertOptions(options, ['since', 'sign', 'audit', 'evidencePack', 'onProgress', 'generator'], 'options')
  const since = sinceOf(raw.since)
  const sign = raw.sign === undefined ? false : assertBoolean(raw.sign, 'options.sign')
  const evidencePack = raw.evidencePack === undefined ? false : assertBoolean(raw.evidencePack, 'options.evidencePack')
  const audit = evidencePack || (raw.audit === undefined ? false : assertBoolean(raw.audit, 'options.audit'))
  const generator = raw.generator === undefined ? CAIRN_GENERATOR : assertString(raw.generator, 'options.generator')

  // Rows go into the builder as they are read (each kept only as its encoded line), so the
  // export holds no record objects however large the store.
  const total = await memory.recordCount()
  const builder = new MemBundleBuilder({
    generator,
    // In the clock of the space's events (the physical time unless a writer's clock ran ahead
    // and every later write's time with it): an import compares its write times with this.
    createdAt: formatTimestamp(Math.min(memory.log.clockWall(), LAST_TIMESTAMP_MS)),
    exportMode: since ? 'incremental' : 'full',
    ...(since ? { since: since.text } : {}),
    // L2: deletion reaches every copy (tombstones, no resurrection). L3 (spec notes §10) adds the
    // audit log and the Evidence Pack with every tombstone signed (Cairn always signs them);
    // Cairn also wants the manifest signed before it claims L3.
    conformanceLevel: sign && evidencePack ? 'L3' : 'L2',
    embeddingModel: '',
    embeddingDim: 0,
    ...(sign ? { signer: { sign: (bytes: Uint8Array) => memory.identity.sign(bytes), publicKeyHex: memory.author } } : {}),
    ...(raw.onProgress !== undefined ? { onProgress: raw.onProgress as ProgressCallback } : {}),
  }, total)
  // Chunks follow their resource when incremental: decided once every resource has been seen.
  const chunks: ExportRow[] = []
  const resources = new Set<string>()
  const extensions: { id: string; line: string }[] = []
  const skipped: MemExportSkipped[] = []
  const arena = new LineArena()
  let count = 0
  const add = (row: ExportRow): void => {
    let line: string | undefined
    try {
      // Every check before the builder takes anything: a record is written whole or left out.
      row.checkImportRules()
      line = extensionLine(row.kind, row.id, (name) => row.value(name))
      row.write(builder, arena)
    } catch (error) {
      if (!(error instanceof CairnError)) throw error
      skipped.push({ kind: row.kind, id: row.id, code: error.code, ...(error.where.field !== undefined ? { field: error.where.field } : {}), reason: error.reason })
      return
    }
    if (line !== undefined) extensions.push({ id: row.id, line })
    if (evidencePack && row.kind === 'edge') {
      const evidence = row.value('evidenceEpisodeIDs')
      if (Array.isArray(evidence) && evidence.length > 0) builder.provenanceEdge(toPortable(row.view()))
    }
    count++
  }
  // Beyond the spec's rule (a record by its own creation time), what changed here since then:
  // an edit of an older record belongs in the increment too.
  const changed = since ? await memory.changedSince(Math.min(Number.MAX_SAFE_INTEGER, Math.max(0, since.ms))) : new Set<string>()
  for await (const batch of memory.encodedRecordBatches()) {
    for (const bytes of batch) {
      const row = new ExportRow(bytes)
      if (row.isBareSkeleton()) continue
      if (since) {
        if (row.kind === 'chunk' && !changed.has(row.id)) {
          chunks.push(row)
          continue
        }
        const field = SINCE_FIELDS[row.kind]
        if (field !== undefined && !isAtOrAfter(row.value(field), since.ms) && !changed.has(row.id)) continue
        if (row.kind === 'resource') resources.add(row.id)
      }
      add(row)
    }
  }
  for (const chunk of chunks) {
    const resource = chunk.value('resourceID')
    if (typeof resource === 'string' && resources.has(resource)) add(chunk)
  }
  // In id order (an incremental export adds its chunks last).
  if (extensions.length > 0) builder.passthrough(CAIRN_EXTENSIONS_KIND, extensions.sort((a, b) => compareCodePoints(a.id, b.id)).map(({ line }) => line))
  // Lines of that kind stored as foreign (a replica from before Cairn wrote the file imported
  // one) are stale copies of what was just written from the records: not exported again.
  for (const [kind, lines] of Object.entries(await memory.foreignLines())) if (kind !== CAIRN_EXTENSIONS_KIND) builder.passthrough(kind, lines)
  for (const row of await memory.tombstones()) if (!since || isAtOrAfter(row.deletedAt, since.ms)) builder.tombstone(row)
  if (audit) for (const row of await auditRows(memory.log, since?.ms)) builder.auditRow(row)
  const result = await writeBuiltBundle(dir, builder.finish())
  return { ...result, records: count, skipped }
}

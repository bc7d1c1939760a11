/**
 * Merges Portable Memory records from elsewhere (a bundle, an adapter) into a replica as
 * ordinary signed events, in the spec's kind order (§7: parents before children), in batches.
 *
 * Nothing is written unless every record passes the checks `remember` applies
 * (record-check.ts), so a bad record cannot leave the import half done.
 *
 * No resurrection: a record is skipped when its id, or a parent it needs, is deleted here; a
 * redacted record is not touched. Re-import is a no-op: a record whose every field already
 * holds the incoming value (fields in `ignore` aside) writes nothing. No rollback: given when the
 * source was made (`madeAt`), a field this replica holds from a later write keeps it.
 */
import { canonicalJson, type JsonValue } from '../log/index.js'
import type { LookupResult, Memory, RememberInput } from '../memory/index.js'
import { KEPT_TIMES, type RememberImportOptions, type TakenKeptTimes } from '../memory/bulk-writes.js'
import { RECORD_KINDS, type RecordKind } from '../projection/index.js'
import type { JsonObject } from './mem/index.js'
import { alreadyHolds, counterCatchUp, keepNewerWrites, parentIdsOf, recordIdOf, type KeptTimes } from './portable-records.js'
import { checkRecordsWritable, type RecordLocator } from './record-check.js'

export interface MergeReport {
  /** Records written, by kind. */
  readonly imported: Readonly<Partial<Record<RecordKind, number>>>
  /** Records already held with the same values. */
  readonly unchanged: number
  /** Records not written because they, or a parent they need, are deleted or redacted here. */
  readonly blocked: number
  /** Held records of which some field kept what this replica wrote after the source was made (`madeAt`, `sourceTimes`). */
  readonly keptNewer: number
}

export interface MergeOptions {
  /** Fields left out of the "already held" comparison (an adapter's fresh `ingestionTime`). */
  readonly ignore?: readonly string[]
  /**
   * Ids of records that only describe the import itself (a PAM artifact's import episode, its
   * agent context and entity): written only when some other record is, so importing what is
   * already held writes nothing at all, and written before the others.
   */
  readonly companions?: ReadonlySet<string>
  /**
   * A value the source used only for want of a real one (an adapter's "now" for a missing or
   * unreadable time): in a record already held, fields holding it are left as they are, so
   * importing the same export later changes nothing.
   */
  readonly placeholder?: string
  /** More such values (an adapter's times counted from the import: AdapterResult.importTimes). */
  readonly placeholders?: readonly string[]
  /**
   * When the source was made (ms since the epoch: a `.mem` manifest's `createdAt`). A field of
   * a held record whose value was written in or after the second it names (WriteTimes) keeps
   * that value (or stays unset): the source cannot have seen it, and importing an old backup
   * must not undo what was written since. What the import writes carries this time (rememberMany's `madeAt`), so an
   * import of a newer source later still writes over it. Sets and counters are merged as always
   * (an add, a raise): a set keeps no time of a removal, so an element removed since can come back.
   */
  readonly madeAt?: number
  /**
   * When the source wrote each record (ms since the epoch, by record id): as `madeAt`, for that
   * record, in place of `madeAt` (an adapter's records, each dated by its entry's own times; a
   * PAM artifact's, by the write times its Cairn entries sign).
   */
  readonly sourceTimes?: ReadonlyMap<string, number>
  /** Records merged so far, and the total. */
  readonly onProgress?: (done: number, total: number) => void
  /**
   * Names a refused record (checkRecordsWritable); by default its place in `records`. Every
   * record is checked before anything is written.
   */
  readonly locate?: RecordLocator
  /** The caller ran checkRecordsWritable already (before writing something of its own first). */
  readonly checked?: boolean
}

/**
 * A source's `createdAt` in ms since the epoch, when it is a time (its codec checked the form)
 * no earlier than 1970: no event of any replica is older, so an earlier one tells nothing.
 */
export function madeAtOf(createdAt: unknown): number | undefined {
  const ms = typeof createdAt === 'string' ? Date.parse(createdAt) : Number.NaN
  return Number.isSafeInteger(ms) && ms >= 0 ? ms : undefined
}

/** Records are written in batches of this many (one signed append and one projection run each). */
export const MERGE_BATCH = 2000

const canonical = (value: JsonValue): string => canonicalJson(value)

/**
 * A record to write and its kind, joined into one object only when its batch is written; its id,
 * and for a held record whose write times were read, the times of what it carries as held.
 */
type Write = readonly [RecordKind, JsonObject, string, KeptTimes | undefined]

export async function mergeRecords(memory: Memory, records: Partial<Record<RecordKind, readonly JsonObject[]>>, options: MergeOptions = {}): Promise<MergeReport> {
  if (!options.checked) checkRecordsWritable(records, options.locate ?? ((kind, index) => ({ path: `records.${kind}[${index}]` })))
  const total = RECORD_KINDS.reduce((sum, kind) => sum + (records[kind]?.length ?? 0), 0)
  const run = new MergeRun(memory, options)
  // First decide, against the state before the import, what each record needs; then write.
  const writes: Write[] = []
  const companionWrites: Write[] = []
  for (const kind of RECORD_KINDS) {
    const list = records[kind] ?? []
    for (let start = 0; start < list.length; start += MERGE_BATCH) {
      const decided = await run.decide(kind, list.slice(start, start + MERGE_BATCH))
      writes.push(...decided.writes)
      companionWrites.push(...decided.companionWrites)
    }
  }
  // Companions go first: an import stopped part way and run again then finds the substantive
  // records still to write, and so writes anything of it left out; companions written last
  // would be dropped by that rerun when it found nothing substantive left.
  const kept = writes.length > 0 ? [...companionWrites, ...writes] : []
  run.unchanged += companionWrites.length + writes.length - kept.length
  let done = total - kept.length
  options.onProgress?.(done, total)
  for (let start = 0; start < kept.length; start += MERGE_BATCH) {
    const batch = kept.slice(start, start + MERGE_BATCH)
    await run.write(batch)
    done += batch.length
    options.onProgress?.(done, total)
  }
  return run.finish()
}

/**
 * mergeRecords for records handed over batch by batch (each of one kind, the kinds in
 * RECORD_KINDS order, as a bundle's files are decoded), so an import of a large bundle never
 * holds its records decoded all at once: each batch is decided and written before the next is
 * taken. Equivalent to mergeRecords when ids are unique across the batches and there are no
 * companions: a record's outcome depends on its own held state and on its parents' deletion,
 * which the writes of earlier batches do not change.
 * @param total the number of records the batches hold (for progress)
 */
export async function mergeRecordBatches(memory: Memory, batches: Iterable<readonly [RecordKind, readonly JsonObject[]]>, total: number, options: StreamedMergeOptions = {}): Promise<MergeReport> {
  const run = new MergeRun(memory, options)
  let done = 0
  options.onProgress?.(done, total)
  for (const [kind, batch] of batches) {
    const { writes } = await run.decide(kind, batch)
    for (let start = 0; start < writes.length; start += MERGE_BATCH) await run.write(writes.slice(start, start + MERGE_BATCH))
    done += batch.length
    options.onProgress?.(done, total)
  }
  return run.finish()
}

/** MergeOptions of a batch-by-batch merge: records checked already (record-check.ts), ids unique, no companions. */
export type StreamedMergeOptions = Omit<MergeOptions, 'companions' | 'locate' | 'checked'>

/** One merge's settings and tallies: decides what each batch of records needs, and writes it. */
class MergeRun {
  unchanged = 0
  private blocked = 0
  private keptNewer = 0
  private readonly imported: Partial<Record<RecordKind, number>> = {}
  // Records blocked under a deleted parent that this replica never held (Memory.nameBlockedOrphans).
  private readonly orphans: { kind: RecordKind; id: string }[] = []
  private readonly ignore: ReadonlySet<string>
  private readonly companions: ReadonlySet<string>
  private readonly placeholders: ReadonlySet<string>
  // Kept times go with a record's first write only: they were read before the import, and a
  // record given twice is held as the first write left it when written again (rememberMany
  // reads its write times then, as it did for every held record).
  private readonly timed = new Set<string>()

  constructor(private readonly memory: Memory, private readonly options: MergeOptions) {
    this.ignore = new Set(options.ignore ?? [])
    this.companions = options.companions ?? new Set<string>()
    this.placeholders = new Set([...(options.placeholder === undefined ? [] : [options.placeholder]), ...(options.placeholders ?? [])])
  }

  private madeAtOf(id: string): number | undefined {
    return this.options.sourceTimes?.get(id) ?? this.options.madeAt
  }

  // Write times from the start of the source's second on may be after it was made (its time
  // has whole seconds): such writes are kept, an edit just after an export included.
  // A record dated by its own entry (`sourceTimes`: an adapter's, in whole seconds; a PAM entry's, in ms) keeps only what was written
  // after that time: a held value as old as the entry (an earlier import of it, dated so) is not
  // newer, so a change the source made without moving the entry's time still lands.
  private newerFromOf(id: string): number | undefined {
    const sourced = this.options.sourceTimes?.get(id)
    if (sourced !== undefined) return sourced + 1
    const madeAt = this.options.madeAt
    return madeAt === undefined ? undefined : Math.floor(madeAt / 1000) * 1000
  }

  /** What each record of one kind needs, against what this replica holds now: the writes, companions apart. */
  async decide(kind: RecordKind, batch: readonly JsonObject[]): Promise<{ writes: Write[]; companionWrites: Write[] }> {
    const { memory, ignore, placeholders } = this
    const writes: Write[] = []
    const companionWrites: Write[] = []
    const ids = batch.map((record) => recordIdOf(kind, record))
    const parents = batch.map((record) => parentIdsOf(kind, record))
    const parentIds = [...new Set(parents.flat())]
    const [own, needed] = await Promise.all([memory.lookup(ids), memory.lookup(parentIds)])
    const deletedParents = new Set(parentIds.filter((_, i) => needed[i]?.status === 'deleted'))
    const givens = batch.map((incoming, i) => {
      const { view } = own[i] as LookupResult
      return view && placeholders.size > 0 ? Object.fromEntries(Object.entries(incoming).filter(([, value]) => typeof value !== 'string' || !placeholders.has(value))) : incoming
    })
    const comparedOf = (record: JsonObject): JsonObject => (ignore.size === 0 ? record : Object.fromEntries(Object.entries(record).filter(([key]) => !ignore.has(key))))
    // When each field was written, only for held records the import would change: a
    // re-import of what is held reads nothing more (WriteTimes reads the writing events).
    const newerFroms = ids.map((id) => this.newerFromOf(id))
    const changing = batch.flatMap((_, i) => {
      const { status, view } = own[i] as LookupResult
      return newerFroms[i] !== undefined && status === 'visible' && view && !alreadyHolds(view, comparedOf(givens[i] as JsonObject), canonical) ? [i] : []
    })
    // From the earliest of their sources' seconds: each record's own decides what it keeps.
    const from = Math.min(...changing.map((i) => newerFroms[i] as number))
    const times = changing.length > 0 ? await memory.lookup(changing.map((i) => ids[i] as string), { writeTimes: { from } }) : []
    const timesAt = new Map(changing.map((index, n) => [index, times[n]?.writeTimes]))
    batch.forEach((_, i) => {
      const { status, view } = own[i] as LookupResult
      const given = givens[i] as JsonObject
      const writeTimes = timesAt.get(i)
      const newerFrom = newerFroms[i]
      // The values kept and their times in one walk: the times go with the write (rememberMany
      // reads no write times of its own for it).
      const kept = view && writeTimes && newerFrom !== undefined ? keepNewerWrites(kind, given, writeTimes, newerFrom, view) : undefined
      const record = kept?.record ?? given
      if (record !== given) this.keptNewer++
      const compared = comparedOf(record)
      if (status === 'deleted' || status === 'redacted') this.blocked++
      else if ((parents[i] as string[]).some((id) => deletedParents.has(id))) {
        this.blocked++
        if (status === 'absent') this.orphans.push({ kind, id: ids[i] as string })
      }
      else if (view && alreadyHolds(view, compared, canonical)) this.unchanged++
      else if (this.companions.has(ids[i] as string)) companionWrites.push([kind, record, ids[i] as string, kept?.keptAt])
      else writes.push([kind, view ? counterCatchUp(view, record) : record, ids[i] as string, kept?.keptAt])
    })
    return { writes, companionWrites }
  }

  /** Writes decided records in one signed append (at most MERGE_BATCH of them). */
  async write(batch: readonly Write[]): Promise<void> {
    const madeAts = batch.map(([, , id]) => this.madeAtOf(id))
    const keptAtOf = ([, , id, times]: Write): TakenKeptTimes | undefined => {
      const from = this.newerFromOf(id)
      if (times === undefined || from === undefined || this.timed.has(id)) return undefined
      this.timed.add(id)
      return { from, keptAt: times }
    }
    const writeOptions: RememberImportOptions = madeAts.every((time) => time === undefined) ? {} : { madeAt: madeAts, [KEPT_TIMES]: batch.map(keptAtOf) }
    // Bundle records are typed at run time: rememberMany checks each against its kind.
    await this.memory.rememberMany(batch.map(([kind, record]) => ({ ...record, kind }) as RememberInput), writeOptions)
    for (const [kind] of batch) this.imported[kind] = (this.imported[kind] ?? 0) + 1
  }

  /** The report, once every batch is written. */
  async finish(): Promise<MergeReport> {
    // After the writes, so records written now that name them go with them, as they would had the
    // orphans arrived first (a link to one: found by the bundle-merge property).
    await this.memory.nameBlockedOrphans(this.orphans)
    return { imported: this.imported, unchanged: this.unchanged, blocked: this.blocked, keptNewer: this.keptNewer }
  }
}

/**
 * Applies a run of log events to the projection in one atomic write. For each event: decode its
 * memory operation, fold it into the record's merge state, note it in the record's history. Then
 * close deletion over references (a record whose parent is deleted is deleted too, with a derived
 * tombstone: its content is purged from the projection, and its bodies are kept hidden until an
 * event names the record, see keepsInferredBodies), and for every
 * record whose state or references changed, diff the old view against the new one to update
 * the indexes, the full-text index and the as-of versions.
 *
 * Invariant: the writes depend only on the stored projection and the events, never on timing,
 * so applying the log from the start yields the same bytes as applying it incrementally.
 */
import { applyRecordOperation, compareStamps, emptyRecordState, INFERRED_STAMP, type RecordState, type Stamp, type Tombstone } from '../crdt/index.js'
import type { EventId, LogEvent, StorageWrite, VersionVector } from '../log/index.js'
import type { LogStorage } from '../log/storage.js'
import { fieldOf, kindSpec, type RecordKind } from './kinds.js'
import { dependencyIds, materialize, parentIds, referencedIds, type Materialized, type RecordView } from './materialize.js'
import type { RecordCache } from './record-cache.js'
import { createHash } from 'node:crypto'
import { decodeForeignLines, decodeMemoryOperation, type MemoryOperation } from './operations.js'
import { decodeJson, decodeState, decodeView, encodeJson, encodeState, encodeView } from './projection-codec.js'
import { encodeFacets, facetsOf, indexKeysOf, searchableText } from './projection-indexes.js'
import { escapeKeyPart, idFromKey, type ProjectionKeys } from './projection-keys.js'
import { scanPrefixes } from './prefix-scan.js'
import type { TextChange, TextIndex } from './text-index.js'

/**
 * Optional parts of a projection. A relay keeps neither: it needs records (for scopes) and
 * deletions (to erase content), not search or reads into the past.
 */
export interface ProjectionFeatures {
  readonly fullText: boolean
  readonly asOf: boolean
  /**
   * Apply events only when something reads the records or a deletion arrives, not as they come
   * (a relay: full-access peers are served from the log alone, so a space nobody reads through a
   * token never needs its records). Opening does not catch up either.
   */
  readonly onDemand?: boolean
}

export const FULL_FEATURES: ProjectionFeatures = { fullText: true, asOf: true }

/** `withdrawn`: the record left this replica's scope and its content is gone from here (sync with a scoped token). */
export type ChangeAction = 'created' | 'updated' | 'deleted' | 'redacted' | 'withdrawn'

export interface RecordChange {
  readonly id: string
  readonly kind: RecordKind
  readonly action: ChangeAction
}

/** What the projection needs from the log. */
export interface ProjectionSource {
  causalVector(id: string): Promise<VersionVector | undefined>
  get(id: string): Promise<LogEvent | undefined>
}

// History values start with the kind of operation, so a delete can erase exactly the events
// that carried content and keep the tombstone events (which carry none). A record deleted only
// because a parent was (no event names it) keeps its content events as `k`: hidden from reads
// and history, erased once a deletion names the record (keepsInferredBodies). An operation of
// another kind than the record's (a concurrent create of its id as another kind, and what
// followed it) is `o`: not applied and not shown, but found again if that kind wins later
// (kindChanges), and erased by a deletion like content; once the record is deleted through a
// parent it is `k` like the record's own content (whichever came first, see applyEvent).
const CONTENT_OP = 'c'
const KEPT_OP = 'k'
const TOMBSTONE_OP = 't'
const OTHER_KIND_OP = 'o'
const EMPTY_VIEW = new Uint8Array(0)

/** A record's stored version keys and history entries (what purgeContent erases). */
type StoredContent = [string[], [string, Uint8Array][]]

/** What purgeContent does with a record's content entries (see there). */
type PurgeMode = 'erase' | 'keep' | 'spare'

function isDeleted(state: RecordState | undefined): boolean {
  return state?.tombstone?.op === 'delete'
}

/**
 * Whether a deletion found through a parent keeps the record's bodies. Erasing them would hide
 * why from every replica they are sent to next: one that holds a concurrent create of the same id
 * (naming another parent) would show that one, and one holding a child of this record (a fact's
 * links) would keep the child. Events naming the record erase the kept bodies.
 *
 * A link (its id made of its parents, never itself a parent, never named for an admin to erase)
 * keeps them only while every deleted parent of it is deleted only through a parent of its own:
 * such a parent may still come back as another kind (memory-model.md §1.3), and the link with it.
 * Once a deletion names one of them, the link's bodies are erased (linkBodiesKept).
 */
function keepsInferredBodies(state: RecordState): boolean {
  const spec = kindSpec(state.kind as RecordKind)
  // A kind without parent fields is deleted through a parent only by the parents a redacted
  // record was taught (TaughtParents): awaiting naming like any other, its bodies already erased.
  if (spec.parents.length === 0) return state.tombstone?.op === 'delete' && state.tombstone.inferred === true
  if (spec.keyFields !== undefined) return state.tombstone?.inferred === true && state.tombstone.keptEnds !== undefined
  return state.tombstone === undefined || state.tombstone.inferred === true
}

/** Whether a link is of the kinds that keep an inferred deletion's bodies only while its parents do (keepsInferredBodies). */
function isLink(state: RecordState): boolean {
  const spec = kindSpec(state.kind as RecordKind)
  return spec.parents.length > 0 && spec.keyFields !== undefined
}

/**
 * Whether a record's deletion must be kept apart (q:z) for a rebuild: inferred from a parent and
 * its bodies erased (a link), so no event in the log shows it. Every other deletion is replayed
 * from the log in the run where it fell; starting such a record deleted would change the as-of
 * versions of records that depend on it (an old version's successor, say).
 */
function needsKeeping(state: RecordState): boolean {
  return state.tombstone?.op === 'delete' && state.tombstone.inferred === true && !keepsInferredBodies(state)
}

/** Deleted only through a parent, bodies kept: no event names it, so its kind may still change. */
function deletedByParentOnly(state: RecordState): boolean {
  return state.tombstone?.op === 'delete' && state.tombstone.inferred === true && keepsInferredBodies(state)
}

/** Whether a record is deleted and keeps the bodies of its content all the same (keepsInferredBodies). */
export function keepsDeletedBodies(state: RecordState): boolean {
  return isDeleted(state) && keepsInferredBodies(state)
}

/**
 * A deletion no event names, for an admin replica to name (q:u). Not a link's: naming its
 * parent erases its bodies on every replica that applies that (linkBodiesKept).
 */
export function awaitsNaming(state: RecordState): boolean {
  return keepsDeletedBodies(state) && !isLink(state)
}

/**
 * A deletion or redaction takes the id whatever kind it holds here, and the record then has the
 * kind its winning tombstone named. Deleting erases the bodies of every create, so the kind
 * cannot be decided from them any more on a replica that applies the log again; the tombstones
 * stay, and every replica holds the same winner (one id, two kinds: kind-decision.ts).
 */
function withTombstoneKind(before: RecordState, after: RecordState, kind: RecordKind): RecordState {
  // A new winner brings a new tombstone record; a losing redaction only notes itself on the
  // inferred deletion it met (Tombstone.afterRedaction), which keeps its record and its kind.
  return after.tombstone?.record !== before.tombstone?.record && after.kind !== kind ? { ...after, kind } : after
}

/**
 * Whether a link deleted through `deleted` (its deleted parents) keeps its bodies: while each of
 * them is deleted only through a parent of its own, and keeps its bodies (keepsInferredBodies).
 */
function linkBodiesKept(deleted: readonly RecordState[]): boolean {
  return deleted.every(deletedByParentOnly)
}

/** What a record's deletion did to its bodies: none yet, kept (inferred), or erased. */
type DeletionBodies = 'none' | 'kept' | 'erased'

function deletionBodies(state: RecordState | undefined): DeletionBodies {
  return !isDeleted(state) ? 'none' : keepsInferredBodies(state as RecordState) ? 'kept' : 'erased'
}

/**
 * A record deleted through its parent that a redaction also reached: content arriving now is
 * erased, as where the redaction came first and the record was still redacted when it arrived
 * (what it kept so far the redaction erased: purgedByRedaction, or the redaction's own seal).
 */
function erasesArrivals(state: RecordState): boolean {
  return state.tombstone?.afterRedaction === true
}

/** A state no event with a body has touched (a restarted record whose bodies are all gone). */
function isBlank(state: RecordState): boolean {
  return state.created === undefined && state.tombstone === undefined && state.supersessions.length === 0 &&
    [state.registers, state.sets, state.counters, state.maps, state.texts, state.ext].every((table) => Object.keys(table).length === 0)
}

/**
 * Parent ids a body of a record named, where a redaction caused that body's erasure (TaughtParents):
 * the record learns them where a rebuild or replay reaches `event` (projection-keys.ts, q:p).
 */
export interface Teaching {
  readonly id: string
  readonly kind: RecordKind
  readonly parents: readonly string[]
}

/** Event id → what it teaches (the stored q:p entries), for a batch that applies events again. */
export type TaughtParents = ReadonlyMap<string, readonly Teaching[]>

/** The parent ids an operation's own fields name (a create's fields, a patch's set), under its kind. Links' ends are their id: none. */
function parentsNamedBy(decoded: MemoryOperation): string[] {
  const spec = kindSpec(decoded.kind)
  if (spec.keyFields !== undefined) return []
  const { operation } = decoded
  const fields = operation.type === 'create' ? operation.fields : operation.type === 'patch' ? operation.set : undefined
  if (!fields) return []
  const out = new Set<string>()
  for (const field of spec.parentFields) {
    const value = Object.hasOwn(fields, field) ? fields[field] : undefined
    if (typeof value === 'string') out.add(value)
  }
  return [...out].sort()
}

/**
 * The parents content erased at a redacted record teaches it (noted under the content's event,
 * q:p): those it names (parentsNamedBy) that the record's fields and skeleton do not. One learned
 * at a seal (otherParents) counts as not known: whether the seal came first depends on how a
 * catch-up was cut, or when a body arrived, and the note must not.
 */
export function parentsTaught(state: RecordState, decoded: MemoryOperation): string[] {
  const { otherParents: _learnedAtSeal, ...unlearned } = state
  const known = new Set(parentIds(unlearned))
  return parentsNamedBy(decoded).filter((parent) => !known.has(parent))
}

/** Whether content for a redacted record teaches it (parentsTaught): a late body that does is replayed, not erased directly. */
export function teachesRedacted(state: RecordState, decoded: MemoryOperation): boolean {
  return state.tombstone?.op === 'redact' && parentsTaught(state, decoded).length > 0
}

/** `state` with `parents` among the ids it once named (otherParents), those its fields or skeleton name apart. */
function withParentsNamed(state: RecordState, parents: Iterable<string>): RecordState {
  const { otherParents: _others, ...rest } = state
  const primary = new Set(parentIds(rest))
  const others = new Set<string>()
  for (const parent of parents) if (!primary.has(parent)) others.add(parent)
  const sorted = [...others].sort()
  const before = state.otherParents ?? []
  if (sorted.length === before.length && sorted.every((parent, i) => parent === before[i])) return state
  return sorted.length > 0 ? { ...rest, otherParents: sorted } : rest
}

/** Whether content erased on this record now is erased because of a redaction (its own, or one its inferred deletion met). */
function redactionErases(state: RecordState): boolean {
  return state.tombstone?.op === 'redact' || state.tombstone?.afterRedaction === true
}

/** The kind of the record a redaction event names. */
function redactionOf(event: LogEvent): { kind: RecordKind } {
  const decoded = event.body ? decodeMemoryOperation(event.body) : undefined
  return { kind: (decoded?.kind ?? 'episode') as RecordKind }
}

/** Deleted by a deletion an event names (a direct delete, or a deletion's derived list). */
function namedDeletion(state: RecordState | undefined): boolean {
  return isDeleted(state) && state?.tombstone?.inferred !== true
}

export class ProjectionBatch {
  private readonly loaded = new Map<string, RecordState | undefined>()
  private readonly original = new Map<string, RecordState | undefined>()
  private readonly changed = new Set<string>()
  /** Records touched since the current recorded-time run began (changed or revisited). */
  private readonly runTouched = new Set<string>()
  private readonly runChanged = new Set<string>()
  /** Records changed since deletions were last closed: where an early close starts (applyEvent). */
  private readonly changedSinceClose = new Set<string>()
  /** What closes in this run reported of each deletion (its bodies): an early close reports a change only. */
  private readonly reportedInRun = new Map<string, DeletionBodies>()
  /** Each touched record's view (bytes and decoded) at the start of the batch and now. */
  private readonly startViews = new Map<string, { bytes: Uint8Array | undefined; view: RecordView | undefined }>()
  private readonly views = new Map<string, { bytes: Uint8Array | undefined; view: RecordView | undefined }>()
  /** The last materialization of each sealed record (conflicts are read from it). */
  private readonly materialized = new Map<string, Materialized>()
  /** Whether each sealed view is a redaction skeleton (indexed by kind only). */
  private readonly redacted = new Map<string, boolean>()
  private readonly writes: StorageWrite[] = []
  private readonly erase = new Set<EventId>()
  /** Keys of foreign lines this batch has seen (stored already or about to be). */
  private readonly foreignKept = new Set<string>()
  private newRecords = 0
  /** Records visible when the batch began (the meta's count): how spread a purge set is. */
  private readonly viewsAtStart: number
  /** Each record's history and version puts among `writes`, so purging one does not scan them all. */
  private readonly recordPuts = new Map<string, StorageWrite[]>()
  /** Writes taken back (a purge); left out when the batch finishes. */
  private readonly dropped = new Set<StorageWrite>()
  /** The in-batch reference index (referrersInBatch) and the records changed since it was updated. */
  private readonly referencesOf = new Map<string, string[]>()
  private readonly referrersOf = new Map<string, Set<string>>()
  private readonly referencesStale = new Set<string>()
  private recordedAt: number
  private runStart: number
  /**
   * Set for a replay (replayIn): the run each replayed event belongs to, by log position; the
   * records replayed (others it touches are sealed in the current run); and the run to carry on
   * with afterwards (the projection's, untouched).
   */
  private replay: {
    readonly runs: ReadonlyMap<number, number>
    readonly records: ReadonlySet<string>
    readonly resume: { readonly recordedAt: number; readonly runStart: number }
  } | undefined

  constructor(
    private readonly storage: LogStorage,
    private readonly keys: ProjectionKeys,
    private readonly source: ProjectionSource,
    private readonly textIndex: TextIndex,
    run: { readonly recordedAt: number; readonly runStart: number; readonly kindReplays?: readonly string[]; readonly views?: number },
    private readonly cache: RecordCache,
    private readonly features: ProjectionFeatures = FULL_FEATURES,
  ) {
    this.viewsAtStart = run.views ?? 0
    this.recordedAt = run.recordedAt
    this.runStart = run.runStart
    this.replaysWaiting = new Set(run.kindReplays)
  }

  /** Records an earlier batch flagged (ProjectionMeta.kindReplays) whose replay has not run yet. */
  private readonly replaysWaiting: ReadonlySet<string>

  /**
   * Whether a record holds the state of a kind another create has won, until its replay: a
   * deletion inferred from that kind's parents would be wrong, and would spread to its children
   * (erasing their bodies) before the replay could undo it. The replay infers under the winning kind.
   */
  private waitsForKindReplay(id: string): boolean {
    return (this.kindChanges.has(id) || this.replaysWaiting.has(id)) && !this.restarted.has(id)
  }

  /** How many records this batch holds in memory (touched, or read to resolve references). */
  get recordCount(): number {
    return this.loaded.size
  }

  /** How many of those had no stored state (mostly records created in this batch: their writes are the largest). */
  get newRecordCount(): number {
    return this.newRecords
  }

  /** Where the current run of equal recorded time stands, to carry into the next batch. */
  get run(): { recordedAt: number; runStart: number } {
    return this.replay ? { ...this.replay.resume } : { recordedAt: this.recordedAt, runStart: this.runStart }
  }

  /**
   * Makes this batch a replay of events already applied once (Projection replay): each event
   * seals into the run it belongs to (`runs`: log position -> the run's first position, from the
   * time index), so the records' as-of versions come out as a rebuild writes them. The time index
   * is not written again, and the projection's current run is what the batch carries on with.
   * A record the replay touches without replaying it (one that references a record it deletes)
   * has only its current state here, so its version goes in the current run, not a past one.
   */
  replayIn(runs: ReadonlyMap<number, number>, replayed: ReadonlySet<string>): void {
    this.replay = { runs, records: replayed, resume: { recordedAt: this.recordedAt, runStart: this.runStart } }
  }

  /**
   * Records whose kind another create won in this batch: a create of the id as another kind,
   * earlier than the record's own (or the record had none). Their events must be applied again
   * under the winning kind (Projection replays them once the batch is stored). A replay never
   * adds to this: it starts each record with the kind its events decide (kindsDecided).
   */
  readonly kindChanges = new Set<string>()

  private async load(ids: Iterable<string>): Promise<void> {
    const missing: string[] = []
    for (const id of new Set(ids)) {
      if (this.loaded.has(id)) continue
      const cached = this.cache.get(id)
      if (cached) {
        this.loaded.set(id, cached.state)
        this.original.set(id, cached.state)
        if (!this.views.has(id)) {
          const view = { bytes: cached.viewBytes, view: cached.view }
          this.views.set(id, view)
          this.startViews.set(id, view)
        }
      } else missing.push(id)
    }
    if (missing.length === 0) return
    const values = await this.storage.getMany(missing.map((id) => this.keys.state(id)))
    missing.forEach((id, i) => {
      const bytes = values[i]
      const state = bytes ? decodeState(bytes, this.keys.state(id)) : undefined
      if (!state) this.newRecords++
      this.loaded.set(id, state)
      this.original.set(id, state)
    })
  }

  private putOfRecord(id: string, write: StorageWrite): void {
    this.writes.push(write)
    const list = this.recordPuts.get(id)
    if (list) list.push(write)
    else this.recordPuts.set(id, [write])
  }

  private put(id: string, state: RecordState): void {
    this.loaded.set(id, state)
    this.changed.add(id)
    this.referencesStale.add(id)
    this.runChanged.add(id)
    this.changedSinceClose.add(id)
    this.runTouched.add(id)
  }

  /**
   * Starts records over from nothing, before their events are applied again (Projection
   * replayRecords): the stored state stays the start of the diff, so views, indexes, text and
   * references follow whatever the replay ends with; history and as-of versions are dropped and
   * the replay writes them again (with replayIn, each version in its own run). Call before applyEvents.
   */
  async restart(ids: readonly string[], kinds: ReadonlyMap<string, RecordKind> = new Map()): Promise<void> {
    await this.load(ids)
    // A record deleted through its parent, its bodies erased, starts from that deletion: the log
    // cannot show it (q:z; a store from before it was kept was given its q:z when rebuilt on open).
    const kept = await this.storage.getMany(ids.map((id) => this.keys.derivedDeletion(id)))
    for (const [i, id] of ids.entries()) {
      const stored = this.original.get(id)
      // A record never stored (every event of it arrived header-only, its bodies late) starts
      // with the kind its events decide too: applied in log order, a create of another kind
      // earlier by stamp would otherwise be noted and lose, since a replay flags no kind change.
      const kind = kinds.get(id) ?? stored?.kind
      if (kind === undefined) continue
      for (const prefix of [this.keys.historyPrefix(id), this.keys.versionPrefix(id)]) {
        for await (const key of this.storage.keys({ gte: prefix, lt: this.keys.end(prefix) })) this.writes.push({ type: 'del', key })
      }
      const deletion = kept[i]
      const start = deletion ? decodeState(deletion, this.keys.derivedDeletion(id)) : emptyRecordState(id, kind)
      this.put(id, start)
      // Its history is written again from the start: a deletion the replay reaches marks it anew.
      this.deletedBefore.set(id, deletionBodies(start))
      // Sealed with the first run whose events touch it, or at the end if none does: not in
      // whatever run the batch stands in now, which would leave a version there.
      this.runTouched.delete(id)
      this.restarted.add(id)
      this.unsealedRestarts.add(id)
    }
  }

  /** The stored teachings (q:p) of the events this batch applies again (a rebuild or replay), if any. */
  private teachings: TaughtParents | undefined

  /** Teachings noted by this batch, by key: written at finish unless the record's deletion is named by then. */
  private readonly taught = new Map<string, { id: string; kind: RecordKind; parents: Set<string> }>()

  /** Gives a batch that applies events again the stored teachings (q:p) of those events. */
  teachFrom(teachings: TaughtParents | undefined): void {
    this.teachings = teachings
  }

  private noteTeaching(id: string, event: string, kind: RecordKind, parents: readonly string[]): void {
    const key = this.keys.taughtParents(id, event)
    const entry = this.taught.get(key)
    if (entry) for (const parent of parents) entry.parents.add(parent)
    else this.taught.set(key, { id, kind, parents: new Set(parents) })
  }

  /** A record learns parent ids (an erased body named them, TaughtParents); a deleted record has nothing to learn. */
  private teach(id: string, kind: RecordKind, parents: readonly string[]): void {
    const state = this.loaded.get(id) ?? emptyRecordState(id, kind)
    if (isDeleted(state)) return
    const next = withParentsNamed(state, [...parentIds(state), ...parents])
    if (next !== state) this.put(id, next)
  }

  /**
   * Records a redaction reached while they held content (live, or deleted through a parent with
   * their bodies kept), and the redaction's event: the seal learns what their content bodies
   * named before it closes deletions and erases them (learnFromRedactedContent). Live includes
   * not created yet: a record whose only create is of another kind, still to be decided by a
   * replay at the seal, holds that create's body all the same (found by the catch-up-cuts
   * property: where a cut let the replay run first, the record learned the parent it names).
   */
  private readonly toLearn = new Map<string, { event: LogEvent; skeletonParents: string[] }>()

  /**
   * The parents the content bodies of a record a redaction reached named (TaughtParents), from its
   * history (`content`: stored entries; and this batch's own), those the redaction's skeleton
   * names apart: noted at the redaction, where a rebuild, which finds those bodies erased, learns
   * them (it starts the record there, from the skeleton).
   * @returns the ids noted
   */
  private async noteContentTeachings(id: string, redaction: LogEvent, skeletonParents: readonly string[], content: readonly (readonly [string, Uint8Array])[]): Promise<string[]> {
    const prefix = this.keys.historyPrefix(id)
    const entries = new Map<string, string>()
    for (const [key, value] of content) entries.set(key, decodeJson(value) as string)
    for (const write of this.recordPuts.get(id) ?? []) {
      if (write.type === 'put' && !this.dropped.has(write) && write.key.startsWith(prefix)) entries.set(write.key, decodeJson(write.value) as string)
    }
    const known = new Set(skeletonParents)
    const learned = new Set<string>()
    for (const entry of entries.values()) {
      if (entry.startsWith(TOMBSTONE_OP)) continue
      const body = await this.source.get(entry.slice(1))
      const decoded = body?.body ? decodeMemoryOperation(body.body) : undefined
      if (!decoded || decoded.id !== id) continue
      for (const parent of parentsNamedBy(decoded)) if (!known.has(parent)) learned.add(parent)
    }
    const out = [...learned].sort()
    if (out.length > 0) this.noteTeaching(id, redaction.id, redactionOf(redaction).kind, out)
    return out
  }

  /**
   * Before a seal closes deletions: what the content of the records redactions reached in this run
   * named (noteContentTeachings), read together (readContents; the purge then takes its reads
   * from there). Ids learned at the redaction are taught to a record still redacted.
   */
  private async learnFromRedactedContent(): Promise<Map<string, StoredContent> | undefined> {
    if (this.toLearn.size === 0) return undefined
    const ids = [...this.toLearn.keys()].filter((id) => !namedDeletion(this.loaded.get(id)))
    const read = ids.length > 0 ? await this.readContents(ids.filter((id) => !this.restarted.has(id))) : new Map<string, StoredContent>()
    for (const id of ids) {
      const state = this.loaded.get(id) as RecordState
      const { event, skeletonParents } = this.toLearn.get(id) as { event: LogEvent; skeletonParents: string[] }
      const learned = await this.noteContentTeachings(id, event, skeletonParents, read.get(id)?.[1] ?? [])
      if (learned.length > 0) this.teach(id, state.kind as RecordKind, learned)
    }
    this.toLearn.clear()
    return read
  }

  /** Records restart() started over that no seal has looked at since (their first counts as unredacted before). */
  private readonly unsealedRestarts = new Set<string>()

  /** Records restart() started over: each is sealed at least once, even if no event touches it. */
  private readonly restarted = new Set<string>()

  /**
   * Applies a run of events in order; their records' states are read in one go first. A batch
   * may apply several runs, one after another in log order, before `finish`.
   */
  async applyEvents(events: readonly LogEvent[]): Promise<void> {
    await this.keepForeignLines(events)
    const decoded = events.map((event) => (event.body ? decodeMemoryOperation(event.body) : undefined))
    await this.load(decoded.flatMap((operation, i) => (operation ? [operation.id, ...(operation.derived ?? []).map((record) => record.id)] : (this.teachings?.get((events[i] as LogEvent).id) ?? []).map((teaching) => teaching.id))))
    for (let i = 0; i < events.length; i++) await this.applyEvent(events[i] as LogEvent, decoded[i])
  }

  /**
   * Lines of unknown kinds are stored once each (keyed by their hash, so importing a bundle
   * again changes nothing), remembering the order they were first seen in for re-export.
   */
  private async keepForeignLines(events: readonly LogEvent[]): Promise<void> {
    const pending = new Map<string, { key: string; value: Uint8Array }>()
    for (const event of events) {
      const foreign = event.body ? decodeForeignLines(event.body) : undefined
      if (!foreign) continue
      foreign.lines.forEach((line, index) => {
        // The first copy of a text keeps the plain key (stores from before copies were counted).
        const hash = createHash('sha256').update(line).digest('hex')
        const copy = foreign.copies[index] as number
        const key = this.keys.foreign(foreign.kind, copy === 0 ? hash : `${hash}.${copy}`)
        if (!pending.has(key) && !this.foreignKept.has(key)) pending.set(key, { key, value: encodeJson([event.local, index, line]) })
      })
    }
    for (const key of pending.keys()) this.foreignKept.add(key)
    if (pending.size === 0) return
    const entries = [...pending.values()]
    const stored = await this.storage.getMany(entries.map((entry) => entry.key))
    entries.forEach((entry, i) => {
      if (stored[i] === undefined) this.writes.push({ type: 'put', key: entry.key, value: entry.value })
    })
  }

  private async applyEvent(event: LogEvent, decoded: MemoryOperation | undefined): Promise<void> {
    // Views are sealed at the end of each run of equal recorded time: that is the resolution of
    // as-of reads, and it gives the same versions whether the log is applied in batches or at once.
    if (this.replay !== undefined) {
      const start = this.replay.runs.get(event.local)
      if (start !== undefined && start !== this.runStart) {
        if (this.runTouched.size > 0) await this.seal()
        this.runStart = start
      }
    } else if (event.recordedAt > this.recordedAt) {
      if (this.runTouched.size > 0) await this.seal()
      this.recordedAt = event.recordedAt
      this.runStart = event.local
      this.writes.push({ type: 'put', key: this.keys.time(event.recordedAt, event.local), value: EMPTY_VIEW })
    }
    if (!decoded) {
      // A body erased because of a redaction: what it taught its record (TaughtParents).
      for (const teaching of this.teachings?.get(event.id) ?? []) {
        await this.load([teaching.id])
        this.teach(teaching.id, teaching.kind, teaching.parents)
      }
      return
    }
    const derived = decoded.derived ?? []
    await this.load([decoded.id, ...derived.map((record) => record.id)])
    const { operation } = decoded
    // A redaction that a deletion in this run may reach through a parent: the seal would find that
    // deletion only after it. The redaction would take the record (and its kind, whose parents may
    // differ) where a replica whose cut fell right after the parent's deletion found the deletion
    // first, and it beats the redaction. Deletions are closed now, as that seal would. So they
    // are before content for a redacted record: it is erased whether or not the deletion is
    // found first (Tombstone.afterRedaction), but what it names is noted (TaughtParents) only
    // while the record is not deleted, and a replica whose cut fell after the parent's deletion
    // notes nothing (found by the catch-up-cuts property at a random seed).
    const found = this.loaded.get(decoded.id)
    const redacting = operation.type === 'tombstone' && operation.op === 'redact'
    const reachesRedacted = operation.type !== 'tombstone' && found?.tombstone?.op === 'redact'
    if ((redacting || reachesRedacted) && found !== undefined && !isDeleted(found) && parentIds(found).length > 0 && this.runChanged.size > 0) await this.closeDeletions(true)
    const current = this.loaded.get(decoded.id) ?? emptyRecordState(decoded.id, decoded.kind)
    const { header } = event
    const stamp = { wall: header.clock.wall, logical: header.clock.logical, author: header.author, seq: header.seq }
    // One id, two kinds (memory-model.md §1.3): the record's kind is its earliest create's.
    // Deletions take the id whatever its kind; content for a deleted record is handled below,
    // unless only a parent deleted it (no event names it): the kind that wins may have no such
    // parent, so the replay decides that too.
    // On a record already deleted through its parent the entry is kept (`k`), as the seal that
    // found that deletion marks the entries written before it (purgeContent): the same whether
    // the deletion was found before this event (a batch cut in between) or after it.
    if (current.kind !== decoded.kind && operation.type !== 'tombstone' && (current.tombstone === undefined || (deletedByParentOnly(current) && !erasesArrivals(current)))) {
      // A record deleted through its parent no longer holds its earliest create (the tombstone
      // took its content); the events it kept still show it, as they do to the replay.
      const earliest = operation.type !== 'create' || this.replay !== undefined ? undefined
        : deletedByParentOnly(current) ? await this.earliestKeptCreate(decoded.id) : current.created
      const op = deletedByParentOnly(current) ? KEPT_OP : OTHER_KIND_OP
      this.putOfRecord(decoded.id, { type: 'put', key: this.keys.history(decoded.id, event.local), value: encodeJson(`${op}${event.id}`) })
      const wins = operation.type === 'create' && (earliest === undefined || compareStamps(stamp, earliest) < 0)
      if (wins && this.replay === undefined) this.kindChanges.add(decoded.id)
      return
    }
    const needsVector = operation.type === 'supersede' || (operation.type === 'patch' && Object.keys(operation.remove).length > 0)
    const vector = needsVector ? ((await this.source.causalVector(event.id)) ?? {}) : {}
    const spec = kindSpec(current.kind as RecordKind)
    const result = applyRecordOperation(current, operation, { stamp, vector, mergeClassOf: (field) => fieldOf(spec, field)?.merge, parentFields: spec.parentFields })
    const opCode = operation.type === 'tombstone' ? TOMBSTONE_OP : CONTENT_OP
    if (result.ignored) {
      // Content aimed at a deleted record: erased, and not kept in its history (unless the
      // deletion keeps bodies, see keepsInferredBodies).
      if (opCode !== CONTENT_OP) return
      if (deletionBodies(current) === 'kept' && !erasesArrivals(current)) this.putOfRecord(decoded.id, { type: 'put', key: this.keys.history(decoded.id, event.local), value: encodeJson(`${KEPT_OP}${event.id}`) })
      else {
        this.erase.add(event.id)
        // Erased because of a redaction: the parents it names are learned all the same, so the
        // record is deleted with them as where this body came before the redaction (TaughtParents).
        const parents = current.tombstone?.op === 'redact' ? parentsTaught(current, decoded) : []
        if (parents.length > 0) {
          this.noteTeaching(decoded.id, event.id, decoded.kind, parents)
          this.teach(decoded.id, decoded.kind, parents)
        }
      }
      return
    }
    this.putOfRecord(decoded.id, { type: 'put', key: this.keys.history(decoded.id, event.local), value: encodeJson(`${opCode}${event.id}`) })
    let next = withTombstoneKind(current, result.state, decoded.kind)
    const redaction = operation.type === 'tombstone' && operation.op === 'redact'
    const skeletonParents = redaction ? parentIds({ ...emptyRecordState(decoded.id, decoded.kind), tombstone: { op: 'redact', record: operation.record, stamp, skeleton: operation.skeleton ?? {} } }) : []
    // A redaction that an inferred deletion beats, the first to meet it, gives it its kind, as it
    // does where it came first (the deletion then beat the redacted record, keeping its kind):
    // the deletion keeps the bodies that showed the other kind no longer (they are erased below).
    if (redaction && next.kind !== decoded.kind && deletedByParentOnly(current) && !erasesArrivals(current)) next = { ...next, kind: decoded.kind }
    if (redaction && !namedDeletion(current) && !isDeleted(next)) {
      // A redacted record keeps every parent it named (its fields' or skeleton's, the incoming
      // skeleton's, and those of the bodies the redaction erases, learned at the seal or, applied
      // again, from this event's stored teachings): it is deleted with any of them.
      const stored = (this.teachings?.get(event.id) ?? []).filter((teaching) => teaching.id === decoded.id).flatMap((teaching) => teaching.parents)
      next = withParentsNamed(next, [...parentIds(current), ...skeletonParents, ...stored])
      if (current.tombstone === undefined && !this.toLearn.has(decoded.id)) this.toLearn.set(decoded.id, { event, skeletonParents })
    }
    this.put(decoded.id, next)
    if (operation.type !== 'tombstone') return
    // A redaction loses to a deletion, but asks for the content erased all the same: a record
    // deleted through its parent with its bodies kept loses those, as it would had the redaction
    // come first; content arriving later is erased too, there as here (erasesArrivals).
    if (operation.op === 'redact' && deletionBodies(current) === 'kept') {
      // What the kept bodies named, noted where a rebuild meets it (TaughtParents): the record is
      // deleted already, so it learns nothing now.
      const content = await this.takeContentPeek(decoded.id)
      await this.noteContentTeachings(decoded.id, event, skeletonParents, content[1])
      await this.purgeContent(decoded.id, 'erase', content)
      this.purgedByRedaction.add(decoded.id)
    } else if (operation.op === 'redact') this.redactedInRun.add(decoded.id)
    for (const record of derived) {
      const state = this.loaded.get(record.id) ?? emptyRecordState(record.id, record.kind)
      const tombstoned = applyRecordOperation(state, { type: 'tombstone', op: 'delete', record: operation.record, derivedFrom: decoded.id }, {
        stamp, vector, mergeClassOf: () => undefined,
      })
      if (tombstoned.ignored) continue
      this.putOfRecord(record.id, { type: 'put', key: this.keys.history(record.id, event.local), value: encodeJson(`${TOMBSTONE_OP}${event.id}`) })
      this.put(record.id, withTombstoneKind(state, tombstoned.state, record.kind))
    }
  }

  /**
   * The earliest create, of either kind, among the events a record deleted only through its
   * parent keeps in its history (stored, or written by this batch): what its state held before
   * the deletion took its content, and what the kind rule compares a create of another kind
   * with (kind-decision.ts). Without it any such create won, and a redaction arriving before the
   * replay that would have undone that erased the kept creates, so the replay took the
   * redaction's kind: a record the cuts decided.
   */
  private async earliestKeptCreate(id: string): Promise<Stamp | undefined> {
    const entries = new Map<string, string>()
    for (const [key, value] of await this.entriesIn(this.keys.historyPrefix(id))) entries.set(key, decodeJson(value) as string)
    for (const write of this.recordPuts.get(id) ?? []) {
      if (write.type === 'put' && !this.dropped.has(write) && write.key.startsWith(this.keys.historyPrefix(id))) entries.set(write.key, decodeJson(write.value) as string)
    }
    let earliest: Stamp | undefined
    for (const entry of new Set(entries.values())) {
      if (entry.startsWith(TOMBSTONE_OP)) continue
      const event = await this.source.get(entry.slice(1))
      const decoded = event?.body ? decodeMemoryOperation(event.body) : undefined
      if (!event || decoded?.operation.type !== 'create' || decoded.id !== id) continue
      const { header } = event
      const stamp: Stamp = { wall: header.clock.wall, logical: header.clock.logical, author: header.author, seq: header.seq }
      if (earliest === undefined || compareStamps(stamp, earliest) < 0) earliest = stamp
    }
    return earliest
  }

  /**
   * Deletes, with a derived tombstone, every record whose parent is deleted; repeats through
   * referrers. The seal looks at every record the run changed. An `early` close (before a
   * redaction, applyEvent) looks only at those changed since the last close and reports a
   * deletion's referrers only when it is new to the run or its bodies changed: a record looked at
   * before and not deleted then is reached again through a parent deleted since (its referrers
   * are queued) or by changing itself. Without that, a catch-up of many redactions paid for the
   * whole run at each one (8,000 took 45 s instead of 7.5 s).
   */
  private async closeDeletions(early = false): Promise<void> {
    let frontier = [...(early ? this.changedSinceClose : this.runChanged)]
    this.changedSinceClose.clear()
    const reported = new Set<string>()
    while (frontier.length > 0) {
      const parentsOf = new Map<string, string[]>()
      for (const id of frontier) {
        const state = this.loaded.get(id)
        if (!state || this.waitsForKindReplay(id)) continue
        // A deleted record is looked at again only as a link that keeps its bodies.
        if (isDeleted(state) && !(isLink(state) && keepsInferredBodies(state))) continue
        const parents = parentIds(state)
        if (parents.length > 0) parentsOf.set(id, parents)
      }
      await this.load([...parentsOf.values()].flat())
      for (const [id, parents] of parentsOf) {
        const state = this.loaded.get(id) as RecordState
        const deleted = parents.map((parent) => this.loaded.get(parent)).filter((parent): parent is RecordState => isDeleted(parent))
        if (deleted.length === 0) continue
        const bodiesKept = isLink(state) && linkBodiesKept(deleted)
        if (isDeleted(state)) {
          // A link whose bodies were kept: erased once a deletion names one of its ends.
          if (!bodiesKept) {
            const { keptEnds: _ends, ...tombstone } = state.tombstone as Tombstone
            this.put(id, { ...state, tombstone })
          }
          continue
        }
        // Its ends as they stand (a redacted link's are in its skeleton), ids only: the same
        // whichever of its creates this replica applied first.
        const next = applyRecordOperation(state, { type: 'tombstone', op: 'delete', record: {}, inferred: true, ...(bodiesKept ? { keptEnds: [...new Set(parents)].sort() } : {}) }, {
          stamp: INFERRED_STAMP, vector: {}, mergeClassOf: () => undefined,
        })
        this.put(id, next.state)
      }
      // Records deleted in this run: whoever references them must be looked at again. The stored
      // reference index has the referrers as of the batch's start; those the batch itself
      // created or changed (in an earlier run of it) are found in its states.
      // Each deleted record's referrers are queued once per seal (a reference cycle would
      // otherwise go round for ever).
      // Deleted since the run began (as of its last seal, or the batch's start): a tombstone
      // landing on a record an earlier run of this batch deleted changes nothing for its referrers.
      // So are records whose kept bodies a deletion naming them erased now: a link under them
      // keeps its bodies no longer.
      const newlyDeleted = frontier.filter((id) => {
        if (reported.has(id) || !isDeleted(this.loaded.get(id))) return false
        if (early && this.reportedInRun.get(id) === deletionBodies(this.loaded.get(id))) return false
        const before = this.deletedBefore.get(id) ?? deletionBodies(this.original.get(id))
        return before === 'none' || (before === 'kept' && deletionBodies(this.loaded.get(id)) === 'erased')
      })
      for (const id of newlyDeleted) {
        reported.add(id)
        this.reportedInRun.set(id, deletionBodies(this.loaded.get(id)))
      }
      const next: string[] = []
      const queued = new Set<string>()
      // A referrer looked at earlier in this run is looked at again: what it names is deleted now.
      const revisit = (referrer: string): void => {
        if (queued.has(referrer)) return
        queued.add(referrer)
        this.runTouched.add(referrer)
        next.push(referrer)
      }
      const inBatch = newlyDeleted.length > 0 ? this.referrersInBatch() : undefined
      // The stored referrers of the deleted records, all in a few scans (prefix-scan.ts), then taken in order.
      const stored = newlyDeleted.length > 0 ? await scanPrefixes(this.storage, this.keys.allReferencesPrefix, newlyDeleted.map(escapeKeyPart), false, { sparse: this.isSpread(newlyDeleted.length) }) : undefined
      newlyDeleted.forEach((id) => {
        for (const key of stored?.get(escapeKeyPart(id)) ?? []) revisit(idFromKey(key))
        for (const referrer of inBatch?.get(id) ?? []) revisit(referrer)
      })
      await this.load(next)
      frontier = next
    }
  }

  /**
   * Target → the records changed in this batch that reference it (not in the stored index yet).
   * Kept up to date incrementally: only records changed since the last call are looked at again.
   */
  private referrersInBatch(): ReadonlyMap<string, ReadonlySet<string>> {
    for (const id of this.referencesStale) {
      for (const target of this.referencesOf.get(id) ?? []) this.referrersOf.get(target)?.delete(id)
      const state = this.loaded.get(id)
      // As the stored index (q:r) lists them, so a batch revisits what a rebuild revisits.
      const targets = state ? referencedIds(state) : []
      this.referencesOf.set(id, targets)
      for (const target of targets) {
        const set = this.referrersOf.get(target)
        if (set) set.add(id)
        else this.referrersOf.set(target, new Set([id]))
      }
    }
    this.referencesStale.clear()
    return this.referrersOf
  }

  /** Materializes what this run touched: versions and indexes follow the views as of the run's end. */
  private async seal(): Promise<void> {
    const learned = await this.learnFromRedactedContent()
    await this.closeDeletions()
    const touched = [...this.runTouched]
    this.runTouched.clear()
    this.runChanged.clear()
    this.reportedInRun.clear()
    // What the loop below may purge (deleted or redacted records): their stored content, read
    // while the views load. Handled here so a failure no purge awaits is not an unhandled rejection.
    const purgeable = touched.filter((id) => this.loaded.get(id)?.tombstone !== undefined)
    const unread = purgeable.filter((id) => !learned?.has(id))
    const reads = unread.length > 0 ? this.readContents(unread) : undefined
    this.contentReads = learned === undefined ? reads : (reads ?? Promise.resolve(new Map())).then((more) => new Map([...learned, ...more]))
    this.contentReads?.catch(() => undefined)
    await this.load(touched.flatMap((id) => {
      const state = this.loaded.get(id)
      return state ? dependencyIds(state) : []
    }))
    const unseen = touched.filter((id) => !this.views.has(id))
    const stored = await this.storage.getMany(unseen.map((id) => this.keys.view(id)))
    unseen.forEach((id, i) => {
      const bytes = stored[i]
      const view = { bytes, view: bytes ? decodeView(bytes) : undefined }
      this.views.set(id, view)
      this.startViews.set(id, view)
    })
    for (const id of touched) {
      const state = this.loaded.get(id)
      if (!state) continue
      const now = materialize(state, (other) => isDeleted(this.loaded.get(other)))
      this.materialized.set(id, now)
      const bytes = now.view ? encodeView(now.view) : undefined
      const previous = this.views.get(id)?.view
      const wasRedacted = this.redacted.get(id) ?? this.original.get(id)?.tombstone?.op === 'redact'
      this.diffIndexes(previous, wasRedacted, now.view, now.status === 'redacted')
      this.views.set(id, { bytes, view: now.view })
      this.redacted.set(id, now.status === 'redacted')
      // Deletion and redaction purge content in the run where they take effect, so versions are
      // keyed the same whether the log is applied in batches or all at once.
      const before = this.deletedBefore.get(id) ?? deletionBodies(this.original.get(id))
      const after: DeletionBodies = now.status !== 'deleted' ? 'none' : keepsInferredBodies(state) ? 'kept' : 'erased'
      this.deletedBefore.set(id, after)
      if (now.status === 'deleted') {
        // A redaction applied in this run, before the deletion this seal found through a parent,
        // erases the content all the same, as it does when a cut falls between the two (its own
        // seal purges) or when the deletion was found first (applyEvent); what arrived after the
        // deletion was found, kept as `k`, stays, as after such a cut ('spare'). Bodies a
        // redaction in this run already erased are not marked kept again (what the purge would
        // read is gone); a deletion naming the record still erases what came after them.
        const purged = after === 'kept' && this.purgedByRedaction.has(id)
        const mode: PurgeMode = after !== 'kept' ? 'erase' : this.redactedInRun.has(id) ? 'spare' : 'keep'
        if (after !== before && before !== 'erased' && !purged) await this.purgeContent(id, mode)
        continue
      }
      // A restarted record (a replay) starts unredacted whatever was stored: its redaction erases
      // what the replay placed before it (a late body that teaches, Projection.bodiesFilled).
      const redactedBefore = this.unsealedRestarts.delete(id) ? false : wasRedacted
      if (now.status === 'redacted' && !redactedBefore) await this.purgeContent(id)
      // A restarted record no event brought back has no versions, as in a rebuild.
      if (this.features.asOf && !(bytes === undefined && this.restarted.has(id) && isBlank(state))) {
        const run = this.replay !== undefined && !this.replay.records.has(id) ? this.replay.resume.runStart : this.runStart
        this.putOfRecord(id, { type: 'put', key: this.keys.version(id, run), value: bytes ?? EMPTY_VIEW })
      }
    }
    this.redactedInRun.clear()
    this.purgedByRedaction.clear()
    this.contentReads = undefined
  }

  /** During a seal: the stored content of the records it may purge (readContents), by id. */
  private contentReads: Promise<Map<string, StoredContent>> | undefined

  /** Records whose kept bodies a redaction erased since the last seal. */
  private readonly purgedByRedaction = new Set<string>()

  /** Records a redaction reached, not deleted, since the last seal. */
  private readonly redactedInRun = new Set<string>()

  /** What each sealed record's deletion had done to its bodies as of its last seal. */
  private readonly deletedBefore = new Map<string, DeletionBodies>()

  /** Everything to write, the bodies to erase, what changed for subscribers, how many views were added (net), and whether a q:u entry was. */
  async finish(meta: { erasing: readonly string[] }): Promise<{ writes: StorageWrite[]; erase: EventId[]; changes: RecordChange[]; viewDelta: number; unnamedAdded: boolean }> {
    let viewDelta = 0
    let unnamedAdded = false
    for (const id of this.restarted) if (!this.materialized.has(id)) this.runTouched.add(id)
    if (this.runTouched.size > 0) await this.seal()
    const textChanges: TextChange[] = []
    const changes: RecordChange[] = []
    for (const [id, current] of this.views) {
      const state = this.loaded.get(id)
      const sealed = this.materialized.get(id)
      if (!state || !sealed) continue
      const bytes = current.bytes
      const before = this.original.get(id)
      if (this.changed.has(id)) {
        const encoded = isBlank(state) ? undefined : encodeState(state)
        this.writes.push(encoded ? { type: 'put', key: this.keys.state(id), value: encoded } : { type: 'del', key: this.keys.state(id) })
        // A deletion the log cannot show is kept apart too, so a rebuild can start from it
        // (projection-keys.ts, q:z): one inferred from a parent whose bodies were erased (a link).
        // Once an event names the deletion (a direct or derived delete beats an inferred one), the
        // log shows it: the entry goes, as on a replica that applied that event first.
        if (encoded && needsKeeping(state)) this.writes.push({ type: 'put', key: this.keys.derivedDeletion(id), value: encoded })
        else if (before !== undefined && needsKeeping(before)) this.writes.push({ type: 'del', key: this.keys.derivedDeletion(id) })
        // Deletions no event names yet, for an admin replica to name (q:u).
        const unnamed = awaitsNaming(state)
        const wasUnnamed = before !== undefined && awaitsNaming(before)
        if (unnamed && (!wasUnnamed || before.kind !== state.kind)) {
          this.writes.push({ type: 'put', key: this.keys.unnamedDeletion(id), value: encodeJson(state.kind) })
          unnamedAdded ||= !wasUnnamed
        } else if (!unnamed && wasUnnamed) this.writes.push({ type: 'del', key: this.keys.unnamedDeletion(id) })
      }
      this.diffReferences(id, before, state)
      this.writeConflict(id, sealed, before)
      const startView = this.startViews.get(id)
      const start = startView?.bytes
      const same = start !== undefined && bytes !== undefined && Buffer.compare(start, bytes) === 0
      const wasRedacted = before?.tombstone?.op === 'redact'
      const redacted = state.tombstone?.op === 'redact'
      if (this.features.fullText) {
        const previousText = searchableText(startView?.view, wasRedacted)
        const nextText = searchableText(current.view, redacted)
        if (previousText !== nextText) textChanges.push({ id, ...(previousText !== undefined ? { previous: previousText } : {}), ...(nextText !== undefined ? { next: nextText } : {}) })
      }
      if (bytes && !same) this.writes.push({ type: 'put', key: this.keys.view(id), value: bytes })
      else if (!bytes && start) this.writes.push({ type: 'del', key: this.keys.view(id) })
      viewDelta += (bytes ? 1 : 0) - (start ? 1 : 0)
      // A record's own tombstone is stored under its id (one derived from a parent's is not).
      const ownTombstone = (tombstone: Tombstone | undefined): tombstone is Tombstone => tombstone !== undefined && !tombstone.derivedFrom && tombstone.record.targetID === id
      if (state.tombstone !== before?.tombstone) {
        if (ownTombstone(state.tombstone)) this.writes.push({ type: 'put', key: this.keys.tombstone(id), value: encodeJson(state.tombstone.record) })
        else if (ownTombstone(before?.tombstone)) this.writes.push({ type: 'del', key: this.keys.tombstone(id) })
      }
      const deletedNow = isDeleted(state) && !isDeleted(before)
      const action: ChangeAction | undefined = deletedNow ? (start ? 'deleted' : undefined)
        : same ? undefined
        : redacted ? (wasRedacted ? undefined : 'redacted')
        : bytes ? (start ? 'updated' : 'created')
        : start && !isDeleted(state) ? 'withdrawn' : undefined
      if (action) changes.push({ id, kind: state.kind as RecordKind, action })
    }
    await this.writeTeachings()
    if (textChanges.length > 0) for (const write of await this.textIndex.planUpdates(textChanges)) this.writes.push(write)
    const erase = [...new Set([...meta.erasing, ...this.erase])] as EventId[]
    const writes = this.dropped.size === 0 ? this.writes : this.writes.filter((write) => !this.dropped.has(write))
    return { writes, erase, changes, viewDelta, unnamedAdded }
  }

  /**
   * The teachings this batch noted (q:p), unless their record's deletion is named by now: the log
   * then shows that deletion, and a record whose deletion an event names stores none, as on a
   * replica that applied that event first (the stored ones go too).
   */
  private async writeTeachings(): Promise<void> {
    for (const [key, { id, kind, parents }] of this.taught) {
      if (namedDeletion(this.loaded.get(id))) continue
      this.writes.push({ type: 'put', key, value: encodeJson({ kind, parents: [...parents].sort() }) })
    }
    for (const id of this.changed) {
      const state = this.loaded.get(id)
      const before = this.original.get(id)
      if (!namedDeletion(state) || namedDeletion(before) || !(before !== undefined && redactionErases(before))) continue
      for (const key of await this.keysIn(this.keys.taughtParentsPrefix(id))) this.writes.push({ type: 'del', key })
    }
  }

  /** After the writes are stored: what the cache may now hold for the records this batch sealed. */
  cacheStoredRecords(): void {
    for (const [id, current] of this.views) {
      if (!this.materialized.has(id)) continue
      const state = this.loaded.get(id)
      this.cache.set(id, { state: state && isBlank(state) ? undefined : state, viewBytes: current.bytes, view: current.view })
    }
  }

  private diffReferences(id: string, before: RecordState | undefined, after: RecordState): void {
    const previous = new Set(before ? referencedIds(before) : [])
    const next = new Set(referencedIds(after))
    for (const target of previous) if (!next.has(target)) this.writes.push({ type: 'del', key: this.keys.reference(target, id) })
    for (const target of next) if (!previous.has(target)) this.writes.push({ type: 'put', key: this.keys.reference(target, id), value: EMPTY_VIEW })
  }

  /** Index entries follow the view: keys it no longer has go, and every entry carries its facets. */
  private diffIndexes(oldView: RecordView | undefined, wasRedacted: boolean, newView: RecordView | undefined, redacted: boolean): void {
    const previous = new Set(indexKeysOf(oldView, wasRedacted, this.keys))
    const next = new Set(indexKeysOf(newView, redacted, this.keys))
    for (const key of previous) if (!next.has(key)) this.writes.push({ type: 'del', key })
    if (!newView) return
    const facets = encodeFacets(facetsOf(newView, redacted))
    const unchanged = oldView !== undefined && Buffer.compare(encodeFacets(facetsOf(oldView, wasRedacted)), facets) === 0
    for (const key of next) if (!unchanged || !previous.has(key)) this.writes.push({ type: 'put', key, value: facets })
  }

  private writeConflict(id: string, now: Materialized, before: RecordState | undefined): void {
    if (now.conflict) {
      const { winner, candidates, reason } = now.conflict
      this.writes.push({
        type: 'put',
        key: this.keys.conflict(id),
        value: encodeJson({ id, winner: winner.by, reason, candidates: candidates.map((c) => ({ by: c.by, at: c.at, validFrom: c.validFrom, confidence: c.confidence, source: c.source, author: c.stamp.author })) }),
      })
    } else if (before && before.supersessions.length > 1) {
      this.writes.push({ type: 'del', key: this.keys.conflict(id) })
    }
  }

  /**
   * A deleted or redacted record: no versions to read as-of, every body that carried its content
   * erased, and its history reduced to the tombstone events (what a replica that never saw the
   * content has). With `keep` (a deletion found through a parent, keepsInferredBodies) the
   * content events stay, marked kept instead of erased. With `spare` (a redaction in the same run
   * as such a deletion) content events are erased and those already kept stay kept: they arrived
   * after the deletion was found (applyEvent), where the redaction no longer reaches.
   */
  private async purgeContent(id: string, mode: PurgeMode = 'erase', content?: StoredContent): Promise<void> {
    const versions = this.keys.versionPrefix(id)
    const [versionKeys, historyEntries] = content ?? await this.takeContent(id)
    for (const key of versionKeys) this.writes.push({ type: 'del', key })
    const contentEntry = (value: Uint8Array): EventId | undefined => {
      const entry = decodeJson(value) as string
      return entry.startsWith(CONTENT_OP) || entry.startsWith(OTHER_KIND_OP) || (mode === 'erase' && entry.startsWith(KEPT_OP)) ? entry.slice(1) as EventId : undefined
    }
    const purged: { key: string; event: EventId }[] = []
    for (const [key, value] of historyEntries) {
      const event = contentEntry(value)
      if (event) purged.push({ key, event })
    }
    // Not yet stored: versions are taken back, and history entries that carry content.
    for (const write of this.recordPuts.get(id) ?? []) {
      if (write.type !== 'put' || this.dropped.has(write)) continue
      if (write.key.startsWith(versions)) this.dropped.add(write)
      else {
        const event = contentEntry(write.value)
        if (event) {
          this.dropped.add(write)
          purged.push({ key: write.key, event })
        }
      }
    }
    for (const { key, event } of purged) {
      if (mode === 'keep') this.putOfRecord(id, { type: 'put', key, value: encodeJson(`${KEPT_OP}${event}`) })
      else {
        this.erase.add(event)
        this.writes.push({ type: 'del', key })
      }
    }
  }

  /**
   * A record's stored version keys and history entries: read by the seal (contentReads), or now.
   * None for a record this batch restarted: it deletes them all, and what the replay writes
   * again is among its own puts (a stale entry turned into a kept one would outlive the replay).
   */
  private async takeContent(id: string): Promise<StoredContent> {
    if (this.restarted.has(id)) return [[], []]
    const read = await this.contentReads
    const content = read?.get(id)
    if (content === undefined) return Promise.all([this.keysIn(this.keys.versionPrefix(id)), this.entriesIn(this.keys.historyPrefix(id))])
    read?.delete(id)
    return content
  }

  /** A record's stored version keys and history entries, read now, for a purge that follows at once. */
  private async takeContentPeek(id: string): Promise<StoredContent> {
    if (this.restarted.has(id)) return [[], []]
    return Promise.all([this.keysIn(this.keys.versionPrefix(id)), this.entriesIn(this.keys.historyPrefix(id))])
  }

  /**
   * Whether `count` records are a small share of the space's (under a third): ids are random, so
   * their keys lie far apart and one range read each beats a scan through the others
   * (prefix-scan.ts, ScanOptions.sparse).
   */
  private isSpread(count: number): boolean {
    return count * 3 < this.viewsAtStart + this.newRecords
  }

  /**
   * The stored version keys and history entries of many records: two scans over their prefixes
   * where they are a large share of the records, else one range read each, 64 at a time
   * (prefix-scan.ts, isSpread). Storage is not written while a batch runs, so
   * what is read early is what a read at the purge would find.
   */
  private async readContents(ids: readonly string[]): Promise<Map<string, StoredContent>> {
    const parts = ids.map(escapeKeyPart)
    const sparse = this.isSpread(ids.length)
    const [versions, history] = await Promise.all([
      scanPrefixes(this.storage, this.keys.allVersionsPrefix, parts, false, { sparse }),
      scanPrefixes(this.storage, this.keys.allHistoryPrefix, parts, true, { sparse }),
    ])
    return new Map(ids.map((id, i) => [id, [versions.get(parts[i] as string) ?? [], history.get(parts[i] as string) ?? []]]))
  }

  /** The stored keys under `prefix`. */
  private async keysIn(prefix: string): Promise<string[]> {
    const out: string[] = []
    for await (const key of this.storage.keys({ gte: prefix, lt: this.keys.end(prefix) })) out.push(key)
    return out
  }

  /** The stored entries under `prefix`. */
  private async entriesIn(prefix: string): Promise<[string, Uint8Array][]> {
    const out: [string, Uint8Array][] = []
    for await (const entry of this.storage.entries({ gte: prefix, lt: this.keys.end(prefix) })) out.push(entry)
    return out
  }
}

/**
 * Memory: the public engine API. One replica of one space: typed records written as signed
 * events, merged by CRDT rules, read through the persisted projection.
 *
 *   const memory = await Memory.open({ path: './.cairn' })      // or {} for in memory
 *   const id = await memory.remember({ kind: 'episode', summary: 'Prefers tea' })
 *   await memory.search('tea')
 *
 * Every write validates its input first (InputError naming the field), appends one event (or
 * one atomic batch), then applies it to the projection before returning, so a read right after
 * a write sees it. Other replicas' events come in through `ingest`.
 */
import { assertArray, assertBoolean, assertInteger, assertNonEmptyString, assertNumber, assertObject, assertOptions, assertString, describeType } from '../assert.js'
import type { EventEnvelope, IngestResult, JsonValue, Right, SpaceLog, VersionVector, CryptoProvider, Identity, LogStore } from '../log/index.js'
import { assertPublicKey } from '../log/ids.js'
import { Mutex } from '../log/mutex.js'
import { relayUrlProblem } from '../sync/relay-url.js'
import { spliceText, editText as editTextDocument, baseTextDocument, textOf, CLAIM_CLASSES, type ClaimClass } from '../crdt/index.js'
import { AuthError, InputError } from '../errors.js'
import { createToken, decodeToken, TOKEN_PREFIX, type TokenRequest } from '../auth/index.js'
import {
  formatTimestamp, hashParts, isExpired, isTombstoneBody, kindSpec, MEMORY_OPS, encodeChanges, normalizeTimestamp, refuseWriteOnce, TOMBSTONE_ID_PREFIX, validatePatch, type ProjectionFeatures,
  isRecordKind, type ConflictEntry, type MemoryRecord, type PatchInput, type RecordKind, type RecordView,
} from '../projection/index.js'
import { nameBlockedOrphans, nameInferredDeletions } from './deletion-naming.js'
import { checkProjection, type ProjectionCheck, type ProjectionCheckOptions } from './projection-check.js'
import { emptyDerivedBlock, planForget } from './forget-plan.js'
import { openEngine, type Engine, type MemoryOptions } from './memory-engine.js'
import { MemoryCore, refuseOtherKind, refuseTombstoned } from './memory-core.js'
import { createEntry, nameOversizedRecord, onHeldTexts, redactionSkeleton, refuseEndBeforeStart, signTombstone, type Tombstone } from './record-entries.js'
import * as bulk from './bulk-writes.js'
import { writeTimesOf } from './write-times.js'
import { listWithheld, noteWithheld, relayName, type WithheldReport, type WithheldWrite } from './withheld-writes.js'
import type { SyncClient, SyncOptions } from '../sync/sync-client.js'
import type { ExportOptions, ExportResult, ImportOptions, ImportReport } from '../bundle/bundle-io.js'
import type {
  ForgetOptions, GetOptions, HistoryItem, IngestDeferredOptions, LookupOptions, LookupResult, MemoryChange, RememberManyOptions, QueryInput, QueryPage, RecordStatus,
  RecordUpdate, RememberInput, SearchHit, SearchOptions, SubscribeOptions, SupersedeOptions, TextEditOptions,
} from './memory-types.js'
import { parseFilter, parseAsOf, MAX_QUERY_LIMIT, DEFAULT_QUERY_LIMIT } from './memory-inputs.js'

export type { MemoryOptions } from './memory-engine.js'
export type { Tombstone } from './record-entries.js'

export class Memory {
  private readonly engine: Engine

  private constructor(private readonly core: MemoryCore) {
    this.engine = core.engine
  }

  /**
   * Opens a replica. With `path`, a Cairn home directory (created on first use); without, in
   * memory. With `space`, a new replica of an existing space (it learns the genesis from its
   * first ingest); otherwise a new space owned by this replica's identity.
   */
  static async open(options: MemoryOptions = {}): Promise<Memory> {
    const engine = await openEngine(options)
    try {
      return new Memory(await MemoryCore.open(engine))
    } catch (error) {
      await engine.store.close()
      throw error
    }
  }

  /**
   * A Memory over one space of a store shared with other spaces (a relay hosts many). Closing it
   * leaves the store open.
   */
  static async attach(store: LogStore, space: string, identity: Identity, features?: ProjectionFeatures): Promise<Memory> {
    return new Memory(await MemoryCore.open({ store, log: await store.openSpace(space), identity, sharedStore: true }, features))
  }

  /** The space id. */
  get space(): string {
    return this.engine.log.space
  }

  /** This replica's author key (Ed25519 public key, hex). */
  get author(): string {
    return this.engine.identity.author
  }

  /** The underlying signed log, for sync and inspection. */
  get log(): SpaceLog {
    return this.engine.log
  }

  /** This replica's key (it signs every event this replica writes, and sync handshakes). */
  get identity(): Identity {
    return this.engine.identity
  }

  get crypto(): CryptoProvider {
    return this.engine.store.crypto
  }

  /**
   * Syncs with a relay: catches up both ways, then keeps pushing and receiving new events
   * (unless `live: false`), reconnecting with backoff. Returns the running session; await
   * `session.synced()` to wait until both sides are caught up.
   */
  async sync(url: string, options: SyncOptions = {}): Promise<SyncClient> {
    this.core.refuseClosed(true)
    // Sync sits above the engine; loading it here (not at the top) keeps the import graph acyclic.
    const { SyncClient, readSyncOptions } = await import('../sync/sync-client.js')
    return new SyncClient(this, relayUrl(url), readSyncOptions(options)).start()
  }

  /**
   * Exports this replica's memory to `target`: a Portable Memory `.mem` directory (default), a
   * native log snapshot (`format: 'log'`: every signed event, verifiable offline) or a PAM
   * artifact (`format: 'pam'`). Written whole or not at all; the target must not hold anything.
   * A record no `.mem` line can hold (a peer's raw event; the API never stores one) is left out
   * of a `.mem` export and named in its `skipped`, with the codec's refusal.
   */
  async export(target: string, options: ExportOptions = {}): Promise<ExportResult> {
    // Bundles sit above the engine; loading them here keeps the import graph acyclic.
    const { exportMemory } = await import('../bundle/bundle-io.js')
    await this.core.settled()
    return exportMemory(this, assertNonEmptyString(target, 'target'), options)
  }

  /**
   * Imports a `.mem` bundle, log snapshot or PAM artifact (detected from `source`), or another
   * system's export with `from` (mem0, chatgpt, claude-export, …). Everything is checked before
   * anything is written; deletions apply first and nothing deleted comes back; importing the
   * same thing again writes nothing. Imported memory is ordinary signed events: it syncs.
   */
  async import(source: string, options: ImportOptions = {}): Promise<ImportReport> {
    const { importMemory } = await import('../bundle/bundle-io.js')
    return importMemory(this, assertNonEmptyString(source, 'source'), options)
  }

  /**
   * Stores a record of any Portable Memory kind and returns its id. Fields left out take the
   * documented defaults (an episode needs only `summary` or `details`). Remembering an existing
   * id merges into it; remembering a deleted id, or an id that is a record of another kind, is refused.
   * A fact or edge whose `tValidTo` is before its `tValidFrom` is refused here (OUT_OF_RANGE);
   * `rememberMany`, the path of imports and restores, takes records as they were exported.
   * @throws InputError UNKNOWN_KIND, MISSING_FIELD, WRONG_TYPE, OUT_OF_RANGE, … naming the field; FORGOTTEN, ID_TAKEN;
   *   LimitError BODY_TOO_LARGE naming the largest field when the record does not fit one event (one call, one
   *   event; `rememberMany` splits such a record across events instead)
   */
  async remember(record: RememberInput): Promise<string> {
    const built = createEntry(this.core, record)
    refuseEndBeforeStart(built)
    return await this.creating.run(async () => {
      const state = await this.core.state(built.id)
      if (state?.tombstone) refuseTombstoned(state.tombstone.op, 'id')
      refuseOtherKind(state?.kind, built.kind, 'id')
      const { entry } = onHeldTexts(built, state?.texts, this.core.author, this.core.eventNow())
      await this.core.refuseDeletedParents([entry], () => undefined)
      await this.core.append([{ op: entry.op, data: entry.data }]).catch((error: unknown) => {
        throw nameOversizedRecord(error, [entry])
      })
      return entry.id
    })
  }

  /**
   * Creates (remember, rememberMany, supersede) and tombstones (forget, redact, expire) run one
   * at a time on a replica: each checks what the store holds of its ids (another kind, a
   * successor, a deletion) and then appends, and two started together would both pass the check.
   */
  private readonly creating = new Mutex()

  /**
   * Stores many records at once: all are validated first, then written as one atomic batch of
   * events under one signature (the bulk path for imports). Returns their ids in order. A record
   * too large for one event body goes as its create and further events of the record in the same
   * batch (create-split.ts); only a plain field too large for any event is refused.
   * `options.madeAt` (whole ms since the epoch, at least 0) says when the records' source was made, for imports
   * (one time for all, or a list with one per record, `undefined` for a record with none):
   * the events carry it, and `lookup(ids, { writeTimes: true })` then tells that time for the
   * values they wrote (at most the write's own), so a later import of an older source leaves
   * them be and one of a newer source writes over them (merge-records.ts). Over a held record,
   * a value given as held, written here since the source was made, keeps its write's time.
   * @throws InputError naming the record index and field; LimitError BODY_TOO_LARGE naming
   *   `records[i].<kind>.<field>`; nothing is written on any refusal
   */
  async rememberMany(records: readonly RememberInput[], options: RememberManyOptions = {}): Promise<string[]> {
    const given = assertOptions(options, ['madeAt'], 'options').madeAt
    const madeAt = given === undefined ? undefined : readMadeAt(given, records)
    // An importer's kept times (merge-records.ts), under a key of its own outside the public options.
    const kept = madeAt === undefined ? undefined : (options as bulk.RememberImportOptions)[bulk.KEPT_TIMES]
    return this.creating.run(() => bulk.rememberMany(this.core, records, madeAt, kept))
  }

  /**
   * Keeps lines of a record kind Cairn does not know (Portable Memory passthrough) verbatim, so
   * they sync and export again byte for byte. Lines already kept are not added twice.
   * @throws InputError naming `kind` (a Cairn kind, `cairnExtensions`, or no safe file-name stem:
   *   BAD_KIND_NAME) or `lines[i]` (not a string, a newline: BAD_LINE, a lone surrogate:
   *   BAD_STRING), what a `.mem` export could not write; nothing is written then
   */
  rememberForeign(kind: string, lines: readonly string[]): Promise<void> {
    return bulk.rememberForeign(this.core, kind, lines)
  }

  /** Lines of unknown kinds kept by rememberForeign, per kind, in first-seen order. */
  async foreignLines(): Promise<Record<string, string[]>> {
    await this.core.settled()
    return this.core.reader.foreignLines()
  }

  /**
   * Applies Portable Memory tombstones from elsewhere (a bundle): each deletes or redacts its
   * target and the records its `derived` block names, keeping the tombstone record as it is
   * (its id and signature). Deleting what was never here still blocks it from ever arriving.
   */
  importTombstones(
    tombstones: readonly { readonly [key: string]: JsonValue }[],
    options: { readonly skeletons?: ReadonlyMap<string, { readonly [key: string]: JsonValue }> } = {},
  ): Promise<number> {
    return bulk.importTombstones(this.core, tombstones, assertOptions(options, ['skeletons'], 'options').skeletons as ReadonlyMap<string, { readonly [key: string]: JsonValue }> | undefined)
  }

  /**
   * For importers (mergeRecords): deletes, with an admin's naming tombstone, records a bundle
   * carried under a parent deleted here, so what names them here goes with them as if they had
   * arrived before the deletion. Only ids this replica holds nothing of are deleted (a held
   * record is left alone: `forget` deletes those). Writes nothing without `admin`.
   * @returns how many it deleted
   */
  async nameBlockedOrphans(records: readonly { readonly kind: RecordKind; readonly id: string }[]): Promise<number> {
    this.core.refuseClosed()
    return nameBlockedOrphans(this.core, assertArray(records, 'records').map((record, i) => {
      const { kind, id } = assertObject(record, `records[${i}]`)
      if (!isRecordKind(kind)) throw new InputError('UNKNOWN_KIND', 'unknown record kind', { field: `records[${i}].kind` })
      return { kind: kind as RecordKind, id: assertNonEmptyString(id, `records[${i}].id`) }
    }))
  }

  /**
   * Changes fields of a record: `set` and `unset` for plain fields and map keys
   * (`metadata.key`), `add`/`remove` for set fields (tags, aliases…), `increment` for counters.
   * Facts and edges are not overwritten in their temporal fields: use `supersede`.
   */
  async update(id: string, changes: PatchInput): Promise<void> {
    const view = await this.core.existing(id)
    const patch = validatePatch(view.kind, changes)
    refuseWriteOnce(view.kind, patch)
    await this.core.append([{ op: MEMORY_OPS.patch, data: { kind: view.kind, id: view.id, ...patch } as unknown as JsonValue }])
  }

  /**
   * Applies many updates as one atomic batch of events under one signature (the bulk path).
   * All are validated first; nothing is written if any is refused.
   * @throws InputError naming the update index and field
   */
  updateMany(updates: readonly RecordUpdate[]): Promise<void> {
    return bulk.updateMany(this.core, updates)
  }

  /**
   * Replaces a fact or edge by a new one: the new record is created and the old one closed
   * (tValidTo = the new one's tValidFrom, supersededBy = its id), atomically. Concurrent
   * supersedes of one record (on two replicas) are all kept and reported by `conflicts()`.
   * @throws InputError SUPERSEDED for a version already superseded here, NOT_TEMPORAL, ID_TAKEN, FORGOTTEN
   */
  supersede(id: string, replacement: { readonly [field: string]: unknown }, options: SupersedeOptions = {}): Promise<string> {
    // One at a time: two supersedes of one version started together would both see it current.
    return this.creating.run(() => this.supersedeNow(id, replacement, options))
  }

  private async supersedeNow(id: string, replacement: { readonly [field: string]: unknown }, options: SupersedeOptions): Promise<string> {
    const old = await this.core.existing(id)
    const spec = kindSpec(old.kind)
    if (!spec.validTime) throw new InputError('NOT_TEMPORAL', `${old.kind} records are not bi-temporal; use update`, { field: 'id' })
    if (typeof old.supersededBy === 'string') {
      throw new InputError('SUPERSEDED', `${id} was already superseded by ${old.supersededBy}; supersede the current version instead`, { field: 'id' })
    }
    const raw = assertOptions(options, ['validFrom', 'source'], 'options')
    // The old version's tValidTo becomes validFrom: it may not end before it began. By default
    // the replacement takes over now, or when the old version began if that is later (a clock
    // ahead of this one wrote it).
    const began = old[spec.validTime.from]
    const now = formatTimestamp(this.core.now())
    const validFrom = raw.validFrom !== undefined ? normalizeTimestamp(raw.validFrom, 'options.validFrom')
      : typeof began === 'string' && Date.parse(began) > Date.parse(now) ? began : now
    if (typeof began === 'string' && Date.parse(validFrom) < Date.parse(began)) {
      throw new InputError('OUT_OF_RANGE', `${validFrom} is before ${id} became valid (${began}); a replacement cannot take over earlier`, { field: 'options.validFrom' })
    }
    const source = raw.source === undefined ? 'asserted' : (assertString(raw.source, 'options.source') as ClaimClass)
    if (!CLAIM_CLASSES.includes(source)) throw new InputError('BAD_VALUE', `source must be one of ${CLAIM_CLASSES.join(', ')}`, { field: 'options.source' })
    const entry = createEntry(this.core, { ...assertObject(replacement, 'replacement'), kind: old.kind, [spec.validTime.from]: validFrom })
    // The replacement is a new record: an id already used (the old one's included) would merge into it.
    if (await this.core.state(entry.id)) throw new InputError('ID_TAKEN', `${entry.id} is already a record's id; a replacement takes a new one`, { field: 'replacement.id' })
    await this.core.refuseDeletedParents([entry], () => 'replacement')
    const confidence = typeof entry.fields.confidence === 'number' ? entry.fields.confidence : 0
    await this.core.append([
      { op: entry.op, data: entry.data },
      { op: MEMORY_OPS.supersede, data: { kind: old.kind, id: old.id, by: entry.id, at: validFrom, validFrom, confidence, source } },
    ])
    return entry.id
  }

  /**
   * Its reads and its append count as one write (close waits for it, or refuses it with CLOSED),
   * and it runs one at a time with creates: two forgets of one record started together would
   * both find it and both resolve, though only one tombstone can stay.
   */
  private tombstone(id: string, op: 'delete' | 'redact', options: ForgetOptions = {}, tombstoneId?: string): Promise<Tombstone> {
    return this.creating.run(() => this.core.write(() => this.tombstoneNow(id, op, options, tombstoneId)))
  }

  private async tombstoneNow(id: string, op: 'delete' | 'redact', options: ForgetOptions, tombstoneId: string | undefined): Promise<Tombstone> {
    // A delete may follow a redaction (delete beats redact); nothing may follow a delete.
    const view = op === 'delete' && (await this.status(id)) === 'redacted' ? (await this.core.reader.get(id)) as RecordView : await this.core.existing(id)
    const raw = assertOptions(options, ['reason'], 'options')
    const reason = raw.reason === undefined ? undefined : assertString(raw.reason, 'options.reason')
    const plan = op === 'delete' ? await planForget(this.engine.store.storage, this.core.projection.keys, view) : { derived: emptyDerivedBlock(), records: [] }
    const tombstone = signTombstone(this.core, { op, targetKind: view.kind, targetID: view.id, derived: plan.derived, ...(reason !== undefined ? { reason } : {}) }, tombstoneId)
    const data: Record<string, JsonValue> = { kind: view.kind, id: view.id, tombstone: tombstone as unknown as JsonValue, derived: plan.records as unknown as JsonValue }
    if (op === 'redact') data.skeleton = redactionSkeleton(view, tombstone.deletedAt) as JsonValue
    await this.core.append([{ op: op === 'delete' ? MEMORY_OPS.delete : MEMORY_OPS.redact, data }])
    return tombstone
  }

  /**
   * What deleting `id` would take with it here: the records derived only from it (facts of an
   * episode, edges whose only evidence it is, entities left with no edge, chunks of a resource,
   * edges of an entity, episodes derived only from it, records only it lists in
   * `metadata.cairn_derived`; forget-plan.ts). Empty for a record this replica does not show.
   */
  async forgetReach(id: string): Promise<{ readonly kind: RecordKind; readonly id: string }[]> {
    await this.core.settled()
    const view = await this.core.reader.get(assertNonEmptyString(id, 'id'))
    return view ? (await planForget(this.engine.store.storage, this.core.projection.keys, view)).records : []
  }

  /**
   * Deletes a record for good, with what was derived only from it. The id never comes back, and
   * the event bodies that carried its content are erased from this store (and from every replica
   * the delete reaches). Returns the signed tombstone.
   */
  forget(id: string, options: ForgetOptions = {}): Promise<Tombstone> {
    return this.tombstone(id, 'delete', options)
  }

  /**
   * Forgets every record whose `expirationDate` has passed (memory-model §1.7), each with what
   * was derived only from it, reason "expired" and the tombstone id `tomb_` + H("expire", id), so
   * replicas that expire one record concurrently write the same tombstone id. Expired records
   * are hidden from `query` and `search` until then. Returns the ids forgotten.
   */
  async expire(): Promise<string[]> {
    await this.core.settled()
    const now = this.core.now()
    // Only episodes carry expirationDate (PM); derived records follow through the cascade.
    const expired: string[] = []
    let cursor: string | undefined
    do {
      const page = await this.core.reader.query({ kind: 'episode' }, { limit: MAX_QUERY_LIMIT, ...(cursor !== undefined ? { cursor } : {}) })
      for (const view of page.records) if (isExpired(view, now)) expired.push(view.id)
      cursor = page.cursor
    } while (cursor !== undefined)
    // One at a time with creates and forgets, the check included: a second expire started
    // alongside finds the records deleted and skips them rather than being refused.
    return this.creating.run(async () => {
      const forgotten: string[] = []
      for (const id of expired) {
        // An earlier expiry's cascade (or a forget) may have taken it already.
        if ((await this.status(id)) === 'deleted') continue
        await this.core.write(() => this.tombstoneNow(id, 'delete', { reason: 'expired' }, `${TOMBSTONE_ID_PREFIX}${hashParts('expire', id)}`))
        forgotten.push(id)
      }
      return forgotten
    })
  }

  /** Purges a record's content but keeps a skeleton (ids, times, kind) and the tombstone. */
  redact(id: string, options: ForgetOptions = {}): Promise<Tombstone> {
    return this.tombstone(id, 'redact', options)
  }

  /**
   * Edits a collaborative text field (core blocks' `content`): the minimal change from the
   * current text to `text`. Concurrent edits from several agents all survive.
   */
  async editText(id: string, text: string, options: TextEditOptions = {}): Promise<void> {
    await this.textChange(id, options.field ?? 'content', (document) => editTextDocument(document, this.author, assertString(text, 'text'), this.core.eventNow()))
  }

  /** Appends to a collaborative text field; concurrent appends by two agents both survive. */
  async appendText(id: string, text: string, options: TextEditOptions = {}): Promise<void> {
    const addition = assertString(text, 'text')
    await this.textChange(id, options.field ?? 'content', (document) =>
      spliceText(document, this.author, [...textOf(document)].length === 0 ? 0 : textOf(document).length, 0, addition, this.core.eventNow()))
  }

  private async textChange(id: string, field: string, edit: (document: Uint8Array) => { changes: Uint8Array[] }): Promise<void> {
    const view = await this.core.existing(id)
    if (kindSpec(view.kind).fields[field]?.merge !== 'text') throw new InputError('NOT_TEXT', `${view.kind}.${field} is not a collaborative text field`, { field: 'field' })
    const state = await this.core.state(view.id)
    const { changes } = edit(state?.texts[field] ?? baseTextDocument())
    if (changes.length === 0) return
    await this.core.append([{ op: MEMORY_OPS.text, data: { kind: view.kind, id: view.id, field, changes: encodeChanges(changes) } }])
  }

  /**
   * Where a record stands here: `visible`, `redacted` (a skeleton remains), `deleted` (its id
   * never returns), or `absent` (never seen, or only operations on it arrived so far).
   */
  async status(id: string): Promise<RecordStatus> {
    await this.core.settled()
    const state = await this.core.state(assertNonEmptyString(id, 'id'))
    if (state?.tombstone) return state.tombstone.op === 'delete' ? 'deleted' : 'redacted'
    return (await this.core.reader.get(id)) ? 'visible' : 'absent'
  }

  /**
   * `status` and `get` of many records at once (the bulk form imports use), and the kind of a
   * deleted record, whose view is gone.
   */
  async lookup(ids: readonly string[], options: LookupOptions = {}): Promise<LookupResult[]> {
    const list = assertArray(ids, 'ids').map((id, i) => assertNonEmptyString(id, `ids[${i}]`))
    const given = assertOptions(options, ['writeTimes'], 'options').writeTimes
    const writeTimes = given === undefined ? false : typeof given === 'object' ? true : assertBoolean(given, 'options.writeTimes')
    const from = typeof given === 'object' ? assertNumber(assertOptions(given, ['from'], 'options.writeTimes').from, 'options.writeTimes.from') : undefined
    await this.core.settled()
    const [states, views] = await Promise.all([this.core.states(list), this.core.reader.getMany(list)])
    const times = writeTimes ? await writeTimesOf(states.map((state, i) => (views[i] !== undefined && state?.tombstone?.op !== 'delete' ? state : undefined)), this.engine.log, from) : undefined
    return list.map((_, i) => {
      const state = states[i]
      const tombstone = state?.tombstone
      const view = views[i] as MemoryRecord | undefined
      const status: RecordStatus = tombstone ? (tombstone.op === 'delete' ? 'deleted' : 'redacted') : view ? 'visible' : 'absent'
      const shown = view && status !== 'deleted' ? view : undefined
      return {
        status,
        ...(shown ? { view: shown } : {}),
        ...(status === 'deleted' ? { kind: state?.kind as RecordKind } : {}),
        ...(shown && times?.[i] ? { writeTimes: times[i] } : {}),
      }
    })
  }

  /** How many records this replica shows, redaction skeletons included: what `records()` yields. */
  async recordCount(): Promise<number> {
    await this.core.settled()
    return this.core.projection.viewCount()
  }

  /** Every record this replica shows, redaction skeletons included, in id order. */
  async *records(): AsyncIterable<MemoryRecord> {
    await this.core.settled()
    // Views are built from events checked against the kind table, which MemoryRecord is read off.
    yield* this.core.reader.views() as AsyncIterable<MemoryRecord>
  }

  /**
   * What `records()` yields, before parsing: each record as canonical JSON (UTF-8 bytes, keys in
   * code-point order), in id order. For code that streams records out without needing objects.
   */
  async *encodedRecords(): AsyncIterable<Uint8Array> {
    for await (const batch of this.encodedRecordBatches()) yield* batch
  }

  /**
   * `encodedRecords()` many at a time (up to 1,000 per batch, none empty): one await per batch
   * instead of per record, for code that streams a whole store (an export).
   */
  async *encodedRecordBatches(): AsyncIterable<readonly Uint8Array[]> {
    await this.core.settled()
    yield* this.core.reader.viewBatches()
  }

  /** A record by id, or as this replica showed it at a recorded time. */
  async get(id: string, options: GetOptions = {}): Promise<MemoryRecord | undefined> {
    await this.core.settled()
    const recordId = assertNonEmptyString(id, 'id')
    const raw = assertOptions(options, ['asOf'], 'options')
    const asOfMs = raw.asOf === undefined ? undefined : parseAsOf(raw.asOf)
    return await this.core.reader.get(recordId, asOfMs === undefined ? {} : { asOfMs }) as MemoryRecord | undefined
  }

  /** Records matching a filter, a page at a time (pass `cursor` back for the next page). */
  async query(input: QueryInput = {}): Promise<QueryPage> {
    await this.core.settled()
    const raw = assertOptions(input, ['kind', 'context', 'tags', 'entity', 'minConfidence', 'validAt', 'asOf', 'limit', 'cursor'], 'query')
    const filter = parseFilter(raw)
    const limit = raw.limit === undefined ? DEFAULT_QUERY_LIMIT : assertInteger(raw.limit, 'query.limit', 1, MAX_QUERY_LIMIT)
    const cursor = raw.cursor === undefined ? undefined : assertString(raw.cursor, 'query.cursor')
    const asOfMs = raw.asOf === undefined ? undefined : parseAsOf(raw.asOf)
    // Expiry is judged at the time read: now, or the asOf time.
    return await this.core.reader.query(filter, { limit, ...(cursor !== undefined ? { cursor } : {}) }, asOfMs === undefined ? { nowMs: this.core.now() } : { asOfMs, nowMs: asOfMs }) as QueryPage
  }

  /** Full-text search (BM25), optionally filtered like `query`. */
  async search(text: string, options: SearchOptions = {}): Promise<SearchHit[]> {
    await this.core.settled()
    const query = assertString(text, 'text')
    const raw = assertOptions(options, ['kind', 'context', 'tags', 'entity', 'minConfidence', 'validAt', 'limit'], 'options')
    const limit = raw.limit === undefined ? 10 : assertInteger(raw.limit, 'options.limit', 1, MAX_QUERY_LIMIT)
    return await this.core.reader.search(query, parseFilter(raw, 'options'), limit, { nowMs: this.core.now() }) as SearchHit[]
  }

  /**
   * Ids of the records that name `id`, from the reference index: in a parent or reference field
   * (a chunk its resource, a fact its episode, an edge its entities and evidence…, including a
   * parent an earlier write named), an old version its successors, an episode what its
   * `cairn_derived` lists. A deleted record names nothing any more, so it is not listed; a
   * redacted one still names its parents (its skeleton keeps them). `lookup` tells what each
   * listed id shows. The order is the index's, not a sort by id.
   */
  async referrers(id: string): Promise<string[]> {
    const target = assertNonEmptyString(id, 'id')
    await this.core.settled()
    return this.core.reader.referrers(target)
  }

  /** The events that shaped a record, oldest first (bodies of deleted content are erased). */
  async history(id: string): Promise<HistoryItem[]> {
    await this.core.settled()
    const entries = await this.core.reader.history(assertNonEmptyString(id, 'id'))
    const out: HistoryItem[] = []
    for (const entry of entries) {
      const event = await this.engine.log.get(entry.event)
      if (!event) continue
      out.push({
        event: entry.event, local: entry.local, type: entry.type, ...(event.body ? { op: event.body.op } : {}),
        author: event.header.author, clock: event.header.clock, recordedAt: event.recordedAt, bodyState: event.bodyState,
      })
    }
    return out
  }

  /** Records superseded concurrently by several replicas, with the winner and why. */
  async conflicts(): Promise<ConflictEntry[]> {
    await this.core.settled()
    return this.core.reader.conflicts()
  }

  /**
   * This replica's writes that a relay keeps as headers only, its token not allowing them (sync
   * protocol version 2): their content stays on this device. In the order they were written; one
   * entry per event and relay. Kept when the relay says so (`SyncClient` event `withheld`).
   */
  async withheld(): Promise<WithheldWrite[]> {
    this.core.refuseClosed()
    return listWithheld(this.engine.store.storage, this.space)
  }

  /**
   * For the sync layer: keeps what the relay at `relay` (its URL) said of events it withheld.
   * Only this replica's own events that the store holds with their body are kept; the rest is
   * ignored, and a relay's first word on an event stands.
   * @returns the notes taken now, as `withheld()` lists them
   */
  async noteWithheld(relay: string, reports: readonly WithheldReport[]): Promise<WithheldWrite[]> {
    const name = relayName(assertNonEmptyString(relay, 'relay'))
    const hash = this.crypto.sha256Hex(name).slice(0, 32)
    return this.core.write(() => noteWithheld(this.engine.store.storage, this.engine.log, this.author, name, hash, reports, Date.now()))
  }

  /**
   * Ids of the records whose content a change recorded here at or after `sinceMs` (ms since
   * the epoch) created or changed: writes, and events ingested from elsewhere. Deletions are
   * not among them (`tombstones()` has their times). Reads only the log from that time on.
   */
  async changedSince(sinceMs: number): Promise<Set<string>> {
    const since = assertInteger(sinceMs, 'sinceMs', 0)
    await this.core.settled()
    const changed = new Set<string>()
    const from = since === 0 ? 0 : await this.core.reader.positionAt(since - 1)
    for await (const event of this.engine.log.readApplied(from)) {
      if (event.local > this.core.projection.cursor) break
      const op = event.body?.op
      if (op !== MEMORY_OPS.create && op !== MEMORY_OPS.patch && op !== MEMORY_OPS.text && op !== MEMORY_OPS.supersede) continue
      const data = event.body?.data
      if (data !== null && typeof data === 'object' && !Array.isArray(data) && typeof data.id === 'string') changed.add(data.id)
    }
    return changed
  }

  /** Tombstones of deleted and redacted records. */
  async tombstones(): Promise<{ readonly [key: string]: JsonValue }[]> {
    await this.core.settled()
    return this.core.reader.tombstones()
  }

  /**
   * Calls `listener` after each write or ingest with the records it changed. Returns an unsubscribe.
   * What the listener throws, or the promise it returns rejects with, goes to `options.onError`;
   * without one it is thrown again outside the write (an uncaught exception, as with Node's
   * EventEmitter). Either way the write has been stored and resolves.
   */
  subscribe(listener: (change: MemoryChange) => unknown, options: SubscribeOptions = {}): () => void {
    if (typeof listener !== 'function') throw new InputError('WRONG_TYPE', 'listener must be a function', { field: 'listener' })
    const raw = assertOptions(options, ['onError'], 'options')
    if (raw.onError !== undefined && typeof raw.onError !== 'function') throw new InputError('WRONG_TYPE', 'onError must be a function', { field: 'options.onError' })
    const onError = raw.onError as ((error: unknown) => void) | undefined
    return this.core.projection.on('records-changed', ({ changes }) => {
      if (onError === undefined) {
        const result = listener({ changes })
        // A rejection surfaces like a throw (not as an unhandled rejection with no stack of ours).
        if (result instanceof Promise) result.catch((error: unknown) => queueMicrotask(() => { throw error }))
        return
      }
      // An onError that throws in turn is thrown outside the write, for sync and async listeners alike.
      const report = (error: unknown): void => {
        try {
          onError(error)
        } catch (failure) {
          queueMicrotask(() => { throw failure })
        }
      }
      try {
        const result = listener({ changes })
        if (result instanceof Promise) result.catch(report)
      } catch (error) {
        report(error)
      }
    })
  }

  /** A hash of everything this replica shows: equal on two replicas exactly when they show the same memory. */
  async digest(): Promise<string> {
    await this.core.settled()
    return this.core.reader.digest()
  }

  /** For each author, the newest event held here: what `events(since)` takes. */
  versionVector(): VersionVector {
    return this.engine.log.versionVector()
  }

  /** How many of the log's events the records reflect: `log.appliedCount` once settled. */
  get projectedCount(): number {
    return this.core.projection.cursor
  }

  /** Signed events beyond `since` (all when omitted), for another replica's `ingest`. */
  async events(since: VersionVector = {}): Promise<EventEnvelope[]> {
    this.core.refuseClosed()
    return this.engine.log.envelopesSince(since)
  }

  /**
   * Resolves once the projection has caught up with every event in the log. Sync acknowledges
   * events once they are durable and applies them to the records just after; reads wait anyway,
   * so this is for callers that want to know when that work is done (monitoring, benchmarks).
   */
  async settled(): Promise<void> {
    await this.core.settled()
  }

  /**
   * Verifies and applies events from another replica; returns what the log did. On a replica
   * holding `admin`, it then names any record it found deleted through a parent and no event
   * names (one delete each, appended before it returns; deletion-naming.ts). Events are checked
   * at run time too, so parsed JSON from a file or a wire may be passed (cast) as it is.
   */
  ingest(events: readonly EventEnvelope[]): Promise<IngestResult> {
    return this.core.write(async () => {
      await this.core.settled()
      const result = await this.engine.log.ingest(events)
      await this.core.projection.catchUp(result.applied)
      await this.core.projection.bodiesFilled(result.filled)
      if (result.applied.length > 0 || result.filled.length > 0) await this.nameDeletions()
      return result
    })
  }

  /** Runs nameInferredDeletions after any run still going, so two never name one record twice. */
  private nameDeletions(): Promise<number> {
    const run = this.naming.then(() => nameInferredDeletions(this.core))
    this.naming = run.catch(() => 0)
    return run
  }

  private naming: Promise<number> = Promise.resolve(0)

  /**
   * Like `ingest`, but resolves once the events are durable in the log and lets the projection
   * catch up in the background (sync acknowledges frames this way); reads wait for it.
   * @param options.more more events follow at once (a peer's catch-up): the projection waits
   *   until a batch's worth has arrived (CatchUpLimits.batchEvents) or `applyPending` is called,
   *   so that a record the events touch many times is written once. Reads catch up first.
   */
  async ingestDeferred(events: readonly EventEnvelope[], options: IngestDeferredOptions = {}): Promise<IngestResult> {
    const raw = assertOptions(options, ['deadline', 'more'], 'options')
    const more = raw.more === undefined ? false : assertBoolean(raw.more, 'options.more')
    // The log checks the deadline.
    const result = await this.core.write(() => this.engine.log.ingest(events, raw.deadline === undefined ? {} : { deadline: raw.deadline as number }))
    const { projection } = this.core
    const { applied, filled } = result
    if (applied.length === 0 && filled.length === 0) return result
    if (!projection.features.onDemand) {
      // Deletions are applied at once all the same: their content must not linger here.
      if (more && filled.length === 0 && projection.lag < projection.limits.batchEvents && !applied.some((event) => isTombstoneBody(event.body))) {
        projection.handOver(applied)
        return result
      }
      this.core.track(projection.catchUp(applied).then(() => projection.bodiesFilled(filled)).then(() => this.nameDeletions()))
      return result
    }
    // On demand (a relay): late bodies are placed at once (those beyond the cursor wait for the
    // next catch-up), and events are applied now only when applying them erases something, so
    // deleted content never lingers here. Checked after earlier background work has finished,
    // which may be the deletion these events run into.
    this.core.trackAfter(async () => {
      await projection.bodiesFilled(filled)
      if (await projection.mustApply(applied)) await projection.catchUp(applied)
    })
    return result
  }

  /**
   * Starts applying, in the background, events the log holds and the records do not show yet (see `ingestDeferred`).
   * @returns resolves (never rejects; a failure surfaces on the next read) once that is done and
   *   the deletions it showed were inferred are named, on a replica holding `admin`, which then
   *   appends events; at once on any other replica, which appends nothing (a one-shot sync waits
   *   for this to send those events before it closes)
   */
  applyPending(): Promise<void> {
    this.core.catchUpInBackground()
    const run = this.core.trackAfter(() => this.nameDeletions())
    const names = !this.core.projection.features.onDemand && this.engine.log.rightsOf(this.author).includes('admin')
    return names ? run.then(() => undefined, () => undefined) : Promise.resolve()
  }

  /**
   * Drops records this replica may no longer hold because they left the scope of the token it
   * syncs with (the relay says so; sync calls this). The bodies that carried their content are
   * removed from the log, except this replica's own, and the records disappear from every read
   * (subscribers hear `withdrawn`). Nothing is signed and no other replica is affected: this is
   * not a deletion, and the relay sends the bodies again if the records come back into scope.
   * @returns how many of the records this replica held (and dropped)
   * @throws InputError WRONG_TYPE, EMPTY for a bad id list
   */
  async withdraw(ids: readonly string[]): Promise<number> {
    const list = assertArray(ids, 'ids').map((id, i) => assertNonEmptyString(id, `ids[${i}]`))
    if (list.length === 0) return 0
    return this.core.write(async () => {
      await this.core.settled()
      return this.core.projection.withdrawRecords(list, this.author)
    })
  }

  /**
   * Lets another replica's key write to this space (needs the admin right here). The key must be
   * one a replica can have (assertPublicKey): a grant to 64 hex characters that are no usable key
   * would write a grant nobody can use, or (a small-order point) one anybody could.
   * @throws InputError BAD_HEX, WRONG_LENGTH, BAD_KEY naming `author`; AuthError NOT_AUTHORIZED without the admin right
   */
  async grant(author: string, rights?: readonly Right[]): Promise<void> {
    await this.core.write(() => this.engine.log.grant(this.engine.identity, assertPublicKey(author, 'author'), rights))
  }

  /**
   * Withdraws an author's rights (the owner's cannot be). An author holding none here, never
   * granted or revoked already, is refused: a mistyped key should not pass for done.
   * @throws InputError NOT_GRANTED, or naming `author` when it is no key; AuthError NOT_AUTHORIZED without the admin right
   */
  async revoke(author: string): Promise<void> {
    await this.core.write(async () => {
      // Without the admin right, the log's refusal (NOT_AUTHORIZED) says what is wrong.
      if (this.engine.log.rightsOf(this.author).includes('admin') && this.engine.log.rightsOf(author).length === 0) {
        throw new InputError('NOT_GRANTED', 'this author holds no rights here: never granted, or revoked already (a grant made on another replica arrives with a sync)', { field: 'author' })
      }
      await this.engine.log.revoke(this.engine.identity, author)
    })
  }

  /**
   * Issues a capability token to another key: which records (`scope`), which `permissions`
   * (read, write, derive, redact, export, rehydrate), for how long (`expiresIn` ms). The holder
   * proves possession of the audience key when it syncs. Needs the admin right here.
   * @throws InputError naming the field; AuthError NOT_AUTHORIZED
   */
  createToken(request: TokenRequest): string {
    if (!this.engine.log.rightsOf(this.author).includes('admin')) {
      throw new AuthError('NOT_AUTHORIZED', 'only the owner or an admin of the space issues tokens', { author: this.author })
    }
    return createToken(this.engine.identity, this.space, request, this.core.now(), this.engine.store.crypto)
  }

  /** Revokes a token (the token string or its id) for every replica and relay the revocation reaches. */
  async revokeToken(token: string): Promise<void> {
    const text = assertNonEmptyString(token, 'token')
    let id = text
    if (text.startsWith(`${TOKEN_PREFIX}.`)) {
      const decoded = decodeToken(text, this.engine.store.crypto)
      if (decoded.space !== this.space) throw new AuthError('WRONG_SPACE', `the token is for space ${decoded.space}, not this one`, { field: 'token' })
      id = decoded.id
    }
    await this.core.write(() => this.engine.log.revokeToken(this.engine.identity, id))
  }

  /**
   * Checks the projection (records, indexes, history, search index) against what the log gives,
   * writing nothing here: it is derived again in a scratch copy of the space (a temporary
   * LevelDB for a store on disk, memory for one in memory) and the two are compared key by key.
   * `ok` is false when anything differs; `rebuild()` repairs it. Costs a rebuild's work;
   * `onProgress` hears how many of the log's events the derivation has applied.
   * It runs once the writes under way have finished, and `close` waits for it.
   * @throws StorageError BUSY when this replica wrote or ingested while the check ran
   */
  async checkProjection(options: ProjectionCheckOptions = {}): Promise<ProjectionCheck> {
    const { onProgress } = assertOptions(options, ['onProgress'], 'options')
    if (onProgress !== undefined && typeof onProgress !== 'function') {
      throw new InputError('WRONG_TYPE', `expected a function, got ${describeType(onProgress)}`, { field: 'options.onProgress' })
    }
    return this.core.whileQuiet((othersStarted) => checkProjection(this.core, options, othersStarted))
  }

  /** Re-derives the whole projection from the log (the result equals the incremental state). */
  rebuild(): Promise<void> {
    return this.core.write(() => this.core.projection.rebuild())
  }

  /**
   * Closes the replica: a write already appending (or an ingest already storing) finishes first;
   * any other write fails with StorageError CLOSED and stores nothing. So a write that resolved
   * is stored, and one that failed is not: retrying it after reopening writes it once.
   */
  async close(): Promise<void> {
    await this.core.close().catch(() => undefined)
    if (this.engine.sharedStore) return
    await this.engine.store.close()
  }
}

/** A relay address (relayUrlProblem). @throws InputError WRONG_TYPE, EMPTY, BAD_URL naming `url` */
function relayUrl(value: unknown): string {
  const url = assertNonEmptyString(value, 'url')
  const problem = relayUrlProblem(url)
  if (problem !== undefined) throw new InputError('BAD_URL', problem, { field: 'url' })
  return url
}

/**
 * `rememberMany`'s `madeAt`: one time for every record, or one per record (a list as long as
 * `records`; `undefined` for a record with none). Whole ms since the epoch, at least 0.
 * @throws InputError WRONG_TYPE, OUT_OF_RANGE, WRONG_LENGTH naming `options.madeAt` (or an entry)
 */
function readMadeAt(value: unknown, records: readonly unknown[]): number | (number | undefined)[] {
  if (!Array.isArray(value)) return assertInteger(value, 'options.madeAt', 0)
  const list = assertArray(value, 'options.madeAt')
  if (Array.isArray(records) && list.length !== records.length) {
    throw new InputError('WRONG_LENGTH', `${list.length} times for ${records.length} records: give one per record`, { field: 'options.madeAt' })
  }
  return list.map((time, i) => (time === undefined ? undefined : assertInteger(time, `options.madeAt[${i}]`, 0)))
}

/**
 * Reads of the projection: by id, filtered queries with pagination, full-text search, history,
 * conflicts, the digest, and reads as of a recorded time. Queries walk the most selective
 * index (entity, then context, then a tag, then kind) and filter the rest; they never scan the
 * log. As-of reads use the per-record versions and the recorded-time index.
 */
import { createHash } from 'node:crypto'
import type { LogStorage } from '../log/storage.js'
import type { JsonValue } from '../log/index.js'
import { seqKey } from '../log/store-keys.js'
import type { RecordKind } from './kinds.js'
import type { RecordView } from './materialize.js'
import { decodeJson, decodeState, decodeView } from './projection-codec.js'
import { decodeFacets, facetsOf, type RecordFacets } from './projection-indexes.js'
import { idFromKey, positionFromTimeKey, type ProjectionKeys } from './projection-keys.js'
import { decodeCursor, encodeCursor, queryScope } from './query-cursor.js'
import type { TextIndex } from './text-index.js'

export interface TagFilter {
  readonly any?: readonly string[]
  readonly all?: readonly string[]
  readonly none?: readonly string[]
}

export interface RecordFilter {
  readonly kind?: RecordKind | readonly RecordKind[]
  readonly context?: string
  readonly tags?: TagFilter
  readonly entity?: string
  readonly minConfidence?: number
  /** Valid time (RFC 3339): facts and edges valid at that instant; records without valid time pass. */
  readonly validAt?: string
}

export interface ReadOptions {
  /** Recorded time (ms since the epoch): read what this replica showed then. */
  readonly asOfMs?: number
  /** Hide records whose `expirationDate` is at or before this time (ms since the epoch). */
  readonly nowMs?: number
}

/** Whether a record's `expirationDate` (memory-model §1.7) has passed at `nowMs`. */
export function isExpired(view: RecordView, nowMs: number | undefined): boolean {
  return nowMs !== undefined && typeof view.expirationDate === 'string' && Date.parse(view.expirationDate) <= nowMs
}

export interface HistoryEntry {
  readonly local: number
  readonly event: string
  readonly type: 'content' | 'tombstone'
}

export interface ConflictEntry {
  readonly id: string
  readonly winner: string
  readonly reason: string
  readonly candidates: readonly { readonly by: string; readonly at: string; readonly validFrom: string; readonly confidence: number; readonly source: string; readonly author: string }[]
}

const PAGE = 256

/** Whether a record with these facets passes the filter. */
export function matchesFacets(facets: RecordFacets, filter: RecordFilter): boolean {
  if (filter.kind !== undefined) {
    const kinds = typeof filter.kind === 'string' ? [filter.kind] : filter.kind
    if (!kinds.includes(facets.kind)) return false
  }
  if (filter.context !== undefined && facets.contextID !== filter.context) return false
  // Tags an index entry left out are judged on the view (the caller reads it: needsView).
  if (filter.tags && !facets.tagsLeftOut) {
    const tags = new Set(facets.tags)
    if (filter.tags.all && !filter.tags.all.every((tag) => tags.has(tag))) return false
    if (filter.tags.any && filter.tags.any.length > 0 && !filter.tags.any.some((tag) => tags.has(tag))) return false
    if (filter.tags.none && filter.tags.none.some((tag) => tags.has(tag))) return false
  }
  if (filter.entity !== undefined && !facets.entities.includes(filter.entity)) return false
  if (filter.minConfidence !== undefined && !(facets.confidence !== undefined && facets.confidence >= filter.minConfidence)) return false
  if (filter.validAt !== undefined) {
    const at = Date.parse(filter.validAt)
    if (facets.validFrom !== undefined && Date.parse(facets.validFrom) > at) return false
    if (facets.validTo !== undefined && Date.parse(facets.validTo) <= at) return false
  }
  return true
}

export function matchesFilter(view: RecordView, filter: RecordFilter, redacted = false): boolean {
  return matchesFacets(facetsOf(view, redacted), filter)
}

export class ProjectionReader {
  constructor(
    private readonly storage: LogStorage,
    private readonly keys: ProjectionKeys,
    private readonly textIndex: TextIndex,
    private readonly cursor: () => number,
  ) {}

  /** The last log position applied at recorded time `asOfMs` (0 if nothing was). */
  async positionAt(asOfMs: number): Promise<number> {
    if (asOfMs < 0) return 0
    const prefix = this.keys.timePrefix
    let start: number | undefined
    for await (const key of this.storage.keys({ gte: prefix, lte: `${prefix}${seqKey(Math.floor(asOfMs))}:\uffff`, reverse: true, limit: 1 })) {
      start = positionFromTimeKey(key)
    }
    if (start === undefined) return 0
    for await (const key of this.storage.keys({ gt: `${prefix}${seqKey(Math.floor(asOfMs))}:\uffff`, lt: this.keys.end(prefix), limit: 1 })) {
      return positionFromTimeKey(key) - 1
    }
    return this.cursor()
  }

  async get(id: string, options: ReadOptions = {}): Promise<RecordView | undefined> {
    if (options.asOfMs === undefined) {
      const bytes = await this.storage.get(this.keys.view(id))
      return bytes ? decodeView(bytes) : undefined
    }
    return this.viewAt(id, await this.positionAt(options.asOfMs))
  }

  /** Current views of many records at once (undefined where there is none). */
  async getMany(ids: readonly string[]): Promise<(RecordView | undefined)[]> {
    const values = await this.storage.getMany(ids.map((id) => this.keys.view(id)))
    return values.map((bytes) => (bytes ? decodeView(bytes) : undefined))
  }

  /** Every current view (visible records and redaction skeletons), in id order. */
  async *views(): AsyncIterable<RecordView> {
    for await (const batch of this.viewBatches()) for (const bytes of batch) yield decodeView(bytes)
  }

  /** What views() parses, many at a time: each view as stored, canonical JSON in UTF-8, in id order. */
  viewBatches(): AsyncIterable<readonly Uint8Array[]> {
    const prefix = this.keys.viewPrefix
    return this.storage.valueBatches({ gte: prefix, lt: this.keys.end(prefix) })
  }

  /** Whether each record is redacted now: its tombstone says so (every stored version of it is then a skeleton). */
  private async redactedOf(ids: readonly string[]): Promise<boolean[]> {
    const tombstones = await this.storage.getMany(ids.map((id) => this.keys.tombstone(id)))
    return tombstones.map((bytes) => bytes !== undefined && (decodeJson(bytes) as { op?: unknown }).op === 'redact')
  }

  private async viewAt(id: string, position: number): Promise<RecordView | undefined> {
    const prefix = this.keys.versionPrefix(id)
    for await (const [, bytes] of this.storage.entries({ gte: prefix, lte: this.keys.version(id, position), reverse: true, limit: 1 })) {
      return bytes.length > 0 ? decodeView(bytes) : undefined
    }
    return undefined
  }

  /** The index prefix to walk for a filter, and whether the walk covers every match. */
  private drivingPrefix(filter: RecordFilter, asOf: boolean): string {
    if (asOf) return this.keys.viewPrefix
    if (filter.entity !== undefined) return this.keys.entityPrefix(filter.entity)
    if (filter.context !== undefined) return this.keys.contextPrefix(filter.context)
    // Lists are sets: the index chosen does not depend on their order (nor, so, a cursor's scope).
    const all = filter.tags?.all !== undefined && filter.tags.all.length > 0 ? [...filter.tags.all].sort()[0] : undefined
    if (all !== undefined) return this.keys.tagPrefix(all)
    const any = new Set(filter.tags?.any ?? [])
    if (any.size === 1) return this.keys.tagPrefix([...any][0] as string)
    const kinds = new Set(typeof filter.kind === 'string' ? [filter.kind] : filter.kind ?? [])
    if (kinds.size === 1) return this.keys.kindPrefix([...kinds][0] as RecordKind)
    // The kind index over all kinds lists every record, each entry with its facets.
    return this.keys.allKindsPrefix
  }

  /**
   * Records matching `filter`, `limit` at a time, in index order. Pass the returned cursor back
   * to continue, with the same filter and `asOfMs` (query-cursor.ts). With `asOfMs`, the records
   * as this replica showed them at that recorded time.
   * @throws InputError BAD_CURSOR
   */
  async query(filter: RecordFilter, page: { limit: number; cursor?: string }, options: ReadOptions = {}): Promise<{ records: RecordView[]; cursor?: string }> {
    const asOf = options.asOfMs !== undefined
    const position = asOf ? await this.positionAt(options.asOfMs as number) : 0
    const prefix = this.drivingPrefix(filter, asOf)
    const scope = queryScope(filter, options.asOfMs, prefix)
    const after = page.cursor !== undefined ? `${prefix}${decodeCursor(page.cursor, scope)}` : undefined
    // One match beyond the page is looked for, so that the last page returns no cursor.
    const wanted = page.limit + 1
    const records: RecordView[] = []
    const recordKeys: string[] = []
    let pending: string[] = []
    const flush = async (): Promise<boolean> => {
      const ids = pending.map((key) => idFromKey(key))
      const views = asOf
        ? await Promise.all(ids.map((id) => this.viewAt(id, position)))
        : (await this.storage.getMany(ids.map((id) => this.keys.view(id)))).map((bytes) => (bytes ? decodeView(bytes) : undefined))
      // A redaction skeleton is judged as the indexes list it (by kind only), here as there.
      const redacted = await this.redactedOf(ids)
      for (let i = 0; i < views.length; i++) {
        const view = views[i]
        if (view && matchesFilter(view, filter, redacted[i]) && !isExpired(view, options.nowMs)) {
          records.push(view)
          recordKeys.push(pending[i] as string)
          if (records.length === wanted) return true
        }
      }
      pending = []
      return false
    }
    const range = after !== undefined ? { gt: after, lt: this.keys.end(prefix) } : { gte: prefix, lt: this.keys.end(prefix) }
    let full = false
    if (!asOf && prefix !== this.keys.viewPrefix) {
      // Index entries carry facets: filter while walking, read views only for what is returned.
      const chosen: string[] = []
      const recheck = new Set<string>()
      // With an entity, the walk is that entity's index: every entry names it, and entries do
      // not carry entities (encodeFacets).
      const { entity: _walkedEntity, ...walkFilter } = filter
      for await (const [key, value] of this.storage.entries(range)) {
        if (value.length === 0) continue
        const facets = decodeFacets(value)
        if (!matchesFacets(facets, walkFilter)) continue
        if (facets.tagsLeftOut && filter.tags) recheck.add(key)
        chosen.push(key)
        if (chosen.length === wanted) {
          full = true
          chosen.pop()
          break
        }
      }
      // Expiry is not among the facets, nor are the tags of a record with very many: such a
      // record that does not pass leaves its page one short (the cursor goes on past it), and
      // the last page may then end with a cursor to an empty one.
      const views = await this.storage.getMany(chosen.map((key) => this.keys.view(idFromKey(key))))
      views.forEach((bytes, i) => {
        const view = bytes ? decodeView(bytes) : undefined
        if (view && !isExpired(view, options.nowMs) && (!recheck.has(chosen[i] as string) || matchesFilter(view, filter))) records.push(view)
      })
      recordKeys.push(...chosen)
    } else {
      for await (const key of this.storage.keys(range)) {
        pending.push(key)
        if (pending.length >= PAGE && (full = await flush())) break
      }
      if (!full && pending.length > 0) full = await flush()
      if (full) records.pop()
    }
    const lastKey = full ? recordKeys[page.limit - 1] : undefined
    const cursor = full && lastKey !== undefined ? encodeCursor(scope, lastKey.slice(prefix.length)) : undefined
    return { records, ...(cursor !== undefined ? { cursor } : {}) }
  }

  /** The best `limit` matches of `text` among records that match `filter` and have not expired at `options.nowMs`. */
  async search(text: string, filter: RecordFilter, limit: number, options: Pick<ReadOptions, 'nowMs'> = {}): Promise<{ record: RecordView; score: number }[]> {
    // Expired records are rare: drop them from the hits, and ask for more only when some were.
    for (let want = limit; ; want *= 2) {
      const hits = await this.searchHits(text, filter, want)
      const live = hits.filter((hit) => !isExpired(hit.record, options.nowMs))
      if (live.length >= limit || hits.length < want || want >= limit * 16) return live.slice(0, limit)
    }
  }

  private async searchHits(text: string, filter: RecordFilter, limit: number): Promise<{ record: RecordView; score: number }[]> {
    const views = new Map<string, RecordView>()
    // Only a real filter costs a view read per candidate; without one, only the hits are read.
    const filtered = Object.keys(filter).length > 0
    const hits = await this.textIndex.search(text, {
      limit,
      ...(filtered ? {
        filter: async (id: string) => {
          const view = await this.get(id)
          if (!view || !matchesFilter(view, filter)) return false
          views.set(id, view)
          return true
        },
      } : {}),
    })
    const missing = hits.filter((hit) => !views.has(hit.id))
    const read = await this.storage.getMany(missing.map((hit) => this.keys.view(hit.id)))
    missing.forEach((hit, i) => {
      const bytes = read[i]
      if (bytes) views.set(hit.id, decodeView(bytes))
    })
    return hits.flatMap((hit) => {
      const record = views.get(hit.id)
      return record ? [{ record, score: hit.score }] : []
    })
  }

  async history(id: string): Promise<HistoryEntry[]> {
    const prefix = this.keys.historyPrefix(id)
    const out: HistoryEntry[] = []
    for await (const [key, value] of this.storage.entries({ gte: prefix, lt: this.keys.end(prefix) })) {
      const entry = decodeJson(value) as string
      // `k`: content of a record deleted through its parent, kept for other replicas; `o`: an
      // operation of another kind than the record's (projection-batch.ts). Neither is shown.
      if (entry.startsWith('k') || entry.startsWith('o')) continue
      out.push({ local: parseInt(key.slice(prefix.length), 16), event: entry.slice(1), type: entry.startsWith('t') ? 'tombstone' : 'content' })
    }
    return out
  }

  async conflicts(): Promise<ConflictEntry[]> {
    const out: ConflictEntry[] = []
    const prefix = this.keys.conflictPrefix
    for await (const [, value] of this.storage.entries({ gte: prefix, lt: this.keys.end(prefix) })) out.push(decodeJson(value) as unknown as ConflictEntry)
    return out
  }

  /** Lines of unknown record kinds, per kind, in the order they were first seen. */
  async foreignLines(): Promise<Record<string, string[]>> {
    const rows: { kind: string; local: number; index: number; line: string }[] = []
    const prefix = this.keys.foreignPrefix
    for await (const [key, value] of this.storage.entries({ gte: prefix, lt: this.keys.end(prefix) })) {
      const kind = decodeURIComponent(key.slice(prefix.length, key.lastIndexOf(':')))
      const [local, index, line] = decodeJson(value) as [number, number, string]
      rows.push({ kind, local, index, line })
    }
    rows.sort((a, b) => a.local - b.local || a.index - b.index)
    // A Map, not an object: a signer may name a kind `__proto__` or `constructor`.
    const out = new Map<string, string[]>()
    for (const row of rows) {
      const lines = out.get(row.kind)
      if (lines) lines.push(row.line)
      else out.set(row.kind, [row.line])
    }
    return Object.fromEntries(out)
  }

  /** Portable Memory tombstone records of deleted and redacted records. */
  async tombstones(): Promise<{ readonly [key: string]: JsonValue }[]> {
    const out: { readonly [key: string]: JsonValue }[] = []
    const prefix = this.keys.tombstonePrefix
    for await (const [, value] of this.storage.entries({ gte: prefix, lt: this.keys.end(prefix) })) out.push(decodeJson(value) as { [key: string]: JsonValue })
    return out
  }

  /**
   * Records deleted because a parent was, whose bodies are kept (hidden) until an event names
   * them (q:u), in key order, at most `limit`.
   */
  async unnamedDeletions(limit: number): Promise<{ id: string; kind: RecordKind }[]> {
    const prefix = this.keys.unnamedDeletionPrefix
    const out: { id: string; kind: RecordKind }[] = []
    for await (const [key, value] of this.storage.entries({ gte: prefix, lt: this.keys.end(prefix), limit })) out.push({ id: idFromKey(key), kind: decodeJson(value) as RecordKind })
    return out
  }

  /** Ids of the records whose state names `id` in a parent or reference field (a deleted one names nothing; a redacted one its skeleton's parents), in the index's key order. */
  async referrers(id: string): Promise<string[]> {
    const prefix = this.keys.referencePrefix(id)
    const listed: string[] = []
    for await (const key of this.storage.keys({ gte: prefix, lt: this.keys.end(prefix) })) listed.push(idFromKey(key))
    // A link deleted with its bodies kept stays in the index (Tombstone.keptEnds), not here.
    const views = await this.storage.getMany(listed.map((referrer) => this.keys.view(referrer)))
    const unseen = listed.filter((_, i) => views[i] === undefined)
    if (unseen.length === 0) return listed
    const states = await this.storage.getMany(unseen.map((referrer) => this.keys.state(referrer)))
    const deleted = new Set(unseen.filter((referrer, i) => {
      const bytes = states[i]
      return bytes !== undefined && decodeState(bytes, this.keys.state(referrer)).tombstone?.op === 'delete'
    }))
    return listed.filter((referrer) => !deleted.has(referrer))
  }

  /**
   * SHA-256 over every view and every tombstone, in key order: equal on two replicas exactly
   * when they show the same records and the same deletions.
   */
  async digest(): Promise<string> {
    const hash = createHash('sha256')
    for (const prefix of [this.keys.viewPrefix, this.keys.tombstonePrefix]) {
      hash.update(prefix.slice(-2))
      for await (const [key, value] of this.storage.entries({ gte: prefix, lt: this.keys.end(prefix) })) {
        hash.update(key.slice(prefix.length))
        hash.update('\u0000')
        hash.update(value)
        hash.update('\n')
      }
    }
    return hash.digest('hex')
  }
}

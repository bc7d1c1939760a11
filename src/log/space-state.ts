/**
 * What a space keeps in memory between writes: its owner, each author's chain tip with the
 * tip's causal vector, the grants and revokes, the events held for missing dependencies, and
 * the authors caught equivocating. Loaded once when the space is opened; changed only after a
 * write batch has been stored (see ApplyBatch.commit), so memory never runs ahead of disk.
 */
import { StorageError } from '../errors.js'
import { SpaceAuthority } from './authorization.js'
import { decodeHeader, type EventHeader } from './event.js'
import type { Hlc } from './hlc.js'
import type { AuthorKey, EventId, SpaceId } from './ids.js'
import { decodePriorityStart } from './priority-index.js'
import type { LogStorage } from './storage.js'
import { keys, parseSeqKey } from './store-keys.js'
import {
  decodeControl, decodeEquivocation, decodeEventRecord, decodeIdRun, decodeMeta, decodePending, decodeVector,
  type EquivocationRecord, type EventRecord, type SpaceMeta,
} from './store-records.js'
import type { VersionVector } from './version-vector.js'

export interface Tip {
  readonly seq: number
  readonly id: EventId
  readonly clock: Hlc
  /** The causal vector of the tip event (includes the tip itself). */
  readonly vector: VersionVector
}

/** Where an event sits causally: enough to extend or check anything that depends on it. */
export interface CausalInfo {
  readonly author: AuthorKey
  readonly seq: number
  readonly clock: Hlc
  readonly vector: VersionVector
}

/** A held event, in memory: what it waits for and which signed segment it belongs to. */
export interface PendingInfo {
  readonly id: EventId
  readonly author: AuthorKey
  readonly seq: number
  readonly prev?: EventId
  readonly requires: readonly EventId[]
  /** The signed event that authenticates this one; a segment is applied whole or not at all. */
  readonly segmentEnd: EventId
}

const CAUSAL_CACHE_LIMIT = 65_536

export function requirementsOf(id: EventId, header: EventHeader, space: SpaceId): EventId[] {
  if (header.space === undefined) return []
  const requires: EventId[] = []
  if (header.prev !== undefined) requires.push(header.prev)
  for (const dep of header.deps) requires.push(dep)
  if ((id as string) !== space && !requires.includes(space as string as EventId)) requires.push(space as string as EventId)
  return requires
}

export class SpaceState {
  meta: SpaceMeta | undefined
  authority: SpaceAuthority | undefined
  readonly tips = new Map<AuthorKey, Tip>()
  readonly pending = new Map<EventId, PendingInfo>()
  /** author:seq → held event id, to catch a held event and a new one at the same seq. */
  readonly pendingSlots = new Map<string, EventId>()
  /** id → held events that require it. */
  readonly waiters = new Map<EventId, Set<EventId>>()
  /** segment end → the held events it authenticates. */
  private readonly segments = new Map<EventId, Set<EventId>>()
  readonly equivocations = new Map<AuthorKey, EquivocationRecord>()
  private readonly causalCache = new Map<EventId, CausalInfo>()
  /** The local seq the next applied event gets. */
  nextLocalSeq = 1
  /** The position the priority index starts after; undefined until a batch under it applied events (priority-index.ts). */
  priorityStart: number | undefined

  private constructor(readonly space: SpaceId, private readonly storage: LogStorage) {}

  static async load(storage: LogStorage, space: SpaceId): Promise<SpaceState> {
    const state = new SpaceState(space, storage)
    const metaBytes = await storage.get(keys.meta(space))
    if (metaBytes) {
      state.meta = decodeMeta(metaBytes, keys.meta(space))
      const controls = []
      for await (const [key, value] of storage.entries({ gte: keys.controlPrefix(space), lt: keys.end(keys.controlPrefix(space)) })) {
        controls.push(decodeControl(value, key))
      }
      state.authority = new SpaceAuthority(state.meta.owner, controls)
    }
    await state.loadTips()
    state.priorityStart = decodePriorityStart(await storage.get(keys.priorityStart(space)))
    const orderPrefix = keys.orderPrefix(space)
    for await (const [key, value] of storage.entries({ gte: orderPrefix, lt: keys.end(orderPrefix), reverse: true, limit: 1 })) {
      state.nextLocalSeq = parseSeqKey(key.slice(orderPrefix.length)) + decodeIdRun(value, key).length
    }
    for await (const [key, value] of storage.entries({ gte: keys.flagPrefix(space), lt: keys.end(keys.flagPrefix(space)) })) {
      const record = decodeEquivocation(value, key)
      state.equivocations.set(record.author, record)
    }
    const held: PendingInfo[] = []
    for await (const [key, value] of storage.entries({ gte: keys.pendingPrefix(space), lt: keys.end(keys.pendingPrefix(space)) })) {
      const record = decodePending(value, key)
      const header = decodeHeader(record.header, record.id)
      held.push({
        id: record.id,
        author: header.author,
        seq: header.seq,
        ...(header.prev ? { prev: header.prev } : {}),
        requires: requirementsOf(record.id, header, space),
        segmentEnd: record.segmentEnd,
      })
    }
    for (const info of held) await state.hold(info)
    return state
  }

  get owner(): AuthorKey | undefined {
    return this.meta?.owner
  }

  nextLocal(): number {
    return this.nextLocalSeq
  }

  /** Each author's tip is the last id of their last run: one seek per author. */
  private async loadTips(): Promise<void> {
    const root = keys.runsPrefix(this.space)
    let from = root
    for (;;) {
      let author: AuthorKey | undefined
      for await (const key of this.storage.keys({ gt: from, lt: keys.end(root), limit: 1 })) author = key.slice(root.length, root.length + 64) as AuthorKey
      if (author === undefined) return
      const prefix = keys.runPrefix(this.space, author)
      for await (const [key, value] of this.storage.entries({ gte: prefix, lt: keys.end(prefix), reverse: true, limit: 1 })) {
        const ids = decodeIdRun(value, key)
        const id = ids[ids.length - 1] as EventId
        const record = await this.readRecord(id)
        if (!record) throw new StorageError('CORRUPT_STORE', 'a chain tip names an event that is not stored', { event: id, author })
        const header = decodeHeader(record.header, id)
        this.tips.set(author, { seq: header.seq, id, clock: header.clock, vector: await this.anchorVector(author, header.seq) })
      }
      from = keys.end(keys.runPrefix(this.space, author))
    }
  }

  /** Registers a held event, waiting on each requirement that is not yet stored. */
  async hold(info: PendingInfo): Promise<void> {
    this.pending.set(info.id, info)
    this.pendingSlots.set(`${info.author}:${info.seq}`, info.id)
    let members = this.segments.get(info.segmentEnd)
    if (!members) this.segments.set(info.segmentEnd, (members = new Set()))
    members.add(info.id)
    const stored = await this.storedIds(info.requires)
    for (const required of info.requires) {
      if (stored.has(required)) continue
      let set = this.waiters.get(required)
      if (!set) this.waiters.set(required, (set = new Set()))
      set.add(info.id)
    }
  }

  release(id: EventId): void {
    const info = this.pending.get(id)
    if (!info) return
    this.pending.delete(id)
    this.pendingSlots.delete(`${info.author}:${info.seq}`)
    const members = this.segments.get(info.segmentEnd)
    members?.delete(id)
    if (members?.size === 0) this.segments.delete(info.segmentEnd)
    for (const required of info.requires) {
      const set = this.waiters.get(required)
      if (!set) continue
      set.delete(id)
      if (set.size === 0) this.waiters.delete(required)
    }
  }

  /** The held events that one signed event authenticates. */
  segmentMembers(segmentEnd: EventId): EventId[] {
    return [...(this.segments.get(segmentEnd) ?? [])]
  }

  /** Which of `ids` are applied events of this space. */
  async storedIds(ids: Iterable<EventId>): Promise<Set<EventId>> {
    const list = [...new Set(ids)]
    const found = new Set<EventId>()
    const unknown: EventId[] = []
    for (const id of list) {
      if (this.causalCache.has(id) || (this.meta && id === this.meta.genesis)) found.add(id)
      else unknown.push(id)
    }
    if (unknown.length > 0) {
      const values = await this.storage.getMany(unknown.map((id) => keys.event(this.space, id)))
      values.forEach((value, i) => {
        if (value !== undefined) found.add(unknown[i] as EventId)
      })
    }
    return found
  }

  async readRecord(id: EventId): Promise<EventRecord | undefined> {
    const key = keys.event(this.space, id)
    const bytes = await this.storage.get(key)
    return bytes === undefined ? undefined : decodeEventRecord(bytes, key)
  }

  /** Causal info of applied events; ids that are not applied are left out. */
  async causalInfo(ids: readonly EventId[]): Promise<Map<EventId, CausalInfo>> {
    const out = new Map<EventId, CausalInfo>()
    const missing: EventId[] = []
    for (const id of ids) {
      const cached = this.causalCache.get(id)
      if (cached) out.set(id, cached)
      else missing.push(id)
    }
    if (missing.length === 0) return out
    const values = await this.storage.getMany(missing.map((id) => keys.event(this.space, id)))
    for (let i = 0; i < missing.length; i++) {
      const value = values[i]
      if (value === undefined) continue
      const id = missing[i] as EventId
      const record = decodeEventRecord(value, keys.event(this.space, id))
      const header = decodeHeader(record.header, id)
      const vector = await this.anchorVector(header.author, header.seq)
      const info: CausalInfo = { author: header.author, seq: header.seq, clock: header.clock, vector }
      this.remember(id, info)
      out.set(id, info)
    }
    return out
  }

  remember(id: EventId, info: CausalInfo): void {
    if (this.causalCache.size >= CAUSAL_CACHE_LIMIT) this.causalCache.clear()
    this.causalCache.set(id, info)
  }

  /**
   * The causal vector of the author's event at `seq`: the vector stored at the nearest event at
   * or below it that had deps (every author has one at seq 1), with the author's own entry moved
   * up to `seq`. Correct because an event without deps has exactly its predecessor's past.
   */
  async anchorVector(author: AuthorKey, seq: number): Promise<VersionVector> {
    const tip = this.tips.get(author)
    if (tip && tip.seq === seq) return tip.vector
    const prefix = keys.anchorPrefix(this.space, author)
    for await (const [key, value] of this.storage.entries({ gte: prefix, lte: keys.anchor(this.space, author, seq), reverse: true, limit: 1 })) {
      return { ...decodeVector(value, key), [author]: seq }
    }
    return { [author]: seq }
  }

  /** The ids of the author's events with seq in [fromSeq, toSeq], by seq. */
  async idsBySeq(author: AuthorKey, fromSeq: number, toSeq: number): Promise<Map<number, EventId>> {
    const out = new Map<number, EventId>()
    if (toSeq < fromSeq) return out
    const prefix = keys.runPrefix(this.space, author)
    let start = keys.run(this.space, author, fromSeq)
    for await (const [key] of this.storage.entries({ gte: prefix, lte: start, reverse: true, limit: 1 })) start = key
    for await (const [key, value] of this.storage.entries({ gte: start, lte: keys.run(this.space, author, toSeq) })) {
      const first = parseSeqKey(key.slice(prefix.length))
      const ids = decodeIdRun(value, key)
      for (let i = 0; i < ids.length; i++) {
        const seq = first + i
        if (seq >= fromSeq && seq <= toSeq) out.set(seq, ids[i] as EventId)
      }
    }
    return out
  }
}

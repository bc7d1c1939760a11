/**
 * Stages events for one atomic write. For each event in causal order it computes the causal
 * vector, checks the chain link to the author's tip, the clock (strictly above everything in
 * its past) and authorization (grants in its causal past), then records what to write. Nothing
 * touches storage or the space's memory until `commit`, after the write has succeeded, so a
 * refused event leaves both exactly as they were.
 */
import { AuthError, VerifyError } from '../errors.js'
import { GENESIS_OP, parseControlBody, SpaceAuthority, type ControlEntry } from './authorization.js'
import type { DecodedEvent } from './decode-envelope.js'
import { compareHlc } from './hlc.js'
import type { AuthorKey, EventId } from './ids.js'
import type { Equivocation } from './chain-authentication.js'
import type { CausalInfo, SpaceState, Tip } from './space-state.js'
import { utf8Encode } from './bytes.js'
import { encodePriorityStart, isPriorityBody } from './priority-index.js'
import type { StorageWrite } from './storage.js'
import { keys } from './store-keys.js'
import {
  encodeControl, encodeEventRecord, encodeIdRun, encodeMeta, encodeVector, type SpaceMeta,
} from './store-records.js'
import { joinVectors } from './version-vector.js'

/** Causal info for an event without dependencies. */
export const NO_DEPS: ReadonlyMap<EventId, CausalInfo> = new Map()

/** An event accepted into the batch, with where it lands in this store. */
export interface StagedEvent {
  readonly event: DecodedEvent
  readonly local: number
  readonly recordedAt: number
  readonly causal: CausalInfo
  readonly control?: ControlEntry
  signature?: Uint8Array
}

export class ApplyBatch {
  private meta: SpaceMeta | undefined
  private authority: SpaceAuthority | undefined
  private authorityCopied = false
  private nextLocal: number
  private readonly tips = new Map<AuthorKey, Tip>()
  private readonly staged = new Map<EventId, StagedEvent>()
  private readonly order: StagedEvent[] = []
  private readonly runs = new Map<AuthorKey, { from: number; ids: EventId[] }>()
  /** Set when an event proves its author signed two events at one seq. */
  equivocation: Equivocation | undefined

  /** Where the priority index starts if this batch begins it: before the batch's first event. */
  private readonly priorityStart: number

  constructor(private readonly state: SpaceState, private readonly recordedAt: number) {
    this.meta = state.meta
    this.authority = state.authority
    this.nextLocal = state.nextLocal()
    this.priorityStart = this.nextLocal - 1
  }

  get applied(): readonly StagedEvent[] {
    return this.order
  }

  get owner(): AuthorKey | undefined {
    return this.meta?.owner
  }

  tip(author: AuthorKey): Tip | undefined {
    return this.tips.get(author) ?? this.state.tips.get(author)
  }

  /** Every author's tip as this batch sees it. */
  allTips(): Map<AuthorKey, Tip> {
    const out = new Map(this.state.tips)
    for (const [author, tip] of this.tips) out.set(author, tip)
    return out
  }

  has(id: EventId): boolean {
    return this.staged.has(id)
  }

  async causal(ids: readonly EventId[]): Promise<Map<EventId, CausalInfo>> {
    const out = new Map<EventId, CausalInfo>()
    const rest: EventId[] = []
    for (const id of ids) {
      const staged = this.staged.get(id)
      if (staged) out.set(id, staged.causal)
      else rest.push(id)
    }
    if (rest.length > 0) for (const [id, info] of await this.state.causalInfo(rest)) out.set(id, info)
    return out
  }

  /**
   * Checks and stages one event whose requirements are all applied or staged.
   * @throws VerifyError BROKEN_CHAIN, BAD_CLOCK, MISSING_BODY, BAD_CONTROL; AuthError
   *   NOT_AUTHORIZED, EQUIVOCATION
   */
  async apply(event: DecodedEvent): Promise<StagedEvent> {
    return this.applyWith(event, event.header.deps.length > 0 ? await this.causal(event.header.deps) : NO_DEPS)
  }

  /**
   * `apply` for an event whose dependencies' causal info is at hand (synchronous: a bulk append
   * or ingest would otherwise pay a promise per event).
   */
  applyWith(event: DecodedEvent, deps: ReadonlyMap<EventId, CausalInfo>): StagedEvent {
    const { id, header } = event
    const where = { event: id, author: header.author, seq: header.seq }
    let causal: CausalInfo
    let control: ControlEntry | undefined
    let meta = this.meta

    if (header.space === undefined) {
      if (meta) throw new VerifyError('BAD_GENESIS', 'the space already has a genesis', where)
      if (header.kind !== 'control' || !event.body) throw new VerifyError('BAD_GENESIS', 'a genesis is a control event with its body', where)
      if (parseControlBody(event.body, id).op !== GENESIS_OP) throw new VerifyError('BAD_GENESIS', 'the first event must be space.genesis', where)
      meta = { owner: header.author, genesis: id }
      causal = { author: header.author, seq: 1, clock: header.clock, vector: { [header.author]: 1 } }
    } else {
      if (!meta || !this.authority) throw new VerifyError('BROKEN_CHAIN', 'the space genesis is not applied yet', where)
      const tip = this.tip(header.author)
      if (header.seq === 1) {
        if (tip) throw new VerifyError('BROKEN_CHAIN', 'the author already has a chain', where)
      } else if (!tip || tip.seq !== header.seq - 1) {
        throw new VerifyError('BROKEN_CHAIN', `the author's chain tip is not at seq ${header.seq - 1}`, where)
      } else if (tip.id !== header.prev) {
        this.equivocation = { author: header.author, seq: tip.seq, ids: [tip.id, header.prev as EventId] }
        throw new AuthError('EQUIVOCATION', `author signed two events at seq ${tip.seq}: ${tip.id} and ${header.prev}`, where)
      }
      const clocks = tip ? [tip.clock] : []
      const vectors = tip ? [tip.vector] : []
      for (const dep of header.deps) {
        const info = deps.get(dep)
        if (!info) throw new VerifyError('BROKEN_CHAIN', `dependency ${dep} is not applied`, where)
        clocks.push(info.clock)
        vectors.push(info.vector)
      }
      for (const clock of clocks) {
        if (compareHlc(header.clock, clock) <= 0) {
          throw new VerifyError('BAD_CLOCK', 'clock is not above every event in its causal past', where)
        }
      }
      const vector = joinVectors(...vectors)
      vector[header.author] = header.seq
      causal = { author: header.author, seq: header.seq, clock: header.clock, vector }
      if (header.kind === 'control' && !event.body) throw new VerifyError('MISSING_BODY', 'a control event must carry its body', where)
      control = this.authority.authorize(id, header, event.body, vector)
    }

    // Every check passed: stage.
    if (meta !== this.meta) {
      this.meta = meta
      this.authority = new SpaceAuthority(header.author)
      this.authorityCopied = true
    }
    if (control) {
      if (!this.authorityCopied) {
        this.authority = (this.authority as SpaceAuthority).copy()
        this.authorityCopied = true
      }
      ;(this.authority as SpaceAuthority).add(control)
    }
    const staged: StagedEvent = {
      event, local: this.nextLocal++, recordedAt: this.recordedAt, causal,
      ...(control ? { control } : {}),
      ...(event.signature ? { signature: event.signature } : {}),
    }
    this.staged.set(id, staged)
    this.order.push(staged)
    this.tips.set(header.author, { seq: header.seq, id, clock: header.clock, vector: causal.vector })
    const run = this.runs.get(header.author)
    if (run) run.ids.push(id)
    else this.runs.set(header.author, { from: header.seq, ids: [id] })
    return staged
  }

  /** The writes that store every staged event and the indexes over them. */
  writes(): StorageWrite[] {
    const space = this.state.space
    const writes: StorageWrite[] = []
    for (const staged of this.order) {
      // Every event of this batch lies past the index's start (it starts before the first batch it sees).
      if (isPriorityBody(staged.event.body)) writes.push({ type: 'put', key: keys.priority(space, staged.local), value: utf8Encode(staged.event.id) })
      const { event } = staged
      writes.push({
        type: 'put',
        key: keys.event(space, event.id),
        value: encodeEventRecord({
          header: event.headerText,
          ...(event.bodyBytes ? { body: event.bodyBytes } : {}),
          ...(staged.signature ? { signature: staged.signature } : {}),
          local: staged.local,
          recordedAt: staged.recordedAt,
        }),
      })
      if (event.header.deps.length > 0 || event.header.seq === 1) {
        writes.push({ type: 'put', key: keys.anchor(space, event.header.author, event.header.seq), value: encodeVector(staged.causal.vector) })
      }
      if (staged.control) writes.push({ type: 'put', key: keys.control(space, staged.local), value: encodeControl(staged.control) })
    }
    if (this.order.length === 0) return writes
    if (this.state.priorityStart === undefined) writes.push({ type: 'put', key: keys.priorityStart(space), value: encodePriorityStart(this.priorityStart) })
    for (const [author, run] of this.runs) {
      writes.push({ type: 'put', key: keys.run(space, author, run.from), value: encodeIdRun(run.ids) })
    }
    const first = this.order[0] as StagedEvent
    writes.push({ type: 'put', key: keys.order(space, first.local), value: encodeIdRun(this.order.map((s) => s.event.id)) })
    if (this.state.meta === undefined) {
      writes.push({ type: 'put', key: keys.meta(space), value: encodeMeta(this.meta as SpaceMeta) })
      writes.push({ type: 'put', key: keys.spaceEntry(space), value: new Uint8Array(0) })
    }
    return writes
  }

  /** Moves the staged state into the space's memory; call only after `writes()` were stored. */
  commit(): void {
    if (this.order.length === 0) return
    this.state.priorityStart ??= this.priorityStart
    this.state.meta = this.meta
    this.state.nextLocalSeq = this.nextLocal
    this.state.authority = this.authority
    for (const [author, tip] of this.tips) this.state.tips.set(author, tip)
    for (const staged of this.order) this.state.remember(staged.event.id, staged.causal)
  }
}

/**
 * The sync endpoint of a replica: its Memory. What the peer lacks is read from the log with
 * every stored signature; what the peer sends is ingested into the log and acknowledged once
 * durable, while the projection catches up in the background (reads wait for it). A replica
 * that syncs through a scoped token drops the records its relay withdraws (they left the scope).
 */
import type { EventEnvelope, VersionVector } from '../log/index.js'
import type { Memory } from '../memory/index.js'
import { catchUpBatches } from './catch-up-order.js'
import type { WithheldEvent } from './messages.js'
import type { Outgoing, SyncEndpoint } from './sync-session.js'

export class MemoryEndpoint implements SyncEndpoint {
  readonly withdraw?: (records: readonly string[]) => Promise<number>

  /**
   * @param scoped the relay granted access through a token (not full access): withdrawals are accepted
   * @param relay the relay's URL: what it withholds is kept under it (`memory.withheld()`)
   */
  constructor(private readonly memory: Memory, private readonly options: { scoped?: boolean; relay?: string } = {}) {
    if (options.scoped) this.withdraw = (records) => this.memory.withdraw(records)
  }

  /** Keeps the relay's word; only this replica's own events count (memory/withheld-writes.ts). */
  async noteWithheld(events: readonly WithheldEvent[]): Promise<void> {
    await this.memory.noteWithheld(this.options.relay ?? 'unknown relay', events)
  }

  get space(): string {
    return this.memory.space
  }

  versionVector(): VersionVector {
    return this.memory.versionVector()
  }

  /** With `rescope`, everything: a replica's peer may see all of it. Streamed from the log (catchUpBatches). */
  async envelopesFor(peerVector: VersionVector, options: { rescope?: boolean } = {}): Promise<Outgoing> {
    return { events: [], more: catchUpBatches(this.memory.log, options.rescope ? {} : peerVector) }
  }

  /** A replica's peer may see everything. */
  async visible(envelopes: readonly EventEnvelope[]): Promise<Outgoing> {
    return { events: envelopes }
  }

  /** Nothing is owed before a frame: the replica's own log checks it. */
  async prepare(): Promise<void> {}

  /** During the peer's catch-up (`more`), records are updated in large batches (Memory.ingestDeferred). */
  async ingest(envelopes: EventEnvelope[], deadline?: number, more?: boolean): Promise<void> {
    await this.memory.ingestDeferred(envelopes, { ...(deadline === undefined ? {} : { deadline }), ...(more ? { more } : {}) })
  }

  /** Resolves once the records caught up and an admin replica named what they showed deleted (events for the relay). */
  applyHeld(): Promise<void> {
    return this.memory.applyPending()
  }

  onApplied(listener: (envelopes: readonly EventEnvelope[]) => void): () => void {
    return this.memory.log.on('envelopes-applied', listener)
  }
}

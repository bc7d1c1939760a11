/**
 * The sync endpoint of one peer's session on a relay: the space's memory, seen through the
 * peer's access. A peer with full access (the owner, or an admin by its key) reads and writes
 * everything. A token holder reads the records in its scope with their bodies and everything
 * else as headers only (so it can still verify chains), and writes only within its scope and
 * permissions. Control events and deletions always travel with their bodies: every replica must
 * be able to check grants and to delete. A redaction travels with its body only within the scope:
 * its body keeps the record's skeleton.
 *
 * With a tag scope, a record can come into scope or leave it (its tags change) after the peer
 * got some of its events. A record that came in gets the bodies of the events the peer holds
 * header-only; one that left is withdrawn: the peer drops what it holds of it. Scope is judged on
 * the record as it is now, so what the peer ends up with is the records now in scope.
 */
import { hasPermission, scopeAllows, type CapabilityToken, type ScopedRecord } from '../auth/index.js'
import { AuthError } from '../errors.js'
import { parseJson, type EventEnvelope, type VersionVector } from '../log/index.js'
import type { Memory } from '../memory/index.js'
import { MEMORY_OPS, tagsOf } from '../projection/index.js'
import { deletionsFirst, tombstoneOpOf } from './catch-up-order.js'
import { authorAndSeq } from './frames.js'
import type { Outgoing, SyncEndpoint } from './sync-session.js'

export interface PeerAccess {
  readonly key: string
  /** Undefined for full access. */
  readonly token?: CapabilityToken
}

interface BodyFacts {
  readonly op: string
  readonly kind?: string
  readonly id?: string
  readonly data: Record<string, unknown>
}

const decoder = new TextDecoder()
const TOMBSTONE_OPS: readonly string[] = [MEMORY_OPS.delete, MEMORY_OPS.redact]

function isControl(header: Uint8Array): boolean {
  return Buffer.from(header.buffer, header.byteOffset, header.byteLength).includes('"kind":"control"')
}

function factsOf(body: Uint8Array): BodyFacts | undefined {
  try {
    const parsed = parseJson(decoder.decode(body)) as { op?: unknown; data?: unknown }
    if (typeof parsed.op !== 'string' || typeof parsed.data !== 'object' || parsed.data === null) return undefined
    const data = parsed.data as Record<string, unknown>
    return {
      op: parsed.op,
      data,
      ...(typeof data.kind === 'string' ? { kind: data.kind } : {}),
      ...(typeof data.id === 'string' ? { id: data.id } : {}),
    }
  } catch {
    return undefined
  }
}

/** The records a deletion names as derived from its target (`data.derived`: `{ kind, id }`). */
function derivedOf(data: Record<string, unknown>): { id: string; kind: string }[] {
  if (!Array.isArray(data.derived)) return []
  return data.derived.flatMap((item: unknown) => {
    const { id, kind } = (typeof item === 'object' && item !== null ? item : {}) as { id?: unknown; kind?: unknown }
    return typeof id === 'string' && typeof kind === 'string' ? [{ id, kind }] : []
  })
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : []
}

export class RelayEndpoint implements SyncEndpoint {
  constructor(private readonly memory: Memory, readonly access: PeerAccess) {}

  get space(): string {
    return this.memory.space
  }

  versionVector(): VersionVector {
    return this.memory.versionVector()
  }

  onApplied(listener: (envelopes: readonly EventEnvelope[]) => void): () => void {
    return this.memory.log.on('envelopes-applied', listener)
  }

  /** The record an operation touches, as the scope sees it (its current tags, or a create's). */
  private async recordOf(facts: BodyFacts): Promise<ScopedRecord | undefined> {
    if (facts.id === undefined || facts.kind === undefined) return undefined
    const view = await this.memory.get(facts.id)
    if (view) return { id: view.id, kind: view.kind, tags: tagsOf(view) }
    const fields = (facts.data.fields ?? {}) as Record<string, unknown>
    const tags = facts.op === MEMORY_OPS.create ? [...strings(fields.tags), ...(facts.kind === 'episode' ? strings(fields.categories) : [])] : []
    return { id: facts.id, kind: facts.kind, tags }
  }

  async envelopesFor(peerVector: VersionVector, options: { rescope?: boolean } = {}): Promise<Outgoing> {
    const log = this.memory.log
    // A peer whose access changed gets everything it may see again: its header-only copies of
    // what it may now read are filled in, and what it may no longer hold is withdrawn (tell).
    const since = options.rescope ? {} : peerVector
    if (options.rescope) this.rescoping = true
    try {
      return await this.visible(await deletionsFirst(await log.envelopesSince(since, { signatures: 'stored' }), (id) => log.causalVector(id)), peerVector)
    } finally {
      this.rescoping = false
    }
  }

  /** Set while a rescope's events are filtered: every record's place is told, with no fills (the events carry the bodies). */
  private rescoping = false

  /**
   * The peer's view of these events: bodies outside its scope removed (headers still travel),
   * with the fills and withdrawals that records moving in or out of its scope call for.
   */
  async visible(envelopes: readonly EventEnvelope[], peerVector: VersionVector): Promise<Outgoing> {
    const token = this.access.token
    if (!token) return { events: envelopes }
    // Without read, only what every replica needs keeps its body: grants and deletions.
    const headerOnly = ({ body: _body, ...header }: EventEnvelope): EventEnvelope => header
    if (!hasPermission(token, 'read')) {
      const events = envelopes.map((envelope) => (isControl(envelope.header) || tombstoneOpOf(envelope) === 'delete' ? envelope : headerOnly(envelope)))
      // A peer whose token no longer reads drops whatever content an earlier one let it hold.
      const withdraw = this.rescoping && Object.keys(peerVector).length > 0 ? this.recordsOf(envelopes) : []
      return { events, ...(withdraw.length > 0 ? { withdraw } : {}) }
    }
    // Kinds and ids never change: only a tag scope gains and loses records (or any scope, for a
    // peer whose token changed).
    const membershipChanges = this.rescoping || (token.scope.tags !== undefined && !token.scope.all)
    const events: EventEnvelope[] = []
    const fills: EventEnvelope[] = []
    const withdraw: string[] = []
    for (const envelope of envelopes) {
      if (!envelope.body || isControl(envelope.header)) {
        events.push(envelope)
        continue
      }
      const facts = factsOf(envelope.body)
      const record = facts ? await this.recordOf(facts) : undefined
      const inScope = record !== undefined && scopeAllows(token.scope, record)
      // A deletion reaches every reader (its body names ids, no content). A redaction's body
      // keeps the record's skeleton (tags, times), so only readers whose scope holds it see it.
      const isDeletion = facts?.op === MEMORY_OPS.delete
      events.push(isDeletion || inScope ? envelope : headerOnly(envelope))
      if (membershipChanges && record !== undefined && !isDeletion) await this.tell(record.id, inScope, peerVector, fills, withdraw)
    }
    return { events, ...(fills.length > 0 ? { fills } : {}), ...(withdraw.length > 0 ? { withdraw } : {}) }
  }

  /** The records these events touch (deletions aside: they reach everyone). */
  private recordsOf(envelopes: readonly EventEnvelope[]): string[] {
    const ids = new Set<string>()
    for (const envelope of envelopes) {
      if (!envelope.body || isControl(envelope.header)) continue
      const facts = factsOf(envelope.body)
      if (facts?.id !== undefined && facts.op !== MEMORY_OPS.delete) ids.add(facts.id)
    }
    return [...ids]
  }

  /** Per record, whether this session last told the peer it is in scope. */
  private readonly told = new Map<string, boolean>()

  /**
   * Tells the peer where a record stands, the first time this session sends one of its events or
   * when that changed. The peer holds the record's earlier events (those within its vector), with
   * their bodies if the record was in scope when they were sent, without if not. So a record in
   * scope gets those bodies (one the peer holds already costs it a hash check), and one out of
   * scope is withdrawn. Withdrawn whatever this relay still holds of it: a redaction or an erasure
   * here leaves no body to show what the peer may hold, and a peer that holds nothing of the
   * record ignores the withdrawal.
   */
  private async tell(id: string, inScope: boolean, peerVector: VersionVector, fills: EventEnvelope[], withdraw: string[]): Promise<void> {
    if (this.told.get(id) === inScope) return
    this.told.set(id, inScope)
    if (Object.keys(peerVector).length === 0) return // a new reader holds nothing yet
    if (!inScope) withdraw.push(id)
    else if (!this.rescoping) fills.push(...await this.heldByPeer(id, peerVector))
  }

  /** The record's content events within the peer's vector, with the bodies this relay holds. */
  private async heldByPeer(id: string, peerVector: VersionVector): Promise<EventEnvelope[]> {
    const out: EventEnvelope[] = []
    for (const item of await this.memory.history(id)) {
      if (item.type !== 'content' || item.bodyState !== 'present') continue
      const envelope = await this.memory.log.envelope(item.event)
      if (!envelope?.body) continue
      const { author, seq } = authorAndSeq(envelope)
      if (seq <= (peerVector[author] ?? 0)) out.push(envelope)
    }
    return out
  }

  /** A token peer's frames are checked against the records: bring them up to date first. */
  async prepare(): Promise<void> {
    if (this.access.token) await this.memory.settled()
  }

  /** @throws AuthError PERMISSION_DENIED naming the event */
  async ingest(envelopes: EventEnvelope[], deadline?: number): Promise<void> {
    const token = this.access.token
    // What the relay already holds in full changes nothing, so it needs no permission.
    const fresh = token ? await this.notHeld(envelopes) : envelopes
    if (fresh.length === 0) return
    if (token) {
      if (!hasPermission(token, 'write') && !hasPermission(token, 'derive')) {
        throw new AuthError('PERMISSION_DENIED', 'this token does not allow writing', { author: this.access.key })
      }
      for (const envelope of fresh) await this.checkWrite(envelope, token)
    }
    await this.memory.ingestDeferred(fresh, deadline === undefined ? {} : { deadline })
  }

  /** Envelopes that add something here: an event not stored, or a body a stored header lacks. */
  private async notHeld(envelopes: readonly EventEnvelope[]): Promise<EventEnvelope[]> {
    const out: EventEnvelope[] = []
    for (const envelope of envelopes) {
      const stored = await this.memory.log.get(envelope.id)
      if (!stored || (envelope.body !== undefined && stored.bodyState === 'absent')) out.push(envelope)
    }
    return out
  }

  private async checkWrite(envelope: EventEnvelope, token: CapabilityToken): Promise<void> {
    const where = { event: envelope.id }
    if (isControl(envelope.header)) throw new AuthError('PERMISSION_DENIED', 'only full-access peers send grants and revocations', where)
    if (!envelope.body) return
    const facts = factsOf(envelope.body)
    const record = facts ? await this.recordOf(facts) : undefined
    if (!facts || !record) throw new AuthError('PERMISSION_DENIED', 'event is not a memory operation a token may write', where)
    // `derive` without `write`: new records from what the holder reads (a derived fact, say),
    // never a change to one that exists.
    if (!hasPermission(token, 'write') && (facts.op !== MEMORY_OPS.create || (await this.memory.status(record.id)) !== 'absent')) {
      throw new AuthError('PERMISSION_DENIED', 'with derive and no write, a token only creates new records', where)
    }
    if (TOMBSTONE_OPS.includes(facts.op) && !hasPermission(token, 'redact')) {
      throw new AuthError('PERMISSION_DENIED', 'deleting and redacting need the redact permission', where)
    }
    if (!scopeAllows(token.scope, record)) throw new AuthError('PERMISSION_DENIED', `record ${record.id} is outside the token's scope`, where)
    // A deletion takes the records it names as derived with it. Each must be in scope, or truly
    // derived only from the target as the relay sees it (what deleting it takes along anyway).
    if (facts.op === MEMORY_OPS.delete) {
      const reach = new Set((await this.memory.forgetReach(record.id)).map((derived) => derived.id))
      for (const derived of derivedOf(facts.data)) {
        if (reach.has(derived.id)) continue
        const view = await this.memory.get(derived.id)
        const target = view ? { id: view.id, kind: view.kind, tags: tagsOf(view) } : { ...derived, tags: [] }
        if (!scopeAllows(token.scope, target)) {
          throw new AuthError('PERMISSION_DENIED', `the deletion takes record ${derived.id} with it, which is outside the token's scope and not derived from ${record.id}`, where)
        }
      }
    }
    if (facts.op === MEMORY_OPS.patch) {
      const add = (facts.data.add ?? {}) as Record<string, unknown>
      const remove = (facts.data.remove ?? {}) as Record<string, unknown>
      const tags = new Set(record.tags)
      for (const tag of [...strings(add.tags), ...strings(add.categories)]) tags.add(tag)
      for (const tag of [...strings(remove.tags), ...strings(remove.categories)]) tags.delete(tag)
      if (!scopeAllows(token.scope, { ...record, tags: [...tags] })) {
        throw new AuthError('PERMISSION_DENIED', `the change would move record ${record.id} out of the token's scope`, where)
      }
    }
  }
}

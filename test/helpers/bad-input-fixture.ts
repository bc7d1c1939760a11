/**
 * The store that test/log/bad-inputs.test.ts feeds garbage to, a snapshot of everything
 * observable about it (to prove a refused call changed nothing), and oracles that decide what
 * counts as valid input without calling the code under test.
 */
import { Identity } from '../../src/log/identity.js'
import { LogStore } from '../../src/log/log-store.js'
import type { SpaceLog } from '../../src/log/space-log.js'
import { badEnvelopes, type BadInput, type RawEnvelope } from './bad-inputs.js'

const HEX64 = /^[0-9a-f]{64}$/

export interface Fixture {
  readonly store: LogStore
  readonly log: SpaceLog
  /** The space owner (every right). */
  readonly owner: Identity
  /** Granted write, not admin. */
  readonly writer: Identity
  /** Holds no right at all. */
  readonly stranger: Identity
  readonly genesisId: string
  readonly dataId: string
  readonly erasedId: string
  /** Envelopes of a replica that this store lacks; on their own they ingest cleanly. */
  readonly fresh: RawEnvelope[]
  readonly garbageEnvelopes: BadInput[]
}

export function seed(byte: number): Uint8Array {
  return new Uint8Array(32).fill(byte)
}

/**
 * A small space with a bit of everything: a grant, batches and singles by two authors, an
 * erased body, and an event held for a missing dependency.
 */
export async function buildFixture(): Promise<Fixture> {
  const owner = Identity.fromSeed(seed(1))
  const writer = Identity.fromSeed(seed(2))
  const stranger = Identity.fromSeed(seed(3))
  const store = await LogStore.open()
  const log = await store.createSpace(owner, { name: 'bad inputs' })
  await log.grant(owner, writer.author)
  const batch = await log.appendBatch(owner, [1, 2, 3].map((n) => ({ op: 'note', data: { n, text: `note ${n}` } })))
  await log.append(writer, { op: 'note', data: { from: 'writer' } })
  const single = await log.append(owner, { op: 'note', data: { tags: ['a', 'b'], nested: { x: 1.5 } } })
  const erasedId = (batch[0] as { id: string }).id
  await log.erase([erasedId])

  // A second replica that runs ahead: what it has beyond this store is "fresh" here.
  const source = await (await LogStore.open()).openSpace(log.space)
  await source.ingest(await log.envelopesSince())
  await source.appendBatch(owner, [4, 5, 6].map((n) => ({ op: 'note', data: { n } })))
  await source.append(writer, { op: 'note', data: { from: 'writer, later' } })
  const fresh = (await source.envelopesSince(log.versionVector())) as RawEnvelope[]
  // One event more, shipped alone: its prev is in `fresh`, so this store holds it.
  const held = await source.append(owner, { op: 'note', data: 'held' })
  const heldEnvelopes = await source.envelopesSince({ ...source.versionVector(), [owner.author]: held.header.seq - 1 })
  const heldResult = await log.ingest(heldEnvelopes)
  if (heldResult.held.length !== 1) throw new Error('fixture: expected one held event')
  // And one beyond that, signed, which this store never sees intact.
  const future = await source.append(owner, { op: 'note', data: 'future' })
  const [signed] = (await source.envelopesSince({ ...source.versionVector(), [owner.author]: future.header.seq - 1 })) as RawEnvelope[]
  const unsigned = fresh.find((envelope) => envelope.signature === undefined && envelope.body !== undefined)
  const other = await (await LogStore.open()).createSpace(stranger)
  await other.append(stranger, { op: 'note', data: 'elsewhere' })
  const [foreign] = (await other.envelopesSince({ [stranger.author]: 1 })) as RawEnvelope[]
  if (!signed?.signature || !unsigned || !foreign?.signature) throw new Error('fixture: envelopes missing')

  return {
    store, log, owner, writer, stranger,
    genesisId: log.space, dataId: single.id, erasedId,
    fresh, garbageEnvelopes: badEnvelopes(unsigned, signed, foreign),
  }
}

function hex(bytes: Uint8Array | undefined): string | undefined {
  return bytes === undefined ? undefined : Buffer.from(bytes).toString('hex')
}

/** Everything observable about the store, as one string. */
export async function snapshot(fixture: Fixture): Promise<string> {
  const { log, store } = fixture
  const applied: unknown[] = []
  for await (const event of log.readApplied()) {
    applied.push({
      id: event.id, local: event.local, recordedAt: event.recordedAt, bodyState: event.bodyState,
      header: event.header, body: event.body, signature: hex(event.signature),
    })
  }
  const raw: string[] = []
  for await (const [key, value] of store.storage.entries({})) raw.push(`${key}=${hex(value)}`)
  const state = {
    versionVector: log.versionVector(),
    heads: log.heads(),
    held: log.heldCount,
    owner: log.owner,
    authors: log.authors(),
    rights: [fixture.owner, fixture.writer, fixture.stranger].map((identity) => log.rightsOf(identity.author)),
    equivocations: log.equivocations(),
    spaces: await store.listSpaces(),
    applied,
    raw,
  }
  return JSON.stringify(state, (_key, value: unknown) => (typeof value === 'bigint' ? `${value}n` : value))
}

// ---- Oracles: what counts as valid input, decided without the code under test. ----

export function isHex64(value: unknown): boolean {
  return typeof value === 'string' && HEX64.test(value)
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value) as unknown
  return proto === Object.prototype || proto === null
}

export function isJsonValue(value: unknown, depth = 0): boolean {
  if (depth > 200) return false
  if (value === null || typeof value === 'boolean' || typeof value === 'bigint') return true
  if (typeof value === 'number') return Number.isFinite(value)
  if (typeof value === 'string') return value.isWellFormed()
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!(i in value) || !isJsonValue(value[i], depth + 1)) return false
    return true
  }
  if (!isPlainObject(value)) return false
  return Object.entries(value).every(([key, item]) => key.isWellFormed() && (item === undefined || isJsonValue(item, depth + 1)))
}

export function isValidEntry(value: unknown): boolean {
  if (!isPlainObject(value)) return false
  const { op, data } = value
  return typeof op === 'string' && op.length >= 1 && op.length <= 128 && !op.startsWith('space.') &&
    (data === undefined || (isJsonValue(data) && JSON.stringify(data, (_k, v: unknown) => (typeof v === 'bigint' ? 0 : v)).length < 1024 * 1024 - 100))
}

export function isPositiveSafeInteger(value: unknown): boolean {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 1
}

export function isValidJsonText(value: unknown): boolean {
  if (typeof value !== 'string') return false
  try {
    JSON.parse(value)
    return true
  } catch {
    return false
  }
}

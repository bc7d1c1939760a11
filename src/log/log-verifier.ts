/**
 * Re-verifies everything a space's store holds, trusting none of its indexes: each event's id
 * against its header bytes, canonical forms, bodies against their hashes, every stored
 * signature, each author's hash chain up to a signed tip, dependencies and clocks, and every
 * event's authorization recomputed from the grants in its causal past. Then checks the indexes
 * (runs, tips, anchors) against what the events themselves say.
 */
import { CairnError } from '../errors.js'
import { GENESIS_OP, parseControlBody, SpaceAuthority } from './authorization.js'
import type { CryptoProvider } from './crypto/index.js'
import { decodeBody, decodeHeader, type EventHeader } from './event.js'
import { compareHlc, type Hlc } from './hlc.js'
import type { AuthorKey, EventId, SpaceId } from './ids.js'
import { eventSignable } from './signable.js'
import type { LogStorage } from './storage.js'
import { keys, parseSeqKey } from './store-keys.js'
import { decodeEventRecord, decodeIdRun, decodeMeta, decodeVector } from './store-records.js'
import { joinVectors, type VersionVector } from './version-vector.js'

export interface VerifyProblem {
  readonly code: string
  readonly message: string
  readonly event?: EventId
  readonly author?: AuthorKey
  readonly seq?: number
}

export interface VerifyReport {
  readonly ok: boolean
  readonly space: SpaceId
  /** Events checked (every event the apply order lists), good or bad. */
  readonly events: number
  readonly authors: number
  readonly signatures: number
  readonly erasedBodies: number
  readonly heldEvents: number
  /** In apply order; the first is the first bad event. */
  readonly problems: VerifyProblem[]
}

interface Seen {
  readonly author: AuthorKey
  readonly seq: number
  readonly clock: Hlc
}

interface AuthorChain {
  seq: number
  id: EventId
  clock: Hlc
  vector: VersionVector
  signed: boolean
  ids: EventId[]
}

const READ_CHUNK = 2048

export async function verifyLog(
  storage: LogStorage,
  space: SpaceId,
  crypto: CryptoProvider,
  options: { maxProblems?: number } = {},
): Promise<VerifyReport> {
  const maxProblems = options.maxProblems ?? 100
  const problems: VerifyProblem[] = []
  const report = (problem: VerifyProblem): void => {
    if (problems.length < maxProblems) problems.push(problem)
  }
  const seen = new Map<EventId, Seen>()
  const anchors = new Map<EventId, VersionVector>()
  const chains = new Map<AuthorKey, AuthorChain>()
  let authority: SpaceAuthority | undefined
  let events = 0
  let signatures = 0
  let erasedBodies = 0

  const anchorSeqs = new Map<AuthorKey, number[]>()
  const vectorOf = (id: EventId): VersionVector => {
    const info = seen.get(id) as Seen
    // Without deps an event's past is its predecessor's: use the nearest anchor at or below it.
    const seqs = anchorSeqs.get(info.author) ?? []
    let low = 0
    let high = seqs.length - 1
    while (low < high) {
      const middle = (low + high + 1) >> 1
      if ((seqs[middle] as number) <= info.seq) low = middle
      else high = middle - 1
    }
    const chain = chains.get(info.author) as AuthorChain
    const anchor = anchors.get(chain.ids[(seqs[low] ?? 1) - 1] as EventId) ?? {}
    return { ...anchor, [info.author]: info.seq }
  }

  const metaBytes = await storage.get(keys.meta(space))
  const meta = metaBytes ? decodeMeta(metaBytes, keys.meta(space)) : undefined

  const checkEvent = (id: EventId, bytes: Uint8Array | undefined, expectedLocal: number): void => {
    events++
    if (!bytes) return report({ code: 'MISSING_EVENT', message: 'the apply order names an event that is not stored', event: id })
    let header: EventHeader
    let record
    try {
      record = decodeEventRecord(bytes, keys.event(space, id))
    } catch (error) {
      return report({ code: 'CORRUPT_RECORD', message: (error as Error).message, event: id })
    }
    if (crypto.sha256Hex(record.header) !== id) {
      return report({ code: 'BAD_ID', message: 'stored header does not hash to the event id', event: id })
    }
    try {
      header = decodeHeader(record.header, id)
    } catch (error) {
      return report({ code: 'BAD_HEADER', message: (error as Error).message, event: id })
    }
    const where = { event: id, author: header.author, seq: header.seq }
    if (record.local !== expectedLocal) report({ code: 'CORRUPT_INDEX', message: `stored at local ${record.local}, listed at ${expectedLocal}`, ...where })
    if (header.space === undefined ? (id as string) !== space : header.space !== space) {
      return report({ code: 'WRONG_SPACE', message: 'event belongs to another space', ...where })
    }
    // Body and signature problems are reported but do not stop the walk: the header still hashes
    // to its id, so the chain through this event holds and later events are judged on their own.
    let body
    if (record.erased) erasedBodies++
    if (record.body !== undefined) {
      if (record.erased) report({ code: 'ERASED_BODY_PRESENT', message: 'an erased body is still stored', ...where })
      if (record.body.length !== header.bodySize || crypto.sha256Hex(record.body) !== header.bodyHash) {
        report({ code: 'BAD_BODY', message: 'body does not match the hash and size in the header', ...where })
      } else {
        try {
          body = decodeBody(record.body, id)
        } catch (error) {
          report({ code: 'BAD_BODY', message: (error as Error).message, ...where })
        }
      }
    }
    let signed = false
    if (record.signature !== undefined) {
      signatures++
      signed = crypto.verify(record.signature, eventSignable(id), header.author)
      if (!signed) report({ code: 'BAD_SIGNATURE', message: 'signature does not verify', ...where })
    }
    const chain = chains.get(header.author)
    if ((chain?.seq ?? 0) + 1 !== header.seq || (chain && chain.id !== header.prev)) {
      return report({ code: 'BROKEN_CHAIN', message: `does not follow the author's previous event${chain ? ` ${chain.id}` : ''}`, ...where })
    }
    const clocks: Hlc[] = chain ? [chain.clock] : []
    const vectors: VersionVector[] = chain ? [chain.vector] : []
    for (const dep of header.deps) {
      const info = seen.get(dep)
      if (!info) return report({ code: 'BROKEN_CHAIN', message: `dependency ${dep} was not applied before it`, ...where })
      clocks.push(info.clock)
      vectors.push(vectorOf(dep))
    }
    if (clocks.some((clock) => compareHlc(header.clock, clock) <= 0)) {
      return report({ code: 'BAD_CLOCK', message: 'clock is not above every event in its causal past', ...where })
    }
    const vector = joinVectors(...vectors)
    vector[header.author] = header.seq
    let authorized = true
    try {
      if (header.space === undefined) {
        if (!body || parseControlBody(body, id).op !== GENESIS_OP) throw new Error('the genesis must carry a space.genesis body')
        authority = new SpaceAuthority(header.author)
      } else {
        if (!authority) throw new Error('event precedes the genesis')
        if (header.kind === 'control' && !body) throw new Error('a control event must keep its body')
        const control = authority.authorize(id, header, body, vector)
        if (control) authority.add(control)
      }
    } catch (error) {
      const code = error instanceof CairnError ? error.code : 'NOT_AUTHORIZED'
      report({ code, message: (error as Error).message, ...where })
      authorized = false
    }
    if (!authorized && header.space === undefined) return
    seen.set(id, { author: header.author, seq: header.seq, clock: header.clock })
    if (header.deps.length > 0 || header.seq === 1) {
      anchors.set(id, vector)
      const list = anchorSeqs.get(header.author)
      if (list) list.push(header.seq)
      else anchorSeqs.set(header.author, [header.seq])
    }
    if (chain) {
      Object.assign(chain, { seq: header.seq, id, clock: header.clock, vector, signed })
      chain.ids.push(id)
    } else {
      chains.set(header.author, { seq: header.seq, id, clock: header.clock, vector, signed, ids: [id] })
    }
  }

  // Walk the events in apply order.
  let expectedLocal = 1
  const orderPrefix = keys.orderPrefix(space)
  for await (const [key, value] of storage.entries({ gte: orderPrefix, lt: keys.end(orderPrefix) })) {
    const first = parseSeqKey(key.slice(orderPrefix.length))
    if (first !== expectedLocal) report({ code: 'CORRUPT_INDEX', message: `apply order jumps from ${expectedLocal} to ${first}` })
    const ids = decodeIdRun(value, key)
    for (let offset = 0; offset < ids.length; offset += READ_CHUNK) {
      const slice = ids.slice(offset, offset + READ_CHUNK)
      const values = await storage.getMany(slice.map((id) => keys.event(space, id)))
      slice.forEach((id, i) => checkEvent(id, values[i], first + offset + i))
    }
    expectedLocal = first + ids.length
  }

  // Each chain must end at a signed event, and the indexes must agree with the chains.
  for (const [author, chain] of chains) {
    if (!chain.signed) report({ code: 'UNSIGNED_TIP', message: 'no signature covers the newest events of this author', event: chain.id, author, seq: chain.seq })
    const runPrefix = keys.runPrefix(space, author)
    let next = 1
    for await (const [key, value] of storage.entries({ gte: runPrefix, lt: keys.end(runPrefix) })) {
      const from = parseSeqKey(key.slice(runPrefix.length))
      const ids = decodeIdRun(value, key)
      if (from !== next || ids.some((id, i) => chain.ids[from - 1 + i] !== id)) {
        report({ code: 'CORRUPT_INDEX', message: `the run index disagrees with the chain at seq ${from}`, author, seq: from })
        break
      }
      next = from + ids.length
    }
    if (next !== chain.seq + 1) report({ code: 'CORRUPT_INDEX', message: 'the run index does not cover the whole chain', author })
    const anchorPrefix = keys.anchorPrefix(space, author)
    for await (const [key, value] of storage.entries({ gte: anchorPrefix, lt: keys.end(anchorPrefix) })) {
      const seq = parseSeqKey(key.slice(anchorPrefix.length))
      const expected = anchors.get(chain.ids[seq - 1] as EventId)
      const stored = decodeVector(value, key)
      if (!expected || JSON.stringify(Object.entries(expected).sort()) !== JSON.stringify(Object.entries(stored).sort())) {
        report({ code: 'CORRUPT_INDEX', message: `the causal vector stored at seq ${seq} is wrong`, author, seq })
      }
    }
  }
  let storedEvents = 0
  for await (const _key of storage.keys({ gte: keys.eventPrefix(space), lt: keys.end(keys.eventPrefix(space)) })) storedEvents++
  if (storedEvents !== expectedLocal - 1) {
    report({ code: 'CORRUPT_INDEX', message: `${storedEvents} events stored but ${expectedLocal - 1} in the apply order` })
  }
  if (meta && ((meta.genesis as string) !== space || chains.get(meta.owner)?.ids[0] !== meta.genesis)) {
    report({ code: 'CORRUPT_INDEX', message: 'the space meta record disagrees with the log' })
  }
  if (!meta && events > 0) report({ code: 'CORRUPT_INDEX', message: 'events are stored but the space meta record is missing' })
  let heldEvents = 0
  for await (const _key of storage.keys({ gte: keys.pendingPrefix(space), lt: keys.end(keys.pendingPrefix(space)) })) heldEvents++

  return {
    ok: problems.length === 0,
    space,
    events,
    authors: chains.size,
    signatures,
    erasedBodies,
    heldEvents,
    problems,
  }
}

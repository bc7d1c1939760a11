/**
 * Runs the peer merge workload (`merge-workload.ts`) on Automerge (`@automerge/automerge` 3.x,
 * the Rust core compiled to WebAssembly) in this process and measures it.
 *
 * The memory is one document `{ records: { [id]: { [field]: value } } }`. Scalar fields are
 * written as `ImmutableString` (an LWW register) rather than plain strings, which Automerge 3
 * turns into collaborative text (one op per character): LWW is what Yjs `Y.Map#set` and Cairn
 * do, so that is the like-for-like choice. `strings: 'text'` measures the default anyway.
 *
 * Invariant: only the writes and the merge are timed. Building the initial state, syncing it to
 * B, generating the writes and checking convergence happen outside the clock.
 */
import * as Automerge from '@automerge/automerge'
import { canonicalRecordsJson, digestCanonicalJson, modelFinalRecords } from './merge-outcome.js'
import {
  checkWorkload,
  DEFAULT_MERGE_WORKLOAD,
  generateInitialRecords,
  generateWrites,
  nowMs,
  packageVersion,
  settleHeap,
  toBatches,
  type FieldValue,
  type MergeResult,
  type MergeWorkload,
  type RecordsSnapshot,
  type Write,
} from './merge-workload.js'

/**
 * How the replicas exchange what they wrote. All three are Automerge's own incremental formats:
 * - `changes` (default): `getChangesSince(doc, sharedHeads)` → `applyChanges` (one buffer per
 *   change); indistinguishable from `save-since` in alternating runs, with the same bytes;
 * - `save-since`: `saveSince(doc, sharedHeads)` → `loadIncremental` (one buffer per direction);
 * - `sync-protocol`: `generateSyncMessage`/`receiveSyncMessage` until both are quiet, with the
 *   sync states kept from the initial sync (as automerge-repo keeps them per peer).
 */
export type AutomergeSyncPath = 'save-since' | 'changes' | 'sync-protocol'

export interface AutomergeMergeOptions {
  syncPath?: AutomergeSyncPath
  /** `immutable` (default): `ImmutableString` LWW values; `text`: plain strings (collab text). */
  strings?: 'immutable' | 'text'
  /**
   * Save and load both replicas between the writes and the merge (untimed), as two devices
   * that restarted before they reconnect. The first such merge in a process is many times
   * slower than later ones (wasm memory growth and V8 collections); see the README.
   */
  reopenBeforeMerge?: boolean
}

type Value = FieldValue | Automerge.ImmutableString
type MemoryDoc = { records: Record<string, Record<string, Value>> }
type Payload = Uint8Array

// Fixed actor ids make the conflict winners, and so the digest, the same on every run.
const ACTOR_A = 'aa'.repeat(16)
const ACTOR_B = 'bb'.repeat(16)

const PATH_LABELS: Record<AutomergeSyncPath, string> = {
  'save-since': 'saveSince/loadIncremental',
  changes: 'getChangesSince/applyChanges',
  'sync-protocol': 'sync protocol',
}

/**
 * Runs the workload on Automerge: initial state on A, synced to B (untimed); each replica's
 * writes in changes of `batchSize` writes (timed); then a merge in both directions (timed).
 */
export async function runAutomergeMerge(
  workload: MergeWorkload = DEFAULT_MERGE_WORKLOAD,
  options: AutomergeMergeOptions = {},
): Promise<MergeResult> {
  checkWorkload(workload)
  const syncPath = options.syncPath ?? 'changes'
  const strings = options.strings ?? 'immutable'
  const reopenBeforeMerge = options.reopenBeforeMerge ?? false
  const toValue = (value: FieldValue): Value =>
    typeof value === 'string' && strings === 'immutable' ? new Automerge.ImmutableString(value) : value

  // Untimed setup: both replicas hold the same initial records.
  const initial = generateInitialRecords(workload)
  let docA = Automerge.init<MemoryDoc>({ actor: ACTOR_A })
  docA = Automerge.change(docA, { time: 0 }, (doc) => {
    doc.records = {}
    for (const [id, record] of Object.entries(initial)) {
      const fields: Record<string, Value> = {}
      for (const [field, value] of Object.entries(record)) fields[field] = toValue(value)
      doc.records[id] = fields
    }
  })
  let docB = Automerge.load<MemoryDoc>(Automerge.save(docA), { actor: ACTOR_B })
  let syncStateA = Automerge.initSyncState()
  let syncStateB = Automerge.initSyncState()
  if (syncPath === 'sync-protocol') {
    // Let the two sync states learn the shared heads, as a connected pair would have.
    ;[docA, docB, syncStateA, syncStateB] = runSyncProtocol(docA, docB, syncStateA, syncStateB).docs
  }
  const sharedHeads = Automerge.getHeads(docA)
  const writesA = toBatches(generateWrites(workload, 'a'), workload.batchSize)
  const writesB = toBatches(generateWrites(workload, 'b'), workload.batchSize)

  settleHeap()
  let start = nowMs()
  docA = writeWithChange(docA, writesA, toValue)
  const writeMsA = nowMs() - start
  settleHeap()
  start = nowMs()
  docB = writeWithChange(docB, writesB, toValue)
  const writeMsB = nowMs() - start
  if (reopenBeforeMerge) {
    docA = reopen(docA, ACTOR_A)
    docB = reopen(docB, ACTOR_B)
    // A peer that persisted its sync state reloads it with the document.
    syncStateA = Automerge.decodeSyncState(Automerge.encodeSyncState(syncStateA))
    syncStateB = Automerge.decodeSyncState(Automerge.encodeSyncState(syncStateB))
  }

  const phases: Record<string, number> = {}
  let bytesExchanged = 0
  let syncRounds = 0
  settleHeap()
  start = nowMs()
  if (syncPath === 'sync-protocol') {
    const run = runSyncProtocol(docA, docB, syncStateA, syncStateB)
    ;[docA, docB] = run.docs
    bytesExchanged = run.bytes
    syncRounds = run.rounds
    Object.assign(phases, run.phasesMs)
  } else {
    // Each side sends what it wrote since the heads both held at the last sync.
    let mark = nowMs()
    const fromA: Payload[] = encodeSince(docA, sharedHeads, syncPath)
    const fromB: Payload[] = encodeSince(docB, sharedHeads, syncPath)
    phases.encode = nowMs() - mark
    mark = nowMs()
    const toB = fromA.map((bytes) => bytes.slice()) // the in-memory "transfer"
    const toA = fromB.map((bytes) => bytes.slice())
    phases.transfer = nowMs() - mark
    for (const bytes of [...toA, ...toB]) bytesExchanged += bytes.byteLength
    mark = nowMs()
    docB = applyPayload(docB, toB, syncPath)
    phases.applyAtB = nowMs() - mark
    mark = nowMs()
    docA = applyPayload(docA, toA, syncPath)
    phases.applyAtA = nowMs() - mark
  }
  const mergeMs = nowMs() - start

  // Untimed checks: both the system's own view (same heads) and the canonical records.
  const jsonA = canonicalRecordsJson(snapshot(docA))
  const jsonB = canonicalRecordsJson(snapshot(docB))
  const sameHeads = sameSet(Automerge.getHeads(docA), Automerge.getHeads(docB))
  const finalStateBytes = Automerge.save(docA).byteLength
  const stats = Automerge.stats(docA)
  Automerge.free(docA)
  Automerge.free(docB)
  return {
    system:
      `automerge (${PATH_LABELS[syncPath]}${strings === 'text' ? ', text strings' : ''}` +
      `${reopenBeforeMerge ? ', reopened' : ''})`,
    workload: { ...workload },
    writeMs: { a: writeMsA, b: writeMsB },
    mergeMs,
    mergePhasesMs: phases,
    bytesExchanged,
    converged: jsonA === jsonB && sameHeads,
    finalStateDigest: digestCanonicalJson(jsonA),
    // With text strings a write is many ops, so op counters no longer follow write indexes.
    matchesModel:
      strings === 'text'
        ? null
        : jsonA === canonicalRecordsJson(modelFinalRecords(workload, 'later-index-wins')),
    finalStateBytes,
    notes:
      `@automerge/automerge ${packageVersion('@automerge/automerge')}; ${stats.numChanges} changes, ` +
      `${stats.numOps} ops; strings as ${strings === 'immutable' ? 'ImmutableString' : 'text'}` +
      (syncPath === 'sync-protocol' ? `; ${syncRounds} message rounds` : ''),
  }
}

function writeWithChange(
  doc: Automerge.Doc<MemoryDoc>,
  batches: Write[][],
  toValue: (value: FieldValue) => Value,
): Automerge.Doc<MemoryDoc> {
  for (const batch of batches) {
    doc = Automerge.change(doc, (draft) => {
      const records = draft.records
      for (const write of batch) {
        ;(records[write.recordId] as Record<string, Value>)[write.field] = toValue(write.value)
      }
    })
  }
  return doc
}

function reopen(doc: Automerge.Doc<MemoryDoc>, actor: string): Automerge.Doc<MemoryDoc> {
  const bytes = Automerge.save(doc)
  Automerge.free(doc)
  return Automerge.load<MemoryDoc>(bytes, { actor })
}

function encodeSince(
  doc: Automerge.Doc<MemoryDoc>,
  heads: Automerge.Heads,
  path: 'save-since' | 'changes',
): Payload[] {
  return path === 'save-since' ? [Automerge.saveSince(doc, heads)] : Automerge.getChangesSince(doc, heads)
}

function applyPayload(
  doc: Automerge.Doc<MemoryDoc>,
  payload: Payload[],
  path: 'save-since' | 'changes',
): Automerge.Doc<MemoryDoc> {
  if (path === 'changes') return Automerge.applyChanges(doc, payload)[0]
  for (const bytes of payload) doc = Automerge.loadIncremental(doc, bytes)
  return doc
}

/** Runs the sync protocol between two in-process replicas until neither has anything to send. */
function runSyncProtocol(
  docA: Automerge.Doc<MemoryDoc>,
  docB: Automerge.Doc<MemoryDoc>,
  stateA: Automerge.SyncState,
  stateB: Automerge.SyncState,
): {
  docs: [Automerge.Doc<MemoryDoc>, Automerge.Doc<MemoryDoc>, Automerge.SyncState, Automerge.SyncState]
  bytes: number
  phasesMs: Record<string, number>
  rounds: number
} {
  let bytes = 0
  let generateMs = 0
  let receiveMs = 0
  let rounds = 0
  for (;;) {
    let mark = nowMs()
    let messageA: Uint8Array | null
    let messageB: Uint8Array | null
    ;[stateA, messageA] = Automerge.generateSyncMessage(docA, stateA)
    generateMs += nowMs() - mark
    if (messageA) {
      bytes += messageA.byteLength
      mark = nowMs()
      ;[docB, stateB] = Automerge.receiveSyncMessage(docB, stateB, messageA.slice())
      receiveMs += nowMs() - mark
    }
    mark = nowMs()
    ;[stateB, messageB] = Automerge.generateSyncMessage(docB, stateB)
    generateMs += nowMs() - mark
    if (messageB) {
      bytes += messageB.byteLength
      mark = nowMs()
      ;[docA, stateA] = Automerge.receiveSyncMessage(docA, stateA, messageB.slice())
      receiveMs += nowMs() - mark
    }
    if (!messageA && !messageB) break
    rounds++
  }
  return {
    docs: [docA, docB, stateA, stateB],
    bytes,
    phasesMs: { generate: generateMs, receive: receiveMs },
    rounds,
  }
}

/** The records as plain data; `ImmutableString`s become strings through their `toJSON`. */
function snapshot(doc: Automerge.Doc<MemoryDoc>): RecordsSnapshot {
  return JSON.parse(JSON.stringify(doc.records)) as RecordsSnapshot
}

function sameSet(left: readonly string[], right: readonly string[]): boolean {
  if (left.length !== right.length) return false
  const set = new Set(left)
  return right.every((item) => set.has(item))
}

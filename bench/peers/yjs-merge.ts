/**
 * Runs the peer merge workload (`merge-workload.ts`) on Yjs in this process and measures it.
 *
 * The memory is one `Y.Doc` holding `Y.Map('records')` of one `Y.Map` per record; a field write
 * is `Y.Map#set`, which is last-writer-wins per key (concurrent sets resolve by client id). The
 * nested maps are created on A only and synced to B before the writes: two replicas creating
 * the same nested map concurrently would make two maps, and one would silently lose its fields.
 *
 * Invariant: only the writes and the merge are timed. Building the initial state, syncing it to
 * B, generating the writes and checking convergence happen outside the clock.
 */
import * as Y from 'yjs'
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
  type MergeResult,
  type MergeWorkload,
  type RecordsSnapshot,
  type Write,
} from './merge-workload.js'

export interface YjsMergeOptions {
  /**
   * `v1` (default): `encodeStateAsUpdate`/`applyUpdate`, the format y-protocols and y-websocket
   * send. `v2`: the `…V2` functions, a column-oriented encoding that is smaller on large updates.
   */
  encoding?: 'v1' | 'v2'
  /** Yjs garbage collection of overwritten values (default on, as `new Y.Doc()` has it). */
  gc?: boolean
  /**
   * Save and load both replicas between the writes and the merge (untimed), as two devices
   * that restarted before they reconnect: a new `Y.Doc` fed the old one's full update.
   */
  reopenBeforeMerge?: boolean
}

// Fixed client ids make the conflict winners, and so the digest, the same on every run.
const CLIENT_A = 1
const CLIENT_B = 2

/**
 * Runs the workload on Yjs: initial state on A, synced to B (untimed); each replica's writes in
 * transactions of `batchSize` writes (timed); then a merge in both directions (timed): each side
 * sends its state vector, and the other answers with the update the first one lacks.
 */
export async function runYjsMerge(
  workload: MergeWorkload = DEFAULT_MERGE_WORKLOAD,
  options: YjsMergeOptions = {},
): Promise<MergeResult> {
  checkWorkload(workload)
  const encoding = options.encoding ?? 'v1'
  const gc = options.gc ?? true
  const reopenBeforeMerge = options.reopenBeforeMerge ?? false
  const encodeUpdate = encoding === 'v1' ? Y.encodeStateAsUpdate : Y.encodeStateAsUpdateV2
  const applyUpdate = encoding === 'v1' ? Y.applyUpdate : Y.applyUpdateV2

  // Untimed setup: both replicas hold the same initial records.
  const open = (clientId: number, state?: Uint8Array): Y.Doc => {
    const doc = new Y.Doc({ gc })
    doc.clientID = clientId
    if (state) applyUpdate(doc, state)
    return doc
  }
  let docA = open(CLIENT_A)
  let docB = open(CLIENT_B)
  let recordsA = docA.getMap<Y.Map<unknown>>('records')
  let recordsB = docB.getMap<Y.Map<unknown>>('records')
  docA.transact(() => {
    for (const [id, record] of Object.entries(generateInitialRecords(workload))) {
      recordsA.set(id, new Y.Map<unknown>(Object.entries(record)))
    }
  })
  applyUpdate(docB, encodeUpdate(docA))
  const writesA = toBatches(generateWrites(workload, 'a'), workload.batchSize)
  const writesB = toBatches(generateWrites(workload, 'b'), workload.batchSize)

  const applyWrites = (doc: Y.Doc, records: Y.Map<Y.Map<unknown>>, batches: Write[][]) => {
    for (const batch of batches) {
      doc.transact(() => {
        for (const write of batch) {
          ;(records.get(write.recordId) as Y.Map<unknown>).set(write.field, write.value)
        }
      })
    }
  }
  settleHeap()
  let start = nowMs()
  applyWrites(docA, recordsA, writesA)
  const writeMsA = nowMs() - start
  settleHeap()
  start = nowMs()
  applyWrites(docB, recordsB, writesB)
  const writeMsB = nowMs() - start
  if (reopenBeforeMerge) {
    const stateA = encodeUpdate(docA)
    const stateB = encodeUpdate(docB)
    docA.destroy()
    docB.destroy()
    // A new session takes a new client id, as Yjs requires (it would otherwise see its own
    // id in the loaded state and pick a random one, with a warning).
    docA = open(CLIENT_A + 2, stateA)
    docB = open(CLIENT_B + 2, stateB)
    recordsA = docA.getMap<Y.Map<unknown>>('records')
    recordsB = docB.getMap<Y.Map<unknown>>('records')
  }

  // The y-protocols exchange (sync step 1 and 2), both directions, in memory.
  const phases: Record<string, number> = {}
  settleHeap()
  start = nowMs()
  let mark = nowMs()
  const vectorA = Y.encodeStateVector(docA)
  const vectorB = Y.encodeStateVector(docB)
  const updateForB = encodeUpdate(docA, vectorB.slice())
  const updateForA = encodeUpdate(docB, vectorA.slice())
  phases.encode = nowMs() - mark
  mark = nowMs()
  const toB = updateForB.slice() // the in-memory "transfer"
  const toA = updateForA.slice()
  phases.transfer = nowMs() - mark
  mark = nowMs()
  applyUpdate(docB, toB)
  phases.applyAtB = nowMs() - mark
  mark = nowMs()
  applyUpdate(docA, toA)
  phases.applyAtA = nowMs() - mark
  const mergeMs = nowMs() - start
  const bytesExchanged =
    vectorA.byteLength + vectorB.byteLength + updateForA.byteLength + updateForB.byteLength

  // Untimed checks: both the system's own view (same state vector) and the canonical records.
  const jsonA = canonicalRecordsJson(recordsA.toJSON() as RecordsSnapshot)
  const jsonB = canonicalRecordsJson(recordsB.toJSON() as RecordsSnapshot)
  const sameVector = Buffer.from(Y.encodeStateVector(docA)).equals(Y.encodeStateVector(docB))
  const finalStateBytes = encodeUpdate(docA).byteLength
  docA.destroy()
  docB.destroy()
  return {
    system:
      `yjs (${encoding === 'v1' ? 'update v1' : 'update v2'}${gc ? '' : ', gc off'}` +
      `${reopenBeforeMerge ? ', reopened' : ''})`,
    workload: { ...workload },
    writeMs: { a: writeMsA, b: writeMsB },
    mergeMs,
    mergePhasesMs: phases,
    bytesExchanged,
    converged: jsonA === jsonB && sameVector,
    finalStateDigest: digestCanonicalJson(jsonA),
    matchesModel: jsonA === canonicalRecordsJson(modelFinalRecords(workload, 'replica-b-wins')),
    finalStateBytes,
    notes:
      `yjs ${packageVersion('yjs')}; ${encoding} updates; gc ${gc ? 'on' : 'off'}; ` +
      `bytes include both state vectors (${vectorA.byteLength + vectorB.byteLength} B)`,
  }
}

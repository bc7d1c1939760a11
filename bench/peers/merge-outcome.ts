/**
 * The outcome side of the peer merge benchmark: the canonical JSON and digest of a memory's
 * final records, and a model of what they must be under each system's conflict rule, computed
 * from the workload alone without any CRDT.
 *
 * Invariant: equal records give equal canonical text and digests, whatever the key order or
 * the system that produced them.
 */
import { createHash } from 'node:crypto'
import {
  generateInitialRecords,
  generateWrites,
  type FieldValue,
  type MergeWorkload,
  type RecordsSnapshot,
  type Write,
} from './merge-workload.js'

/**
 * How a system picks the winner of two concurrent writes to one field (A's and B's last writes
 * to it), for `modelFinalRecords`:
 * - `replica-b-wins`: B always wins (Yjs: the higher client id wins a concurrent `Map#set`);
 * - `later-index-wins`: the write later in its own replica's sequence wins, B on a tie
 *   (Automerge: the higher op id (counter, actor) wins, and here every write is one op and
 *   both replicas start from the same counter).
 */
export type ConcurrentWriteRule = 'replica-b-wins' | 'later-index-wins'

/**
 * The records both replicas must end with, computed without any CRDT: the initial records,
 * then each cell's last write, the rule deciding cells both replicas wrote. A runner whose
 * digest equals this one's has merged every write, not merely converged.
 */
export function modelFinalRecords(workload: MergeWorkload, rule: ConcurrentWriteRule): RecordsSnapshot {
  const records = generateInitialRecords(workload)
  const lastByCell = new Map<string, { index: number; write: Write }>()
  for (const [index, write] of generateWrites(workload, 'a').entries()) {
    lastByCell.set(`${write.recordId}\u0000${write.field}`, { index, write })
  }
  const lastOfB = new Map<string, { index: number; write: Write }>()
  for (const [index, write] of generateWrites(workload, 'b').entries()) {
    lastOfB.set(`${write.recordId}\u0000${write.field}`, { index, write })
  }
  for (const [cell, last] of lastOfB) {
    const ofA = lastByCell.get(cell)
    if (!ofA || rule === 'replica-b-wins' || last.index >= ofA.index) lastByCell.set(cell, last)
  }
  for (const { write } of lastByCell.values()) {
    ;(records[write.recordId] as Record<string, FieldValue>)[write.field] = write.value
  }
  return records
}

/**
 * Canonical JSON of records: object keys sorted by UTF-16 code units at every level, no
 * whitespace, values as `JSON.stringify` writes them. Values are strings, finite numbers and
 * booleans only, so this is enough to make equal states give equal text.
 */
export function canonicalRecordsJson(records: RecordsSnapshot): string {
  const parts: string[] = []
  for (const id of Object.keys(records).sort()) {
    const record = records[id] as Record<string, FieldValue>
    const fields = Object.keys(record)
      .sort()
      .map((field) => `${JSON.stringify(field)}:${JSON.stringify(record[field])}`)
    parts.push(`${JSON.stringify(id)}:{${fields.join(',')}}`)
  }
  return `{${parts.join(',')}}`
}

/** sha256 (hex) of canonical JSON text, for `MergeResult.finalStateDigest`. */
export function digestCanonicalJson(canonicalJson: string): string {
  return createHash('sha256').update(canonicalJson, 'utf8').digest('hex')
}

/**
 * The shared workload of the peer merge benchmark: a memory of `records` episode-like records,
 * two replicas that each make `writesPerReplica` field writes to it concurrently, then a merge
 * in both directions. Every system (Automerge, Yjs, Cairn) runs exactly the writes this file
 * generates, so the figures compare like with like.
 *
 * Invariant: everything here is a pure function of the `MergeWorkload` (its `seed` above all).
 * The same workload yields the same initial records and the same write lists, byte for byte, on
 * every run and every machine. Generation is never timed by the runners.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { seeded } from '../corpus.js'

/** The shape of one run. See `bench/peers/README.md` for why the defaults are what they are. */
export interface MergeWorkload {
  /** How many records the memory holds before the replicas diverge (ids `ep_0` … `ep_<n-1>`). */
  records: number
  /** Field writes made by each replica after the initial sync. */
  writesPerReplica: number
  /** Fields per record: the first `fields` names of `FIELD_NAMES`, then `extra<k>` strings. */
  fields: number
  /** Writes per transaction / change (1000 = Cairn's bulk path, 1 = the interactive path). */
  batchSize: number
  /** Seeds the PRNG; the whole workload is a function of it. */
  seed: number
}

/** What every peer runner returns; times are wall-clock milliseconds in this process. */
export interface MergeResult {
  /** The system and the path used, e.g. `automerge 3.5.0 (saveSince/loadIncremental)`. */
  system: string
  workload: MergeWorkload
  /** Applying each replica's own writes, batched as the workload says. */
  writeMs: { a: number; b: number }
  /** Encode + in-memory transfer + apply, both directions (A→B and B→A), end to end. */
  mergeMs: number
  /** Where `mergeMs` went: `encode`, `apply` and any system-specific step. */
  mergePhasesMs: Record<string, number>
  /** Every byte the two replicas sent each other during the merge (both directions). */
  bytesExchanged: number
  /** Both replicas show the same canonical records after the merge. */
  converged: boolean
  /** sha256 (hex) of `canonicalRecordsJson` of replica A's final records. */
  finalStateDigest: string
  /**
   * The final records equal `modelFinalRecords` under the system's own conflict rule: every
   * write arrived and every conflict went the documented way. `null` when no model applies.
   */
  matchesModel: boolean | null
  /** The system's own saved size of one replica after the merge (its full-state encoding). */
  finalStateBytes: number
  /** Free text: the paths and options used, and anything a reader must know to trust the row. */
  notes: string
}

/** A field value: what the records hold (short strings, numbers in [0, 1], booleans). */
export type FieldValue = string | number | boolean

/** One field write, as both replicas' runners apply it. */
export interface Write {
  recordId: string
  field: string
  value: FieldValue
}

export type Replica = 'a' | 'b'

/** A memory's records as plain data: record id → field → value. */
export type RecordsSnapshot = Record<string, Record<string, FieldValue>>

/** Episode fields from the Portable Memory spec (§6), in the order `fields` takes them. */
export const FIELD_NAMES = [
  'summary',
  'details',
  'importance',
  'confidence',
  'lifecycleState',
  'sensitivity',
  'sourceType',
  'pinned',
] as const

export const DEFAULT_MERGE_WORKLOAD: Readonly<MergeWorkload> = Object.freeze({
  records: 10_000,
  writesPerReplica: 50_000,
  fields: 8,
  batchSize: 1000,
  seed: 0xca1e,
})

/**
 * A small run of the same shape, for warming up the JIT and each system's allocator before the
 * timed runs, so whichever system runs first does not pay for it.
 */
export const WARMUP_MERGE_WORKLOAD: Readonly<MergeWorkload> = Object.freeze({
  records: 1000,
  writesPerReplica: 2000,
  fields: 8,
  batchSize: 100,
  seed: 1,
})

// Enumerations from `shared/specs/portable-memory.md` §6.
const LIFECYCLE_STATES = ['HOT', 'COLD', 'ARCHIVED'] as const
const SENSITIVITIES = ['low', 'high'] as const
const SOURCE_TYPES = ['note', 'chat', 'text', 'event'] as const
const WORDS = (
  'user prefers dark mode meeting notes project deadline agent memory recall summary tool ' +
  'call failed retried later coffee morning standup budget review travel plan hotel booked ' +
  'flight delayed reminder birthday gift idea paper draft sent feedback pending repo build ' +
  'green deploy friday rollback weekend garden tomatoes water twice weekly doctor appointment'
).split(' ')


/** Derives independent streams (initial state, replica a, replica b) from one seed. */
function streamSeed(seed: number, stream: number): number {
  let h = Math.imul((seed >>> 0) ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(stream + 1, 0xc2b2ae35)
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d)
  return (h ^ (h >>> 15)) >>> 0
}

/** The id of record `index`. */
export function recordId(index: number): string {
  return `ep_${index}`
}

/** The field names a workload uses, in order. */
export function fieldNames(workload: MergeWorkload): string[] {
  const names: string[] = FIELD_NAMES.slice(0, workload.fields)
  for (let k = FIELD_NAMES.length; k < workload.fields; k++) names.push(`extra${k}`)
  return names
}

/**
 * Checks a workload's numbers; runners call it before any work.
 * @throws RangeError when a count is not a positive safe integer.
 */
export function checkWorkload(workload: MergeWorkload): MergeWorkload {
  for (const key of ['records', 'writesPerReplica', 'fields', 'batchSize'] as const) {
    const value = workload[key]
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new RangeError(`workload.${key}: expected a positive integer, got ${value}`)
    }
  }
  if (!Number.isSafeInteger(workload.seed)) throw new RangeError(`workload.seed: not an integer`)
  return workload
}

function randomString(random: () => number): string {
  const length = 20 + Math.floor(random() * 41) // 20..60 characters
  let text = ''
  while (text.length < length) {
    text += (text.length === 0 ? '' : ' ') + WORDS[Math.floor(random() * WORDS.length)]
  }
  return text.slice(0, length)
}

function randomValue(field: string, random: () => number): FieldValue {
  const pick = <T>(options: readonly T[]): T => options[Math.floor(random() * options.length)] as T
  switch (field) {
    case 'importance':
    case 'confidence':
      // Three decimals, as a memory system stores them; never an integer-valued float, so
      // every system keeps the same JSON number.
      return (1 + Math.floor(random() * 998)) / 1000
    case 'lifecycleState':
      return pick(LIFECYCLE_STATES)
    case 'sensitivity':
      return pick(SENSITIVITIES)
    case 'sourceType':
      return pick(SOURCE_TYPES)
    case 'pinned':
      return random() < 0.5
    default:
      return randomString(random)
  }
}

/** The records every replica starts from (created on A, synced to B before any timing). */
export function generateInitialRecords(workload: MergeWorkload): RecordsSnapshot {
  checkWorkload(workload)
  const random = seeded(streamSeed(workload.seed, 0))
  const names = fieldNames(workload)
  const records: RecordsSnapshot = {}
  for (let index = 0; index < workload.records; index++) {
    const record: Record<string, FieldValue> = {}
    for (const name of names) record[name] = randomValue(name, random)
    records[recordId(index)] = record
  }
  return records
}

/**
 * One replica's writes, in order. Records and fields are chosen uniformly, so A and B write
 * concurrently to overlapping records and fields (see `describeOverlap`). Every write sets a
 * value different from the one that replica holds at that moment: Automerge drops a put of an
 * equal scalar, Yjs and Cairn do not, so equal writes would make the systems do unequal work.
 */
export function generateWrites(workload: MergeWorkload, replica: Replica): Write[] {
  const current = generateInitialRecords(workload)
  const random = seeded(streamSeed(workload.seed, replica === 'a' ? 1 : 2))
  const names = fieldNames(workload)
  const writes: Write[] = new Array(workload.writesPerReplica)
  for (let i = 0; i < workload.writesPerReplica; i++) {
    const id = recordId(Math.floor(random() * workload.records))
    const field = names[Math.floor(random() * names.length)] as string
    const record = current[id] as Record<string, FieldValue>
    let value = randomValue(field, random)
    while (value === record[field]) value = randomValue(field, random)
    record[field] = value
    writes[i] = { recordId: id, field, value }
  }
  return writes
}

/** Splits writes into the workload's transactions / changes, in order. */
export function toBatches(writes: readonly Write[], batchSize: number): Write[][] {
  const batches: Write[][] = []
  for (let start = 0; start < writes.length; start += batchSize) {
    batches.push(writes.slice(start, start + batchSize))
  }
  return batches
}

/** How much the two replicas' writes collide: cells are (record, field) pairs. */
export interface WriteOverlap {
  cells: number
  cellsWrittenByA: number
  cellsWrittenByB: number
  /** Cells both replicas wrote: each is a concurrent conflict the merge must resolve. */
  cellsWrittenByBoth: number
}

export function describeOverlap(workload: MergeWorkload): WriteOverlap {
  const cellsOf = (writes: Write[]) => new Set(writes.map((w) => `${w.recordId}\u0000${w.field}`))
  const a = cellsOf(generateWrites(workload, 'a'))
  const b = cellsOf(generateWrites(workload, 'b'))
  let both = 0
  for (const cell of a) if (b.has(cell)) both++
  return {
    cells: workload.records * workload.fields,
    cellsWrittenByA: a.size,
    cellsWrittenByB: b.size,
    cellsWrittenByBoth: both,
  }
}

/**
 * Runs a full garbage collection when node was started with `--expose-gc`, so garbage left by
 * an earlier phase or run is not collected inside the next timed phase; otherwise does nothing.
 */
export function settleHeap(): void {
  ;(globalThis as { gc?: () => void }).gc?.()
}

/** Milliseconds since an arbitrary origin, sub-millisecond resolution. */
export function nowMs(): number {
  return performance.now()
}

/**
 * The installed version of a dependency, for the notes. Read from its package.json, found by
 * walking up from its entry point, because not every package exports `./package.json`.
 */
export function packageVersion(name: string): string {
  let dir = dirname(createRequire(import.meta.url).resolve(name))
  for (;;) {
    try {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: string
        version?: string
      }
      if (manifest.name === name && manifest.version) return manifest.version
    } catch {
      // no package.json at this level: keep walking up
    }
    const parent = dirname(dir)
    if (parent === dir) return 'unknown'
    dir = parent
  }
}

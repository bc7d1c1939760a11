/**
 * The priority index: where in the apply order this store holds events of the operations the
 * sync protocol sends before everything else (deletions and redactions, protocol.md §3), so a
 * catch-up can find them without reading the whole history (sync/catch-up-order.ts).
 *
 *   <space>:t:<local>   the id of an event at that position whose body has a priority op
 *   <space>:i           the position the index starts after (decimal): events at or below it
 *                       were stored before this store kept the index, and it says nothing of them
 *
 * Written in the same batch as the event (appends and ingests, ApplyBatch) or its late body
 * (a header-only copy filled in, ingest-run.ts). The start is written with the first batch
 * that applies events, as the position before them: 0 for a space this store began with. An
 * erased body leaves its entry: readers check the body they get.
 *
 * The ops are the memory layer's (MEMORY_OPS.delete and .redact; a test holds them equal): the
 * log cannot import them without running against the flow log → crdt → projection.
 */
import type { EventBody } from './event.js'

export const PRIORITY_OPS: ReadonlySet<string> = new Set(['memory.delete', 'memory.redact'])

export function isPriorityBody(body: EventBody | undefined): boolean {
  return body !== undefined && PRIORITY_OPS.has(body.op)
}

export function encodePriorityStart(local: number): Uint8Array {
  return new TextEncoder().encode(String(local))
}

export function decodePriorityStart(bytes: Uint8Array | undefined): number | undefined {
  if (bytes === undefined) return undefined
  const value = Number(new TextDecoder().decode(bytes))
  return Number.isSafeInteger(value) && value >= 0 ? value : undefined
}

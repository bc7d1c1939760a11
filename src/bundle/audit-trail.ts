/**
 * `audit/log.jsonl` from the signed log: one row per memory mutation this replica holds,
 * `{ts, actor, op, targetID, reason?}`, where `ts` is the author's clock when it happened and
 * `actor` the author's key (opaque, no PII). Events whose bodies were erased by a deletion give
 * no row: what a deletion removed does not survive in the trail either (the deletion's own row
 * and its tombstone do).
 */
import type { JsonValue, SpaceLog } from '../log/index.js'
import { formatTimestamp, MEMORY_OPS } from '../projection/index.js'
import type { JsonObject } from './mem/index.js'

const AUDIT_OPS: Readonly<Record<string, string>> = {
  [MEMORY_OPS.create]: 'create',
  [MEMORY_OPS.patch]: 'update',
  [MEMORY_OPS.text]: 'update',
  [MEMORY_OPS.supersede]: 'supersede',
  [MEMORY_OPS.delete]: 'delete',
  [MEMORY_OPS.redact]: 'redact',
}

/** Audit rows in the order this replica applied the events, from `sinceMs` (author time) on. */
export async function auditRows(log: SpaceLog, sinceMs?: number): Promise<JsonObject[]> {
  const rows: JsonObject[] = []
  for await (const event of log.readApplied()) {
    const op = event.body ? AUDIT_OPS[event.body.op] : undefined
    if (!op || !event.body) continue
    if (sinceMs !== undefined && event.header.clock.wall < sinceMs) continue
    const data = event.body.data as { readonly [key: string]: JsonValue } | null
    const target = data?.id
    if (typeof target !== 'string') continue
    const tombstone = data?.tombstone as { readonly [key: string]: JsonValue } | undefined
    const reason = typeof tombstone?.reason === 'string' ? tombstone.reason : undefined
    rows.push({ ts: formatTimestamp(event.header.clock.wall), actor: event.header.author, op, targetID: target, ...(reason !== undefined ? { reason } : {}) })
  }
  return rows
}

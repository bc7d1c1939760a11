/**
 * The key layout of a space's projection, beside its log in the same store (prefix `<space>:q:`).
 *
 *   q:m                     cursor: the last log position applied, and pending erasures
 *   q:s:<id>                merge state of a record (content purged once deleted)
 *   q:v:<id>                the record's current view (canonical JSON), while visible or redacted
 *   q:k:<kind>:<id>         kind index            q:c:<context>:<id>   context index
 *   q:t:<tag>:<id>          tags and categories   q:n:<entity>:<id>    entity → edges and facts
 *   q:w:<validFrom>:<id>    valid-time index of facts and edges
 *   q:r:<target>:<id>       reverse references (parents, reference sets): who to revisit on delete
 *   q:h:<id>:<local>        history: events that touched the record
 *   q:V:<id>:<local>        the view after each change, for as-of reads (purged on delete)
 *   q:T:<recordedAt>:<local> recorded time → log position, for as-of reads
 *   q:d:<id>                the Portable Memory tombstone of a deleted or redacted record
 *   q:f:<id>                a supersede conflict on the record
 *   q:x:…                   the full-text index (text-index.ts)
 *   q:F:<kind>:<sha256>     a line of an unknown record kind, kept verbatim, with its first-seen order
 *                           (`<sha256>.<n>` for the nth further copy of the same text)
 *   q:u:<id>                a record deleted because its parent was, whose bodies are kept until an
 *                           event names it (its kind): what an admin replica names (memory/deletion-naming.ts)
 *   q:z:<id>                the state of a record deleted because its parent was and whose bodies were
 *                           erased (a link; any such record in a store from before layout 2), kept through
 *                           rebuilds: the log alone could not show it is deleted (removed once an event
 *                           names the deletion)
 *   q:p:<id>:<event>        parent ids a body of the record named whose erasure a redaction caused (its kind
 *                           and the ids), taught to the record where a rebuild or replay reaches <event>:
 *                           kept through rebuilds, removed once an event names the record's deletion
 *
 * Index keys embed values (kinds, tags, contexts) verbatim; a separator ':' in a value would
 * blur boundaries, so values are escaped (escapeKeyPart).
 */
import { seqKey } from '../log/store-keys.js'

/**
 * The upper bound of every prefix range. Storage orders keys by their UTF-8 bytes, where
 * characters past U+FFFF (emoji) sort after U+FFFF: the bound is the last code point, which
 * escapeKeyPart never leaves in a key part, so no key with the prefix reaches it.
 */
export const KEY_RANGE_END = '\u{10FFFF}'

/** Escapes ':' and '%' so a value can sit between separators, and U+10FFFF (KEY_RANGE_END). */
export function escapeKeyPart(value: string): string {
  return value.replace(/%/g, '%25').replace(/:/g, '%3A').replace(/\u{10FFFF}/gu, '%F4%8F%BF%BF')
}

export function projectionKeys(space: string) {
  const root = `${space}:q:`
  const part = escapeKeyPart
  return {
    root,
    meta: `${root}m`,
    state: (id: string) => `${root}s:${part(id)}`,
    statePrefix: `${root}s:`,
    view: (id: string) => `${root}v:${part(id)}`,
    viewPrefix: `${root}v:`,
    kind: (kind: string, id: string) => `${root}k:${part(kind)}:${part(id)}`,
    kindPrefix: (kind: string) => `${root}k:${part(kind)}:`,
    allKindsPrefix: `${root}k:`,
    context: (context: string, id: string) => `${root}c:${part(context)}:${part(id)}`,
    contextPrefix: (context: string) => `${root}c:${part(context)}:`,
    tag: (tag: string, id: string) => `${root}t:${part(tag)}:${part(id)}`,
    tagPrefix: (tag: string) => `${root}t:${part(tag)}:`,
    entity: (entity: string, id: string) => `${root}n:${part(entity)}:${part(id)}`,
    entityPrefix: (entity: string) => `${root}n:${part(entity)}:`,
    validFrom: (from: string, id: string) => `${root}w:${part(from)}:${part(id)}`,
    validFromPrefix: `${root}w:`,
    reference: (target: string, id: string) => `${root}r:${part(target)}:${part(id)}`,
    referencePrefix: (target: string) => `${root}r:${part(target)}:`,
    allReferencesPrefix: `${root}r:`,
    history: (id: string, local: number) => `${root}h:${part(id)}:${seqKey(local)}`,
    historyPrefix: (id: string) => `${root}h:${part(id)}:`,
    /** Every record's history: historyPrefix(id) is this, the escaped id, and ':' (prefix-scan.ts). */
    allHistoryPrefix: `${root}h:`,
    version: (id: string, local: number) => `${root}V:${part(id)}:${seqKey(local)}`,
    versionPrefix: (id: string) => `${root}V:${part(id)}:`,
    allVersionsPrefix: `${root}V:`,
    time: (recordedAt: number, local: number) => `${root}T:${seqKey(recordedAt)}:${seqKey(local)}`,
    timePrefix: `${root}T:`,
    tombstone: (id: string) => `${root}d:${part(id)}`,
    tombstonePrefix: `${root}d:`,
    conflict: (id: string) => `${root}f:${part(id)}`,
    conflictPrefix: `${root}f:`,
    textIndex: `${root}x:`,
    foreign: (kind: string, hash: string) => `${root}F:${part(kind)}:${hash}`,
    foreignKindPrefix: (kind: string) => `${root}F:${part(kind)}:`,
    foreignPrefix: `${root}F:`,
    unnamedDeletion: (id: string) => `${root}u:${part(id)}`,
    unnamedDeletionPrefix: `${root}u:`,
    derivedDeletion: (id: string) => `${root}z:${part(id)}`,
    derivedDeletionPrefix: `${root}z:`,
    taughtParents: (id: string, event: string) => `${root}p:${part(id)}:${part(event)}`,
    taughtParentsPrefix: (id: string) => `${root}p:${part(id)}:`,
    allTaughtParentsPrefix: `${root}p:`,
    end: (prefix: string) => `${prefix}${KEY_RANGE_END}`,
  }
}

export type ProjectionKeys = ReturnType<typeof projectionKeys>

/** The inverse of escapeKeyPart. */
export function unescapeKeyPart(part: string): string {
  return decodeURIComponent(part)
}

/** The log position a time-index key (`time(recordedAt, local)`) ends with. */
export function positionFromTimeKey(key: string): number {
  return parseInt(key.slice(key.lastIndexOf(':') + 1), 16)
}

/** The id at the end of an index key, unescaped. */
export function idFromKey(key: string): string {
  return decodeURIComponent(key.slice(key.lastIndexOf(':') + 1))
}

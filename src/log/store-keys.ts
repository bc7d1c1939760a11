/**
 * The key layout of a log store. Every key of a space starts with the space id (64 hex) and a
 * one-letter table; numbers are fixed-width hex so string order is numeric order.
 *
 *   <space>:m                      space meta (owner, genesis), written with the genesis
 *   <space>:e:<id>                 event record (header bytes, body bytes, signature, flags)
 *   <space>:r:<author>:<seq>       a run of the author's event ids starting at seq
 *   <space>:o:<local>              a run of event ids in the order this store applied them
 *   <space>:v:<author>:<seq>       causal vector at an event that has deps (and at seq 1)
 *   <space>:c:<local>              an applied grant or revoke
 *   <space>:p:<id>                 an event held until its dependencies arrive
 *   <space>:l:<name>               a setting of this replica, never synced (SpaceLog.localSetting)
 *   <space>:b:<id>                 a body stored after its header was applied, until the
 *                                  projection has placed it (SpaceLog.lateBodies)
 *   <space>:f:<author>             an equivocation by the author
 *   <space>:y                      a compaction owed for erased bodies (erasure-compactor.ts);
 *                                  never synced
 *   <space>:t:<local>              a deletion or redaction at that apply position (its id), and
 *   <space>:i                      the position that index starts after (priority-index.ts)
 *   <space>:w:<id>:<relay hash>    a relay's word that it keeps this replica's event as a header
 *                                  only (sync protocol version 2); never synced
 *                                  (memory/withheld-writes.ts)
 *   g:space:<space>                the spaces this store holds
 *
 * Chain tips and the next local seq are not stored: they are the last run of each author and
 * the last apply-order run, found with one reverse seek each when a space is opened, which saves
 * two record writes on every append.
 */

const SEQ_WIDTH = 14 // 2^53 fits in 14 hex digits

export function seqKey(seq: number): string {
  return seq.toString(16).padStart(SEQ_WIDTH, '0')
}

export const keys = {
  meta: (space: string) => `${space}:m`,
  event: (space: string, id: string) => `${space}:e:${id}`,
  eventPrefix: (space: string) => `${space}:e:`,
  run: (space: string, author: string, seq: number) => `${space}:r:${author}:${seqKey(seq)}`,
  runPrefix: (space: string, author: string) => `${space}:r:${author}:`,
  order: (space: string, local: number) => `${space}:o:${seqKey(local)}`,
  orderPrefix: (space: string) => `${space}:o:`,
  anchor: (space: string, author: string, seq: number) => `${space}:v:${author}:${seqKey(seq)}`,
  anchorPrefix: (space: string, author: string) => `${space}:v:${author}:`,
  runsPrefix: (space: string) => `${space}:r:`,
  control: (space: string, local: number) => `${space}:c:${seqKey(local)}`,
  controlPrefix: (space: string) => `${space}:c:`,
  pending: (space: string, id: string) => `${space}:p:${id}`,
  pendingPrefix: (space: string) => `${space}:p:`,
  localSetting: (space: string, name: string) => `${space}:l:${name}`,
  lateBody: (space: string, id: string) => `${space}:b:${id}`,
  lateBodyPrefix: (space: string) => `${space}:b:`,
  flag: (space: string, author: string) => `${space}:f:${author}`,
  flagPrefix: (space: string) => `${space}:f:`,
  withheldPrefix: (space: string) => `${space}:w:`,
  compactionOwed: (space: string) => `${space}:y`,
  priority: (space: string, local: number) => `${space}:t:${seqKey(local)}`,
  priorityPrefix: (space: string) => `${space}:t:`,
  priorityStart: (space: string) => `${space}:i`,
  spaceEntry: (space: string) => `g:space:${space}`,
  spaceEntryPrefix: () => 'g:space:',
  /**
   * Upper bound for a prefix range: every key starting with `prefix` sorts below this (keys sort
   * by UTF-8 bytes, where U+10FFFF is the largest character; log keys hold hex and names only).
   */
  end: (prefix: string) => `${prefix}\u{10FFFF}`,
}

export function parseSeqKey(text: string): number {
  return parseInt(text, 16)
}

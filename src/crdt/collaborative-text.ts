/**
 * Collaborative text through Automerge (`@automerge/automerge`): each text field is one Automerge
 * document `{ text }`, and edits travel as Automerge change bytes inside log events, so
 * concurrent edits by several agents all survive and every replica converges.
 *
 * Every replica starts a field from the same base document, made with a fixed actor and time, so
 * two replicas that create the same block independently still share one history and merge.
 */
import * as Automerge from '@automerge/automerge'

interface TextDoc {
  text: string
}

const BASE_ACTOR = '00'.repeat(16)
let baseBytes: Uint8Array | undefined

/** The shared starting point of every text field. */
export function baseTextDocument(): Uint8Array {
  baseBytes ??= Automerge.save(Automerge.change(Automerge.init<TextDoc>({ actor: BASE_ACTOR }), { time: 0 }, (doc) => {
    doc.text = ''
  }))
  return baseBytes
}

/** Automerge actor ids are hex; an author key (32 bytes) is one, and is unique per writer. */
function load(bytes: Uint8Array, actor?: string): Automerge.Doc<TextDoc> {
  return Automerge.load<TextDoc>(bytes, actor ? { actor } : undefined)
}

export function textOf(document: Uint8Array): string {
  return load(document).text
}

/** Applies change bytes from any replica, in any order (Automerge queues what it cannot apply yet). */
export function applyTextChanges(document: Uint8Array, changes: readonly Uint8Array[]): Uint8Array {
  const [next] = Automerge.applyChanges(load(document), [...changes])
  return Automerge.save(next)
}

/**
 * Makes the changes that turn the document's text into `target` with a minimal edit, written
 * as `actor`. Returns the change bytes to ship and the document after them.
 */
export function editText(document: Uint8Array, actor: string, target: string, timeMs: number): { changes: Uint8Array[]; document: Uint8Array } {
  const before = load(document, actor)
  const after = Automerge.change(before, { time: Math.floor(timeMs / 1000) }, (doc) => {
    Automerge.updateText(doc, ['text'], target)
  })
  return { changes: Automerge.getChanges(before, after), document: Automerge.save(after) }
}

/** Inserts and deletes at a position (a splice), for appends that must not clobber concurrent ones. */
export function spliceText(
  document: Uint8Array,
  actor: string,
  index: number,
  deleteCount: number,
  insert: string,
  timeMs: number,
): { changes: Uint8Array[]; document: Uint8Array } {
  const before = load(document, actor)
  const after = Automerge.change(before, { time: Math.floor(timeMs / 1000) }, (doc) => {
    Automerge.splice(doc, ['text'], index, deleteCount, insert)
  })
  return { changes: Automerge.getChanges(before, after), document: Automerge.save(after) }
}

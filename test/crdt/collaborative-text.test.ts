/**
 * The text documents collaborative-text keeps (the last 16 loaded or saved, by the hash of their
 * bytes): a kept document is only read or cloned, so what a change builds on is the bytes it was
 * given, whether the document was kept or loaded, and a change Automerge queues (it waits for
 * another) survives being saved and kept.
 */
import * as Automerge from '@automerge/automerge'
import { describe, expect, it } from 'vitest'
import { applyTextChanges, baseTextDocument, editText, textOf } from '../../src/crdt/index.js'

const [A, B, C] = ['aa', 'bb', 'cc'].map((pair) => pair.repeat(32)) as [string, string, string]
const T = Date.UTC(2026, 0, 1)

/** Loads other documents until every kept one is gone (16 are kept). */
function evictKept(): void {
  for (let i = 0; i < 20; i++) textOf(editText(baseTextDocument(), A, `filler ${i}`, T).document)
}

/** What Automerge alone makes of `bytes` with `changes`: no kept document involved. */
function direct(bytes: Uint8Array, changes: readonly Uint8Array[]): string {
  const [next] = Automerge.applyChanges(Automerge.load<{ text: string }>(bytes), [...changes])
  return next.text
}

describe('kept text documents', () => {
  it('two edits from one kept document each build on its bytes, and merge as concurrent edits', () => {
    const start = editText(baseTextDocument(), A, 'hello', T).document
    expect(textOf(start)).toBe('hello')
    const world = editText(start, B, 'hello world', T)
    const there = editText(start, C, 'hello there', T)
    // The kept document was not changed by either edit.
    expect(textOf(start)).toBe('hello')
    expect(textOf(there.document)).toBe('hello there')
    const merged = applyTextChanges(world.document, there.changes)
    expect(textOf(merged)).toBe(direct(world.document, there.changes))
    expect(textOf(merged)).toMatch(/^hello( world| there){2}$/)
  })

  it('a change waiting for another is kept through save, whether the document is then kept or loaded again', () => {
    const start = editText(baseTextDocument(), A, 'one', T).document
    const first = editText(start, B, 'one two', T)
    const second = editText(first.document, B, 'one two three', T)
    const waiting = applyTextChanges(start, second.changes)
    expect(textOf(waiting)).toBe('one')
    const whenKept = applyTextChanges(waiting, first.changes)
    // The same bytes again, kept still: the first application must not have used up the kept document.
    const again = applyTextChanges(waiting, first.changes)
    evictKept()
    const whenLoaded = applyTextChanges(waiting, first.changes)
    for (const bytes of [whenKept, again, whenLoaded]) expect(textOf(bytes)).toBe('one two three')
    expect(textOf(waiting)).toBe('one')
    expect(direct(waiting, first.changes)).toBe('one two three')
  })
})

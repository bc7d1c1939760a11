/**
 * JSONL framing (spec notes §3): lines joined with `\n`, every file ending with exactly one
 * `\n`. Visits the lines of a file's bytes for the readers (the writer, encode-bundle.ts,
 * joins its lines itself).
 *
 * Invariant: a line handed on is well-formed UTF-8 no longer than the line cap, and its number
 * is its 1-based position in the file; every refusal names the file and the line. A file whose
 * last byte is not `\n` was cut short: its last line is refused, never decoded half.
 */
import { isUtf8 } from 'node:buffer'
import type { ProblemList } from './problems.js'

const NEWLINE = 0x0a

/** Receives one line: its text, its 1-based number, and the byte offset just past its `\n`. */
export type LineVisitor = (text: string, line: number, end: number) => void

/**
 * Visits the lines of one JSONL file in order, empty lines included (callers decide what a blank
 * line means); nothing is collected, so a file of millions of blank lines costs no memory.
 * Problems found (TRUNCATED, LINE_TOO_LONG, BAD_UTF8) are added to `problems` and those lines
 * are not visited; visiting stops when the problem list is full.
 */
export function forEachJsonlLine(bytes: Uint8Array, file: string, maxLineBytes: number, problems: ProblemList, visit: LineVisitor): void {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const isAllUtf8 = isUtf8(buffer)
  let start = 0
  let line = 1
  while (start < buffer.length && !problems.isFull) {
    const newline = buffer.indexOf(NEWLINE, start)
    const end = newline === -1 ? buffer.length : newline
    if (end - start > maxLineBytes) {
      problems.add('LINE_TOO_LONG', `a line of ${end - start} bytes is over the ${maxLineBytes}-byte limit`, file, line)
    } else if (newline === -1) {
      problems.add('TRUNCATED', 'the last line has no terminating newline: the file was cut short', file, line)
    } else if (!isAllUtf8 && !isUtf8(buffer.subarray(start, end))) {
      problems.add('BAD_UTF8', 'the line is not valid UTF-8', file, line)
    } else {
      visit(buffer.toString('utf8', start, end), line, end + 1)
    }
    if (newline === -1) break
    start = newline + 1
    line++
  }
}

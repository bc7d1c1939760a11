/**
 * Source files as text: strict UTF-8 decoding, size limits, and lines with their numbers.
 *
 * Invariant: what comes out is well-formed text (no lone surrogates, no NUL, no BOM) no larger than
 * MAX_SOURCE_BYTES, and every line handed to a line-based adapter is at most MAX_LINE_BYTES;
 * anything else is refused with the file (and line) named, before any record is built.
 */
import { InputError, LimitError } from '../../errors.js'
import type { SourceFile } from './types.js'

/** A source file larger than this is refused: the bundle reader's per-file cap (spec §7). */
export const MAX_SOURCE_BYTES = 256 * 1024 * 1024
/** A line of a line-based source (JSONL, YAML, Markdown, transfer text) larger than this is refused: an event body holds at most 1 MiB. */
export const MAX_LINE_BYTES = 1024 * 1024

const BOM = '\uFEFF'
const NEWLINE = 0x0a

/** A numbered line of a source file (1-based). */
export interface SourceLine {
  readonly text: string
  readonly line: number
}

function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8')
}

/** The line (1-based) of the first byte sequence that is not UTF-8. */
function badUtf8Line(bytes: Uint8Array): number {
  const decoder = new TextDecoder('utf-8', { fatal: true })
  let start = 0
  let line = 1
  for (let i = 0; i <= bytes.length; i++) {
    if (i === bytes.length || bytes[i] === NEWLINE) {
      try {
        decoder.decode(bytes.subarray(start, i))
      } catch {
        return line
      }
      start = i + 1
      line++
    }
  }
  return line
}

/** Where the character at `offset` of `text` is: its line and column, both 1-based. */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1
  let start = 0
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 0x0a) {
      line++
      start = i + 1
    }
  }
  return { line, column: offset - start + 1 }
}

/** The line (1-based) holding the first lone surrogate of `text`. */
function loneSurrogateLine(text: string): number {
  let line = 1
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === NEWLINE) line++
    else if (code >= 0xd800 && code <= 0xdbff) {
      const next = text.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) i++
      else return line
    } else if (code >= 0xdc00 && code <= 0xdfff) return line
  }
  return line
}

/**
 * The text of a source file: bytes decoded as strict UTF-8, a leading BOM dropped.
 * @throws LimitError FILE_TOO_LARGE; InputError BAD_UTF8, BAD_STRING (a lone surrogate),
 *   BINARY_FILE (a NUL byte: no text source holds one, and a binary file would import as text)
 */
export function decodeSource(file: SourceFile): string {
  const { path, content } = file
  if (typeof content !== 'string' && !(content instanceof Uint8Array)) {
    throw new InputError('WRONG_TYPE', 'file content must be a string or bytes', { file: path })
  }
  const sizeBytes = typeof content === 'string' ? utf8Length(content) : content.length
  if (sizeBytes > MAX_SOURCE_BYTES) {
    throw new LimitError('FILE_TOO_LARGE', `${sizeBytes} bytes is more than the ${MAX_SOURCE_BYTES} an import reads`, { file: path })
  }
  let text: string
  if (typeof content === 'string') {
    if (!content.isWellFormed()) {
      throw new InputError('BAD_STRING', 'the text holds a lone surrogate, which has no UTF-8 form', { file: path, line: loneSurrogateLine(content) })
    }
    text = content
  } else {
    try {
      text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(content)
    } catch {
      throw new InputError('BAD_UTF8', 'the file is not UTF-8', { file: path, line: badUtf8Line(content) })
    }
  }
  const nul = text.indexOf('\0')
  if (nul !== -1) throw new InputError('BINARY_FILE', 'the file holds a NUL byte: a binary file, not text', { file: path, line: lineAndColumn(text, nul).line })
  return text.startsWith(BOM) ? text.slice(1) : text
}

/**
 * The lines of a text, numbered from 1. `\r\n` and lone `\r` end lines too (the reference
 * adapters normalize both), so no `\r` remains.
 * @throws LimitError LINE_TOO_LONG naming the file and line
 */
export function splitLines(text: string, path: string): SourceLine[] {
  const raw = text.replace(/\r\n?/g, '\n').split('\n')
  const lines: SourceLine[] = []
  for (let i = 0; i < raw.length; i++) {
    const line = raw[i] as string
    // Cheap bound first: a UTF-16 unit is at most 3 UTF-8 bytes.
    if (line.length * 3 > MAX_LINE_BYTES && utf8Length(line) > MAX_LINE_BYTES) {
      throw new LimitError('LINE_TOO_LONG', `a line of ${utf8Length(line)} bytes is more than ${MAX_LINE_BYTES}`, { file: path, line: i + 1 })
    }
    lines.push({ text: line, line: i + 1 })
  }
  return lines
}

/** The file name at the end of a path (either separator). */
export function baseName(path: string): string {
  const cut = Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\'))
  return cut === -1 ? path : path.slice(cut + 1)
}

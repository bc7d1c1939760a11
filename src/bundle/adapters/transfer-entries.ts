/**
 * Reads memory-transfer text (what an assistant prints when asked to "list every memory you
 * have stored about me", spec §10) into entries: line number, section, raw date, content.
 *
 * Invariant: the rules are the PM reference's, so both SDKs and Cairn cut the same text into
 * the same entries (the fixture `fixtures/transfer` pins it):
 * - only fenced lines are read when the text has a ``` fence;
 * - `[date] SEP text` (SEP one of `- – — :`), bare ISO dates, bullets (`- * • – —`) and
 *   numbering (`1.`, `1)`, `(1)`) mark entries; headers (`## X`, `**X**`, `X:`, `ALL CAPS`)
 *   set the section and never become entries;
 * - an indented line continues the previous entry; a blank line ends it;
 * - text with no markers at all is read as blank-line-separated paragraphs.
 */
import type { SourceLine } from './source-text.js'
import { pySplitWords, pyStrip, pyStripStart } from './text-values.js'

export interface TransferEntry {
  /** 1-based line number within the parsed body (the fenced lines, when fenced). */
  readonly line: number
  /** The latest header above the entry, verbatim. */
  readonly section: string | undefined
  /** The bracketed (or bare ISO) date text, verbatim. */
  readonly dateRaw: string | undefined
  /** The memory text; continuation lines joined with "\n". */
  content: string
}

const BULLETS = ['-', '*', '•', '–', '—']
const SEPARATORS = ['-', '–', '—', ':']
const DIGIT = /^[0-9]$/
const LETTER = /\p{L}/u
const UPPER = /\p{Lu}/u

function isDigit(character: string | undefined): boolean {
  return character !== undefined && DIGIT.test(character)
}

/** The lines to parse: the contents of all fenced blocks if there is a fence, else every line. */
export function bodyLines(lines: readonly SourceLine[]): SourceLine[] {
  let inside = false
  let sawFence = false
  const fenced: SourceLine[] = []
  for (const line of lines) {
    if (pyStrip(line.text).startsWith('```')) {
      sawFence = true
      inside = !inside
      continue
    }
    if (inside) fenced.push(line)
  }
  return sawFence ? fenced : [...lines]
}

/** Removes one leading list marker (`- `, `* `, `• `, `1. `, `1) `, `(1) `). */
function stripBullet(text: string): [string, boolean] {
  for (const bullet of BULLETS) {
    if (text.startsWith(`${bullet} `)) return [pyStripStart(text.slice(bullet.length)), true]
  }
  const body = text.startsWith('(') ? text.slice(1) : text
  let i = 0
  while (i < body.length && i < 3 && isDigit(body[i])) i++
  if (i > 0 && i < body.length && (body[i] === '.' || body[i] === ')') && i + 1 < body.length && body[i + 1] === ' ') {
    return [pyStripStart(body.slice(i + 1)), true]
  }
  return [text, false]
}

export function isIsoDate(text: string): boolean {
  return text.length === 10 && text[4] === '-' && text[7] === '-' && [0, 1, 2, 3, 5, 6, 8, 9].every((i) => isDigit(text[i]))
}

/** `2026-01-15 - content` or `2026-01-15: content` → [date token, content]. */
function bareIso(text: string): [string, string] | undefined {
  if (!isIsoDate(text.slice(0, 10))) return undefined
  const space = text.indexOf(' ')
  const token = space === -1 ? text : text.slice(0, space)
  const rest = space === -1 ? '' : pyStripStart(text.slice(space + 1))
  if (token !== '' && SEPARATORS.includes(token[token.length - 1] as string)) return [token.slice(0, -1), pyStrip(rest)]
  if (rest !== '' && SEPARATORS.includes(rest[0] as string)) return [token, pyStrip(rest.slice(1))]
  return undefined
}

function hasSeparator(text: string): boolean {
  return text.includes(' - ') || text.includes(' – ') || text.includes(' — ')
}

/** The section name when `text` is a header line. */
function header(text: string, isBulleted: boolean): string | undefined {
  if (isBulleted || text === '' || text.startsWith('[')) return undefined
  if (text.startsWith('#')) return pyStrip(text.replace(/^#+/, '')) || undefined
  if (text.startsWith('**')) {
    const inner = pyStrip(text.replace(/:+$/, ''))
    if (inner.endsWith('**') && inner.length > 4) return pyStrip(pyStrip(inner.slice(2, -2)).replace(/:+$/, '')) || undefined
    return undefined
  }
  if (hasSeparator(text) || bareIso(text) !== undefined) return undefined
  const words = pySplitWords(text)
  if (text.endsWith(':') && words.length <= 8) return pyStrip(text.slice(0, -1)) || undefined
  const letters = [...text].filter((character) => LETTER.test(character))
  if (letters.length >= 3 && words.length <= 6 && letters.every((character) => UPPER.test(character))) return text
  return undefined
}

/** `[date] - content` → [date text or undefined, content]. */
function splitDate(text: string): [string | undefined, string] {
  if (text.startsWith('[')) {
    const end = text.indexOf(']')
    if (end === -1) return [undefined, text]
    const dateRaw = pyStrip(text.slice(1, end))
    let rest = pyStripStart(text.slice(end + 1))
    if (rest !== '' && SEPARATORS.includes(rest[0] as string)) rest = pyStripStart(rest.slice(1))
    return [dateRaw || undefined, pyStrip(rest)]
  }
  const bare = bareIso(text)
  return bare === undefined ? [undefined, text] : [bare[0], pyStrip(bare[1])]
}

function isMarker(line: string): boolean {
  const stripped = pyStrip(line)
  if (stripped === '') return false
  const [text, isBulleted] = stripBullet(stripped)
  return isBulleted || text.startsWith('[') || header(text, isBulleted) !== undefined || bareIso(text) !== undefined
}

function paragraphs(lines: readonly string[]): TransferEntry[] {
  const entries: TransferEntry[] = []
  let buffer: string[] = []
  let start = 0
  const flush = (): void => {
    if (buffer.length > 0) entries.push({ line: start, section: undefined, dateRaw: undefined, content: buffer.join('\n') })
    buffer = []
  }
  lines.forEach((raw, index) => {
    const stripped = pyStrip(raw)
    if (stripped === '') return flush()
    if (buffer.length === 0) start = index + 1
    buffer.push(stripped)
  })
  flush()
  return entries
}

/** The entries of the body lines, in order (duplicates included; the adapter drops repeats). */
export function transferEntries(lines: readonly string[]): TransferEntry[] {
  if (!lines.some(isMarker)) return paragraphs(lines)
  const entries: TransferEntry[] = []
  let section: string | undefined
  let current: TransferEntry | undefined
  lines.forEach((raw, index) => {
    const stripped = pyStrip(raw)
    if (stripped === '') {
      current = undefined
      return
    }
    if (current !== undefined && (raw[0] === ' ' || raw[0] === '\t')) {
      current.content += `\n${stripped}`
      return
    }
    const [text, isBulleted] = stripBullet(stripped)
    const name = header(text, isBulleted)
    if (name !== undefined) {
      section = name
      current = undefined
      return
    }
    const [dateRaw, content] = splitDate(text)
    if (content === '') {
      current = undefined
      return
    }
    current = { line: index + 1, section, dateRaw, content }
    entries.push(current)
  })
  return entries
}

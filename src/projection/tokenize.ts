/**
 * Turns text into the index terms of the full-text index. Documents and queries go through the
 * same function, so the invariant is simply that it is pure and deterministic: the same word,
 * wherever it appears, yields the same terms.
 *
 * Steps, in order:
 *   1. Cap the input at MAX_SCANNED_CHARS, normalize to NFKC (fullwidth "ＡＢＣ" → "abc",
 *      "ﬁ" → "fi") and lowercase with the root locale (no Turkish or Lithuanian tailoring).
 *   2. Split at whitespace into chunks. A chunk that is not ASCII loses its Latin diacritics
 *      (NFD, drop U+0300–U+036F, NFC: "café" → "cafe", "Ångström" → "angstrom") and its invisible
 *      format characters (soft hyphen, zero-width joiners). Only that block of marks is
 *      dropped, so marks that carry meaning in other scripts (Devanagari vowel signs, kana
 *      voicing marks) are kept.
 *   3. Runs of Han, Hiragana and Katakana become overlapping character bigrams ("北京大学" →
 *      北京 京大 大学; a lone ideograph stays a unigram), the approach of Lucene's CJK analyzer:
 *      it needs no dictionary and does not depend on where a segmenter would cut. A query of a
 *      single ideograph therefore only matches single-ideograph runs.
 *   4. Other non-ASCII text is cut by `Intl.Segmenter` (granularity 'word', word-like segments;
 *      it knows Thai, Lao, Khmer and Myanmar words). ASCII chunks skip the segmenter: for ASCII
 *      it never cuts between letters or digits, so the piece rule below alone gives the same
 *      terms, several times faster (test/projection/tokenize.test.ts checks the equivalence on
 *      random ASCII text).
 *   5. A piece is a run of letters, digits and marks; an apostrophe joins two letters ("don't"),
 *      a dot joins two digits ("3.14"); anything else separates ("snake_case", "example.com",
 *      "foo:bar", "x-ray" each give two terms). So no term holds ':' or a control character, which
 *      the index's key layout relies on.
 *   6. A trailing possessive "'s" and other apostrophes are dropped ("user's" → "user",
 *      "don't" → "dont"), English stopwords are skipped, the rest is stemmed (./stem.ts) and cut
 *      to MAX_TOKEN_LENGTH code units. At most MAX_TOKENS_PER_DOCUMENT terms are returned.
 */
import { stem } from './stem.js'

/** Longest term, in UTF-16 code units; longer pieces are cut (a pasted hash stays findable by its prefix). */
export const MAX_TOKEN_LENGTH = 64
/** Most terms taken from one text; the rest is not indexed (keeps one huge record from flooding the index). */
export const MAX_TOKENS_PER_DOCUMENT = 5_000
/** Most characters of one text looked at, so normalizing a huge record stays cheap. */
export const MAX_SCANNED_CHARS = 200_000

/** A small English list: articles, pronouns, auxiliaries, common prepositions and conjunctions. */
const STOPWORDS: ReadonlySet<string> = new Set([
  'a', 'an', 'and', 'are', 'as', 'at', 'be', 'been', 'being', 'but', 'by', 'can', 'could', 'did', 'do', 'does',
  'for', 'from', 'had', 'has', 'have', 'he', 'her', 'him', 'his', 'i', 'if', 'in', 'into', 'is', 'it', 'its',
  'me', 'my', 'no', 'not', 'of', 'on', 'or', 'our', 'she', 'so', 'such', 'than', 'that', 'the', 'their',
  'them', 'then', 'there', 'these', 'they', 'this', 'those', 'to', 'us', 'was', 'we', 'were', 'what', 'when',
  'which', 'who', 'will', 'with', 'would', 'you', 'your',
])

const segmenter = new Intl.Segmenter('und', { granularity: 'word' })
const ASCII_RE = /^[\x00-\x7f]*$/
const NON_ASCII_RE = /[^\s\x00-\x7f]/u
const WHITESPACE_RE = /\s/u
const LATIN_DIACRITIC_RE = /[\u0300-\u036f]/gu
/** Invisible format characters (soft hyphen, zero-width joiners and spaces) would split words. */
const FORMAT_CHAR_RE = /\p{Cf}/gu
const CJK_RUN_RE = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\u30fc]+/gu
/** Step 5: letters, digits and marks, joined by an apostrophe between letters or a dot between digits. */
const PIECE_RE = /[\p{L}\p{N}\p{M}]+(?:(?:(?<=[\p{L}\p{M}])['’](?=\p{L})|(?<=\p{N})\.(?=\p{N}))[\p{L}\p{N}\p{M}]+)*/gu
const POSSESSIVE_RE = /['’]s$/u
const APOSTROPHE_RE = /['’]/gu
const HIGH_SURROGATE_RE = /[\ud800-\udbff]$/u

/** Step 6 for one piece: its term, or null for a stopword. */
function termOf(piece: string): string | null {
  const word = piece.includes("'") || piece.includes('’') ? piece.replace(POSSESSIVE_RE, '').replace(APOSTROPHE_RE, '') : piece
  if (word.length === 0 || STOPWORDS.has(word)) return null
  const term = stem(word)
  return term.length > MAX_TOKEN_LENGTH ? term.slice(0, MAX_TOKEN_LENGTH).replace(HIGH_SURROGATE_RE, '') : term
}

/**
 * Pieces seen recently and their terms (null for stopwords): a vocabulary is small next to the
 * text written with it, and this halved tokenizing time on the index benchmark. termOf is pure,
 * so the cache cannot change a result; it is emptied when full, which bounds its memory.
 */
const TERM_CACHE_SIZE = 50_000
const termCache = new Map<string, string | null>()

/** Collects terms, stopping at MAX_TOKENS_PER_DOCUMENT. */
class TermSink {
  readonly terms: string[] = []

  get isFull(): boolean {
    return this.terms.length >= MAX_TOKENS_PER_DOCUMENT
  }

  addPieces(text: string): void {
    for (const match of text.matchAll(PIECE_RE)) {
      if (this.isFull) return
      this.addPiece(match[0])
    }
  }

  /** `addPieces` for lowercase ASCII text, by the pieces `asciiPieceEnd` finds. */
  addAsciiPieces(text: string): void {
    for (let start = 0; start < text.length && !this.isFull;) {
      if (!isAsciiAlphanumeric(text.charCodeAt(start))) {
        start++
        continue
      }
      const end = asciiPieceEnd(text, start)
      this.addPiece(text.slice(start, end))
      start = end
    }
  }

  addPiece(piece: string): void {
    let term = termCache.get(piece)
    if (term === undefined) {
      term = termOf(piece)
      if (termCache.size >= TERM_CACHE_SIZE) termCache.clear()
      termCache.set(piece, term)
    }
    if (term !== null) this.terms.push(term)
  }

  addCjkRun(run: string): void {
    // A run longer than the cap needs (a pasted wall of ideographs) is not split into chars whole.
    const chars = Array.from(run.length > 2 * MAX_TOKENS_PER_DOCUMENT + 2 ? run.slice(0, 2 * MAX_TOKENS_PER_DOCUMENT + 2) : run)
    if (chars.length === 1) {
      this.terms.push(run)
      return
    }
    for (let i = 0; i + 1 < chars.length && !this.isFull; i++) this.terms.push(`${chars[i]}${chars[i + 1]}`)
  }

  addSegmented(text: string): void {
    for (const segment of segmenter.segment(text)) {
      if (this.isFull) return
      if (segment.isWordLike) this.addPieces(segment.segment)
    }
  }
}

function isAsciiLetter(code: number): boolean {
  return code >= 0x61 && code <= 0x7a
}

function isAsciiDigit(code: number): boolean {
  return code >= 0x30 && code <= 0x39
}

function isAsciiAlphanumeric(code: number): boolean {
  return isAsciiLetter(code) || isAsciiDigit(code)
}

/**
 * Where the piece starting at `start` (a lowercase letter or a digit) ends: PIECE_RE restricted
 * to lowercase ASCII, i.e. `[a-z0-9]+` runs joined by an apostrophe between two letters or a dot
 * between two digits. A scan rather than that regex: an import tokenizes every record, and the
 * match objects of `matchAll` were a tenth of what it allocated.
 */
export function asciiPieceEnd(text: string, start: number): number {
  let end = start
  for (;;) {
    while (end < text.length && isAsciiAlphanumeric(text.charCodeAt(end))) end++
    if (end === start || end + 1 >= text.length) return end
    const joiner = text.charCodeAt(end)
    const before = text.charCodeAt(end - 1)
    const after = text.charCodeAt(end + 1)
    const joins = joiner === 0x27 ? isAsciiLetter(before) && isAsciiLetter(after) : joiner === 0x2e && isAsciiDigit(before) && isAsciiDigit(after)
    if (!joins) return end
    end += 1
  }
}

/** Tab, line feed, vertical tab, form feed, carriage return, space: `\s` within ASCII. */
function isAsciiWhitespace(code: number): boolean {
  return code === 0x20 || (code >= 0x09 && code <= 0x0d)
}

function addChunk(sink: TermSink, rawChunk: string): void {
  const chunk = rawChunk.normalize('NFD').replace(LATIN_DIACRITIC_RE, '').normalize('NFC').replace(FORMAT_CHAR_RE, '')
  if (ASCII_RE.test(chunk)) {
    sink.addAsciiPieces(chunk) // "café" is now "cafe" and takes exactly the path "cafe" takes
    return
  }
  let start = 0
  for (const match of chunk.matchAll(CJK_RUN_RE)) {
    if (match.index > start) sink.addSegmented(chunk.slice(start, match.index))
    if (sink.isFull) return
    sink.addCjkRun(match[0])
    start = match.index + match[0].length
  }
  if (start < chunk.length && !sink.isFull) sink.addSegmented(chunk.slice(start))
}

/**
 * The index terms of `text`, in text order, repeats kept (they are the term frequencies).
 * Never throws on a string; the caller checks the type.
 */
export function tokenize(text: string): string[] {
  // toLowerCase is the locale-independent Unicode mapping, the same as toLocaleLowerCase('und')
  // and measured 7x faster on a 40-word record.
  const normalized = text.slice(0, MAX_SCANNED_CHARS).normalize('NFKC').toLowerCase()
  const sink = new TermSink()
  if (ASCII_RE.test(normalized)) {
    // Pieces never span whitespace, so one pass over the whole text equals one per chunk.
    sink.addAsciiPieces(normalized)
    return sink.terms
  }
  // Only chunks with a non-ASCII character need the slow path; the ASCII text between them
  // goes through the fast one in a single pass. (Found by scanning, not by one regex with \S*
  // around the non-ASCII character: that backtracks quadratically on a long unbroken run.)
  let start = 0
  const nonAscii = new RegExp(NON_ASCII_RE.source, 'gu')
  const whitespace = new RegExp(WHITESPACE_RE.source, 'gu')
  for (let found = nonAscii.exec(normalized); found !== null && !sink.isFull; found = nonAscii.exec(normalized)) {
    let left = found.index
    while (left > start && !isAsciiWhitespace(normalized.charCodeAt(left - 1))) left--
    whitespace.lastIndex = found.index
    const right = whitespace.exec(normalized)?.index ?? normalized.length
    if (left > start) sink.addAsciiPieces(normalized.slice(start, left))
    if (!sink.isFull) addChunk(sink, normalized.slice(left, right))
    start = right
    nonAscii.lastIndex = right
  }
  if (start < normalized.length && !sink.isFull) sink.addAsciiPieces(normalized.slice(start))
  return sink.terms
}


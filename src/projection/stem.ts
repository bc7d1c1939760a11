/**
 * A light English stemmer, written for Cairn: it strips plurals and a few common inflectional
 * suffixes so that "preferences", "preferred" and "preferring" meet "prefer"/"preference" at
 * one index term. It is deliberately much smaller than Porter's algorithm.
 *
 * Invariant: `stem` is a pure function of its argument, so the same word stems identically in a
 * document and in a query. It only touches words of plain letters a-z longer than three letters
 * (numbers, other scripts and short words pass through) and never returns a stem shorter than
 * three letters, so it cannot merge short unrelated words.
 *
 * It can over- or under-stem ("news" → "new", "written" ≠ "write"); what matters for search is
 * that inflections of one word mostly agree, which the steps below are ordered to keep:
 *   1. plurals:       classes → class, studies → study, boxes → box, users → user
 *   2. one suffix:    agreed → agree, studied → study, stopped → stop, hoping → hop, darkness → dark
 *   3. adverb -ly:    quickly → quick
 *   4. a final -e:    hope → hop, create → creat (so hope/hoped/hoping/hopes all end as "hop")
 */

const MIN_STEM_LENGTH = 3
const PLAIN_WORD_RE = /^[a-z]+$/
const VOWEL_RE = /[aeiouy]/
/** Plurals in -es after a sibilant: boxes, buzzes, matches, wishes, buses. */
const SIBILANT_ES_RE = /(?:[sxz]|ch|sh)es$/
/** Endings where a final s is not a plural: class, status, analysis. */
const NOT_PLURAL_RE = /(?:ss|us|is)$/
/** A doubled consonant left by -ed/-ing (stopped, running, planned); l, s, z, f stay doubled. */
const DOUBLED_CONSONANT_RE = /([bdgmnprt])\1$/

function stripPlural(word: string): string {
  if (word.endsWith('sses')) return word.slice(0, -2)
  if (word.endsWith('ies') && word.length > 4) return `${word.slice(0, -3)}y`
  if (SIBILANT_ES_RE.test(word) && word.length > 4) return word.slice(0, -2)
  if (word.endsWith('s') && !NOT_PLURAL_RE.test(word)) return word.slice(0, -1)
  return word
}

/** Strips -ed or -ing (`length` letters); a too-short base keeps an e instead (used → use). */
function stripVerbal(word: string, length: number): string {
  const base = word.slice(0, -length)
  if (base.length >= MIN_STEM_LENGTH && VOWEL_RE.test(base)) {
    // "added" keeps its dd: undoubling needs a base of four letters or more.
    return base.length >= 4 && DOUBLED_CONSONANT_RE.test(base) ? base.slice(0, -1) : base
  }
  if (base.length === MIN_STEM_LENGTH - 1 && VOWEL_RE.test(base)) return `${base}e` // used, using → use
  return word
}

function stripSuffix(word: string): string {
  if (word.endsWith('eed')) {
    // agreed → agree, but speed and need stay whole.
    return VOWEL_RE.test(word.slice(0, -3)) ? word.slice(0, -1) : word
  }
  if (word.endsWith('ied') && word.length > 4) return `${word.slice(0, -3)}y`
  if (word.endsWith('ed')) return stripVerbal(word, 2)
  if (word.endsWith('ing')) return stripVerbal(word, 3)
  if (word.endsWith('ness') && word.length - 4 >= MIN_STEM_LENGTH) return word.slice(0, -4)
  return word
}

/** The index term for one lowercase word (see the header for what it does and does not do). */
export function stem(word: string): string {
  if (word.length <= MIN_STEM_LENGTH || !PLAIN_WORD_RE.test(word)) return word
  let result = stripSuffix(stripPlural(word))
  if (result.endsWith('ly') && result.length - 2 >= MIN_STEM_LENGTH + 1) result = result.slice(0, -2)
  if (result.endsWith('e') && !result.endsWith('ee') && result.length - 1 >= MIN_STEM_LENGTH) result = result.slice(0, -1)
  return result
}

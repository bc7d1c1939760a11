/**
 * The tokenizer behind the full-text index: normalization (case, NFKC, Latin diacritics), CJK
 * bigrams, the segmenter for other scripts, stopwords, the light stemmer, and the caps. The ASCII
 * shortcut is checked against the segmenter on random ASCII text, and every term of any string
 * is checked to be safe for the index's key layout (no ':', no whitespace or control characters).
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { stem } from '../../src/projection/stem.js'
import { MAX_SCANNED_CHARS, MAX_TOKEN_LENGTH, MAX_TOKENS_PER_DOCUMENT, asciiPieceEnd, tokenize } from '../../src/projection/tokenize.js'

/** The segmenter's word-like segments of the text, normalized as tokenize normalizes. */
function wordSegments(text: string): string[] {
  const segmenter = new Intl.Segmenter('und', { granularity: 'word' })
  const normalized = text.normalize('NFKC').toLocaleLowerCase('und')
  return [...segmenter.segment(normalized)].filter((segment) => segment.isWordLike).map((segment) => segment.segment)
}

describe('tokenize', () => {
  it('lowercases, drops stopwords and possessives, and keeps numbers as terms', () => {
    expect(tokenize("The User's favourite number is 42, not 3.14!")).toEqual(['user', 'favourit', 'number', '42', '3.14'])
    expect(tokenize('Version 2024 of RFC 8032')).toEqual(['version', '2024', 'rfc', '8032'])
  })

  it('splits at punctuation inside words but joins an apostrophe between letters', () => {
    expect(tokenize("snake_case example.com foo:bar x-ray don't")).toEqual(['snak', 'cas', 'exampl', 'com', 'foo', 'bar', 'x', 'ray', 'dont'])
  })

  it('matches words whatever their case, width, ligatures and Latin diacritics', () => {
    const expected = tokenize('cafe')
    expect(expected).toEqual(['caf'])
    for (const variant of ['café', 'CAFÉ', 'Cafe\u0301', 'ｃａｆé', 'ca\u00adfé']) expect(tokenize(variant), variant).toEqual(expected)
    expect(tokenize('Ångström naïve São ﬁne')).toEqual(tokenize('angstrom naive sao fine'))
  })

  it('keeps marks that are not Latin diacritics', () => {
    // Devanagari vowel signs and kana voicing marks change the word; they must not be stripped.
    expect(tokenize('हिंदी')).not.toEqual(tokenize('हद'))
    expect(tokenize('が')).not.toEqual(tokenize('か'))
  })

  it('indexes runs of Han and kana as overlapping bigrams, a lone ideograph as itself', () => {
    expect(tokenize('北京大学')).toEqual(['北京', '京大', '大学'])
    expect(tokenize('我')).toEqual(['我'])
    expect(tokenize('東京タワーへ行く')).toEqual(['東京', '京タ', 'タワ', 'ワー', 'ーへ', 'へ行', '行く'])
    // Mixed with Latin text, each part gets its own treatment.
    expect(tokenize('iPhone手机')).toEqual(['iphon', '手机'])
  })

  it('segments scripts written without spaces and keeps Hangul words whole', () => {
    expect(tokenize('สวัสดีครับ')).toEqual(['สวัสดี', 'ครับ'])
    expect(tokenize('서울에 갑니다')).toEqual(['서울에', '갑니다'])
  })

  it('stems inflections of one word to one term', () => {
    const groups = [
      ['prefer', 'prefers', 'preferred', 'preferring'],
      ['study', 'studies', 'studied', 'studying'],
      ['hope', 'hopes', 'hoped', 'hoping'],
      ['stop', 'stops', 'stopped', 'stopping'],
      ['use', 'uses', 'used', 'using'],
      ['box', 'boxes'],
      ['class', 'classes'],
      ['meeting', 'meetings'],
      ['quick', 'quickly'],
      ['dark', 'darkness'],
      ['agree', 'agreed'],
    ]
    for (const group of groups) {
      const stems = new Set(group.map(stem))
      expect(stems.size, group.join(', ')).toBe(1)
    }
  })

  it('leaves short words, non-plurals and words with other letters unstemmed', () => {
    for (const word of ['bus', 'status', 'analysis', 'class', 'speed', 'need', 'thing', 'ring', 'add', 'fall', 'naïve', 'x86s']) {
      expect(stem(word), word).toBe(word)
    }
  })

  it('cuts a long term to MAX_TOKEN_LENGTH without splitting a surrogate pair', () => {
    expect(tokenize('z'.repeat(200))).toEqual(['z'.repeat(MAX_TOKEN_LENGTH)])
    const astral = `a${'𐌰'.repeat(100)}` // Gothic letters: two code units each, untouched by NFKC
    const [term] = tokenize(astral)
    expect(term?.length).toBe(MAX_TOKEN_LENGTH - 1)
    expect(term?.isWellFormed()).toBe(true)
  })

  it('stops at MAX_TOKENS_PER_DOCUMENT terms and MAX_SCANNED_CHARS characters', () => {
    const words = Array.from({ length: MAX_TOKENS_PER_DOCUMENT + 500 }, (_, i) => `w${i}`)
    const terms = tokenize(words.join(' '))
    expect(terms).toHaveLength(MAX_TOKENS_PER_DOCUMENT)
    expect(terms.at(-1)).toBe(`w${MAX_TOKENS_PER_DOCUMENT - 1}`)
    expect(tokenize('字'.repeat(3 * MAX_TOKENS_PER_DOCUMENT))).toHaveLength(MAX_TOKENS_PER_DOCUMENT)
    // Past the scanned prefix nothing is read, however few terms came before.
    expect(tokenize(`${' '.repeat(MAX_SCANNED_CHARS)}hidden`)).toEqual([])
    expect(tokenize(`${' '.repeat(MAX_SCANNED_CHARS - 10)}seen`)).toEqual(['seen'])
  })

  it('gives the terms of the segmenter path on any ASCII text (the shortcut changes nothing)', () => {
    const unit = fc.constantFrom(...'abcdexyzAZ0189'.split(''), ' ', "'", '.', ',', ':', '_', '-', '\n', '!', 's')
    fc.assert(fc.property(fc.string({ unit, maxLength: 40 }), (text) => {
      // Each word-like segment on its own (joined by spaces) is what the segmenter path sees.
      expect(tokenize(text)).toEqual(tokenize(wordSegments(text).join(' ')))
    }), { numRuns: 2000 })
  })

  it('cuts lowercase ASCII into the pieces of the piece rule (the scan equals the regex it replaced)', () => {
    // The piece rule of step 5 restricted to lowercase ASCII, as a regex: the oracle.
    const pieceRe = /[a-z0-9]+(?:(?:(?<=[a-z])'(?=[a-z])|(?<=[0-9])\.(?=[0-9]))[a-z0-9]+)*/g
    const scan = (text: string): string[] => {
      const pieces: string[] = []
      for (let start = 0; start < text.length;) {
        if (!/[a-z0-9]/.test(text[start] as string)) {
          start++
          continue
        }
        const end = asciiPieceEnd(text, start)
        pieces.push(text.slice(start, end))
        start = end
      }
      return pieces
    }
    const unit = fc.constantFrom(...'abz09AZ'.split(''), "'", '.', ' ', '-', '`', '/', ':', '@', '[', '{')
    fc.assert(fc.property(fc.string({ unit, maxLength: 40 }), (text) => {
      expect(scan(text)).toEqual([...text.matchAll(pieceRe)].map((match) => match[0]))
    }), { numRuns: 3000 })
    expect(scan("don't 3.14 a'1 1'a a.b 1.a x''y 1..2 end'")).toEqual(["don't", '3.14', 'a', '1', '1', 'a', 'a', 'b', '1', 'a', 'x', 'y', '1', '2', 'end'])
  })

  it('tokenizes whitespace-separated chunks independently', () => {
    const unit = fc.constantFrom('a', 'é', 'Ü', '字', '北', 'タ', 'ー', 'ก', 'า', '9', '.', "'", '’', 'ß', 'İ', '-')
    const chunk = fc.string({ unit, minLength: 1, maxLength: 8 })
    fc.assert(fc.property(chunk, chunk, (a, b) => {
      expect(tokenize(`${a} ${b}`)).toEqual([...tokenize(a), ...tokenize(b)])
    }), { numRuns: 1000 })
  })

  it('never throws and yields only non-empty terms without whitespace, controls or ":"', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 60 }), (text) => {
      for (const term of tokenize(text)) {
        expect(term.length).toBeGreaterThan(0)
        expect(term.length).toBeLessThanOrEqual(MAX_TOKEN_LENGTH)
        expect(term).not.toMatch(/[\s\p{Cc}:]/u)
      }
    }), { numRuns: 2000 })
  })
})

/**
 * A synthetic corpus for benchmarks: a seeded PRNG, a pronounceable vocabulary, Zipf-distributed
 * word ranks (as in natural text), memory-like record texts of 20-60 words with stopwords,
 * numbers and punctuation, and search queries mixing common, mid-frequency and rare terms.
 * Shared by the text-index and memory benchmarks so both measure the same kind of text.
 */

export const VOCABULARY_SIZE = 4_000

/** A seeded PRNG (mulberry32) returning floats in [0, 1): every benchmark workload draws from it. */
export function seeded(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}


const STOPWORDS = ['the', 'a', 'of', 'to', 'and', 'in', 'is', 'for', 'with', 'on', 'that', 'it', 'was', 'at', 'user', 'they']
const ONSETS = ['b', 'c', 'd', 'f', 'g', 'h', 'j', 'k', 'l', 'm', 'n', 'p', 'r', 's', 't', 'v', 'w', 'z', 'br', 'ch', 'st', 'tr', 'pl', 'gr']
const NUCLEI = ['a', 'e', 'i', 'o', 'u', 'ai', 'ou', 'ea']
const CODAS = ['', '', 'n', 'r', 'l', 's', 't', 'm', 'nd', 'rk']


export function vocabulary(random: () => number): string[] {
  const words = new Set<string>()
  while (words.size < VOCABULARY_SIZE) {
    const syllables = 1 + Math.floor(random() * 3)
    let word = ''
    for (let i = 0; i < syllables; i++) {
      word += ONSETS[Math.floor(random() * ONSETS.length)]! + NUCLEI[Math.floor(random() * NUCLEI.length)]! + CODAS[Math.floor(random() * CODAS.length)]!
    }
    if (word.length >= 3) words.add(word)
  }
  return [...words]
}


/** Draws ranks 0…n-1 with probability proportional to 1/(rank+1). */
export function zipf(n: number, random: () => number): () => number {
  const cumulative: number[] = []
  let total = 0
  for (let rank = 0; rank < n; rank++) cumulative.push((total += 1 / (rank + 1)))
  return () => {
    const target = random() * total
    let low = 0
    let high = n - 1
    while (low < high) {
      const middle = (low + high) >> 1
      if ((cumulative[middle] as number) < target) low = middle + 1
      else high = middle
    }
    return low
  }
}


export function recordText(words: string[], rank: () => number, random: () => number): string {
  const length = 20 + Math.floor(random() * 41)
  const parts: string[] = []
  for (let i = 0; i < length; i++) {
    const roll = random()
    let word = roll < 0.25 ? STOPWORDS[Math.floor(random() * STOPWORDS.length)]! : roll < 0.27 ? String(Math.floor(random() * 3000)) : words[rank()]!
    if (i === 0 || random() < 0.03) word = word.charAt(0).toUpperCase() + word.slice(1)
    if (random() < 0.06) word += random() < 0.5 ? ',' : '.'
    parts.push(word)
  }
  return parts.join(' ')
}


export interface Query {
  readonly text: string
  readonly kind: string
}


export function queries(words: string[], random: () => number, count: number): Query[] {
  const bands = [
    { name: 'common', from: 0, to: 50 },
    { name: 'mid', from: 50, to: 1000 },
    { name: 'rare', from: 1000, to: VOCABULARY_SIZE },
  ]
  return Array.from({ length: count }, () => {
    const size = 1 + Math.floor(random() * 4)
    const picked = Array.from({ length: size }, () => bands[Math.floor(random() * bands.length)]!)
    const terms = picked.map((band) => words[band.from + Math.floor(random() * (band.to - band.from))]!)
    const kinds = new Set(picked.map((band) => band.name))
    return { text: terms.join(' '), kind: `${size} term${size > 1 ? 's' : ''}, ${kinds.size === 1 ? `all ${[...kinds][0]}` : 'mixed'}` }
  })
}


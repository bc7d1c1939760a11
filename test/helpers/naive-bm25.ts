/**
 * A reference BM25 for the full-text index tests, written from the textbook formula and never
 * from src/projection/bm25.ts (STYLE.md: golden values are not produced by the code under
 * test), and a seeded Zipf-ish corpus of memory-like records. It shares only `tokenize`, which
 * has its own tests.
 */
import { tokenize } from '../../src/projection/tokenize.js'
import { SeededRandom } from './seeded-random.js'

/** BM25 from scratch, textbook formula: k1 = 1.2, b = 0.75, Lucene's IDF, query terms summed in order. */
export class NaiveBm25 {
  private readonly lists: (readonly [string, string[]])[]

  constructor(documents: ReadonlyMap<string, string>) {
    this.lists = [...documents].map(([id, text]) => [id, tokenize(text)] as const).filter(([, terms]) => terms.length > 0)
  }

  search(query: string, limit = 10, accept: (id: string) => boolean = () => true): { id: string; score: number }[] {
    const count = this.lists.length
    if (count === 0) return []
    const average = this.lists.reduce((sum, [, terms]) => sum + terms.length, 0) / count
    const queryTerms = [...new Set(tokenize(query))]
    const frequency = (term: string) => this.lists.filter(([, terms]) => terms.includes(term)).length
    const idf = new Map(queryTerms.map((term) => [term, Math.log(1 + (count - frequency(term) + 0.5) / (frequency(term) + 0.5))]))
    const hits: { id: string; score: number }[] = []
    for (const [id, terms] of this.lists) {
      let score = 0
      let isMatch = false
      for (const term of queryTerms) {
        const tf = terms.filter((t) => t === term).length
        if (tf === 0) continue
        isMatch = true
        score += (idf.get(term) as number) * ((tf * (1.2 + 1)) / (tf + 1.2 * (1 - 0.75 + (0.75 * terms.length) / average)))
      }
      if (isMatch && accept(id)) hits.push({ id, score })
    }
    hits.sort((a, b) => (a.score !== b.score ? b.score - a.score : a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    return hits.slice(0, limit)
  }
}

export function naiveSearch(documents: ReadonlyMap<string, string>, query: string, limit = 10, accept?: (id: string) => boolean) {
  return new NaiveBm25(documents).search(query, limit, accept)
}

/** Memory-like records: a Zipf-ish draw from a small vocabulary, 3 to 40 words each. */
export function zipfCorpus(seed: number, size: number): Map<string, string> {
  const random = new SeededRandom(seed)
  const vocabulary = Array.from({ length: 300 }, (_, i) => `word${i}`)
  const documents = new Map<string, string>()
  for (let i = 0; i < size; i++) {
    const words = Array.from({ length: random.int(3, 40) }, () => vocabulary[Math.floor(vocabulary.length * random.next() ** 3)] as string)
    documents.set(`doc-${i.toString().padStart(5, '0')}`, words.join(' '))
  }
  return documents
}

/**
 * Okapi BM25 (Robertson and Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond",
 * 2009, eq. 3.15) with the non-negative IDF that Lucene uses. The score of a document D for a
 * query Q is, summed over the query's distinct terms t in query order:
 *
 *   idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |D| / avgdl))
 *   idf(t) = ln(1 + (N - n(t) + 0.5) / (n(t) + 0.5))
 *
 * with tf the term's frequency in D, |D| the document's length in terms, avgdl the mean length,
 * N the number of documents and n(t) the number holding t.
 *
 * Invariant: the weight is increasing in tf and decreasing in |D| for any avgdl > 0, which the
 * index's posting groups rely on to bound scores (text-index-layout.ts). Both functions are
 * written exactly as above so an independent implementation of the formula gets the same bits.
 */

export const BM25_K1 = 1.2
export const BM25_B = 0.75

export function inverseDocumentFrequency(documentCount: number, documentFrequency: number): number {
  return Math.log(1 + (documentCount - documentFrequency + 0.5) / (documentFrequency + 0.5))
}

/** The term-frequency part of one term's score, before the IDF factor. */
export function termWeight(termFrequency: number, documentLength: number, averageLength: number): number {
  return (termFrequency * (BM25_K1 + 1)) / (termFrequency + BM25_K1 * (1 - BM25_B + (BM25_B * documentLength) / averageLength))
}

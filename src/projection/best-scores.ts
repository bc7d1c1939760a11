/**
 * The best k scored ids of a search, best first: higher score, then lower id. The k-th score is
 * the threshold a search compares its bounds with. Invariant: `hits` is sorted and holds at most
 * `limit` distinct ids; offering a member again moves it to its new score.
 */

export interface ScoredId {
  readonly id: string
  readonly score: number
}

export class BestScores {
  readonly hits: ScoredId[] = []
  private readonly members = new Set<string>()

  constructor(private readonly limit: number) {}

  get isFull(): boolean {
    return this.hits.length >= this.limit
  }

  /** The k-th score, or -Infinity while there are fewer than k. */
  get threshold(): number {
    return this.isFull ? (this.hits[this.hits.length - 1] as ScoredId).score : Number.NEGATIVE_INFINITY
  }

  /** Whether (score, id) ranks within the best k: higher score first, then lower id. */
  admits(score: number, id: string): boolean {
    if (this.members.has(id) || !this.isFull) return true
    const worst = this.hits[this.hits.length - 1] as ScoredId
    return score > worst.score || (score === worst.score && id < worst.id)
  }

  /** Adds an id with its score, or moves a member to its new score; drops whoever falls past k. */
  offer(id: string, score: number): void {
    if (this.members.has(id)) this.hits.splice(this.hits.findIndex((hit) => hit.id === id), 1)
    let low = 0
    let high = this.hits.length
    while (low < high) {
      const middle = (low + high) >> 1
      const other = this.hits[middle] as ScoredId
      if (other.score > score || (other.score === score && other.id < id)) low = middle + 1
      else high = middle
    }
    this.hits.splice(low, 0, { id, score })
    this.members.add(id)
    if (this.hits.length > this.limit) this.members.delete((this.hits.pop() as ScoredId).id)
  }
}

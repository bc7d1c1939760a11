/**
 * Seeded randomness for tests (mulberry32), so a failing run can be replayed from the seed it
 * logs. Not for anything that needs real randomness.
 */

/** A generator of floats in [0, 1) from a 32-bit seed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** The same generator with helpers: integers in a closed range, shuffles, picks, bytes. */
export class SeededRandom {
  private readonly nextFloat: () => number

  constructor(readonly seed: number) {
    this.nextFloat = seededRandom(seed)
  }

  /** A float in [0, 1). */
  next(): number {
    return this.nextFloat()
  }

  /** An integer in [min, max], both ends included. */
  int(min: number, max: number): number {
    return min + Math.floor(this.nextFloat() * (max - min + 1))
  }

  /** Shuffles `items` in place (Fisher–Yates) and returns it. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(0, i)
      const held = items[i] as T
      items[i] = items[j] as T
      items[j] = held
    }
    return items
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)] as T
  }

  bytes(length: number): Uint8Array {
    return Uint8Array.from({ length }, () => this.int(0, 255))
  }
}

/** A seed from the environment variable `name` when set (to replay a run), else a fresh one. */
export function seedFromEnv(name: string): number {
  const given = process.env[name]
  if (given !== undefined && given !== '') {
    const seed = Number(given)
    if (!Number.isSafeInteger(seed)) throw new Error(`${name} must be an integer, got ${given}`)
    return seed
  }
  return Math.floor(Math.random() * 2 ** 31)
}

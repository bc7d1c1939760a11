/**
 * CRDT state keeps user data as object keys: set elements (tags), map keys (metadata) and
 * unknown fields (ext). A plain object inherits `constructor`, `toString`, `valueOf`… from
 * Object.prototype, so `set[element]` must read own properties only, or a tag named
 * "constructor" reads a function. `__proto__` cannot be an own key of a plain object written by
 * assignment, and the state codec (msgpackr) renames it when it reads one back, so it is never
 * a key at all: the API refuses it, and an operation that carries it (from a peer or a bundle)
 * drops it the same way on every replica.
 */

/** The one key no state holds. */
export const RESERVED_KEY = '__proto__'

/** `record[key]` when it is the record's own property, else undefined. */
export function ownEntry<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined
}

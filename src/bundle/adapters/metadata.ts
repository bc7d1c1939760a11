/**
 * Episode metadata built from foreign fields (docs/memory-model.md §5): string values under
 * `<prefix>_<field>` keys, written once each.
 *
 * Invariant: a key, once written, keeps its first value (spec §10 "never overwriting"); the one
 * exception is `overwrite`, used where the reference adapter overlays its provenance keys, and
 * it reports the value it replaced so the caller can warn.
 */
import { canonicalJson } from '../../log/index.js'

/**
 * A value as the PM adapters store it in metadata (spec §10, memory-model §5.3): strings as
 * they are, booleans "1"/"0", numbers in canonical JSON form, arrays and objects as canonical
 * JSON; null and undefined have no value (absent).
 */
export function metadataString(value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined
  if (typeof value === 'string') return value
  if (typeof value === 'boolean') return value ? '1' : '0'
  return canonicalJson(value)
}

/**
 * A value as the Engram adapter stores it: strings as they are, everything else (booleans and
 * null included) as canonical JSON, so `true` stays "true" and the original type can be read back.
 */
export function jsonString(value: unknown): string {
  return typeof value === 'string' ? value : canonicalJson(value)
}

/** Insertion-ordered string map that never overwrites by accident. */
export class MetadataBuilder {
  private readonly values = new Map<string, string>()

  has(key: string): boolean {
    return this.values.has(key)
  }

  get(key: string): string | undefined {
    return this.values.get(key)
  }

  /** Writes `key` unless it is already written or `value` is undefined. Returns whether it wrote. */
  set(key: string, value: string | undefined): boolean {
    if (value === undefined || this.values.has(key)) return false
    this.values.set(key, value)
    return true
  }

  /** Writes `value` when it is a non-empty string (the reference adapters' `_put`). */
  put(key: string, value: unknown): boolean {
    return typeof value === 'string' && value !== '' ? this.set(key, value) : false
  }

  /** Writes `key` even if present; returns the replaced value when it differed. */
  overwrite(key: string, value: string): string | undefined {
    const previous = this.values.get(key)
    this.values.set(key, value)
    return previous !== undefined && previous !== value ? previous : undefined
  }

  /** A fresh plain object (own data properties, so a key named `__proto__` stays a key). */
  toObject(): Record<string, string> {
    const out: Record<string, string> = {}
    for (const [key, value] of this.values) {
      Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true })
    }
    return out
  }
}

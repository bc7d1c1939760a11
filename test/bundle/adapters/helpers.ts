/**
 * Shared helpers for the adapter tests: fixed time and randomness, the synthetic samples, an
 * id-sorted export of records (as the spec's fixture harness does: canonical lines sorted by
 * id, each ending with "\n"), error capture, and the "nothing dropped" check that looks for every
 * leaf of an input in the records.
 *
 * The export and the leaf walk are written here from the spec, not taken from the code under test.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { canonicalJson, compareCodePoints } from '../../../src/log/index.js'
import type { AdapterOptions, AdapterResult, ImportedRecord, SourceFile } from '../../../src/bundle/adapters/index.js'
export { refusal, asyncRefusal } from '../../helpers/error-code.js'

/** 1700000000 s: the instant the PM fixtures use. */
export const NOW_MS = 1_700_000_000_000
export const NOW = '2023-11-14T22:13:20Z'

export const SAMPLES = path.join(path.dirname(fileURLToPath(import.meta.url)), 'samples')

/** Randomness that counts: 0000000000000001, 0000000000000002, … (16 hex for 8 bytes). */
export function countingHex(): (bytes: number) => string {
  let next = 0
  return (bytes) => (++next).toString(16).padStart(bytes * 2, '0')
}

export function fixedOptions(extra: Partial<AdapterOptions> = {}): AdapterOptions {
  return { nowMs: NOW_MS, randomHex: countingHex(), ...extra }
}

export function sample(relative: string): SourceFile {
  return { path: relative, content: readFileSync(path.join(SAMPLES, relative)) }
}

export function sampleJson(relative: string): unknown {
  return JSON.parse(readFileSync(path.join(SAMPLES, relative), 'utf8')) as unknown
}

/** Canonical lines of one kind, sorted by id (code point order), each ending with "\n". */
export function exportLines(records: readonly ImportedRecord[], kind = 'episode'): string {
  return records.filter((record) => record.kind === kind)
    .sort((a, b) => compareCodePoints(a.id, b.id))
    .map((record) => `${canonicalJson(record.fields)}\n`).join('')
}

export function byId(result: AdapterResult): Map<string, ImportedRecord> {
  return new Map(result.records.map((record) => [record.id, record]))
}

export function episode(result: AdapterResult, id: string): Record<string, unknown> {
  const record = byId(result).get(id)
  if (record === undefined || record.kind !== 'episode') throw new Error(`no episode ${id}; have ${result.records.map((r) => r.id).join(', ')}`)
  return record.fields as Record<string, unknown>
}

export function metadataOf(fields: Record<string, unknown>): Record<string, string> {
  return fields.metadata as Record<string, string>
}

interface Leaf {
  readonly path: string
  readonly value: string | number
}

/** Every non-empty string and every number of a JSON value, with its path. */
export function leaves(value: unknown, at = '$'): Leaf[] {
  if (typeof value === 'string') return value === '' ? [] : [{ path: at, value }]
  if (typeof value === 'number') return [{ path: at, value }]
  if (Array.isArray(value)) return value.flatMap((item, index) => leaves(item, `${at}[${index}]`))
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([key, item]) => leaves(item, `${at}.${key}`))
  return []
}

function haystack(records: readonly ImportedRecord[]): { texts: string[]; numbers: Set<number> } {
  const texts: string[] = []
  const numbers = new Set<number>()
  const walk = (value: unknown): void => {
    if (typeof value === 'string') texts.push(value)
    else if (typeof value === 'number') numbers.add(value)
    else if (Array.isArray(value)) value.forEach(walk)
    else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        texts.push(key)
        walk(item)
      }
    }
  }
  for (const record of records) walk(record.fields)
  return { texts, numbers }
}

/**
 * The paths of input leaves found nowhere in the records: a string must appear in some field,
 * metadata key or value (raw, or JSON-escaped inside canonical JSON); a number must be a field's
 * value or appear as a whole number token in some text.
 */
export function unmatchedLeaves(input: unknown, records: readonly ImportedRecord[]): string[] {
  const { texts, numbers } = haystack(records)
  return leaves(input).filter(({ value }) => {
    if (typeof value === 'string') {
      const escaped = JSON.stringify(value).slice(1, -1)
      return !texts.some((text) => text.includes(value) || text.includes(escaped))
    }
    if (numbers.has(value)) return false
    const token = new RegExp(`(^|[^0-9.])${canonicalJson(value).replace(/[.+]/g, '\\$&')}([^0-9]|$)`)
    return !texts.some((text) => token.test(text))
  }).map(({ path }) => path)
}

/**
 * Reading foreign JSON for the adapters: the documents of an input (files parsed with located
 * errors, or a value given already parsed), and typed field readers that name the JSON path of
 * a wrong-typed field.
 *
 * Invariant: a field the mapping reads is either absent/null (absent) or of the type the mapping
 * expects; anything else is an InputError WRONG_TYPE naming the file and the JSON path, raised
 * before any record of the input is returned.
 */
import { describeType, isPlainObject } from '../../assert.js'
import { InputError, type ErrorLocation } from '../../errors.js'
import type { JsonObject, JsonValue } from '../../log/index.js'
import { parseJsonSource } from './json-source.js'
import { decodeSource } from './source-text.js'
import type { AdapterInput } from './types.js'

export type { JsonObject }

/** One JSON document of an input and the file it came from. */
export interface JsonDocument {
  readonly value: JsonValue
  readonly file: string
}

/** The JSON documents of an input: each file parsed, or the given value. @throws InputError BAD_JSON, BAD_UTF8; LimitError */
export function jsonDocuments(input: AdapterInput, fallbackName: string): JsonDocument[] {
  if ('files' in input) return input.files.map((file) => ({ value: parseJsonSource(decodeSource(file), file.path), file: file.path }))
  return [{ value: input.json as JsonValue, file: input.path ?? fallbackName }]
}

/** A JSON path step: `.key` for identifier-like keys, `["…"]` otherwise. */
export function pathKey(path: string, key: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`
}

export const isObject = (value: unknown): value is JsonObject => isPlainObject(value)

/** Reads typed fields of one object, naming `file` and the path of any wrong-typed field. */
export class FieldReader {
  /** `line`: the line of a JSON Lines record, named in errors beside the path. */
  constructor(readonly object: JsonObject, readonly file: string, readonly path: string, readonly line?: number) {}

  /** The location of this object, or of its field `key`. */
  where(key?: string): ErrorLocation {
    const path = key === undefined ? this.path : pathKey(this.path, key)
    return this.line === undefined ? { file: this.file, path } : { file: this.file, line: this.line, path }
  }

  private wrong(key: string, expected: string, value: unknown): never {
    throw new InputError('WRONG_TYPE', `expected ${expected}, got ${describeType(value)}`, this.where(key))
  }

  has(key: string): boolean {
    return Object.hasOwn(this.object, key) && this.object[key] !== null && this.object[key] !== undefined
  }

  raw(key: string): JsonValue | undefined {
    return Object.hasOwn(this.object, key) && this.object[key] !== null ? this.object[key] : undefined
  }

  string(key: string): string | undefined {
    const value = this.raw(key)
    if (value === undefined || typeof value === 'string') return value
    return this.wrong(key, 'a string', value)
  }

  number(key: string): number | undefined {
    const value = this.raw(key)
    if (value === undefined) return undefined
    if (typeof value === 'number') return value
    if (typeof value === 'bigint') return Number(value)
    return this.wrong(key, 'a number', value)
  }

  object_(key: string): JsonObject | undefined {
    const value = this.raw(key)
    if (value === undefined || isObject(value)) return value
    return this.wrong(key, 'an object', value)
  }

  array(key: string): JsonValue[] | undefined {
    const value = this.raw(key)
    if (value === undefined || Array.isArray(value)) return value
    return this.wrong(key, 'an array', value)
  }

  /** An array of strings (null items are refused too: a list of names has no holes). */
  strings(key: string): string[] | undefined {
    const list = this.array(key)
    if (list === undefined) return undefined
    list.forEach((item, index) => {
      if (typeof item !== 'string') {
        const where = this.where(key)
        throw new InputError('WRONG_TYPE', `expected a string, got ${describeType(item)}`, { ...where, path: `${where.path ?? ''}[${index}]` })
      }
    })
    return list as string[]
  }

  /** A reader for a nested object field (an empty one when absent). */
  child(key: string): FieldReader {
    return new FieldReader(this.object_(key) ?? {}, this.file, pathKey(this.path, key), this.line)
  }
}

/**
 * The objects of a list, each with its path; a non-object item is a WRONG_TYPE error.
 * @throws InputError WRONG_TYPE
 */
export function objectItems(list: readonly JsonValue[], file: string, path: string, line?: number): FieldReader[] {
  // Array.from visits holes too (map would keep them as holes), so a sparse array is refused like any non-object.
  return Array.from(list, (item, index) => {
    const at = `${path}[${index}]`
    if (!isObject(item)) throw new InputError('WRONG_TYPE', `expected an object, got ${describeType(item)}`, line === undefined ? { file, path: at } : { file, line, path: at })
    return new FieldReader(item, file, at, line)
  })
}

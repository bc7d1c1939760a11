/**
 * A minimal JSON Schema (2020-12) checker for the subset the Portable Memory schemas use:
 * `type` (a name or a list), `required`, `properties`, `items`, `additionalProperties` (boolean
 * or schema), `minimum`, `enum`, `pattern`, `uniqueItems` and `format: date-time` (RFC 3339
 * §5.6). Annotations (`$schema`, `$id`, `title`, `description`) are ignored; any other keyword
 * throws, so a schema can never pass because a rule was silently skipped.
 *
 * Written for the tests and independent of src/: it shares no code with the validators under
 * test. Integers beyond 2^53 arrive as bigint (parseJson) and count as integers.
 */
import { readFileSync } from 'node:fs'
import { conformancePath } from './conformance.js'

export interface JsonSchema {
  readonly type?: string | readonly string[]
  readonly required?: readonly string[]
  readonly properties?: Readonly<Record<string, JsonSchema>>
  readonly items?: JsonSchema
  readonly additionalProperties?: boolean | JsonSchema
  readonly minimum?: number
  readonly enum?: readonly unknown[]
  readonly pattern?: string
  readonly uniqueItems?: boolean
  readonly format?: string
}

const ANNOTATIONS = new Set(['$schema', '$id', 'title', 'description'])
const KEYWORDS = new Set(['type', 'required', 'properties', 'items', 'additionalProperties', 'minimum', 'enum', 'pattern', 'uniqueItems', 'format'])

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))$/

/** RFC 3339 date-time, with calendar and clock ranges checked. */
export function isDateTime(text: string): boolean {
  const match = DATE_TIME.exec(text)
  if (match === null) return false
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [number, number, number, number, number, number]
  const monthDays = [31, year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
  if (month < 1 || month > 12 || day < 1 || day > (monthDays[month - 1] as number)) return false
  if (hour > 23 || minute > 59 || second > 60) return false
  if (match[9] !== undefined && (Number(match[9]) > 23 || Number(match[10]) > 59)) return false
  return true
}

function typeOf(value: unknown): string[] {
  if (value === null) return ['null']
  if (Array.isArray(value)) return ['array']
  if (typeof value === 'bigint') return ['integer', 'number']
  if (typeof value === 'number') return Number.isInteger(value) ? ['integer', 'number'] : ['number']
  if (typeof value === 'string' || typeof value === 'boolean') return [typeof value]
  if (typeof value === 'object') return ['object']
  return [typeof value]
}

/** Every violation of `schema` by `value`, as `path: message`; empty when the value is valid. */
export function schemaErrors(schema: JsonSchema, value: unknown, path = '$'): string[] {
  for (const keyword of Object.keys(schema)) {
    if (!KEYWORDS.has(keyword) && !ANNOTATIONS.has(keyword)) throw new Error(`json-schema helper: unsupported keyword ${keyword} at ${path}`)
  }
  const errors: string[] = []
  if (schema.type !== undefined) {
    const allowed = typeof schema.type === 'string' ? [schema.type] : schema.type
    if (!typeOf(value).some((type) => allowed.includes(type))) {
      return [`${path}: expected ${allowed.join(' or ')}, got ${typeOf(value)[0]}`]
    }
  }
  if (schema.enum !== undefined && !schema.enum.includes(value)) errors.push(`${path}: not one of the enum values`)
  if (schema.minimum !== undefined && (typeof value === 'number' || typeof value === 'bigint') && value < schema.minimum) {
    errors.push(`${path}: below the minimum ${schema.minimum}`)
  }
  if (typeof value === 'string') {
    if (schema.format === 'date-time' && !isDateTime(value)) errors.push(`${path}: not an RFC 3339 date-time`)
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value)) errors.push(`${path}: does not match ${schema.pattern}`)
  }
  if (Array.isArray(value)) {
    if (schema.items !== undefined) value.forEach((item, i) => errors.push(...schemaErrors(schema.items as JsonSchema, item, `${path}[${i}]`)))
    if (schema.uniqueItems === true && new Set(value.map((item) => JSON.stringify(item))).size !== value.length) errors.push(`${path}: items are not unique`)
  } else if (typeof value === 'object' && value !== null) {
    const record = value as Record<string, unknown>
    for (const name of schema.required ?? []) if (!Object.hasOwn(record, name)) errors.push(`${path}: missing required ${name}`)
    for (const [name, item] of Object.entries(record)) {
      const property = schema.properties !== undefined && Object.hasOwn(schema.properties, name) ? schema.properties[name] : undefined
      if (property !== undefined) errors.push(...schemaErrors(property, item, `${path}.${name}`))
      else if (schema.additionalProperties === false) errors.push(`${path}: unexpected property ${name}`)
      else if (typeof schema.additionalProperties === 'object') errors.push(...schemaErrors(schema.additionalProperties, item, `${path}.${name}`))
    }
  }
  return errors
}

/** A Portable Memory schema by name (`episode`, `fact`, …), read where the conformance data lives. */
export function loadPortableMemorySchema(name: string): JsonSchema {
  return JSON.parse(readFileSync(conformancePath('Schemas', `${name}.schema.json`), 'utf8')) as JsonSchema
}

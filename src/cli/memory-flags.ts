/**
 * Flags the memory commands share (filters, limits, recorded times) and how their values
 * become `Memory` arguments, plus the errors those commands report about records.
 *
 * Invariant: a wrong flag value exits 2 naming the flag, whether the CLI spots it (a kind that
 * does not exist, a limit that is not a number) or the engine does (a limit over its maximum,
 * a timestamp it cannot read): engine errors about a query field are re-aimed at the flag that
 * carried it, so the engine stays the one place that knows the ranges.
 */
import { InputError, isRecordKind, RECORD_KINDS, type HistoryItem, type RecordFilter, type RecordKind, type TagFilter } from '../index.js'
import { markUsage, usageError, type OperandFlagDefinition } from './operand-args.js'

const TAG = { type: 'string', valueName: 'T', multiple: true } as const

/** Filters `query` and `search` both take. */
export const FILTER_FLAGS = {
  kind: { type: 'string', short: 'k', valueName: 'K', multiple: true, description: 'only records of kind K (any of the given kinds)' },
  context: { type: 'string', short: 'c', valueName: 'C', description: 'only records in context C (their contextID)' },
  tag: { ...TAG, short: 't', description: 'only records tagged T (all of the given tags)' },
  'any-tag': { ...TAG, description: 'only records with at least one of these tags' },
  'no-tag': { ...TAG, description: 'no records tagged T' },
  entity: { type: 'string', short: 'e', valueName: 'E', description: 'only records about entity id E (its edges and facts)' },
  'min-confidence': { type: 'string', valueName: 'X', description: 'only records with confidence >= X' },
  'valid-at': { type: 'string', valueName: 'T', description: 'only facts and edges valid at time T (RFC 3339); other kinds pass' },
  limit: { type: 'string', short: 'n', valueName: 'N', description: 'at most N records' },
} as const satisfies Record<string, OperandFlagDefinition>

/** For help texts. */
export const KINDS_LINE = `Kinds: ${RECORD_KINDS.join(', ')}.`

/** `--as-of`, for `get` and `query`. */
export const AS_OF_FLAG = {
  type: 'string',
  valueName: 'T',
  description: 'read as this replica showed it at recorded time T: RFC 3339 (a whole second counts as its end) or ms since the epoch',
} as const satisfies OperandFlagDefinition

export const JSON_FLAG = { type: 'boolean', description: 'print JSON' } as const satisfies OperandFlagDefinition

interface FilterValues {
  readonly kind: readonly string[]
  readonly context: string | undefined
  readonly tag: readonly string[]
  readonly 'any-tag': readonly string[]
  readonly 'no-tag': readonly string[]
  readonly entity: string | undefined
  readonly 'min-confidence': string | undefined
  readonly 'valid-at': string | undefined
}

function kindsOf(values: readonly string[]): RecordKind[] {
  return values.map((kind) => {
    if (!isRecordKind(kind)) throw usageError('UNKNOWN_KIND', `no record kind "${kind}"; kinds: ${RECORD_KINDS.join(', ')}`, { flag: '--kind' })
    return kind
  })
}

/** A record kind from `--kind`, for commands that take one. */
export function kindFlag(value: string): RecordKind {
  return kindsOf([value])[0] as RecordKind
}

/**
 * A number from a flag, written in decimal (`0.9`, `.5`, `-1`, `5e-1`): not the hex, binary,
 * octal or padded forms `Number` also reads (`0x10` is not 16 here).
 */
export function numberFlag(value: string, flag: string): number {
  const number = Number(value)
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(value) || !Number.isFinite(number)) throw usageError('BAD_FLAG_VALUE', `expected a decimal number, got "${value}"`, { flag })
  return number
}

/** A positive whole number from a flag (the engine checks its maximum). */
export function countFlag(value: string, flag: string): number {
  if (!/^\d{1,15}$/.test(value) || Number(value) < 1) throw usageError('BAD_FLAG_VALUE', `expected a whole number of 1 or more, got "${value}"`, { flag })
  return Number(value)
}

/**
 * A recorded time from `--as-of`. Digits are ms since the epoch. An RFC 3339 time with a
 * fraction is read to the millisecond (as the engine reads one); one without a fraction goes to
 * the engine as it is, which counts the whole second.
 */
export function asOfFlag(value: string): number | string {
  if (/^\d{1,16}$/.test(value)) return Number(value)
  if (/^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}\.\d+([Zz]|[+-]\d{2}:\d{2})$/.test(value)) {
    const ms = Date.parse(value.toUpperCase())
    if (Number.isFinite(ms)) return ms
  }
  return value
}

export function filterOf(values: FilterValues): RecordFilter {
  const tags: TagFilter = {
    ...(values.tag.length > 0 ? { all: values.tag } : {}),
    ...(values['any-tag'].length > 0 ? { any: values['any-tag'] } : {}),
    ...(values['no-tag'].length > 0 ? { none: values['no-tag'] } : {}),
  }
  const kinds = kindsOf(values.kind)
  return {
    ...(kinds.length === 1 ? { kind: kinds[0] as RecordKind } : kinds.length > 1 ? { kind: kinds } : {}),
    ...(values.context !== undefined ? { context: values.context } : {}),
    ...(Object.keys(tags).length > 0 ? { tags } : {}),
    ...(values.entity !== undefined ? { entity: values.entity } : {}),
    ...(values['min-confidence'] !== undefined ? { minConfidence: numberFlag(values['min-confidence'], '--min-confidence') } : {}),
    ...(values['valid-at'] !== undefined ? { validAt: values['valid-at'] } : {}),
  }
}

/** Engine field labels (memory-inputs.ts) and the flags that carry them. */
const FLAG_OF_FIELD: readonly (readonly [RegExp, string])[] = [
  [/^query\.kind/, '--kind'], [/^query\.context$/, '--context'], [/^query\.tags\.all/, '--tag'],
  [/^query\.tags\.any/, '--any-tag'], [/^query\.tags\.none/, '--no-tag'], [/^query\.entity$/, '--entity'],
  [/^query\.minConfidence$/, '--min-confidence'], [/^query\.validAt$/, '--valid-at'],
  [/^(query|options)\.limit$/, '--limit'], [/^query\.cursor$/, '--cursor'], [/^asOf$/, '--as-of'],
]

/**
 * Runs an engine call; an InputError about a field a flag carried becomes a usage error
 * naming that flag, with the engine's code and message.
 */
export async function withFlagErrors<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call()
  } catch (error) {
    const field = error instanceof InputError ? error.where.field : undefined
    const flag = field === undefined ? undefined : FLAG_OF_FIELD.find(([pattern]) => pattern.test(field))?.[1]
    if (!(error instanceof InputError) || flag === undefined) throw error
    const message = error.message.slice(error.code.length + 2).replace(` (field ${field})`, '')
    throw markUsage(new InputError(error.code, message, { flag }, { cause: error }))
  }
}

/**
 * The error for an id this replica does not show: FORGOTTEN when its history holds the
 * tombstone (a forget is forever), UNKNOWN_RECORD otherwise. Same codes as the engine's.
 */
export function recordError(id: string, history: readonly HistoryItem[]): InputError {
  if (history.some((item) => item.type === 'tombstone')) return new InputError('FORGOTTEN', `record ${id} was deleted (forget is permanent)`)
  return new InputError('UNKNOWN_RECORD', `no record ${id} here`)
}

/** Engine errors about the `<id>` operand, restated with the id. */
export async function withRecordErrors<T>(id: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call()
  } catch (error) {
    if (error instanceof InputError && (error.code === 'UNKNOWN_RECORD' || error.code === 'FORGOTTEN') && error.where.field === 'id') {
      throw error.code === 'FORGOTTEN'
        ? new InputError('FORGOTTEN', `record ${id} was deleted (forget is permanent)`, {}, { cause: error })
        : new InputError('UNKNOWN_RECORD', `no record ${id} here`, {}, { cause: error })
    }
    throw error
  }
}

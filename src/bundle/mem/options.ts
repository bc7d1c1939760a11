/**
 * Validation of the options the codec's entry points take (STYLE.md: validate at the edge).
 * Unknown option keys are refused, so a typo (`trustedkeys`) is an error rather than an
 * unchecked signature.
 *
 * Invariant: what these return is complete and typed; the codec trusts it afterwards.
 */
import { assertInteger, assertNonEmptyString, assertObject, assertOneOf, assertOptions, assertString } from '../../assert.js'
import { InputError } from '../../errors.js'
import { parseTimestamp } from '../../projection/kinds.js'
import { resolveLimits, type ResolvedLimits } from './layout.js'
import { CONFORMANCE_LEVELS, EXPORT_MODES } from './manifest.js'
import { assertSigner, readTrustedKeys } from './signature.js'
import type { ProgressCallback, WriteOptions } from './types.js'

const WRITE_KEYS = [
  'generator', 'createdAt', 'exportMode', 'since', 'conformanceLevel', 'embeddingModel', 'embeddingDim',
  'schemaVersion', 'specURL', 'signer', 'onProgress', 'limits',
] as const
const READ_KEYS = ['trustedKeys', 'onProgress', 'limits'] as const

/** The manifest's `schemaVersion` when the caller does not give one. */
export const DEFAULT_SCHEMA_VERSION = 1

/** `WriteOptions` with the defaults filled in and the limits resolved. */
export type ResolvedWriteOptions = Omit<WriteOptions, 'schemaVersion' | 'limits'> & {
  readonly schemaVersion: number
  readonly limits: ResolvedLimits
}

export interface ResolvedReadOptions {
  readonly trustedKeys: ReadonlySet<string>
  readonly onProgress?: ProgressCallback
  readonly limits: ResolvedLimits
}

function readTimestampOption(value: unknown, field: string): string {
  parseTimestamp(assertString(value, `options.${field}`), `options.${field}`)
  return value as string
}

function readProgress(value: unknown): ProgressCallback | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'function') throw new InputError('WRONG_TYPE', 'onProgress must be a function', { field: 'options.onProgress' })
  return value as ProgressCallback
}

function readLimits(value: unknown): ResolvedLimits {
  if (value === undefined) return resolveLimits(undefined)
  const limits = assertOptions(value, ['maxFileBytes', 'maxLineBytes'], 'options.limits')
  const read = (key: string): number | undefined =>
    limits[key] === undefined ? undefined : assertInteger(limits[key], `options.limits.${key}`, 1)
  const maxFileBytes = read('maxFileBytes')
  const maxLineBytes = read('maxLineBytes')
  return resolveLimits({ ...(maxFileBytes === undefined ? {} : { maxFileBytes }), ...(maxLineBytes === undefined ? {} : { maxLineBytes }) })
}

/**
 * @throws InputError WRONG_TYPE, EMPTY, UNKNOWN_FIELD, BAD_VALUE, BAD_TIMESTAMP, OUT_OF_RANGE,
 *   SINCE_NOT_INCREMENTAL, BAD_HEX
 */
export function readWriteOptions(value: unknown): ResolvedWriteOptions {
  const options = assertOptions(assertObject(value, 'options'), WRITE_KEYS, 'options')
  const exportMode = assertOneOf(options.exportMode, EXPORT_MODES, 'options.exportMode')
  if (options.since !== undefined && exportMode !== 'incremental') {
    throw new InputError('SINCE_NOT_INCREMENTAL', 'since is written only for incremental exports', { field: 'options.since' })
  }
  const resolved: { -readonly [K in keyof ResolvedWriteOptions]: ResolvedWriteOptions[K] } = {
    generator: assertNonEmptyString(options.generator, 'options.generator'),
    createdAt: readTimestampOption(options.createdAt, 'createdAt'),
    exportMode,
    conformanceLevel: assertOneOf(options.conformanceLevel, CONFORMANCE_LEVELS, 'options.conformanceLevel'),
    embeddingModel: assertString(options.embeddingModel, 'options.embeddingModel'),
    embeddingDim: assertInteger(options.embeddingDim, 'options.embeddingDim', 0),
    schemaVersion: options.schemaVersion === undefined ? DEFAULT_SCHEMA_VERSION : assertInteger(options.schemaVersion, 'options.schemaVersion'),
    limits: readLimits(options.limits),
  }
  if (options.since !== undefined) resolved.since = readTimestampOption(options.since, 'since')
  if (options.specURL !== undefined) resolved.specURL = assertString(options.specURL, 'options.specURL')
  if (options.signer !== undefined) resolved.signer = assertSigner(options.signer, 'options.signer')
  const onProgress = readProgress(options.onProgress)
  if (onProgress !== undefined) resolved.onProgress = onProgress
  return resolved
}

/** @throws InputError WRONG_TYPE, UNKNOWN_FIELD, BAD_TRUSTED_KEY, OUT_OF_RANGE */
export function readReadOptions(value: unknown): ResolvedReadOptions {
  const options = assertOptions(value, READ_KEYS, 'options')
  const onProgress = readProgress(options.onProgress)
  return {
    trustedKeys: readTrustedKeys(options.trustedKeys),
    limits: readLimits(options.limits),
    ...(onProgress === undefined ? {} : { onProgress }),
  }
}

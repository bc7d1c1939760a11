/**
 * Values the bundle commands (`export`, `import`, `validate`) take from the command line: the
 * bundle format, an adapter's source name, trusted keys, an incremental export's start time,
 * and the bundle path. Each check runs before a store is opened or a file is read.
 *
 * Invariant: a malformed value is a usage error (exit 2) naming its flag; keys go through the
 * engine's own asserter (sync-flags.ts `hexKey`), and names through the library's own lists
 * (BUNDLE_FORMATS, SOURCE_NAMES), so the CLI accepts exactly what the library does.
 */
import path from 'node:path'
import { BUNDLE_FORMATS, SOURCE_NAMES, type BundleFormat, type SourceName } from '../index.js'
import { usageError, type OperandFlagDefinition } from './operand-args.js'
import { hexKey } from './sync-flags.js'

export const FORMAT_FLAG = {
  type: 'string',
  short: 'f',
  valueName: 'F',
  description: `the bundle format: ${BUNDLE_FORMATS.join(', ')}`,
} as const satisfies OperandFlagDefinition

export const TRUSTED_KEY_FLAG = {
  type: 'string',
  valueName: 'HEX',
  multiple: true,
  description: 'accept only a .mem or PAM bundle signed by this Ed25519 public key (64 hex)',
} as const satisfies OperandFlagDefinition

/** `--format`, when given. @throws InputError UNKNOWN_FORMAT (a usage error) */
export function formatFlag(value: string | undefined): BundleFormat | undefined {
  if (value === undefined) return undefined
  const format = BUNDLE_FORMATS.find((name) => name === value.trim().toLowerCase())
  if (format === undefined) throw usageError('UNKNOWN_FORMAT', `no bundle format "${value}"; formats: ${BUNDLE_FORMATS.join(', ')}`, { flag: '--format' })
  return format
}

/** `--from`, when given. @throws InputError UNKNOWN_SOURCE (a usage error) listing the known sources */
export function sourceFlag(value: string | undefined): SourceName | undefined {
  if (value === undefined) return undefined
  const source = SOURCE_NAMES.find((name) => name === value.trim().toLowerCase())
  if (source === undefined) throw usageError('UNKNOWN_SOURCE', `no import adapter for "${value}"; sources: ${SOURCE_NAMES.join(', ')}`, { flag: '--from' })
  return source
}

/** Every `--trusted-key`, in lowercase hex, without repeats. @throws InputError BAD_KEY (a usage error) */
export function trustedKeysFlag(values: readonly string[]): string[] {
  return [...new Set(values.map((value) => hexKey(value, { flag: '--trusted-key' }, 'an Ed25519 public key')))]
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/

/**
 * `--since`: an RFC 3339 time, passed to the library as written (it reads it to the second).
 * @throws InputError BAD_TIMESTAMP (a usage error)
 */
export function sinceFlag(value: string | undefined): string | undefined {
  if (value === undefined) return undefined
  if (!RFC3339.test(value) || !Number.isFinite(Date.parse(value.toUpperCase()))) {
    throw usageError('BAD_TIMESTAMP', `expected an RFC 3339 time such as 2024-06-01T00:00:00Z, got "${value}"`, { flag: '--since' })
  }
  return value
}

/** A bundle path as given (for messages) and resolved against the working directory (for reading). */
export interface BundlePath {
  readonly given: string
  readonly resolved: string
}

export function bundlePath(cwd: string, value: string): BundlePath {
  return { given: value, resolved: path.resolve(cwd, value) }
}

/** The `.pam`/`.pam.cbor` name an export's format defaults to PAM for. */
export function isPamName(file: string): boolean {
  return /\.pam(\.cbor)?$/i.test(file)
}

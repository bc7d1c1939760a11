/**
 * The library's bundle errors, restated for the command line: an error about an option a flag
 * carried names the flag instead (and exits 2), and a file inside the bundle is named under the
 * path the user typed (`out.mem/items/episode.jsonl:3`), not bundle-relative or absolute.
 *
 * Invariant: the code, the family and the line are kept; only `where` and the exit code change,
 * so a script that branches on the code sees what the library threw.
 */
import path from 'node:path'
import { CairnError, InputError, relocate, type ErrorLocation } from '../errors.js'
import type { BundlePath } from './bundle-flags.js'
import { markUsage } from './operand-args.js'

/** Library option fields and the flags that carry them. */
const FLAG_OF_OPTION: readonly (readonly [RegExp, string])[] = [
  [/^options\.since$/, '--since'], [/^options\.trustedKeys/, '--trusted-key'], [/^options\.format$/, '--format'],
  [/^options\.from$/, '--from'], [/^options\.sign$/, '--sign'], [/^options\.audit$/, '--audit'], [/^options\.cbor$/, '--cbor'],
]

/** `file` (bundle-relative, or absolute under the bundle) as a path under the one the user gave. */
export function displayFile(file: string, bundle: BundlePath): string {
  // Adapters name a one-file source by its base name: that is the file the user gave.
  if (file === path.basename(bundle.resolved)) return bundle.given
  if (!path.isAbsolute(file)) return path.join(bundle.given, file)
  const relative = path.relative(bundle.resolved, file)
  if (relative === '') return bundle.given
  return relative.startsWith('..') || path.isAbsolute(relative) ? file : path.join(bundle.given, relative)
}

/** The same error (code, family) with another location and, when given, another message. */
export function restate(error: CairnError, where: ErrorLocation, message = error.reason): CairnError {
  return relocate(error, where, message)
}

/**
 * Runs a library call on the bundle at `bundle`, restating what it throws (see the header).
 * Other errors pass through unchanged.
 */
export async function withBundleErrors<T>(bundle: BundlePath, call: () => Promise<T>): Promise<T> {
  try {
    return await call()
  } catch (error) {
    if (!(error instanceof CairnError)) throw error
    const field = error.where.field
    const flag = field === undefined ? undefined : FLAG_OF_OPTION.find(([pattern]) => pattern.test(field))?.[1]
    if (error instanceof InputError && flag !== undefined) throw markUsage(restate(error, { flag }))
    if (error.where.file !== undefined) throw restate(error, { ...error.where, file: displayFile(error.where.file, bundle) })
    // Some writers name their target as a `path`; a JSON path ($.x) is left alone.
    const { path: target, ...rest } = error.where
    if (target !== undefined && path.isAbsolute(target)) throw restate(error, { ...rest, file: displayFile(target, bundle) })
    throw error
  }
}

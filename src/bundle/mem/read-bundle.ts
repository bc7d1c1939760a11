/**
 * The two readers of a `.mem` bundle: `readMemBundle` returns the content of a valid bundle and
 * throws for any other, `validateMemBundle` lists every problem (the `cairn validate` report).
 *
 * Invariant: readers never half-read. Every check and every row is done before content is
 * returned (spec notes §7: abort before writing anything), so an importer that gets content can
 * apply it whole.
 */
import { assertNonEmptyString } from '../../assert.js'
import { inspectMemBundle } from './inspect-bundle.js'
import { readReadOptions } from './options.js'
import { bundleError } from './problems.js'
import type { ReadOptions, ReadResult, RecordFilesReadResult, ValidationReport } from './types.js'

/**
 * Reads and fully validates the bundle at `dir`.
 * @returns the manifest, the content, and warnings (unknown keys dropped, ignored files)
 * @throws InputError for bad arguments (WRONG_TYPE, UNKNOWN_FIELD, BAD_TRUSTED_KEY) and for a
 *   malformed bundle (MANIFEST_MISSING, BAD_MANIFEST, UNSUPPORTED_VERSION, BAD_PATH, SYMLINK,
 *   NOT_A_FILE, BAD_JSON, BAD_UTF8, TRUNCATED, WRONG_TYPE, MISSING_FIELD, BAD_TIMESTAMP, …);
 *   VerifyError CHECKSUM_MISMATCH, SIZE_MISMATCH, CHECKSUMS_MISMATCH, DIGEST_MISMATCH,
 *   MISSING_FILE, UNLISTED_FILE, SIGNATURE_MISSING, BAD_SIGNATURE, UNTRUSTED_KEY;
 *   LimitError FILE_TOO_LARGE, LINE_TOO_LONG, TOO_DEEP. The error is the first problem, with
 *   its `where` naming the file and line; `validateMemBundle` lists them all.
 */
export async function readMemBundle(dir: string, options?: ReadOptions): Promise<ReadResult> {
  const resolved = readReadOptions(options)
  const inspection = await inspectMemBundle(assertNonEmptyString(dir, 'dir'), resolved)
  if (inspection.problems.length > 0 || inspection.content === undefined || inspection.manifest === undefined) {
    throw bundleError(inspection.problems)
  }
  return { manifest: inspection.manifest, content: inspection.content, warnings: inspection.warnings }
}

/**
 * readMemBundle for an importer: the same checks, with the record files returned as their
 * checked bytes rather than decoded rows (`recordFiles`; `content.records` is empty), so a large
 * bundle is decoded batch by batch as it is written (recordRowBatches), never held whole.
 * @throws what readMemBundle throws
 */
export async function readMemBundleRecordFiles(dir: string, options?: ReadOptions): Promise<RecordFilesReadResult> {
  const resolved = readReadOptions(options)
  const inspection = await inspectMemBundle(assertNonEmptyString(dir, 'dir'), resolved, false)
  if (inspection.problems.length > 0 || inspection.content === undefined || inspection.manifest === undefined || inspection.recordFiles === undefined) {
    throw bundleError(inspection.problems)
  }
  return { manifest: inspection.manifest, content: inspection.content, recordFiles: inspection.recordFiles, warnings: inspection.warnings }
}

/**
 * Validates the bundle at `dir` without returning its content: every problem, each naming its
 * file (and line), and the warnings. A bad bundle is a value here, never a throw.
 * @throws InputError only for bad arguments (WRONG_TYPE, EMPTY, UNKNOWN_FIELD, BAD_TRUSTED_KEY)
 */
export async function validateMemBundle(dir: string, options?: ReadOptions): Promise<ValidationReport> {
  return (await validateAndReadMemBundle(dir, options)).report
}

/**
 * `validateMemBundle`'s report, and the content too when the bundle is valid (what
 * `readMemBundleRecordFiles` returns), from one read: `cairn validate` goes on to check a valid
 * bundle's records as an import would, without reading it again.
 * @throws InputError only for bad arguments, as validateMemBundle
 */
export async function validateAndReadMemBundle(dir: string, options?: ReadOptions): Promise<{ readonly report: ValidationReport; readonly read?: RecordFilesReadResult }> {
  const resolved = readReadOptions(options)
  const inspection = await inspectMemBundle(assertNonEmptyString(dir, 'dir'), resolved, false)
  const { manifest, content, recordFiles } = inspection
  const valid = inspection.problems.length === 0
  const report: ValidationReport = { valid, problems: inspection.problems, warnings: inspection.warnings, ...(manifest === undefined ? {} : { manifest }) }
  const read = valid && manifest !== undefined && content !== undefined && recordFiles !== undefined ? { manifest, content, recordFiles, warnings: inspection.warnings } : undefined
  return { report, ...(read ? { read } : {}) }
}

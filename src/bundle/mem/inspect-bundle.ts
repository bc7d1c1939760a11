/**
 * Inspects a `.mem` bundle directory: every check of spec notes §7 and §9 and the decoding of
 * every stream, in one pass, collecting problems rather than stopping at the first. Both
 * `readMemBundle` and `validateMemBundle` are this pass.
 *
 * Order: the manifest (present, UTF-8, parses, well-typed, major version 1); the signature when
 * trusted keys are configured; CHECKSUMS (exactly the lines `manifest.files` implies) and
 * `bundleDigest`; each listed file (safe path, no symlink, regular, under the cap, byte count,
 * sha256, then its rows); files the manifest does not list. The pass stops early only when
 * nothing further can be trusted to mean anything (no manifest, an unknown major version).
 *
 * Invariant: content is returned only when there is no problem at all.
 */
import { isUtf8 } from 'node:buffer'
import { stat } from 'node:fs/promises'
import path from 'node:path'
import { defaultCrypto, parseJson, type CryptoProvider } from '../../log/index.js'
import { checkBundleFile, findUnlistedEntries, readBundleFile } from './bundle-files.js'
import { ContentBuilder, decodeBundleFile, type StreamContext } from './decode-streams.js'
import {
  CHECKSUMS_FILE, fileRole, isSafeBundlePath, MANIFEST_FILE, MAX_SIGNATURE_FILE_BYTES, MEM_FORMAT_MAJOR, SIGNATURE_FILE,
} from './layout.js'
import { checksumsText, decodeManifest, formatMajor, sortFiles } from './manifest.js'
import type { ResolvedReadOptions } from './options.js'
import { DroppedKeys, ProblemList } from './problems.js'
import { checkSignatureToken } from './signature.js'
import type { MemBundleContent, MemManifest, MemProblem, MemRecordFile } from './types.js'

/** The warning for a bundle whose manifest says `signed` and that holds no manifest.sig. */
export const SIGNATURE_REMOVED = 'SIGNATURE_REMOVED'

export interface Inspection {
  readonly manifest?: MemManifest
  /** Present only when `problems` is empty. */
  readonly content?: MemBundleContent
  /** With `keepRecordRows` false, the record files as checked bytes (content.records is then empty); present with content. */
  readonly recordFiles?: readonly MemRecordFile[]
  readonly problems: readonly MemProblem[]
  readonly warnings: readonly MemProblem[]
}

async function readManifest(root: string, maxBytes: number, problems: ProblemList): Promise<{ manifest: MemManifest; bytes: Uint8Array } | undefined> {
  const read = await readBundleFile(root, MANIFEST_FILE, maxBytes)
  if ('failure' in read) {
    const isMissing = read.failure.code === 'MISSING_FILE'
    problems.add(isMissing ? 'MANIFEST_MISSING' : read.failure.code, isMissing ? 'the bundle has no manifest.json' : read.failure.message, MANIFEST_FILE)
    return undefined
  }
  if (!isUtf8(read.bytes)) {
    problems.add('BAD_UTF8', 'manifest.json is not valid UTF-8', MANIFEST_FILE)
    return undefined
  }
  try {
    return { manifest: decodeManifest(parseJson(read.bytes.toString('utf8'))), bytes: read.bytes }
  } catch (error) {
    problems.addError(error, MANIFEST_FILE)
    return undefined
  }
}

async function checkSignature(root: string, manifestBytes: Uint8Array, options: ResolvedReadOptions, crypto: CryptoProvider, problems: ProblemList): Promise<void> {
  const read = await readBundleFile(root, SIGNATURE_FILE, MAX_SIGNATURE_FILE_BYTES)
  if ('failure' in read) {
    if (read.failure.code === 'MISSING_FILE') problems.add('SIGNATURE_MISSING', 'trusted keys are configured and the bundle is not signed', SIGNATURE_FILE)
    else problems.add(read.failure.code, read.failure.message, SIGNATURE_FILE)
    return
  }
  if (!isUtf8(read.bytes)) {
    problems.add('BAD_SIGNATURE', 'manifest.sig is not valid UTF-8', SIGNATURE_FILE)
    return
  }
  const check = checkSignatureToken(read.bytes.toString('utf8'), manifestBytes, options.trustedKeys, crypto)
  if (!check.isValid) problems.add(check.code, `manifest.sig over manifest.json: ${check.message}`, SIGNATURE_FILE)
}

async function checkChecksums(root: string, manifest: MemManifest, options: ResolvedReadOptions, crypto: CryptoProvider, problems: ProblemList): Promise<void> {
  const read = await readBundleFile(root, CHECKSUMS_FILE, options.limits.maxFileBytes)
  if ('failure' in read) {
    problems.add(read.failure.code, read.failure.code === 'MISSING_FILE' ? 'the bundle has no CHECKSUMS' : read.failure.message, CHECKSUMS_FILE)
    return
  }
  if (!read.bytes.equals(Buffer.from(checksumsText(manifest.files), 'utf8'))) {
    problems.add('CHECKSUMS_MISMATCH', 'CHECKSUMS is not the sorted "<sha256>  <path>" lines of manifest.files', CHECKSUMS_FILE)
  }
  if (manifest.bundleDigest !== undefined && crypto.sha256Hex(read.bytes) !== manifest.bundleDigest) {
    problems.add('DIGEST_MISMATCH', 'the sha256 of CHECKSUMS is not manifest.bundleDigest', CHECKSUMS_FILE)
  }
}

/** Compares manifest counts with what was decoded; a difference is a warning (counts are informational). */
function checkCounts(manifest: MemManifest, builder: ContentBuilder, problems: ProblemList): void {
  const keys = new Set([...Object.keys(manifest.counts), ...builder.counts.keys()])
  for (const key of keys) {
    const declared = Object.hasOwn(manifest.counts, key) ? (manifest.counts[key] as number) : 0
    const actual = builder.counts.get(key) ?? 0
    if (declared !== actual) problems.warn('COUNT_MISMATCH', `manifest counts ${declared} ${key} rows, the bundle holds ${actual}`, MANIFEST_FILE)
  }
}

/**
 * Runs every check and decodes every stream of the bundle at `dir`. Never throws for a bad bundle.
 * @param keepRecordRows false: known-kind rows are checked, and their files kept as bytes instead (ContentBuilder)
 */
export async function inspectMemBundle(dir: string, options: ResolvedReadOptions, keepRecordRows = true): Promise<Inspection> {
  const root = path.resolve(dir)
  const problems = new ProblemList()
  const builder = new ContentBuilder(keepRecordRows)
  const done = (manifest?: MemManifest, content?: MemBundleContent): Inspection => ({
    ...(manifest === undefined ? {} : { manifest }),
    ...(content === undefined ? {} : { content, ...(keepRecordRows ? {} : { recordFiles: builder.recordFiles }) }),
    problems: problems.finish(),
    warnings: problems.warnings,
  })
  try {
    if (!(await stat(root)).isDirectory()) problems.add('NOT_A_DIRECTORY', 'a .mem bundle is a directory')
  } catch {
    problems.add('NOT_FOUND', `no bundle at ${root}`)
  }
  if (problems.problems.length > 0) return done()

  const read = await readManifest(root, options.limits.maxFileBytes, problems)
  if (read === undefined) return done()
  const { manifest } = read
  if (formatMajor(manifest.format) !== MEM_FORMAT_MAJOR) {
    problems.add('UNSUPPORTED_VERSION', `format ${manifest.format.slice(0, 32)} has major version other than ${MEM_FORMAT_MAJOR}`, MANIFEST_FILE)
    return done(manifest)
  }
  const crypto = defaultCrypto()
  if (options.trustedKeys.size > 0) await checkSignature(root, read.bytes, options, crypto, problems)
  else if (manifest.capabilities.includes('signed')) {
    // Nothing checks a signature here, but one removed from a bundle that says it is signed is said.
    const sig = await checkBundleFile(root, SIGNATURE_FILE, MAX_SIGNATURE_FILE_BYTES)
    if ('failure' in sig && sig.failure.code === 'MISSING_FILE') {
      problems.warn(SIGNATURE_REMOVED, 'the manifest says the bundle is signed (capability "signed"), but manifest.sig is missing: nothing shows who wrote it', SIGNATURE_FILE)
    }
  }
  await checkChecksums(root, manifest, options, crypto, problems)

  const files = sortFiles(manifest.files)
  const total = files.reduce((sum, file) => sum + file.bytes, 0)
  let base = 0
  const dropped = new DroppedKeys()
  for (const entry of files) {
    if (problems.isFull) break
    if (!isSafeBundlePath(entry.path)) {
      problems.add('BAD_PATH', 'the path escapes the bundle or is not a plain relative path', entry.path.slice(0, 256))
      continue
    }
    const file = await readBundleFile(root, entry.path, options.limits.maxFileBytes)
    if ('failure' in file) {
      problems.add(file.failure.code, file.failure.message, entry.path)
      continue
    }
    if (file.bytes.length !== entry.bytes) problems.add('SIZE_MISMATCH', `${file.bytes.length} bytes, the manifest says ${entry.bytes}`, entry.path)
    if (crypto.sha256Hex(file.bytes) !== entry.sha256) problems.add('CHECKSUM_MISMATCH', 'the sha256 of the file is not the one in the manifest', entry.path)
    const context: StreamContext = {
      problems,
      dropped,
      maxLineBytes: options.limits.maxLineBytes,
      ...(options.onProgress === undefined ? {} : { onOffset: (offset: number) => options.onProgress?.(Math.min(base + offset, total), total) }),
    }
    decodeBundleFile(fileRole(entry.path), file.bytes, entry.path, context, builder)
    base += entry.bytes
    options.onProgress?.(Math.min(base, total), total)
  }
  const listed = new Set(files.map((file) => file.path))
  for (const entry of await findUnlistedEntries(root, listed)) problems.add(entry.code, entry.message, entry.path)
  dropped.report(problems)
  if (problems.problems.length > 0) return done(manifest)
  checkCounts(manifest, builder, problems)
  return done(manifest, builder.content())
}

/**
 * Writes a `.mem` bundle to a directory: builds it first (encode-bundle.ts: every row checked
 * and encoded, CHECKSUMS and manifest computed), then writes the files into a fresh staging
 * directory beside the target, line by line in large chunks, and renames it into place.
 *
 * Invariant: a caller never sees half a bundle. Any refusal happens before the first write; a
 * failure while writing removes the staging directory; the target appears whole, by one rename,
 * or not at all. An existing target must be an empty directory: the codec never deletes a
 * user's files (the reference exporter clears known subpaths instead; a caller that wants that
 * removes the old bundle itself).
 */
import { randomBytes } from 'node:crypto'
import { mkdir, open, readdir, rename, rm, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { assertNonEmptyString } from '../../assert.js'
import { InputError, StorageError } from '../../errors.js'
import { buildMemBundle, type BuiltBundle } from './encode-bundle.js'
import { CHECKSUMS_FILE, MANIFEST_FILE, SIGNATURE_FILE } from './layout.js'
import type { MemBundleContent, WriteOptions, WriteResult } from './types.js'

async function assertWritableTarget(target: string): Promise<void> {
  let isDirectory: boolean
  try {
    isDirectory = (await stat(target)).isDirectory()
  } catch (error) {
    const code = (error as { code?: unknown }).code
    if (code === 'ENOENT') return
    // A file where a folder of the path should be: said as such, not as node's message (which repeats the path).
    if (code === 'ENOTDIR') throw new InputError('NOT_A_DIRECTORY', 'a folder on the way to the bundle target is a file', { path: target }, { cause: error })
    throw new StorageError('UNREADABLE', `cannot inspect the target (${typeof code === 'string' ? code : String(error)})`, { path: target }, { cause: error })
  }
  if (!isDirectory) throw new InputError('NOT_A_DIRECTORY', 'the bundle target exists and is not a directory', { path: target })
  if ((await readdir(target)).length > 0) throw new InputError('TARGET_NOT_EMPTY', 'the bundle target is not empty; remove it or choose another', { path: target })
}

/** Writes one data file, chunk by chunk. */
async function writeChunks(target: string, chunks: readonly Uint8Array[]): Promise<void> {
  const file = await open(target, 'wx')
  try {
    for (const chunk of chunks) await file.write(chunk)
  } finally {
    await file.close()
  }
}

async function writeBuilt(directory: string, built: BuiltBundle): Promise<void> {
  for (const sub of built.directories) await mkdir(path.join(directory, sub))
  for (const [relative, chunks] of built.files) {
    const target = path.join(directory, ...relative.split('/'))
    await mkdir(path.dirname(target), { recursive: true })
    await writeChunks(target, chunks)
  }
  await writeFile(path.join(directory, CHECKSUMS_FILE), built.checksumsBytes, { flag: 'wx' })
  await writeFile(path.join(directory, MANIFEST_FILE), built.manifestBytes, { flag: 'wx' })
  if (built.signatureBytes !== undefined) await writeFile(path.join(directory, SIGNATURE_FILE), built.signatureBytes, { flag: 'wx' })
}

/**
 * Writes `content` as a bundle at `dir` (created, or an existing empty directory).
 * @throws InputError (options or content, as encodeMemBundle; NOT_A_DIRECTORY, TARGET_NOT_EMPTY),
 *   LimitError LINE_TOO_LONG, FILE_TOO_LARGE, TOO_DEEP; StorageError WRITE_FAILED
 */
export async function writeMemBundle(dir: string, content: MemBundleContent, options: WriteOptions): Promise<WriteResult> {
  return writeBuiltBundle(dir, buildMemBundle(content, options))
}

/**
 * Writes a built bundle (MemBundleBuilder.finish) at `dir`, whole or not at all.
 * @throws InputError NOT_A_DIRECTORY, TARGET_NOT_EMPTY; StorageError WRITE_FAILED
 */
export async function writeBuiltBundle(dir: string, built: BuiltBundle): Promise<WriteResult> {
  const target = path.resolve(assertNonEmptyString(dir, 'dir'))
  await assertWritableTarget(target)
  const parent = path.dirname(target)
  const staging = path.join(parent, `.${path.basename(target)}.partial-${randomBytes(6).toString('hex')}`)
  try {
    await mkdir(parent, { recursive: true })
    await mkdir(staging)
    await writeBuilt(staging, built)
    // rename(2) replaces an empty directory atomically; a non-empty one (a race) fails.
    await rename(staging, target)
  } catch (error) {
    await rm(staging, { recursive: true, force: true })
    throw new StorageError('WRITE_FAILED', `could not write the bundle: ${error instanceof Error ? error.message : String(error)}`, { path: target }, { cause: error })
  }
  return { manifest: built.manifest, files: built.manifest.files, warnings: built.warnings }
}

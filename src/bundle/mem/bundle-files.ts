/**
 * Reading files of an untrusted bundle directory (spec notes §7): every path component is
 * checked with lstat so no symlink anywhere below the bundle root is followed, only regular
 * files are opened (a FIFO would block a reader forever), sizes are capped before reading, and
 * the policed directories are walked for files the manifest does not list.
 *
 * Invariant: nothing outside the bundle directory is ever opened through a path taken from the
 * bundle, and no file larger than the cap is read into memory. The bundle root itself may be a
 * symlink: the caller named it.
 */
import { constants, type Dirent, type Stats } from 'node:fs'
import { lstat, open, readdir } from 'node:fs/promises'
import path from 'node:path'
import { MAX_DIRECTORY_DEPTH, POLICED_DIRECTORIES } from './layout.js'

/** Why a bundle file could not be read; `code` is a problem code. */
export interface FileFailure {
  readonly code: 'MISSING_FILE' | 'SYMLINK' | 'NOT_A_FILE' | 'FILE_TOO_LARGE' | 'UNREADABLE'
  readonly message: string
}

export type FileCheck = { readonly size: number } | { readonly failure: FileFailure }
export type FileRead = { readonly bytes: Buffer } | { readonly failure: FileFailure }

function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null ? ((error as { code?: unknown }).code as string | undefined) : undefined
}

async function lstatOrUndefined(target: string): Promise<Stats | undefined> {
  try {
    return await lstat(target)
  } catch (error) {
    if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return undefined
    throw error
  }
}

/**
 * Checks a bundle-relative path (already text-safe, see isSafeBundlePath) component by
 * component: no symlinks, directories above, a regular file at the end, at most `maxBytes`.
 */
export async function checkBundleFile(root: string, relativePath: string, maxBytes: number): Promise<FileCheck> {
  const segments = relativePath.split('/')
  let current = root
  for (let i = 0; i < segments.length; i++) {
    current = path.join(current, segments[i] as string)
    const stats = await lstatOrUndefined(current)
    const shown = segments.slice(0, i + 1).join('/')
    if (stats === undefined) return { failure: { code: 'MISSING_FILE', message: 'listed in the manifest but not in the bundle' } }
    if (stats.isSymbolicLink()) return { failure: { code: 'SYMLINK', message: `${shown} is a symbolic link; bundles may not hold links` } }
    if (i < segments.length - 1 && !stats.isDirectory()) return { failure: { code: 'MISSING_FILE', message: `${shown} is not a directory` } }
    if (i === segments.length - 1) {
      if (!stats.isFile()) return { failure: { code: 'NOT_A_FILE', message: 'not a regular file' } }
      if (stats.size > maxBytes) return { failure: { code: 'FILE_TOO_LARGE', message: `${stats.size} bytes is over the ${maxBytes}-byte limit` } }
      return { size: stats.size }
    }
  }
  return { failure: { code: 'MISSING_FILE', message: 'empty path' } }
}

/**
 * Reads a bundle file after checkBundleFile, opening it without following a final symlink and
 * checking again on the open handle (the file may have changed in between).
 */
export async function readBundleFile(root: string, relativePath: string, maxBytes: number): Promise<FileRead> {
  const check = await checkBundleFile(root, relativePath, maxBytes)
  if ('failure' in check) return check
  let handle
  try {
    handle = await open(path.join(root, ...relativePath.split('/')), constants.O_RDONLY | constants.O_NOFOLLOW)
  } catch (error) {
    const code = errorCode(error)
    if (code === 'ELOOP') return { failure: { code: 'SYMLINK', message: 'is a symbolic link; bundles may not hold links' } }
    if (code === 'ENOENT') return { failure: { code: 'MISSING_FILE', message: 'listed in the manifest but not in the bundle' } }
    return { failure: { code: 'UNREADABLE', message: `cannot be opened (${code ?? 'error'})` } }
  }
  try {
    const stats = await handle.stat()
    if (!stats.isFile()) return { failure: { code: 'NOT_A_FILE', message: 'not a regular file' } }
    if (stats.size > maxBytes) return { failure: { code: 'FILE_TOO_LARGE', message: `${stats.size} bytes is over the ${maxBytes}-byte limit` } }
    // Read one byte more than the size: a file that grew past the cap is refused, not cut.
    const buffer = Buffer.allocUnsafe(stats.size + 1)
    let length = 0
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length)
      if (bytesRead === 0) break
      length += bytesRead
    }
    if (length > maxBytes) return { failure: { code: 'FILE_TOO_LARGE', message: `over the ${maxBytes}-byte limit` } }
    return { bytes: buffer.subarray(0, length) }
  } catch (error) {
    return { failure: { code: 'UNREADABLE', message: `cannot be read (${errorCode(error) ?? 'error'})` } }
  } finally {
    await handle.close()
  }
}

/** A file or directory in a policed directory that the manifest does not account for. */
export interface UnlistedEntry {
  readonly path: string
  readonly code: 'UNLISTED_FILE' | 'SYMLINK' | 'TOO_DEEP'
  readonly message: string
}

/**
 * Everything under `items/`, `audit/`, `embeddings/` and `provenance/` that is not a listed file
 * or a directory on the way to one (§7: an injected file would otherwise be read unverified).
 */
export async function findUnlistedEntries(root: string, listed: ReadonlySet<string>): Promise<UnlistedEntry[]> {
  const found: UnlistedEntry[] = []
  const directories = new Set<string>()
  for (const listedPath of listed) {
    const segments = listedPath.split('/')
    for (let i = 1; i < segments.length; i++) directories.add(segments.slice(0, i).join('/'))
  }
  const walk = async (relative: string, depth: number): Promise<void> => {
    if (depth > MAX_DIRECTORY_DEPTH) {
      found.push({ path: relative, code: 'TOO_DEEP', message: `directories nested deeper than ${MAX_DIRECTORY_DEPTH}` })
      return
    }
    let entries: Dirent[]
    try {
      entries = await readdir(path.join(root, ...relative.split('/')), { withFileTypes: true })
    } catch {
      return
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    for (const entry of entries) {
      const child = `${relative}/${entry.name}`
      if (entry.isSymbolicLink() && !listed.has(child)) found.push({ path: child, code: 'SYMLINK', message: 'a symbolic link the manifest does not list' })
      else if (entry.isDirectory() && directories.has(child)) await walk(child, depth + 1)
      else if (!listed.has(child)) found.push({ path: child, code: 'UNLISTED_FILE', message: 'present but not listed in the manifest' })
    }
  }
  for (const directory of POLICED_DIRECTORIES) {
    const stats = await lstatOrUndefined(path.join(root, directory))
    if (stats === undefined) continue
    if (stats.isSymbolicLink()) found.push({ path: directory, code: 'SYMLINK', message: 'is a symbolic link; bundles may not hold links' })
    else if (!stats.isDirectory()) found.push({ path: directory, code: 'UNLISTED_FILE', message: 'should be a directory' })
    else await walk(directory, 1)
  }
  return found
}

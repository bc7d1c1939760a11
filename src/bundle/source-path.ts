/**
 * What is at a path given to read (a bundle, an artifact, another system's export), checked
 * before anything is read: one wording for every reader, so a path that cannot be a source says
 * why (missing, a symbolic link that loops, unreadable, a device or pipe) instead of "no such
 * file".
 */
import type { Stats } from 'node:fs'
import { stat } from 'node:fs/promises'
import { InputError } from '../errors.js'

/**
 * The file or directory at `path`, symbolic links followed.
 * @param shown how the error names the path (default: `path`)
 * @throws InputError NOT_FOUND, SYMLINK_LOOP, UNREADABLE, NOT_A_FILE (neither a regular file
 *   nor a directory: a device, a pipe, a socket)
 */
export async function statSourcePath(path: string, shown = path): Promise<Stats> {
  let info: Stats
  try {
    info = await stat(path)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ELOOP') throw new InputError('SYMLINK_LOOP', 'the symbolic link loops (or nests too deep) and reaches no file or directory', { file: shown })
    if (code === 'EACCES' || code === 'EPERM') throw new InputError('UNREADABLE', 'permission denied', { file: shown })
    throw new InputError('NOT_FOUND', 'no such file or directory', { file: shown })
  }
  if (!info.isFile() && !info.isDirectory()) throw new InputError('NOT_A_FILE', 'not a regular file or directory (a device, pipe or socket)', { file: shown })
  return info
}

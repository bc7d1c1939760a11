/**
 * How CLI commands find and hold a Cairn home: `--dir` (default `./.cairn`) resolved against
 * the working directory, opened through the library's `openHome`.
 *
 * Invariant: a command that opens the home always closes its store, on success or failure,
 * so the LevelDB lock is released before the process reports its exit code.
 */
import path from 'node:path'
import { openHome, type Home } from '../index.js'
import type { FlagDefinition } from './args.js'

export const DEFAULT_HOME_DIR = '.cairn'

/** The `--dir` flag every command that touches a home shares. */
export const DIR_FLAG = {
  type: 'string',
  short: 'd',
  valueName: 'D',
  description: `the Cairn home directory (default ./${DEFAULT_HOME_DIR})`,
} as const satisfies FlagDefinition

export function resolveHomeDir(cwd: string, dir: string | undefined): string {
  return path.resolve(cwd, dir ?? DEFAULT_HOME_DIR)
}

/**
 * Opens the home in `dir`, runs `work`, and closes the store whatever happens.
 * @throws InputError NOT_INITIALIZED, BAD_CONFIG; StorageError STORE_LOCKED, STORE_UNAVAILABLE,
 *   STORE_MISSING, CORRUPT_STORE; AuthError KEY_FILE_PERMISSIONS (all from `openHome`)
 */
export async function withHome<T>(dir: string, work: (home: Home) => Promise<T>): Promise<T> {
  const home = await openHome(dir)
  try {
    return await work(home)
  } finally {
    await home.store.close()
  }
}

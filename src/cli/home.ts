/**
 * How CLI commands find and hold a Cairn home: `--dir` (default `./.cairn`) resolved against
 * the working directory, opened through the library's `openHome` (log commands) or
 * `Memory.open` (memory commands).
 *
 * Invariant: a command that opens the home always closes its store, on success or failure,
 * so the LevelDB lock is released before the process reports its exit code. Only a command
 * that asks for it (`remember`) creates a home where there is none; the others refuse with
 * NOT_INITIALIZED, as `openHome` does, rather than leave an empty home behind a typo.
 */
import { existsSync } from 'node:fs'
import path from 'node:path'
import { homePaths, InputError, Memory, openHome, type Home } from '../index.js'
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

/** True when `dir` holds a Cairn home (its config file), whatever state its store is in. */
export function isHome(dir: string): boolean {
  return existsSync(homePaths(dir).configFile)
}

/**
 * Opens the memory in the home `dir`, runs `work`, and closes it whatever happens. With
 * `create`, a missing home is created (a new identity and space) and `work` is told so.
 * @throws InputError NOT_INITIALIZED (without `create`), BAD_CONFIG; StorageError STORE_LOCKED,
 *   STORE_UNAVAILABLE, STORE_MISSING, CORRUPT_STORE; AuthError KEY_FILE_PERMISSIONS
 */
export async function withMemory<T>(dir: string, options: { create: boolean }, work: (memory: Memory, isNew: boolean) => Promise<T>): Promise<T> {
  const isNew = !isHome(dir)
  // The same error `openHome` gives, checked before Memory.open would create a home here.
  if (isNew && !options.create) throw new InputError('NOT_INITIALIZED', 'no Cairn home here (run `cairn init` first)', { file: dir })
  const memory = await Memory.open({ path: dir })
  try {
    return await work(memory, isNew)
  } finally {
    await memory.close()
  }
}

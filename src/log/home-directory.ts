/**
 * A Cairn home directory: everything one replica needs on disk, in one folder.
 *
 *   <dir>/identity.json   this replica's key (mode 0600)
 *   <dir>/config.json     { type: "cairn-home", version: 1, space, author, role }
 *   <dir>/store/          the LevelDB log store
 *
 * The CLI's `--dir` and the library's `open({ path })` both mean this folder. Initialization
 * writes the key and store first and the config last, so a crash mid-init leaves a folder that
 * `openHome` reports as not initialized rather than a half-made replica.
 */
import { promises as fs } from 'node:fs'
import path from 'node:path'
import { assertObject, assertOneOf } from '../assert.js'
import { CairnError, InputError, StorageError } from '../errors.js'
import type { Clock } from './clock.js'
import type { CryptoProvider } from './crypto/index.js'
import { Identity } from './identity.js'
import { readIdentityFile, writeIdentityFile } from './identity-file.js'
import { assertAuthorKey, assertSpaceId, type AuthorKey, type SpaceId } from './ids.js'
import { checkLogStoreOptions, LogStore } from './log-store.js'
import type { SpaceLog } from './space-log.js'

const CONFIG_TYPE = 'cairn-home'
const CONFIG_VERSION = 1

export interface HomeConfig {
  readonly space: SpaceId
  readonly author: AuthorKey
  /** `owner` created the space here; `replica` joined it and may not have its genesis yet. */
  readonly role: 'owner' | 'replica'
}

export interface Home {
  readonly dir: string
  readonly identity: Identity
  readonly store: LogStore
  readonly log: SpaceLog
  readonly config: HomeConfig
}

export interface HomeOptions {
  readonly crypto?: CryptoProvider
  readonly clock?: Clock
  readonly sync?: boolean
  /** LogStoreOptions.journalRotateBytes. */
  readonly journalRotateBytes?: number
  /** LogStoreOptions.writeBufferBytes. */
  readonly writeBufferBytes?: number
}

export function homePaths(dir: string): { identityFile: string; configFile: string; storeDir: string } {
  return {
    identityFile: path.join(dir, 'identity.json'),
    configFile: path.join(dir, 'config.json'),
    storeDir: path.join(dir, 'store'),
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await fs.access(file)
    return true
  } catch {
    return false
  }
}

/** Only the options LogStore.open takes. */
function storeOptions(options: HomeOptions): HomeOptions {
  return {
    ...(options.crypto ? { crypto: options.crypto } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.sync !== undefined ? { sync: options.sync } : {}),
    ...(options.journalRotateBytes !== undefined ? { journalRotateBytes: options.journalRotateBytes } : {}),
    ...(options.writeBufferBytes !== undefined ? { writeBufferBytes: options.writeBufferBytes } : {}),
  }
}

async function writeConfig(file: string, config: HomeConfig): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`
  await fs.writeFile(temporary, `${JSON.stringify({ type: CONFIG_TYPE, version: CONFIG_VERSION, ...config }, null, 2)}\n`)
  await fs.rename(temporary, file)
}

/**
 * Creates a home: a new identity and either a new space it owns, or (with `space`) an empty
 * replica of an existing space that learns the genesis from its first sync.
 * A directory left with identity.json (and maybe a store) but no config.json, as a creation
 * that stopped part way leaves it, is completed with that key and the space its store holds.
 * A directory holding anything else is refused: a home is a folder of its own.
 * @throws InputError ALREADY_INITIALIZED, NOT_A_DIRECTORY, IDENTITY_MISMATCH (another key is
 *   there), INCOMPLETE_HOME (a store without its key, or of other spaces than the one asked),
 *   NOT_EMPTY (other files, and no home begun)
 */
export async function initHome(dir: string, options: HomeOptions & { name?: string; space?: string; identity?: Identity } = {}): Promise<Home> {
  const paths = homePaths(dir)
  if (await exists(paths.configFile)) {
    throw new InputError('ALREADY_INITIALIZED', 'a Cairn home already exists here', { file: dir })
  }
  const space = options.space === undefined ? undefined : assertSpaceId(options.space, 'space')
  // Before anything is written: a refused option must not leave a key behind.
  checkLogStoreOptions(storeOptions(options))
  await ensureDirectory(dir)
  // A home whose creation stopped part way (config.json is written last), or that lost its
  // config.json, keeps its key and its space: a key is never replaced.
  const kept = await exists(paths.identityFile) ? await readIdentityFile(paths.identityFile, options.crypto) : undefined
  if (kept && options.identity && options.identity.author !== kept.author) {
    throw new InputError('IDENTITY_MISMATCH', 'this directory already holds another key (identity.json) and no config.json; give no identity to complete that home', { file: paths.identityFile })
  }
  if (!kept && await exists(paths.storeDir)) {
    throw new InputError('INCOMPLETE_HOME', 'this directory holds a store but neither identity.json nor config.json: the key it was written with is gone; move the directory away to start a new home', { file: dir })
  }
  if (!kept) {
    // Nothing of a home here: only an empty directory becomes one (not a project folder given by
    // mistake). What a home's own interrupted writes leave, and a desktop's folder file, do not count.
    const others = (await fs.readdir(dir)).filter((name) => !/^(config|identity)\.json\.\d+\.tmp$/.test(name) && name !== '.DS_Store')
    if (others.length > 0) {
      throw new InputError('NOT_EMPTY', `this directory holds other files (${others.slice(0, 3).join(', ')}${others.length > 3 ? ', …' : ''}) and no Cairn home; give a new or empty directory`, { file: dir })
    }
  }
  const identity = kept ?? options.identity ?? Identity.generate(options.crypto)
  if (!kept) await writeIdentityFile(paths.identityFile, identity)
  const store = await LogStore.open({ path: paths.storeDir, ...storeOptions(options) })
  try {
    const log = await homeSpace(store, identity, space, options.name, dir)
    // A space this key created has its genesis: any other is a replica (maybe still empty).
    const config: HomeConfig = { space: log.space, author: identity.author, role: log.owner === identity.author ? 'owner' : 'replica' }
    await writeConfig(paths.configFile, config)
    return { dir, identity, store, log, config }
  } catch (error) {
    await store.close()
    throw error
  }
}

/** Creates a directory (and its parents) if missing. @throws InputError NOT_A_DIRECTORY when the path, or a folder above it, is a file */
export async function ensureDirectory(dir: string): Promise<void> {
  try {
    await fs.mkdir(dir, { recursive: true })
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'EEXIST' || code === 'ENOTDIR') throw new InputError('NOT_A_DIRECTORY', 'the path, or a folder above it, is a file', { file: dir })
    throw error
  }
}

/**
 * The space of a new home: the one its store already holds (a creation that stopped part way;
 * it must be the one asked for, if any), else a new space, or an empty replica of `space`.
 * @throws InputError INCOMPLETE_HOME when the store holds other spaces
 */
async function homeSpace(store: LogStore, identity: Identity, space: string | undefined, name: string | undefined, dir: string): Promise<SpaceLog> {
  const held = await store.listSpaces()
  if (held.length === 0) {
    return space === undefined ? store.createSpace(identity, name === undefined ? {} : { name }) : store.openSpace(space)
  }
  const found = space === undefined ? (held.length === 1 ? held[0] : undefined) : held.find((id) => id === space)
  if (found === undefined) {
    const asked = space === undefined ? '' : `, not ${space}`
    throw new InputError('INCOMPLETE_HOME', `this directory holds a store of ${held.length === 1 ? `space ${held[0]}` : `${held.length} spaces`}${asked}, but no config.json; give that space to complete the home`, { file: dir })
  }
  return store.openSpace(found)
}

/**
 * Opens an initialized home.
 * @throws InputError NOT_INITIALIZED, BAD_CONFIG; StorageError STORE_LOCKED, STORE_UNAVAILABLE;
 *   AuthError KEY_FILE_PERMISSIONS, KEY_MISMATCH
 */
export async function openHome(dir: string, options: HomeOptions = {}): Promise<Home> {
  const paths = homePaths(dir)
  let text: string
  try {
    text = await fs.readFile(paths.configFile, 'utf8')
  } catch {
    throw new InputError('NOT_INITIALIZED', 'no Cairn home here (run `cairn init` first)', { file: dir })
  }
  let config: HomeConfig
  try {
    const raw = assertObject(JSON.parse(text), 'config')
    if (raw.type !== CONFIG_TYPE || raw.version !== CONFIG_VERSION) throw new Error(`expected type "${CONFIG_TYPE}" version ${CONFIG_VERSION}`)
    config = {
      space: assertSpaceId(raw.space, 'space'),
      author: assertAuthorKey(raw.author, 'author'),
      role: assertOneOf(raw.role, ['owner', 'replica'] as const, 'role'),
    }
  } catch (error) {
    throw new InputError('BAD_CONFIG', `config does not decode: ${(error as Error).message}`, { file: paths.configFile })
  }
  const identity = await readIdentityFile(paths.identityFile, options.crypto)
  if (identity.author !== config.author) {
    throw new InputError('BAD_CONFIG', 'the key file and the config name different authors', { file: paths.configFile })
  }
  const storeStat = await fs.stat(paths.storeDir).catch(() => undefined)
  if (!storeStat) throw new StorageError('STORE_MISSING', 'the store directory is missing', { file: paths.storeDir })
  if (!storeStat.isDirectory()) throw new StorageError('CORRUPT_STORE', 'the store path is not a directory', { file: paths.storeDir })
  // Never create here: a store that lost its files must not reopen as a new, empty one.
  const store = await LogStore.open({ path: paths.storeDir, ...storeOptions(options), createIfMissing: false })
  try {
    const log = await store.openSpace(config.space)
    if (config.role === 'owner' && !log.hasGenesis) {
      throw new StorageError('CORRUPT_STORE', 'the store has lost the space it was created with', { file: paths.storeDir })
    }
    return { dir, identity, store, log, config }
  } catch (error) {
    await store.close()
    if (error instanceof CairnError) throw error
    throw new StorageError('CORRUPT_STORE', `the store cannot be read: ${(error as Error).message}`, { file: paths.storeDir }, { cause: error })
  }
}

/**
 * Opens what a Memory runs on: the log store, this replica's space log and identity. With a
 * path, a Cairn home directory (see src/log/home-directory.ts), created on first open; without,
 * everything in memory.
 */
import { existsSync } from 'node:fs'
import { assertNonEmptyString, assertOptions, assertString } from '../assert.js'
import { InputError } from '../errors.js'
import {
  assertIdentity, assertSpaceId, homePaths, Identity, initHome, LogStore, openHome,
  type Clock, type CryptoProvider, type SpaceLog,
} from '../log/index.js'

export interface MemoryOptions {
  /** A Cairn home directory; without one the memory lives in memory. */
  readonly path?: string
  /** Join an existing space as a new replica (it learns the genesis from its first ingest). */
  readonly space?: string
  /** Name of a new space. */
  readonly name?: string
  /** This replica's key; generated when absent (and kept in the home directory). */
  readonly identity?: Identity
  readonly clock?: Clock
  readonly crypto?: CryptoProvider
  /** fsync every write (survives power loss, not only crashes). */
  readonly sync?: boolean
  /** With `path`: LevelDB's write buffer in bytes (LogStoreOptions.writeBufferBytes, default 16 MiB). */
  readonly writeBufferBytes?: number
}

export interface Engine {
  readonly store: LogStore
  readonly log: SpaceLog
  readonly identity: Identity
  /** The store serves other spaces too and outlives this memory. */
  readonly sharedStore?: boolean
}

export async function openEngine(options: MemoryOptions): Promise<Engine> {
  const raw = assertOptions(options, ['path', 'space', 'name', 'identity', 'clock', 'crypto', 'sync', 'writeBufferBytes'], 'options')
  const path = raw.path === undefined ? undefined : assertNonEmptyString(raw.path, 'options.path')
  const space = raw.space === undefined ? undefined : assertSpaceId(raw.space, 'options.space')
  const name = raw.name === undefined ? undefined : assertString(raw.name, 'options.name')
  const identity = raw.identity === undefined ? undefined : assertIdentity(raw.identity, 'options.identity')
  const base = {
    ...(options.crypto ? { crypto: options.crypto } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.sync !== undefined ? { sync: options.sync } : {}),
    ...(options.writeBufferBytes !== undefined ? { writeBufferBytes: options.writeBufferBytes } : {}),
  }
  if (path !== undefined) {
    if (existsSync(homePaths(path).configFile)) {
      const home = await openHome(path, base)
      if (space !== undefined && space !== home.log.space) {
        await home.store.close()
        throw new InputError('SPACE_MISMATCH', `this home holds space ${home.log.space}, not ${space}`, { field: 'options.space' })
      }
      if (identity !== undefined && identity.author !== home.identity.author) {
        await home.store.close()
        throw new InputError('IDENTITY_MISMATCH', 'this home belongs to another identity', { field: 'options.identity' })
      }
      return { store: home.store, log: home.log, identity: home.identity }
    }
    const home = await initHome(path, { ...base, ...(space ? { space } : {}), ...(name !== undefined ? { name } : {}), ...(identity ? { identity } : {}) })
    return { store: home.store, log: home.log, identity: home.identity }
  }
  const store = await LogStore.open(base)
  const self = identity ?? Identity.generate(options.crypto)
  const log = space !== undefined ? await store.openSpace(space) : await store.createSpace(self, name !== undefined ? { name } : {})
  return { store, log, identity: self }
}

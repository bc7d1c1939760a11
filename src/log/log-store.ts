/**
 * A log store: one LevelDB (or in-memory) database holding any number of spaces. It creates
 * spaces (writing their genesis), opens existing ones, and opens empty replicas of spaces that
 * live elsewhere, which learn their genesis from the first ingest.
 */
import { assertBoolean, assertInteger, assertNonEmptyString, assertOptions, assertString } from '../assert.js'
import { InputError } from '../errors.js'
import { ApplyBatch } from './apply-batch.js'
import { GENESIS_OP } from './authorization.js'
import { SystemClock, type Clock } from './clock.js'
import { defaultCrypto, type CryptoProvider } from './crypto/index.js'
import { buildEvent } from './event-builder.js'
import { nextHlc } from './hlc.js'
import { assertIdentity, type Identity } from './identity.js'
import { assertSpaceId, type SpaceId } from './ids.js'
import { JournaledStorage } from './journaled-storage.js'
import { LevelLogStorage, WRITE_BUFFER_BYTES_RANGE } from './level-storage.js'
import { eventSignable } from './signable.js'
import { SpaceLog } from './space-log.js'
import { SpaceState } from './space-state.js'
import type { LogStorage } from './storage.js'
import { keys } from './store-keys.js'

export interface LogStoreOptions {
  /** A directory for a LevelDB store; without one the store lives in memory. */
  readonly path?: string
  /** Use this storage instead of opening one (tests, other backends). */
  readonly storage?: LogStorage
  readonly crypto?: CryptoProvider
  readonly clock?: Clock
  /** fsync every write: survive power loss, not only process crashes. Slower. */
  readonly sync?: boolean
  /** With `path`: create the store when the directory holds none (default true). */
  readonly createIfMissing?: boolean
  /**
   * With `path`: bytes after which the write journal goes on in a new file (default 64 MiB,
   * write-journal.ts). A tuning knob; tests use a small one to exercise rotation.
   */
  readonly journalRotateBytes?: number
  /**
   * With `path`: bytes LevelDB buffers in memory before writing a sorted file (default 16 MiB,
   * DEFAULT_WRITE_BUFFER_BYTES; from 64 KiB to 1 GiB). Larger is faster for bulk writes and
   * holds up to twice as much memory; smaller suits a device short of memory.
   */
  readonly writeBufferBytes?: number
}

/** LevelDB behind a write journal: appends are durable when the journal write returns. */
async function openDiskStorage(path: string, options: LogStoreOptions): Promise<LogStorage> {
  const sync = options.sync ?? false
  const inner = await LevelLogStorage.openDisk(path, { sync, createIfMissing: options.createIfMissing ?? true, ...(options.writeBufferBytes !== undefined ? { writeBufferBytes: options.writeBufferBytes } : {}) })
  return JournaledStorage.open(inner, path, { sync, ...(options.journalRotateBytes !== undefined ? { rotateBytes: options.journalRotateBytes } : {}) })
}

/**
 * Checks LogStore.open's options without opening anything (a home checks them before it writes
 * its key). Returns the path, if any.
 * @throws InputError naming `options.<name>`
 */
export function checkLogStoreOptions(options: LogStoreOptions): string | undefined {
  const raw = assertOptions(options, ['path', 'storage', 'crypto', 'clock', 'sync', 'createIfMissing', 'journalRotateBytes', 'writeBufferBytes'], 'options')
  const path = raw.path === undefined ? undefined : assertNonEmptyString(raw.path, 'options.path')
  if (raw.sync !== undefined) assertBoolean(raw.sync, 'options.sync')
  if (raw.createIfMissing !== undefined) assertBoolean(raw.createIfMissing, 'options.createIfMissing')
  if (raw.journalRotateBytes !== undefined) assertInteger(raw.journalRotateBytes, 'options.journalRotateBytes', 1)
  if (raw.writeBufferBytes !== undefined) assertInteger(raw.writeBufferBytes, 'options.writeBufferBytes', ...WRITE_BUFFER_BYTES_RANGE)
  return path
}

export class LogStore {
  private readonly spaces = new Map<SpaceId, Promise<SpaceLog>>()

  private constructor(readonly storage: LogStorage, readonly crypto: CryptoProvider, readonly clock: Clock) {}

  /**
   * @throws StorageError STORE_LOCKED, STORE_UNAVAILABLE
   */
  static async open(options: LogStoreOptions = {}): Promise<LogStore> {
    const path = checkLogStoreOptions(options)
    const storage = options.storage ??
      (path !== undefined ? await openDiskStorage(path, options) : await LevelLogStorage.openMemory())
    const store = new LogStore(storage, options.crypto ?? defaultCrypto(), options.clock ?? new SystemClock())
    try {
      await store.resumeOwedCompactions()
    } catch (error) {
      if (!options.storage) await storage.close()
      throw error
    }
    return store
  }

  /**
   * Opens the spaces whose erasures still owe a compaction (a crash came first, or it failed),
   * which compacts them in the background: a space nobody opens (a relay's) is not left holding
   * erased bytes in its files.
   */
  private async resumeOwedCompactions(): Promise<void> {
    const spaces = await this.listSpaces()
    const owed = await this.storage.getMany(spaces.map((space) => keys.compactionOwed(space)))
    for (const [i, space] of spaces.entries()) if (owed[i] !== undefined) await this.openSpace(space)
  }

  /** Starts a new space owned by `identity`; its id is the id of the genesis event. */
  async createSpace(identity: Identity, options: { name?: string } = {}): Promise<SpaceLog> {
    assertIdentity(identity)
    const raw = assertOptions(options, ['name'], 'options')
    const name = raw.name === undefined ? undefined : assertString(raw.name, 'options.name')
    const now = this.clock.nowMs()
    const genesis = buildEvent({
      author: identity.author, seq: 1, deps: [], clock: nextHlc(now, []), kind: 'control',
      op: GENESIS_OP, data: name === undefined ? {} : { name },
    }, this.crypto)
    const space = genesis.id as string as SpaceId
    const state = await SpaceState.load(this.storage, space)
    const batch = new ApplyBatch(state, now)
    const staged = await batch.apply(genesis)
    staged.signature = identity.sign(eventSignable(genesis.id))
    await this.storage.write(batch.writes())
    batch.commit()
    const log = new SpaceLog(this.storage, state, this.crypto, this.clock)
    this.spaces.set(space, Promise.resolve(log))
    return log
  }

  /**
   * Opens a space. If this store has never seen it, the log starts empty and waits for the
   * genesis to arrive through `ingest`.
   */
  async openSpace(space: string): Promise<SpaceLog> {
    const id = assertSpaceId(space, 'space')
    let log = this.spaces.get(id)
    if (!log) {
      log = SpaceState.load(this.storage, id).then(async (state) => {
        const opened = new SpaceLog(this.storage, state, this.crypto, this.clock)
        await opened.resumeErasureCompaction()
        opened.startPriorityBackfill()
        return opened
      })
      log.catch(() => this.spaces.delete(id))
      this.spaces.set(id, log)
    }
    return log
  }

  /** Like openSpace, but refuses a space this store holds nothing of. */
  async existingSpace(space: string): Promise<SpaceLog> {
    const log = await this.openSpace(space)
    if (!log.hasGenesis) throw new InputError('UNKNOWN_SPACE', 'this store holds no such space', { space })
    return log
  }

  /** Whether this store holds the space's genesis, without opening a space it does not hold. */
  async hasSpace(space: string): Promise<boolean> {
    const id = assertSpaceId(space, 'space')
    const open = this.spaces.get(id)
    if (open) return (await open).hasGenesis
    return (await this.storage.get(keys.spaceEntry(id))) !== undefined
  }

  /** The spaces whose genesis this store holds. */
  async listSpaces(): Promise<SpaceId[]> {
    const prefix = keys.spaceEntryPrefix()
    const out: SpaceId[] = []
    for await (const key of this.storage.keys({ gte: prefix, lt: keys.end(prefix) })) out.push(key.slice(prefix.length) as SpaceId)
    return out
  }

  async close(): Promise<void> {
    // Erased bodies leave the files before the store closes. A compaction that failed stays owed
    // (its marker is stored): the next open compacts the space, so closing goes on.
    for (const log of this.spaces.values()) {
      const opened = await log.catch(() => undefined)
      await opened?.stopPriorityBackfill()
      await opened?.erasuresCompacted().catch(() => undefined)
    }
    await this.storage.close()
  }
}

/**
 * Checks a replica's projection (records, indexes, history, search index) against what its log
 * gives, without writing to the replica: the space's log is copied into a scratch store (a
 * temporary LevelDB beside a store on disk, memory for one in memory), a projection is derived
 * there from the first event (as `rebuild` would), and the two projections are compared key by
 * key. `verify` trusts no stored event; this trusts no stored record or index entry.
 *
 * Why a copy: deriving a projection erases bodies and places late ones through the log, and a
 * check must leave the store as it found it. The copy also starts from the kept deletions (q:z),
 * and keeps what erased bodies taught their records (q:p), which the log alone cannot show,
 * exactly as a rebuild does.
 *
 * The replica must be quiet while it runs: the check waits for the writes under way, runs as a
 * write itself (close waits for it), and refuses (BUSY) when another write began meanwhile or
 * the log or projection moved.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import path from 'node:path'
import { StorageError } from '../errors.js'
import { LevelLogStorage, LogStore, type LogStorage, type StorageWrite } from '../log/index.js'
import { keys as logKeys } from '../log/store-keys.js'
import type { ProgressCallback } from '../bundle/mem/types.js'
import { Projection, ProjectionReader, projectionKeys, type ProjectionFeatures } from '../projection/index.js'
import { unescapeKeyPart } from '../projection/projection-keys.js'
import type { MemoryCore } from './memory-core.js'

/** How many differing keys a report names (all are counted). */
const MAX_NAMED_DIFFERENCES = 20
const COPY_BATCH = 10_000
/**
 * A scratch directory beside the store it checks: this, the store directory's name, '-' and
 * mkdtemp's six characters (so a check never takes another store's scratch for a stale one).
 */
const SCRATCH_PREFIX = '.cairn-check-'

/** How often `onProgress` hears how far the derivation has got. */
const PROGRESS_POLL_MS = 250

export interface ProjectionCheckOptions {
  /** Told how many of the log's events the derived projection has applied, while it derives. */
  readonly onProgress?: ProgressCallback
}

/** One key where the stored projection and the derived one disagree. */
export interface ProjectionDifference {
  /** The storage key, without the space's projection prefix (`v:ep_1`, `x:p:tea:…`). */
  readonly key: string
  /** `missing`: derived, not stored; `unexpected`: stored, not derived; `changed`: both, other bytes. */
  readonly change: 'missing' | 'unexpected' | 'changed'
  /** The record the key belongs to, when its table names one. */
  readonly record?: string
}

export interface ProjectionCheck {
  readonly ok: boolean
  /** Log events the derived projection applied. */
  readonly events: number
  /** Keys compared (stored and derived, each counted once). */
  readonly keys: number
  /** How many keys differ. */
  readonly differences: number
  /** The first differing keys, in key order (at most MAX_NAMED_DIFFERENCES). */
  readonly named: readonly ProjectionDifference[]
  /** `digest()` of the stored projection and of the derived one. */
  readonly digest: { readonly stored: string; readonly derived: string }
}

/** Tables whose keys name a record right after the table letter (`<table>:<id>…`). */
const RECORD_TABLES = new Set(['s', 'v', 'h', 'V', 'd', 'f', 'u', 'z', 'p'])
/** Tables whose keys end with the record id (`<table>:<value>:<id>`). */
const INDEX_TABLES = new Set(['k', 'c', 't', 'n', 'w', 'r'])

function recordOf(key: string): string | undefined {
  const parts = key.split(':')
  const table = parts[0] as string
  const part = RECORD_TABLES.has(table) && parts.length >= 2 ? parts[1] : INDEX_TABLES.has(table) && parts.length === 3 ? parts[2] : undefined
  if (part === undefined) return undefined
  try {
    return unescapeKeyPart(part)
  } catch {
    return undefined // a damaged key: named as it is
  }
}

/** Key order of the storages: by UTF-8 bytes (string comparison differs past U+FFFF). */
function compareKeys(a: string, b: string): number {
  return a === b ? 0 : Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'))
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0
}

/** Scratch directories of checks running in this process (a stale one is any other). */
const activeScratch = new Set<string>()

/**
 * Where a store on disk is derived: a directory beside it, on the same disk (the OS temp
 * directory may be a small RAM disk), after removing any that a check killed part way left.
 */
async function scratchDirectoryFor(storeDir: string): Promise<string> {
  const parent = path.dirname(storeDir)
  const prefix = `${SCRATCH_PREFIX}${path.basename(storeDir)}-`
  for (const name of await readdir(parent).catch(() => [] as string[])) {
    const dir = path.join(parent, name)
    const isScratch = name.startsWith(prefix) && /^[A-Za-z0-9]{6}$/.test(name.slice(prefix.length))
    if (isScratch && !activeScratch.has(dir)) await removeScratch(dir)
  }
  const dir = await mkdtemp(path.join(parent, prefix))
  activeScratch.add(dir)
  return dir
}

/** Best effort: a scratch directory left behind is removed by the next check. */
async function removeScratch(dir: string): Promise<void> {
  activeScratch.delete(dir)
  await rm(dir, { recursive: true, force: true, maxRetries: 3 }).catch(() => undefined)
}

/**
 * Checks `core`'s projection (see the top of this file). Run it as a write that needs the
 * replica quiet (MemoryCore.whileQuiet); `othersStarted` says whether another write began.
 * @throws StorageError BUSY when the replica wrote or ingested while the check ran
 */
export async function checkProjection(core: MemoryCore, options: ProjectionCheckOptions, othersStarted: () => boolean): Promise<ProjectionCheck> {
  const { engine, projection } = core
  const { log } = engine
  const source = engine.store.storage
  await core.settled()
  const before = { events: log.appliedCount, cursor: projection.cursor }
  const busy = (): StorageError => new StorageError('BUSY', 'the replica wrote or ingested while its projection was checked; check it again while it is quiet', { file: source.location })
  if (before.cursor !== before.events) throw busy()

  // A store on disk is derived on disk (a temporary LevelDB, removed after): in memory, a large
  // space's projection would take gigabytes and be slower to write.
  const scratchDir = source.location === 'memory' ? undefined : await scratchDirectoryFor(source.location)
  let scratch: LogStore | undefined
  try {
    const scratchStorage = scratchDir === undefined ? await LevelLogStorage.openMemory() : await LevelLogStorage.openDisk(scratchDir)
    scratch = await LogStore.open({ storage: scratchStorage, crypto: engine.store.crypto, clock: engine.store.clock })
    const derived = await derive(source, scratch, log.space, projection.features, () => before.events, options.onProgress)
    const compared = await compareRanges(source, scratch.storage, projectionKeys(log.space).root, projectionKeys(log.space).meta)
    const reader = new ProjectionReader(scratch.storage, derived.keys, derived.textIndex, () => derived.cursor)
    const digest = { stored: await core.reader.digest(), derived: await reader.digest() }
    await core.settled()
    if (othersStarted() || log.appliedCount !== before.events || projection.cursor !== before.cursor) throw busy()
    return { ok: compared.differences === 0 && digest.stored === digest.derived, events: derived.cursor, ...compared, digest }
  } catch (error) {
    // A copy taken while a write landed can be torn (a chain tip naming an event it missed).
    throw othersStarted() ? busy() : error
  } finally {
    await scratch?.close().catch(() => undefined)
    if (scratchDir !== undefined) await removeScratch(scratchDir)
  }
}

/**
 * Copies everything of `space` but its projection into `scratch`, with the deletions kept
 * through rebuilds (q:z, also as the states they start, as Projection.rebuild does), and
 * derives a projection there from the first event.
 */
async function derive(source: LogStorage, scratch: LogStore, space: string, features: ProjectionFeatures, total: () => number, onProgress: ProgressCallback | undefined): Promise<Projection> {
  const { root, derivedDeletionPrefix: kept, statePrefix } = projectionKeys(space)
  let writes: StorageWrite[] = []
  const copy = async (range: { gte: string; lt: string }): Promise<void> => {
    for await (const batch of source.entryBatches(range)) {
      for (const [key, value] of batch) {
        writes.push({ type: 'put', key, value })
        if (key.startsWith(kept)) writes.push({ type: 'put', key: `${statePrefix}${key.slice(kept.length)}`, value })
      }
      if (writes.length >= COPY_BATCH) {
        await scratch.storage.write(writes)
        writes = []
      }
    }
  }
  await copy({ gte: `${space}:`, lt: root })
  await copy({ gte: logKeys.end(root), lt: logKeys.end(`${space}:`) })
  await copy({ gte: kept, lt: logKeys.end(kept) })
  // What bodies erased because of a redaction taught their records (q:p), kept as a rebuild keeps it.
  const taught = projectionKeys(space).allTaughtParentsPrefix
  await copy({ gte: taught, lt: logKeys.end(taught) })
  writes.push({ type: 'put', key: logKeys.spaceEntry(space), value: new Uint8Array(0) })
  await scratch.storage.write(writes)

  // Opened on demand, so that it applies nothing until asked: its progress can be watched.
  const derived = await Projection.open(scratch.storage, await scratch.openSpace(space), { ...features, onDemand: true })
  // A callback that throws stops the reports; its error is the check's, once the derivation stops.
  let failure: { error: unknown } | undefined
  const report = (): void => {
    if (failure) return
    try {
      onProgress?.(derived.cursor, total())
    } catch (error) {
      failure = { error }
    }
  }
  const timer = onProgress ? setInterval(report, PROGRESS_POLL_MS) : undefined
  try {
    await derived.recover()
    await derived.catchUp()
  } finally {
    clearInterval(timer)
  }
  report()
  if (failure) throw failure.error
  return derived
}

type Entry = readonly [string, Uint8Array]

/** Entries of a range one at a time, read in batches (`entryBatches`), skipping one key. */
class EntryCursor {
  private batch: readonly Entry[] = []
  private index = 0
  private readonly batches: AsyncIterator<readonly Entry[]>

  constructor(storage: LogStorage, range: { gte: string; lt: string }, private readonly skip: string) {
    this.batches = storage.entryBatches(range)[Symbol.asyncIterator]()
  }

  async next(): Promise<Entry | undefined> {
    for (;;) {
      while (this.index < this.batch.length) {
        const entry = this.batch[this.index++] as Entry
        if (entry[0] !== this.skip) return entry
      }
      const step = await this.batches.next()
      if (step.done) return undefined
      this.batch = step.value
      this.index = 0
    }
  }

  /** Ends the scan early (an error elsewhere): an open iterator would hold its snapshot. */
  async close(): Promise<void> {
    await this.batches.return?.()
  }
}

/** Walks both storages' keys under `root` in order (skipping `skip`) and counts what differs. */
async function compareRanges(stored: LogStorage, derived: LogStorage, root: string, skip: string): Promise<Pick<ProjectionCheck, 'keys' | 'differences' | 'named'>> {
  const range = { gte: root, lt: logKeys.end(root) }
  const left = new EntryCursor(stored, range, skip)
  const right = new EntryCursor(derived, range, skip)
  const named: ProjectionDifference[] = []
  let keys = 0
  let differences = 0
  const note = (key: string, change: ProjectionDifference['change']): void => {
    differences++
    if (named.length >= MAX_NAMED_DIFFERENCES) return
    const short = key.slice(root.length)
    const record = recordOf(short)
    named.push({ key: short, change, ...(record !== undefined ? { record } : {}) })
  }
  try {
    let a = await left.next()
    let b = await right.next()
    while (a !== undefined || b !== undefined) {
      keys++
      const order = a === undefined ? 1 : b === undefined ? -1 : compareKeys(a[0], b[0])
      if (order < 0) {
        note((a as Entry)[0], 'unexpected')
        a = await left.next()
      } else if (order > 0) {
        note((b as Entry)[0], 'missing')
        b = await right.next()
      } else {
        if (!sameBytes((a as Entry)[1], (b as Entry)[1])) note((a as Entry)[0], 'changed')
        a = await left.next()
        b = await right.next()
      }
    }
    return { keys, differences, named }
  } finally {
    await Promise.allSettled([left.close(), right.close()])
  }
}

/**
 * Native log snapshots: a space's signed events, exactly, so a copy can be verified offline and
 * imported with its authors, signatures and provenance intact.
 *
 *   <dir>/manifest.json   canonical JSON { format: "cairn-log", version: 1, space, generator,
 *                         createdAt, events, vector, files: [{ path, bytes, sha256 }] }
 *   <dir>/events.jsonl    one event per line, in the source's apply order (a causal order):
 *                         canonical JSON { header: {…}, body?: {…}, signature?: "<hex>" }
 *   <dir>/CHECKSUMS       "<sha256>  <path>\n" per file
 *
 * Headers and bodies are canonical JSON, so the objects in a line re-serialize to the exact
 * bytes that were hashed and signed. Erased bodies are left out: the importer holds those events
 * header-only, and the tombstone that erased them travels too, so the content stays purged. Every stored
 * signature is kept, so the file can be split at any signed event.
 */
import { createHash, randomBytes } from 'node:crypto'
import { promises as fs } from 'node:fs'
import path from 'node:path'
import { InputError, LimitError, StorageError, VerifyError } from '../errors.js'
import {
  assertSpaceId, bytesToHex, canonicalJson, hexToBytes, LogStore, parseJson, utf8Decode, utf8Encode,
  type EventEnvelope, type EventId, type SpaceLog, type VerifyReport,
} from '../log/index.js'
import { readBundleFile } from './mem/index.js'

export const SNAPSHOT_FORMAT = 'cairn-log'
const EVENTS_FILE = 'events.jsonl'
/** A line longer than this is refused (an event is at most ~1 MiB of body plus its header). */
const MAX_LINE_CHARS = 4 * 1024 * 1024

export interface SnapshotManifest {
  readonly format: typeof SNAPSHOT_FORMAT
  readonly version: 1
  readonly space: string
  readonly generator: string
  readonly createdAt: string
  readonly events: number
  readonly vector: Readonly<Record<string, number>>
  readonly files: readonly { readonly path: string; readonly bytes: number; readonly sha256: string }[]
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex')
}

/**
 * Writes every event of `log` to `dir`, which must not exist or be empty. The files are written
 * into a staging directory beside it and renamed into place, so `dir` appears whole or not at all.
 */
export async function exportLogSnapshot(
  log: SpaceLog,
  dir: string,
  options: { generator: string; createdAt: string; onProgress?: (done: number, total: number) => void },
): Promise<SnapshotManifest> {
  const existing = await fs.readdir(dir).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return []
    throw new InputError('NOT_A_DIRECTORY', `the export target cannot be used (${error.code})`, { file: dir }, { cause: error })
  })
  if (existing.length > 0) throw new InputError('NOT_EMPTY', 'the export directory is not empty', { file: dir })
  const envelopes = await log.envelopesSince({}, { signatures: 'stored' })
  const lines: string[] = []
  for (const [index, envelope] of envelopes.entries()) {
    lines.push(canonicalJson({
      header: parseJson(utf8Decode(envelope.header)),
      ...(envelope.body ? { body: parseJson(utf8Decode(envelope.body)) } : {}),
      ...(envelope.signature ? { signature: bytesToHex(envelope.signature) } : {}),
    }))
    if (index % 10_000 === 0) options.onProgress?.(index, envelopes.length)
  }
  const bytes = lines.reduce((sum, line) => sum + Buffer.byteLength(line) + 1, 0)
  if (bytes > MAX_SNAPSHOT_EVENTS_BYTES) {
    throw new LimitError('SNAPSHOT_TOO_LARGE', `the log is ${bytes} bytes as events.jsonl, over the ${MAX_SNAPSHOT_EVENTS_BYTES} a snapshot can hold; export it as .mem`, { file: dir })
  }
  const events = utf8Encode(lines.length > 0 ? `${lines.join('\n')}\n` : '')
  const files = [{ path: EVENTS_FILE, bytes: events.length, sha256: sha256(events) }]
  const manifest: SnapshotManifest = {
    format: SNAPSHOT_FORMAT, version: 1, space: log.space, generator: options.generator, createdAt: options.createdAt,
    events: envelopes.length, vector: log.versionVector(), files,
  }
  const staging = path.join(path.dirname(path.resolve(dir)), `.${path.basename(dir)}.partial-${randomBytes(6).toString('hex')}`)
  try {
    await fs.mkdir(staging, { recursive: true })
    await fs.writeFile(path.join(staging, EVENTS_FILE), events)
    await fs.writeFile(path.join(staging, 'CHECKSUMS'), files.map((file) => `${file.sha256}  ${file.path}\n`).join(''))
    await fs.writeFile(path.join(staging, 'manifest.json'), canonicalJson(manifest as unknown as Parameters<typeof canonicalJson>[0]))
    // rename(2) replaces an empty directory atomically; a non-empty one (a race) fails.
    await fs.rename(staging, dir)
  } catch (error) {
    await fs.rm(staging, { recursive: true, force: true })
    throw new StorageError('WRITE_FAILED', `the snapshot could not be written: ${(error as Error).message}`, { file: dir }, { cause: error })
  }
  options.onProgress?.(envelopes.length, envelopes.length)
  return manifest
}

/** The largest manifest.json or CHECKSUMS a snapshot reader takes (they list one file). */
const MAX_SMALL_FILE_BYTES = 64 * 1024
/**
 * The largest events.jsonl a snapshot holds: it is read whole as one string, and V8 strings end
 * near 512 MiB. Export refuses a log past it rather than write a snapshot nothing can read.
 */
export const MAX_SNAPSHOT_EVENTS_BYTES = 500 * 1024 * 1024

/** A file of the snapshot, read as the `.mem` reader reads one: no links, regular files only, capped. */
async function readSnapshotFile(dir: string, name: string, maxBytes: number): Promise<Buffer> {
  const read = await readBundleFile(dir, name, maxBytes)
  if ('failure' in read) {
    const { code, message } = read.failure
    throw new InputError(code === 'MISSING_FILE' ? 'BAD_SNAPSHOT' : code, code === 'MISSING_FILE' ? `${name} is missing` : `${name} ${message}`, { file: path.join(dir, name) })
  }
  return read.bytes
}

/** The manifest's fields, each checked, so a damaged one is named rather than crashing a reader. */
function decodeSnapshotManifest(value: unknown, file: string): SnapshotManifest {
  const bad = (message: string): never => {
    throw new InputError('BAD_SNAPSHOT', message, { file })
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return bad('manifest.json is not an object')
  const manifest = value as Record<string, unknown>
  if (manifest.format !== SNAPSHOT_FORMAT || manifest.version !== 1) return bad(`not a ${SNAPSHOT_FORMAT} version 1 snapshot`)
  assertSpaceId(manifest.space, 'manifest.space')
  if (!Number.isSafeInteger(manifest.events) || (manifest.events as number) < 0) bad('manifest.events is not a count of events')
  const files = manifest.files
  if (!Array.isArray(files)) return bad('manifest.files is not a list')
  files.forEach((entry: unknown, index) => {
    const item = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<string, unknown>
    if (typeof item.path !== 'string' || !Number.isSafeInteger(item.bytes) || typeof item.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(item.sha256)) {
      bad(`manifest.files[${index}] is not { path, bytes, sha256 }`)
    }
  })
  return manifest as unknown as SnapshotManifest
}

/**
 * Reads a snapshot back as envelopes, checking the manifest, CHECKSUMS, the file's size and hash,
 * and every line's shape (errors name the file and line). Files are read as the `.mem` reader
 * reads them (no symbolic links, regular files only, size caps). Authenticity is checked by
 * ingesting them.
 * @throws InputError BAD_SNAPSHOT, BAD_LINE, SYMLINK, NOT_A_FILE, FILE_TOO_LARGE; VerifyError CHECKSUM_MISMATCH
 */
export async function readLogSnapshot(dir: string): Promise<{ manifest: SnapshotManifest; envelopes: EventEnvelope[] }> {
  const manifestFile = path.join(dir, 'manifest.json')
  let parsed: unknown
  const manifestBytes = await readSnapshotFile(dir, 'manifest.json', MAX_SMALL_FILE_BYTES)
  try {
    parsed = parseJson(manifestBytes.toString('utf8'))
  } catch (error) {
    throw new InputError('BAD_SNAPSHOT', `manifest.json cannot be read: ${(error as Error).message}`, { file: manifestFile })
  }
  const manifest = decodeSnapshotManifest(parsed, manifestFile)
  const listed = manifest.files.find((file) => file.path === EVENTS_FILE)
  const eventsFile = path.join(dir, EVENTS_FILE)
  if (!listed) throw new InputError('BAD_SNAPSHOT', `manifest.files does not list ${EVENTS_FILE}`, { file: manifestFile })
  const checksums = await readSnapshotFile(dir, 'CHECKSUMS', MAX_SMALL_FILE_BYTES)
  if (checksums.toString('utf8') !== manifest.files.map((file) => `${file.sha256}  ${file.path}\n`).join('')) {
    throw new VerifyError('CHECKSUM_MISMATCH', 'CHECKSUMS does not list the manifest\'s files', { file: path.join(dir, 'CHECKSUMS') })
  }
  const bytes = await readSnapshotFile(dir, EVENTS_FILE, MAX_SNAPSHOT_EVENTS_BYTES)
  if (listed.bytes !== bytes.length || listed.sha256 !== sha256(bytes)) {
    throw new VerifyError('CHECKSUM_MISMATCH', 'events.jsonl does not match the manifest', { file: eventsFile })
  }
  const text = bytes.toString('utf8')
  const lines = text.length === 0 ? [] : text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n')
  const envelopes = lines.map((line, index) => {
    const where = { file: eventsFile, line: index + 1 }
    if (line.length > MAX_LINE_CHARS) throw new InputError('LINE_TOO_LONG', `over ${MAX_LINE_CHARS} characters`, where)
    let value: { header?: unknown; body?: unknown; signature?: unknown }
    try {
      value = parseJson(line) as typeof value
    } catch (error) {
      throw new InputError('BAD_LINE', (error as Error).message, where)
    }
    if (typeof value !== 'object' || value === null || typeof value.header !== 'object') throw new InputError('BAD_LINE', 'a line is { header, body?, signature? }', where)
    if (value.signature !== undefined && (typeof value.signature !== 'string' || !/^[0-9a-f]{128}$/.test(value.signature))) {
      throw new InputError('BAD_LINE', 'signature is 128 hex characters', where)
    }
    const header = utf8Encode(canonicalJson(value.header))
    return {
      id: sha256(header) as EventId,
      header,
      ...(value.body !== undefined ? { body: utf8Encode(canonicalJson(value.body)) } : {}),
      ...(typeof value.signature === 'string' ? { signature: hexToBytes(value.signature) } : {}),
    }
  })
  if (envelopes.length !== manifest.events) throw new InputError('BAD_SNAPSHOT', `the manifest lists ${manifest.events} events, the file holds ${envelopes.length}`, { file: eventsFile })
  return { manifest, envelopes }
}

/** Verifies a snapshot offline: every id, chain, signature, clock and grant, in a scratch store. */
export async function verifyLogSnapshot(dir: string): Promise<VerifyReport> {
  const { manifest, envelopes } = await readLogSnapshot(dir)
  const store = await LogStore.open()
  try {
    const log = await store.openSpace(manifest.space)
    await log.ingest(envelopes)
    return await log.verify()
  } finally {
    await store.close()
  }
}

/**
 * A zip archive read as a tree of files, for exports that arrive zipped (ChatGPT, Claude and
 * OpenMemory all hand out a .zip). Reading goes through yauzl, a well-kept zip reader that
 * refuses unsafe entry names (absolute, `..`, backslashes) and checks every entry's inflated
 * size against its header, so a crafted archive cannot write anywhere or inflate without bound.
 *
 * Invariants: nothing is extracted to disk; at most MAX_SOURCE_FILES entries are listed; an
 * entry is inflated only when read, only when its declared size is within MAX_SOURCE_BYTES,
 * and never past that size; every refusal names the archive (and the entry).
 */
import type { Readable } from 'node:stream'
import yauzl, { type Entry, type ZipFile } from 'yauzl'
import { InputError, LimitError } from '../../errors.js'
import { compareCodePoints } from '../../log/index.js'
import { MAX_SOURCE_BYTES } from './source-text.js'

/** A zip archive starts with a local file header, or with the end record when it is empty. */
const ZIP_STARTS = [[0x50, 0x4b, 0x03, 0x04], [0x50, 0x4b, 0x05, 0x06]] as const

/** True when `bytes` (a file's start) is a zip archive. */
export function isZipStart(bytes: Uint8Array): boolean {
  return ZIP_STARTS.some((magic) => magic.every((byte, i) => bytes[i] === byte))
}

export interface ZipTree {
  /** Regular files, by their path in the archive, in code-point order. */
  readonly paths: readonly string[]
  /** One entry's bytes, refused past `limit` (at most MAX_SOURCE_BYTES). @throws LimitError FILE_TOO_LARGE; InputError BAD_ARCHIVE, ENCRYPTED_ENTRY */
  read(path: string, limit?: number): Promise<Uint8Array>
  /** At most the first `bytes` bytes of an entry (inflating stops there). */
  peek(path: string, bytes: number): Promise<Uint8Array>
  close(): Promise<void>
}

function archiveError(error: unknown, archive: string, entry?: string): InputError {
  const message = error instanceof Error ? error.message : String(error)
  return new InputError('BAD_ARCHIVE', `not a zip archive that can be read: ${message}`, { file: entry === undefined ? archive : `${archive}:${entry}` })
}

async function listEntries(zip: ZipFile, archive: string, maxEntries: number): Promise<Map<string, Entry>> {
  return new Promise((resolve, reject) => {
    const entries = new Map<string, Entry>()
    zip.on('entry', (entry: Entry) => {
      if (entries.has(entry.fileName)) {
        // Two entries of one name: which one a tool extracts differs; refuse rather than pick.
        reject(new InputError('BAD_ARCHIVE', 'the archive holds two entries of this name', { file: `${archive}:${entry.fileName}` }))
        return
      }
      if (!entry.fileName.endsWith('/')) entries.set(entry.fileName, entry)
      if (entries.size > maxEntries) {
        reject(new LimitError('TOO_MANY_FILES', `more than ${maxEntries} files`, { file: archive }))
        return
      }
      zip.readEntry()
    })
    zip.on('end', () => resolve(entries))
    zip.on('error', (error: unknown) => reject(archiveError(error, archive)))
    zip.readEntry()
  })
}

/** The stream's bytes; past `limit` it is refused, or with `truncate`, cut there. */
async function collect(stream: Readable, limit: number, where: string, truncate = false): Promise<Uint8Array> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    if (size + chunk.length > limit) {
      stream.destroy()
      if (!truncate) throw new LimitError('FILE_TOO_LARGE', `inflates to more than the ${limit} bytes an import reads`, { file: where })
      chunks.push(chunk.subarray(0, limit - size))
      size = limit
      break
    }
    size += chunk.length
    chunks.push(chunk)
  }
  return new Uint8Array(Buffer.concat(chunks, size))
}

/**
 * Opens the archive at `file` (`label` names it in errors) and lists its files.
 * @throws InputError BAD_ARCHIVE (not a zip, corrupt, an unsafe entry name); LimitError TOO_MANY_FILES
 */
export async function openZip(file: string, label: string, maxEntries: number): Promise<ZipTree> {
  let zip: ZipFile
  try {
    zip = await yauzl.openPromise(file, { lazyEntries: true, autoClose: false, strictFileNames: true, validateEntrySizes: true, decodeStrings: true })
  } catch (error) {
    throw archiveError(error, label)
  }
  let entries: Map<string, Entry>
  try {
    entries = await listEntries(zip, label, maxEntries)
  } catch (error) {
    zip.close()
    throw error
  }
  const inflate = async (path: string, limit: number, truncate: boolean): Promise<Uint8Array> => {
    const entry = entries.get(path)
    const where = `${label}:${path}`
    if (entry === undefined) throw new InputError('NOT_FOUND', 'no such file in the archive', { file: where })
    if (entry.isEncrypted()) throw new InputError('ENCRYPTED_ENTRY', 'the entry is encrypted', { file: where })
    if (!truncate && entry.uncompressedSize > limit) {
      throw new LimitError('FILE_TOO_LARGE', `${entry.uncompressedSize} bytes is more than the ${limit} an import reads`, { file: where })
    }
    let stream: Readable
    try {
      stream = await zip.openReadStreamPromise(entry)
    } catch (error) {
      throw archiveError(error, label, path)
    }
    try {
      return await collect(stream, limit, where, truncate)
    } catch (error) {
      throw error instanceof LimitError ? error : archiveError(error, label, path)
    }
  }
  return {
    paths: [...entries.keys()].sort(compareCodePoints),
    read: (path, limit = MAX_SOURCE_BYTES) => inflate(path, Math.min(limit, MAX_SOURCE_BYTES), false),
    peek: (path, bytes) => inflate(path, bytes, true),
    async close(): Promise<void> {
      zip.close()
    },
  }
}

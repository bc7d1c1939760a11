/**
 * An append-only journal of storage batches: the durability point of a disk store.
 *
 * Why: classic-level writes on a worker thread, and the round trip costs ~30–60 µs even for a
 * small batch, more than the work of an append itself. A synchronous `write` to a file costs a
 * few µs and, once it returns, the bytes are in the kernel's page cache: they survive the
 * process being killed, which is exactly LevelDB's own guarantee without `sync`. LevelDB is
 * then fed in the background (journaled-storage.ts).
 *
 * Frame: u32le payload length | u32le CRC-32 of payload | payload, a sequence of operations
 * `u8 0 | u32le key length | key (UTF-8) | u32le value length | value` (put) or
 * `u8 1 | u32le key length | key` (delete). A frame is one atomic batch: replay applies whole
 * frames in order and stops at the first torn or corrupt one (a crash mid-append), which it
 * truncates away. Replaying a frame twice is harmless (puts and deletes of whole values).
 *
 * Files: the journal starts in one file and, once that holds DEFAULT_ROTATE_BYTES, goes on in a
 * new one (`<stem>.<generation>.log`). A file is removed once the store behind holds every batch
 * in it (`release`), so under a steady stream of writes the journal stays a few files long and
 * the writer never has to stop for the store to drain it.
 */
import fs from 'node:fs'
import path from 'node:path'
import zlib from 'node:zlib'
import type { StorageWrite } from './storage.js'

const FRAME_HEADER_BYTES = 8
/** A frame longer than this is treated as corrupt (a batch is far smaller in practice). */
export const MAX_FRAME_BYTES = 1024 * 1024 * 1024
/** Past this size the next batch starts a new file, so flushed files can go while writes go on. */
export const DEFAULT_ROTATE_BYTES = 64 * 1024 * 1024

/** One file of the journal: its generation orders it among the others. */
interface JournalFile {
  readonly generation: number
  readonly name: string
  size: number
  /** The number (1-based, since open) of the last batch appended to it; 0 if none since open. */
  lastBatch: number
}

export interface WriteJournalOptions {
  readonly sync: boolean
  /** Start a new file once the current one holds this many bytes (default DEFAULT_ROTATE_BYTES). */
  readonly rotateBytes?: number
}

export class WriteJournal {
  /** Batches appended since open. */
  private appended = 0

  private constructor(
    private readonly base: string,
    /** Oldest first; the last one takes appends. Never empty. */
    private files: JournalFile[],
    /** The open descriptor of the last file (only that one is open: older ones are only removed). */
    private fd: number,
    private readonly sync: boolean,
    private readonly rotateBytes: number,
  ) {}

  /**
   * Opens (creating) the journal and returns the intact batches it holds, oldest first. The
   * journal is the file `file` (generation 0) and the files `<file stem>.<n>.log` started when it
   * rotated; they are read in generation order, and reading stops at the first torn or corrupt
   * frame: that file is cut there and every later file is removed, so what replays is always a
   * prefix of the batches written.
   */
  static open(file: string, options: WriteJournalOptions): { journal: WriteJournal; batches: StorageWrite[][] } {
    const rotated = fs.readdirSync(path.dirname(file))
      .map((name) => ({ name: path.join(path.dirname(file), name), generation: rotatedGeneration(file, name) }))
      .filter((entry): entry is { name: string; generation: number } => entry.generation !== undefined)
      .sort((a, b) => a.generation - b.generation)
    const names = [{ name: file, generation: 0 }, ...rotated]
    const files: JournalFile[] = []
    const batches: StorageWrite[][] = []
    // Read up to the first torn or corrupt frame, or a missing generation between rotated files
    // (files are removed oldest first, so a gap is damage: what follows it is not a prefix).
    let dropFrom: number | undefined
    let torn: JournalFile | undefined
    for (const [index, { name, generation }] of names.entries()) {
      const previous = names[index - 1]
      if (index > 1 && previous !== undefined && generation !== previous.generation + 1) {
        dropFrom = index
        break
      }
      const bytes = fs.existsSync(name) ? fs.readFileSync(name) : Buffer.alloc(0)
      const offset = readFrames(bytes, batches)
      const read: JournalFile = { generation, name, size: offset, lastBatch: 0 }
      files.push(read)
      if (offset !== bytes.length) {
        dropFrom = index + 1
        torn = read
        break
      }
    }
    // Newest first, so a crash part way leaves no gap for the next open to read across.
    if (dropFrom !== undefined) for (const { name } of names.slice(dropFrom).reverse()) fs.rmSync(name, { force: true })
    if (torn) fs.truncateSync(torn.name, torn.size)
    const last = files[files.length - 1] as JournalFile
    const fd = fs.openSync(last.name, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o600)
    // With sync, a journal file this open created must survive power loss too.
    if (options.sync) syncDirectory(path.dirname(file))
    return { journal: new WriteJournal(file, files, fd, options.sync, options.rotateBytes ?? DEFAULT_ROTATE_BYTES), batches }
  }

  /** Bytes held in the journal's files: 0 exactly when it holds no batch. */
  get size(): number {
    let total = 0
    for (const file of this.files) total += file.size
    return total
  }

  /**
   * Appends one batch; when this returns the batch survives a process crash (and, with sync,
   * power loss). Returns the batch with each value viewing the journal's own copy of it.
   */
  append(writes: readonly StorageWrite[]): StorageWrite[] {
    let size = FRAME_HEADER_BYTES
    const keyLengths = writes.map((write) => {
      const length = Buffer.byteLength(write.key)
      size += 5 + length + (write.type === 'put' ? 4 + write.value.length : 0)
      return length
    })
    // One buffer, header first: a single write call per batch (the interactive append pays it).
    const frame = Buffer.allocUnsafe(size)
    const copied: StorageWrite[] = new Array(writes.length)
    let offset = FRAME_HEADER_BYTES
    writes.forEach((write, i) => {
      frame[offset] = write.type === 'put' ? 0 : 1
      frame.writeUInt32LE(keyLengths[i] as number, offset + 1)
      offset += 5 + frame.write(write.key, offset + 5, 'utf8')
      if (write.type === 'put') {
        frame.writeUInt32LE(write.value.length, offset)
        frame.set(write.value, offset + 4)
        copied[i] = { type: 'put', key: write.key, value: frame.subarray(offset + 4, offset + 4 + write.value.length) }
        offset += 4 + write.value.length
      } else copied[i] = write
    })
    frame.writeUInt32LE(size - FRAME_HEADER_BYTES, 0)
    frame.writeUInt32LE(zlib.crc32(frame.subarray(FRAME_HEADER_BYTES)), 4)
    const file = this.fileFor()
    // The frame lands whole or (on a crash mid-call) is cut off and dropped on replay.
    try {
      let written = fs.writeSync(this.fd, frame, 0, size, file.size)
      while (written < size) written += fs.writeSync(this.fd, frame, written, size - written, file.size + written)
      if (this.sync) fs.fdatasyncSync(this.fd)
    } catch (error) {
      // Part of a frame past the file's end would stop replay there, and drop every later file.
      this.cutBack(file)
      throw error
    }
    file.size += size
    file.lastBatch = ++this.appended
    return copied
  }

  /**
   * Lets go of what the store behind holds: `flushed` is how many batches appended since open
   * are durable there (in append order). Older files holding only such batches are removed; the
   * current file is emptied once every batch is.
   *
   * Files go oldest first and a file stays listed until it is gone: if a removal fails (it
   * throws), that file and every later one stay, so a replay still reads a prefix of what was
   * written, in order, and the next release tries again.
   */
  release(flushed: number): void {
    const current = this.files[this.files.length - 1] as JournalFile
    while (this.files.length > 1 && (this.files[0] as JournalFile).lastBatch <= flushed) {
      fs.rmSync((this.files[0] as JournalFile).name, { force: true })
      this.files.shift()
    }
    if (this.files.length === 1 && current.lastBatch <= flushed && current.size > 0) {
      fs.ftruncateSync(this.fd, 0)
      current.size = 0
    }
  }

  /**
   * Empties the journal: call only when every batch in it is durable in the store behind it.
   * What is left is the first file, empty, so the generations start again from 0.
   */
  reset(): void {
    this.release(this.appended)
    const current = this.files[0] as JournalFile
    if (current.generation === 0) return
    const fd = fs.openSync(this.base, fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_TRUNC, 0o600)
    if (this.sync) syncDirectory(path.dirname(this.base))
    fs.closeSync(this.fd)
    this.fd = fd
    this.files = [{ generation: 0, name: this.base, size: 0, lastBatch: this.appended }]
    fs.rmSync(current.name, { force: true })
  }

  /** Cuts a file back to the frames it holds, dropping what a failed append left past them. */
  private cutBack(file: JournalFile): void {
    try {
      fs.ftruncateSync(this.fd, file.size)
    } catch {
      // The next rotation cuts it again (fileFor); until then later appends write over it.
    }
  }

  close(): void {
    fs.closeSync(this.fd)
  }

  /** The file the next batch goes to: a new one when the current is full. */
  private fileFor(): JournalFile {
    const current = this.files[this.files.length - 1] as JournalFile
    if (current.size < this.rotateBytes) return current
    // Nothing a failed append left may follow the last frame of a file that later files follow.
    fs.ftruncateSync(this.fd, current.size)
    const generation = current.generation + 1
    const name = rotatedName(this.base, generation)
    const fd = fs.openSync(name, fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_TRUNC, 0o600)
    // With sync, the new file's name must survive power loss too.
    if (this.sync) syncDirectory(path.dirname(name))
    fs.closeSync(this.fd)
    this.fd = fd
    const next: JournalFile = { generation, name, size: 0, lastBatch: 0 }
    this.files.push(next)
    return next
  }
}

/** `<stem>.<generation>.log` beside `base` (`<stem>.log`). */
function rotatedName(base: string, generation: number): string {
  return `${base.replace(/\.log$/, '')}.${generation}.log`
}

/** The generation of a rotated file of `base` named `name`, or undefined if it is not one. */
function rotatedGeneration(base: string, name: string): number | undefined {
  const stem = path.basename(base).replace(/\.log$/, '')
  if (!name.startsWith(`${stem}.`) || !name.endsWith('.log')) return undefined
  const middle = name.slice(stem.length + 1, -'.log'.length)
  return /^[1-9][0-9]{0,8}$/.test(middle) ? Number(middle) : undefined
}

function syncDirectory(directory: string): void {
  const fd = fs.openSync(directory, fs.constants.O_RDONLY)
  try {
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

/** Decodes the whole frames at the start of `bytes` into `batches`; returns where they end. */
function readFrames(bytes: Buffer, batches: StorageWrite[][]): number {
  let offset = 0
  while (offset + FRAME_HEADER_BYTES <= bytes.length) {
    const length = bytes.readUInt32LE(offset)
    const crc = bytes.readUInt32LE(offset + 4)
    const end = offset + FRAME_HEADER_BYTES + length
    if (length > MAX_FRAME_BYTES || end > bytes.length) break
    const payload = bytes.subarray(offset + FRAME_HEADER_BYTES, end)
    if (zlib.crc32(payload) !== crc) break
    const batch = decodeBatch(payload)
    if (!batch) break
    batches.push(batch)
    offset = end
  }
  return offset
}

function decodeBatch(payload: Buffer): StorageWrite[] | undefined {
  const writes: StorageWrite[] = []
  let offset = 0
  while (offset < payload.length) {
    if (offset + 5 > payload.length) return undefined
    const type = payload[offset]
    const keyEnd = offset + 5 + payload.readUInt32LE(offset + 1)
    if (keyEnd > payload.length || (type !== 0 && type !== 1)) return undefined
    const key = payload.toString('utf8', offset + 5, keyEnd)
    if (type === 1) {
      writes.push({ type: 'del', key })
      offset = keyEnd
      continue
    }
    if (keyEnd + 4 > payload.length) return undefined
    const valueEnd = keyEnd + 4 + payload.readUInt32LE(keyEnd)
    if (valueEnd > payload.length) return undefined
    writes.push({ type: 'put', key, value: payload.subarray(keyEnd + 4, valueEnd) })
    offset = valueEnd
  }
  return writes
}

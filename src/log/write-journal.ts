/**
 * An append-only journal file of storage batches: the durability point of a disk store.
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
 */
import fs from 'node:fs'
import zlib from 'node:zlib'
import type { StorageWrite } from './storage.js'

const FRAME_HEADER_BYTES = 8
/** A frame longer than this is treated as corrupt (a batch is far smaller in practice). */
export const MAX_FRAME_BYTES = 1024 * 1024 * 1024

export class WriteJournal {
  private constructor(private readonly fd: number, private sizeBytes: number, private readonly sync: boolean) {}

  /** Opens (creating) the journal and returns the intact batches it holds, oldest first. */
  static open(file: string, options: { sync: boolean }): { journal: WriteJournal; batches: StorageWrite[][] } {
    const fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o600)
    const bytes = fs.readFileSync(fd)
    const batches: StorageWrite[][] = []
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
    if (offset !== bytes.length) fs.ftruncateSync(fd, offset)
    return { journal: new WriteJournal(fd, offset, options.sync), batches }
  }

  get size(): number {
    return this.sizeBytes
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
    // The frame lands whole or (on a crash mid-call) is cut off and dropped on replay.
    let written = fs.writeSync(this.fd, frame, 0, size, this.sizeBytes)
    while (written < size) written += fs.writeSync(this.fd, frame, written, size - written, this.sizeBytes + written)
    this.sizeBytes += size
    if (this.sync) fs.fdatasyncSync(this.fd)
    return copied
  }

  /** Empties the journal: call only when every batch in it is durable in the store behind it. */
  reset(): void {
    if (this.sizeBytes === 0) return
    fs.ftruncateSync(this.fd, 0)
    this.sizeBytes = 0
  }

  close(): void {
    fs.closeSync(this.fd)
  }
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

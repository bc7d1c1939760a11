/**
 * Writes zip archives for tests, straight from the format (PKWARE APPNOTE: local headers, the
 * central directory, the end record), including ones a well-behaved tool would never write:
 * unsafe names and sizes that lie. Stored or deflated entries; no zip64, no encryption.
 */
import { crc32, deflateRawSync } from 'node:zlib'

export interface ZipEntry {
  readonly name: string
  readonly data: Uint8Array | string
  readonly deflate?: boolean
  /** The uncompressed size the headers claim (default: the true size). */
  readonly declaredSize?: number
  /** Sets the "encrypted" flag (the data is not actually encrypted). */
  readonly encrypted?: boolean
}

function u16(value: number): Buffer {
  const buffer = Buffer.alloc(2)
  buffer.writeUInt16LE(value)
  return buffer
}

function u32(value: number): Buffer {
  const buffer = Buffer.alloc(4)
  buffer.writeUInt32LE(value >>> 0)
  return buffer
}

export function zipArchive(entries: readonly ZipEntry[]): Buffer {
  const locals: Buffer[] = []
  const centrals: Buffer[] = []
  let offset = 0
  for (const entry of entries) {
    const raw = Buffer.from(entry.data)
    const body = entry.deflate ? deflateRawSync(raw) : raw
    const name = Buffer.from(entry.name, 'utf8')
    const size = entry.declaredSize ?? raw.length
    // version, flags (UTF-8 names), method, time, date, crc, compressed and uncompressed sizes
    const flags = 0x0800 | (entry.encrypted ? 1 : 0)
    const common = Buffer.concat([u16(20), u16(flags), u16(entry.deflate ? 8 : 0), u16(0), u16(0x21), u32(crc32(raw)), u32(body.length), u32(size)])
    const local = Buffer.concat([u32(0x04034b50), common, u16(name.length), u16(0), name, body])
    centrals.push(Buffer.concat([u32(0x02014b50), u16(20), common, u16(name.length), u16(0), u16(0), u16(0), u16(0), u32(0), u32(offset), name]))
    locals.push(local)
    offset += local.length
  }
  const directory = Buffer.concat(centrals)
  const end = Buffer.concat([u32(0x06054b50), u16(0), u16(0), u16(entries.length), u16(entries.length), u32(directory.length), u32(offset), u16(0)])
  return Buffer.concat([...locals, directory, end])
}

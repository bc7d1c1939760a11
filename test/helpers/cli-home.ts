/**
 * Fixtures for CLI tests: temporary directories that are removed when the test file ends, homes with
 * a few events written through the library, and tampering with a stored event the way a
 * disk error or an attacker would (through the storage layer, bypassing every check).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll } from 'vitest'
import { openHome, type EventId } from '../../src/index.js'
import { LevelLogStorage } from '../../src/log/level-storage.js'
import { keys } from '../../src/log/store-keys.js'
import { decodeEventRecord, encodeEventRecord } from '../../src/log/store-records.js'

const made: string[] = []

// After all tests of the file, not each: tests that run concurrently share this list.
afterAll(async () => {
  for (const dir of made.splice(0)) await rm(dir, { recursive: true, force: true })
})

/** A fresh empty directory, removed after the test file. */
export async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cairn-cli-test-'))
  made.push(dir)
  return dir
}

/** Appends `count` data events to the home in `dir` (two singles, then one batch); returns their ids in order. */
export async function appendEvents(dir: string, count: number): Promise<EventId[]> {
  const home = await openHome(dir)
  try {
    const ids: EventId[] = []
    const singles = Math.min(2, count)
    for (let i = 0; i < singles; i++) {
      ids.push((await home.log.append(home.identity, { op: 'memory.note', data: { text: `note ${i + 1}` } })).id)
    }
    const batch = Array.from({ length: count - singles }, (_, i) => ({ op: 'memory.fact', data: { n: i + 1 } }))
    for (const event of await home.log.appendBatch(home.identity, batch)) ids.push(event.id)
    return ids
  } finally {
    await home.store.close()
  }
}

/** Flips one byte of the stored body or header of event `id`, writing it straight to LevelDB. */
export async function tamperStoredEvent(dir: string, space: string, id: string, part: 'body' | 'header'): Promise<void> {
  const storage = await LevelLogStorage.openDisk(path.join(dir, 'store'))
  try {
    const key = keys.event(space, id)
    const bytes = await storage.get(key)
    if (!bytes) throw new Error(`no stored event ${id}`)
    const record = decodeEventRecord(bytes, key)
    let changed
    if (part === 'body') {
      if (!record.body) throw new Error(`event ${id} has no stored body`)
      const body = Uint8Array.from(record.body)
      const middle = body.length >> 1
      body[middle] = (body[middle] as number) ^ 0x01
      changed = { ...record, body }
    } else {
      const middle = record.header.length >> 1
      const flipped = String.fromCharCode(record.header.charCodeAt(middle) ^ 0x01)
      changed = { ...record, header: record.header.slice(0, middle) + flipped + record.header.slice(middle + 1) }
    }
    await storage.write([{ type: 'put', key, value: encodeEventRecord(changed) }])
  } finally {
    await storage.close()
  }
}

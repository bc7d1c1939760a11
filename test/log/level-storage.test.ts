/**
 * Runs the shared LogStorage suite on both level backends, then checks what only the disk
 * backend has: a store directory held by one open handle (in this process or another) refuses
 * a second opener with STORE_LOCKED; a location where no store can be made fails with
 * STORE_UNAVAILABLE, and one without a store, when creating is off, with STORE_MISSING.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { StorageError } from '../../src/errors.js'
import { DEFAULT_WRITE_BUFFER_BYTES, LevelLogStorage, WRITE_BUFFER_BYTES_RANGE } from '../../src/log/level-storage.js'
import { Memory } from '../../src/memory/index.js'
import { LogStore } from '../../src/log/log-store.js'
import type { LogStorage } from '../../src/log/storage.js'
import { runStorageSuite } from './storage.suite.js'

const REPO_ROOT = path.resolve(import.meta.dirname, '../..')
const roots: string[] = []
async function freshDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cairn-level-storage-'))
  roots.push(dir)
  return dir
}
afterAll(async () => {
  for (const dir of roots.splice(0)) await rm(dir, { recursive: true, force: true })
})

runStorageSuite('LevelLogStorage on disk', async () => LevelLogStorage.openDisk(await freshDir()), {
  reopen: (closed) => LevelLogStorage.openDisk(closed.location),
})

runStorageSuite('LevelLogStorage on disk, fsync on', async () => LevelLogStorage.openDisk(await freshDir(), { sync: true }), {
  reopen: (closed) => LevelLogStorage.openDisk(closed.location, { sync: true }),
})

runStorageSuite('LevelLogStorage on disk, smallest write buffer', async () => LevelLogStorage.openDisk(await freshDir(), { writeBufferBytes: WRITE_BUFFER_BYTES_RANGE[0] }), {
  reopen: (closed) => LevelLogStorage.openDisk(closed.location, { writeBufferBytes: WRITE_BUFFER_BYTES_RANGE[0] }),
})

runStorageSuite('LevelLogStorage in memory', () => LevelLogStorage.openMemory())

describe('LevelLogStorage on disk: fsync', () => {
  it('hands LevelDB sync: true with every batch when opened with sync, and never otherwise', async () => {
    for (const sync of [true, false]) {
      const storage = await LevelLogStorage.openDisk(await freshDir(), { sync })
      // What reaches the binding, whichever batch form the adapter uses: an array batch's
      // options (db._batch) or a chained batch's (batch._write). The spies call through.
      const db = (storage as unknown as { db: { batch(): { close(): Promise<void> } } }).db
      const probe = db.batch()
      await probe.close()
      const chained = vi.spyOn(Object.getPrototypeOf(probe) as { _write(options: unknown): Promise<void> }, '_write')
      const array = vi.spyOn(Object.getPrototypeOf(db) as { _batch(operations: unknown, options: unknown): Promise<void> }, '_batch')
      try {
        await storage.write([{ type: 'put', key: 'a', value: Uint8Array.of(1) }, { type: 'del', key: 'b' }])
        await storage.writeDerived([{ type: 'put', key: 'c', value: Uint8Array.of(2) }])
        const options = [...chained.mock.calls.map(([given]) => given), ...array.mock.calls.map(([, given]) => given)]
        expect(options).toHaveLength(2)
        for (const given of options) expect((given as { sync?: unknown } | undefined)?.sync === true).toBe(sync)
        expect([...(await storage.get('a')) ?? []]).toEqual([1])
      } finally {
        chained.mockRestore()
        array.mockRestore()
        await storage.close()
      }
    }
  })
})

describe('LevelLogStorage on disk: write buffer', () => {
  /**
   * Sorted table files LevelDB wrote for 8 MiB of puts, once closed: one each time its write buffer
   * filled, plus the one a close writes of what the buffer holds.
   */
  async function tablesAfterWrites(options: { writeBufferBytes?: number }): Promise<number> {
    const dir = await freshDir()
    const storage = await LevelLogStorage.openDisk(dir, options)
    const value = new Uint8Array(4096).fill(7)
    for (let batch = 0; batch < 64; batch++) {
      await storage.write(Array.from({ length: 32 }, (_, i) => ({ type: 'put' as const, key: `k${batch}-${i}`, value })))
    }
    // Counted once closed: LevelDB writes a full buffer out on a thread of its own, and a close
    // waits for that (on a busy machine it had not been written yet when listed before closing).
    await storage.close()
    const files = await readdir(dir)
    const reopened = await LevelLogStorage.openDisk(dir, options)
    expect(Uint8Array.from((await reopened.get('k63-31')) ?? [])).toEqual(value)
    await reopened.close()
    return files.filter((file) => file.endsWith('.ldb')).length
  }

  it('writes a table each time its buffer fills: several from a small buffer, one from LevelDB\'s 4 MiB, none yet from the default', async () => {
    expect(DEFAULT_WRITE_BUFFER_BYTES).toBeGreaterThan(8 * 1024 * 1024)
    expect(await tablesAfterWrites({})).toBeLessThanOrEqual(1)
    expect(await tablesAfterWrites({ writeBufferBytes: 4 * 1024 * 1024 })).toBeGreaterThanOrEqual(2)
    expect(await tablesAfterWrites({ writeBufferBytes: WRITE_BUFFER_BYTES_RANGE[0] })).toBeGreaterThan(5)
  })

  it('LogStore.open and Memory.open refuse a buffer outside what LevelDB takes, naming the option', async () => {
    for (const bytes of [WRITE_BUFFER_BYTES_RANGE[0] - 1, WRITE_BUFFER_BYTES_RANGE[1] + 1]) {
      await expect(LogStore.open({ path: await freshDir(), writeBufferBytes: bytes })).rejects.toMatchObject({ code: 'OUT_OF_RANGE', where: { field: 'options.writeBufferBytes' } })
      await expect(Memory.open({ path: await freshDir(), writeBufferBytes: bytes })).rejects.toMatchObject({ code: 'OUT_OF_RANGE', where: { field: 'options.writeBufferBytes' } })
    }
    // Refused before a new home writes its key: the directory is left as it was.
    const home = path.join(await freshDir(), 'home')
    await expect(Memory.open({ path: home, writeBufferBytes: 1 })).rejects.toMatchObject({ code: 'OUT_OF_RANGE', where: { field: 'options.writeBufferBytes' } })
    await expect(Memory.open({ path: home, sync: 'yes' as never })).rejects.toMatchObject({ code: 'WRONG_TYPE', where: { field: 'options.sync' } })
    await expect(readdir(home)).rejects.toMatchObject({ code: 'ENOENT' })
    const memory = await Memory.open({ path: await freshDir(), writeBufferBytes: WRITE_BUFFER_BYTES_RANGE[0] })
    await memory.remember({ kind: 'episode', id: 'ep_small', summary: 'kept with a small buffer' })
    await memory.close()
  })
})

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  const error = await promise.then(() => undefined, (caught: unknown) => caught)
  expect(error, 'expected a StorageError').toBeInstanceOf(StorageError)
  return (error as StorageError).code
}

describe('LevelLogStorage on disk: locking and opening', () => {
  const handles: LogStorage[] = []
  const children: ChildProcess[] = []
  afterEach(async () => {
    for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    for (const storage of handles.splice(0)) await storage.close().catch(() => undefined)
  })

  it('refuses a second handle on a directory this process holds open with STORE_LOCKED', async () => {
    const dir = await freshDir()
    const holder = await LevelLogStorage.openDisk(dir)
    handles.push(holder)
    await holder.write([{ type: 'put', key: 'k', value: Uint8Array.of(1) }])
    expect(await codeOf(LevelLogStorage.openDisk(dir))).toBe('STORE_LOCKED')
    expect(await codeOf(LogStore.open({ path: dir }))).toBe('STORE_LOCKED')
    // The failed opener did not disturb the holder.
    await holder.write([{ type: 'put', key: 'k2', value: Uint8Array.of(2) }])
    expect(Array.from((await holder.getMany(['k', 'k2'])).map((value) => value?.[0]))).toEqual([1, 2])
  })

  it('keeps the lock against other processes after refusing a second open here, through any name of the directory', async () => {
    const dir = await freshDir()
    const holder = await LevelLogStorage.openDisk(dir)
    handles.push(holder)
    const alias = `${dir}-alias`
    await symlink(dir, alias)
    roots.push(alias)
    const refused = LevelLogStorage.openDisk(alias)
    expect(await codeOf(refused)).toBe('STORE_LOCKED')
    await expect(refused).rejects.toThrow('already open in this process')
    expect(await codeOf(LevelLogStorage.openDisk(path.join(dir, '..', path.basename(dir))))).toBe('STORE_LOCKED')
    // LevelDB, asked twice by one process, drops that process's lock: another could then open it.
    const script = [
      "import { Level } from 'level'",
      'const db = new Level(process.argv[1])',
      "try { await db.open(); process.stdout.write('opened') } catch (error) { process.stdout.write(error.cause?.code ?? error.code) }",
    ].join('\n')
    const child = spawn(process.execPath, ['--input-type=module', '-e', script, dir], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] })
    children.push(child)
    let output = ''
    child.stdout?.on('data', (chunk: Buffer) => { output += chunk.toString() })
    await new Promise((resolve) => child.once('exit', resolve))
    expect(output).toBe('LEVEL_LOCKED')
  })

  it('keeps the claim when a stale handle is closed again, and names a directory not made yet through its existing ancestor', async () => {
    const dir = await freshDir()
    const first = await LevelLogStorage.openDisk(path.join(dir, 'store'))
    await first.close()
    const holder = await LevelLogStorage.openDisk(path.join(dir, 'store'))
    handles.push(holder)
    await first.close()
    await expect(LevelLogStorage.openDisk(path.join(dir, 'store'))).rejects.toThrow('already open in this process')
    // Two folders not made yet, reached through a link to their ancestor.
    const alias = `${dir}-link`
    await symlink(dir, alias)
    roots.push(alias)
    const deep = await LevelLogStorage.openDisk(path.join(alias, 'a', 'b'))
    handles.push(deep)
    await expect(LevelLogStorage.openDisk(path.join(dir, 'a', 'b'))).rejects.toThrow('already open in this process')
  })

  it('opens the directory again once the holder has closed it', async () => {
    const dir = await freshDir()
    const holder = await LevelLogStorage.openDisk(dir)
    await holder.write([{ type: 'put', key: 'k', value: Uint8Array.of(7) }])
    await holder.close()
    const again = await LevelLogStorage.openDisk(dir)
    handles.push(again)
    expect(Array.from((await again.get('k')) ?? [])).toEqual([7])
  })

  it('refuses a directory that another process holds open with STORE_LOCKED', async () => {
    const dir = await freshDir()
    const script = [
      "import { Level } from 'level'",
      'const db = new Level(process.argv[1])',
      'await db.open()',
      "process.stdout.write('open\\n')",
      'setInterval(() => {}, 1000)',
    ].join('\n')
    const child = spawn(process.execPath, ['--input-type=module', '-e', script, dir], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] })
    children.push(child)
    await new Promise<void>((resolve, reject) => {
      child.stdout?.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('open')) resolve()
      })
      child.on('exit', (code) => reject(new Error(`lock holder exited early with ${code}`)))
    })
    expect(await codeOf(LevelLogStorage.openDisk(dir))).toBe('STORE_LOCKED')
    child.kill('SIGKILL')
    await new Promise((resolve) => child.once('exit', resolve))
    // A killed holder leaves no stale lock: the OS drops it with the process.
    handles.push(await LevelLogStorage.openDisk(dir))
  })

  it('fails with STORE_UNAVAILABLE where no store can be opened, STORE_MISSING where none exists', async () => {
    const dir = await freshDir()
    const file = path.join(dir, 'a-file')
    await writeFile(file, 'not a directory')
    expect(await codeOf(LevelLogStorage.openDisk(path.join(file, 'store')))).toBe('STORE_UNAVAILABLE')
    expect(await codeOf(LevelLogStorage.openDisk(path.join(dir, 'missing'), { createIfMissing: false }))).toBe('STORE_MISSING')
  })
})

describe('LevelLogStorage on disk: closing', () => {
  // LevelDB keeps recent writes in a write buffer backed by its write-ahead log (<n>.log) and
  // replays that log on the next open; close writes the buffer out, so nothing is left to replay.
  it('leaves no write-ahead log to replay after a large write', async () => {
    const dir = await freshDir()
    const storage = await LevelLogStorage.openDisk(dir)
    const value = new Uint8Array(4096).fill(7)
    await storage.write(Array.from({ length: 2000 }, (_, i) => ({ type: 'put' as const, key: `k:${i}`, value })))
    const walBytes = async (): Promise<number> => {
      let total = 0
      for (const name of await readdir(dir)) if (/^\d+\.log$/.test(name)) total += (await stat(path.join(dir, name))).size
      return total
    }
    expect(await walBytes()).toBeGreaterThan(2000 * 4096)
    await storage.close()
    expect(await walBytes()).toBe(0)
    const reopened = await LevelLogStorage.openDisk(dir)
    expect((await reopened.get('k:1999'))?.length).toBe(4096)
    await reopened.close()
  })
})

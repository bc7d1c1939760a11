/**
 * A home on disk (identity.json, store/, config.json, written in that order) is never given a new
 * key: a directory that lost its config.json, or whose creation stopped part way, is completed
 * with the key and the space it holds; what cannot be completed is refused naming what is
 * missing, and nothing is written.
 */
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { Identity } from '../../src/log/index.js'
import { homePaths, initHome } from '../../src/log/home-directory.js'
import { Memory } from '../../src/memory/index.js'
import { tempDir } from '../helpers/cli-home.js'
import { writeIdentityFile } from '../../src/log/identity-file.js'

describe('a home without config.json', () => {
  it('that lost it reopens with its key, its space and its records', async () => {
    const dir = path.join(await tempDir(), 'home')
    const first = await Memory.open({ path: dir })
    const id = await first.remember({ kind: 'episode', summary: 'kept across the loss' })
    const { author, space } = first
    await first.close()
    const key = await readFile(homePaths(dir).identityFile, 'utf8')
    await rm(homePaths(dir).configFile)
    const again = await Memory.open({ path: dir })
    try {
      expect(again.author).toBe(author)
      expect(again.space).toBe(space)
      expect((await again.get(id))?.summary).toBe('kept across the loss')
      expect(await readFile(homePaths(dir).identityFile, 'utf8')).toBe(key)
      expect(JSON.parse(await readFile(homePaths(dir).configFile, 'utf8'))).toMatchObject({ space, author, role: 'owner' })
    } finally {
      await again.close()
    }
  })

  it('whose creation stopped after the key was written is completed with that key', async () => {
    const dir = path.join(await tempDir(), 'home')
    const identity = Identity.generate()
    await writeIdentityFile(homePaths(dir).identityFile, identity)
    const memory = await Memory.open({ path: dir })
    try {
      expect(memory.author).toBe(identity.author)
    } finally {
      await memory.close()
    }
  })

  it('that is a replica (which has received the genesis) keeps its space and role', async () => {
    const dir = path.join(await tempDir(), 'home')
    const owner = await Memory.open({})
    const replica = await Memory.open({ path: dir, space: owner.space })
    await replica.ingest(await owner.events())
    const author = replica.author
    await replica.close()
    await owner.close()
    await rm(homePaths(dir).configFile)
    const home = await initHome(dir)
    try {
      expect(home.config).toEqual({ space: owner.space, author, role: 'replica' })
    } finally {
      await home.store.close()
    }
  })

  it('refuses another key, a store without its key and a store of another space, writing nothing', async () => {
    const dir = path.join(await tempDir(), 'home')
    const first = await Memory.open({ path: dir })
    await first.close()
    await rm(homePaths(dir).configFile)
    await expect(Memory.open({ path: dir, identity: Identity.generate() })).rejects.toMatchObject({ code: 'IDENTITY_MISMATCH', where: { file: homePaths(dir).identityFile } })
    await expect(Memory.open({ path: dir, space: 'ab'.repeat(32) })).rejects.toMatchObject({ code: 'INCOMPLETE_HOME', where: { file: dir } })
    await rm(homePaths(dir).identityFile)
    await expect(Memory.open({ path: dir })).rejects.toMatchObject({ code: 'INCOMPLETE_HOME', where: { file: dir } })
    await expect(readFile(homePaths(dir).identityFile)).rejects.toMatchObject({ code: 'ENOENT' })
    await expect(readFile(homePaths(dir).configFile)).rejects.toMatchObject({ code: 'ENOENT' })
  })

  it('refuses a folder holding other files, writing nothing; an empty one becomes a home', async () => {
    const dir = await tempDir()
    await writeFile(path.join(dir, 'notes.md'), 'my project')
    await expect(Memory.open({ path: dir })).rejects.toMatchObject({ code: 'NOT_EMPTY', where: { file: dir } })
    expect(await readdir(dir)).toEqual(['notes.md'])
    const empty = path.join(await tempDir(), 'empty')
    await mkdir(empty)
    const memory = await Memory.open({ path: empty })
    await memory.close()
    expect((await readdir(empty)).sort()).toEqual(['config.json', 'identity.json', 'store'])
    // What a home's own interrupted key write leaves, and a desktop's folder file, do not count.
    const leftovers = path.join(await tempDir(), 'leftovers')
    await mkdir(leftovers)
    await writeFile(path.join(leftovers, 'identity.json.4242.tmp'), '{')
    await writeFile(path.join(leftovers, '.DS_Store'), '')
    await (await Memory.open({ path: leftovers })).close()
  })

  it('refuses a path that is a file, naming it', async () => {
    const file = path.join(await tempDir(), 'plain-file')
    await writeFile(file, 'not a home')
    await expect(Memory.open({ path: file })).rejects.toMatchObject({ code: 'NOT_A_DIRECTORY', where: { file } })
    await expect(Memory.open({ path: path.join(file, 'below') })).rejects.toMatchObject({ code: 'NOT_A_DIRECTORY' })
    expect(await readFile(file, 'utf8')).toBe('not a home')
  })
})

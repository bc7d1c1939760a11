/**
 * The registry and the path reader: source detection from names and content, directories
 * (Claude memory folders, export folders), files not read reported, symlinks not followed, and
 * refusals for unknown or missing sources.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { gzipSync } from 'node:zlib'
import { afterAll, describe, expect, it } from 'vitest'
import { ADAPTERS, SOURCE_NAMES, detectSource, importSource, readSource } from '../../../src/bundle/adapters/index.js'
import { openZip } from '../../../src/bundle/adapters/zip-archive.js'
import { zipArchive } from '../../helpers/zip-writer.js'
import { SAMPLES, asyncRefusal, fixedOptions } from './helpers.js'

const root = mkdtempSync(path.join(tmpdir(), 'cairn-adapters-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

function folder(name: string, files: Record<string, string | Uint8Array>): string {
  const dir = path.join(root, name)
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true })
    writeFileSync(path.join(dir, file), content)
  }
  return dir
}

const text = (relative: string): string => readFileSync(path.join(SAMPLES, relative), 'utf8')

describe('the registry', () => {
  it('has one adapter per source name, each naming itself', () => {
    expect(Object.keys(ADAPTERS).sort()).toEqual([...SOURCE_NAMES].sort())
    for (const name of SOURCE_NAMES) expect(ADAPTERS[name].name).toBe(name)
  })

  it.each([
    ['mem0/list.json', 'mem0'], ['mem0/wrapped.json', 'mem0'], ['openmemory/memories.json', 'openmemory'], ['openmemory/memories.jsonl', 'openmemory'],
    ['chatgpt/conversations.json', 'chatgpt'], ['claude-export/conversations.json', 'claude-export'], ['claude-export/memories.json', 'claude-export'],
    ['claude-memory/MEMORY.md', 'claude-memory'], ['letta/support-bot.af', 'letta'], ['letta/research-buddy.af', 'letta'],
    ['mcp-memory/memory.jsonl', 'mcp-memory'], ['oams/memories.jsonl', 'oams'],
  ])('detects %s as %s', (file, source) => {
    expect(detectSource(path.basename(file), text(file))).toBe(source)
  })

  it('detects engram YAML and transfer text, and guesses nothing for plain JSON', () => {
    expect(detectSource('engrams.yaml', '- id: A\n  statement: x\n')).toBe('engram')
    expect(detectSource('paste.txt', 'anything')).toBe('transfer')
    expect(detectSource('clipboard', 'Here you go:\n[2026-01-01] - Likes tea')).toBe('transfer')
    expect(detectSource('data.json', '{"a": 1}')).toBeUndefined()
  })
})

describe('reading paths', () => {
  it('reads a folder of Claude memory files with relative paths, in order', async () => {
    const dir = path.join(root, 'claude-memory')
    cpSync(path.join(SAMPLES, 'claude-memory'), dir, { recursive: true })
    const read = await readSource(dir)
    expect(read.source).toBe('claude-memory')
    expect(read.files.map((file) => file.path)).toEqual(['CLAUDE.md', 'MEMORY.md', 'topics/empty.md', 'topics/fact_checking.md', 'topics/feedback_testing.md', 'topics/notes.md', 'topics/user_role.md'])
    const result = await importSource(dir, fixedOptions())
    expect(result.source).toBe('claude-memory')
    expect(result.records.map((record) => (record.fields.metadata as Record<string, string>).claude_path)).toContain('topics/user_role.md')
  })

  it('reads a Claude export folder and reports the files it does not import', async () => {
    const dir = folder('claude-export', {
      'conversations.json': text('claude-export/conversations.json'), 'memories.json': text('claude-export/memories.json'), 'users.json': '[]',
    })
    const result = await importSource(dir, fixedOptions())
    expect(result.source).toBe('claude-export')
    expect(result.warnings[0]).toEqual({ code: 'FILE_NOT_READ', message: 'not a claude-export file; not imported', where: { file: 'users.json' } })
    expect(result.records.filter((record) => record.fields.sourceType === 'chat')).toHaveLength(4)
  })

  it('reads an OpenMemory export folder from memories.json, or the gzipped lines alone', async () => {
    const both = folder('openmemory-both', { 'memories.json': text('openmemory/memories.json'), 'memories.jsonl.gz': gzipSync(text('openmemory/memories.jsonl')) })
    expect((await readSource(both)).files.map((file) => file.path)).toEqual(['memories.json'])
    const lines = folder('openmemory-lines', { 'memories.jsonl.gz': gzipSync(text('openmemory/memories.jsonl')) })
    const read = await readSource(lines, { from: 'openmemory' })
    expect(read.files.map((file) => file.path)).toEqual(['memories.jsonl.gz'])
    expect((await importSource(lines, { ...fixedOptions(), from: 'openmemory' })).records).toHaveLength(2)
  })

  it('reads a single file by its base name, with --from overriding detection', async () => {
    const dir = folder('single', { 'notes.md': '- [2026-01-01] - Likes tea\n' })
    const asMemory = await importSource(path.join(dir, 'notes.md'), fixedOptions())
    expect(asMemory.records[0]?.fields.sourceID).toBe('notes.md')
    const asTransfer = await importSource(path.join(dir, 'notes.md'), { ...fixedOptions(), from: 'transfer' })
    expect(asTransfer.records[0]?.fields).toMatchObject({ details: 'Likes tea', eventTime: '2026-01-01T00:00:00Z' })
  })

  it('does not follow symlinks inside a directory, and says so', async () => {
    const dir = folder('links', { 'a.md': 'alpha', 'outside/secret.md': 'not for import' })
    mkdirSync(path.join(dir, 'mem'))
    writeFileSync(path.join(dir, 'mem', 'b.md'), 'beta')
    symlinkSync(path.join(dir, 'outside', 'secret.md'), path.join(dir, 'mem', 'link.md'))
    const read = await readSource(path.join(dir, 'mem'))
    expect(read.files.map((file) => file.path)).toEqual(['b.md'])
    expect(read.warnings).toEqual([{ code: 'SYMLINK_SKIPPED', message: 'symlinks are not followed', where: { file: 'link.md' } }])
  })

  it('refuses a missing path, an unknown source and an unrecognizable file', async () => {
    expect(await asyncRefusal(() => readSource(path.join(root, 'nope')))).toMatchObject({ code: 'NOT_FOUND' })
    expect(await asyncRefusal(() => readSource(root, { from: 'evernote' as never }))).toMatchObject({ code: 'UNKNOWN_SOURCE', where: { flag: '--from' } })
    const dir = folder('unknown', { 'data.bin': new Uint8Array([1, 2, 3]) })
    expect(await asyncRefusal(() => readSource(path.join(dir, 'data.bin')))).toMatchObject({ code: 'UNKNOWN_SOURCE' })
    expect(await asyncRefusal(() => readSource(dir, { from: 'letta' }))).toMatchObject({ code: 'NO_FILES' })
  })

  it('passes adapter errors through with the file named, returning nothing', async () => {
    const dir = folder('broken', { 'memory.jsonl': '{"type":"entity","name":"a"}\n{"type":' })
    expect(await asyncRefusal(() => importSource(dir, fixedOptions()))).toMatchObject({ code: 'BAD_JSON', where: { file: 'memory.jsonl', line: 2 } })
  })
})

describe('zip archives (exports as downloaded)', () => {
  const conversations = (): string => text('chatgpt/conversations.json')
  const archive = (name: string, entries: Parameters<typeof zipArchive>[0]): string => {
    const file = path.join(root, name)
    writeFileSync(file, zipArchive(entries))
    return file
  }

  it('imports a zipped ChatGPT export as the unpacked folder, detecting the source, and reports what it does not read', async () => {
    const entries = [
      { name: 'conversations.json', data: conversations(), deflate: true },
      { name: 'user.json', data: '{"id":"user-1"}' },
      { name: 'file-abc.png', data: new Uint8Array(300).fill(7), deflate: true },
    ]
    const zipped = await importSource(archive('chatgpt-export.zip', entries), fixedOptions())
    const unpacked = await importSource(folder('chatgpt-unpacked', Object.fromEntries(entries.map((entry) => [entry.name, entry.data]))), fixedOptions())
    expect(zipped.source).toBe('chatgpt')
    expect(zipped.records).toEqual(unpacked.records)
    expect(zipped.records.length).toBeGreaterThan(0)
    expect(zipped.warnings.filter((warning) => warning.code === 'FILE_NOT_READ').map((warning) => warning.where.file)).toEqual(['file-abc.png', 'user.json'])
  })

  it('imports a newer ChatGPT export whose conversations come in parts (conversations-000.json, …) as the whole file', async () => {
    const [first, ...rest] = JSON.parse(conversations()) as unknown[]
    const parts = [
      { name: 'conversations-000.json', data: JSON.stringify([first]), deflate: true },
      { name: 'conversations-001.json', data: JSON.stringify(rest), deflate: true },
      { name: 'export_manifest.json', data: '{"files":[]}' },
    ]
    const split = await importSource(archive('chatgpt-parts.zip', parts), fixedOptions())
    const whole = await importSource(folder('chatgpt-whole', { 'conversations.json': conversations() }), fixedOptions())
    expect(split.source).toBe('chatgpt')
    expect(split.records).toEqual(whole.records)
    expect(split.warnings.filter((warning) => warning.code === 'FILE_NOT_READ').map((warning) => warning.where.file)).toEqual(['export_manifest.json'])
  })

  it('reads an export nested in a folder inside the archive, with --from', async () => {
    const read = await readSource(archive('nested.zip', [{ name: 'export/conversations.json', data: conversations() }]), { from: 'chatgpt' })
    expect(read.files.map((file) => file.path)).toEqual(['export/conversations.json'])
  })

  it.each([
    ['an entry that climbs out', '../conversations.json'],
    ['an absolute entry', '/etc/conversations.json'],
    ['a backslashed entry', 'export\\conversations.json'],
  ])('refuses %s, naming the archive', async (_what, name) => {
    const file = archive(`unsafe-${name.length}.zip`, [{ name, data: conversations() }])
    const error = await asyncRefusal(() => readSource(file, { from: 'chatgpt' }))
    expect([error.code, error.where.file]).toEqual(['BAD_ARCHIVE', path.basename(file)])
  })

  it('refuses an entry that inflates past the size its header claims, naming the entry', async () => {
    const file = archive('lying.zip', [{ name: 'conversations.json', data: conversations(), deflate: true, declaredSize: 10 }])
    const error = await asyncRefusal(() => readSource(file, { from: 'chatgpt' }))
    expect([error.code, error.where.file]).toEqual(['BAD_ARCHIVE', 'lying.zip:conversations.json'])
  })

  it('refuses an entry whose size is over the import limit before inflating it', async () => {
    const file = archive('huge.zip', [{ name: 'conversations.json', data: '[]', deflate: true, declaredSize: 300 * 1024 * 1024 }])
    const error = await asyncRefusal(() => readSource(file, { from: 'chatgpt' }))
    expect([error.code, error.where.file]).toEqual(['FILE_TOO_LARGE', 'huge.zip:conversations.json'])
  })

  it('refuses files that add up to more than an import reads, however small the archive', async () => {
    const big = '[' + ' '.repeat(200_000) + ']'
    const file = archive('adds-up.zip', [0, 1, 2].map((i) => ({ name: `d${i}/conversations.json`, data: big, deflate: true })))
    expect((await readSource(file, { from: 'chatgpt', maxTotalBytes: 1_000_000 })).files).toHaveLength(3)
    const error = await asyncRefusal(() => readSource(file, { from: 'chatgpt', maxTotalBytes: 500_000 }))
    expect([error.code, error.where.file]).toEqual(['SOURCE_TOO_LARGE', 'adds-up.zip'])
  })

  it('refuses an archive with two entries of one name, naming it', async () => {
    const file = archive('twice.zip', [{ name: 'conversations.json', data: conversations() }, { name: 'conversations.json', data: '[]' }])
    const error = await asyncRefusal(() => readSource(file, { from: 'chatgpt' }))
    expect([error.code, error.where.file]).toEqual(['BAD_ARCHIVE', 'twice.zip:conversations.json'])
  })

  it('refuses an encrypted entry, naming it', async () => {
    const file = archive('locked.zip', [{ name: 'conversations.json', data: conversations(), deflate: true, encrypted: true }])
    const error = await asyncRefusal(() => readSource(file, { from: 'chatgpt' }))
    expect([error.code, error.where.file]).toEqual(['ENCRYPTED_ENTRY', 'locked.zip:conversations.json'])
  })

  it('follows a symlink to an archive, and says an empty archive holds nothing to import', async () => {
    const target = archive('linked.zip', [{ name: 'conversations.json', data: conversations() }])
    const link = path.join(root, 'link.zip')
    symlinkSync(target, link)
    expect((await readSource(link, { from: 'chatgpt' })).files.map((file) => file.path)).toEqual(['conversations.json'])
    const empty = archive('empty.zip', [])
    expect((await asyncRefusal(() => readSource(empty, { from: 'chatgpt' }))).code).toBe('NO_FILES')
    expect((await asyncRefusal(() => readSource(empty))).code).toBe('UNKNOWN_SOURCE')
  })

  it('peeks at the start of an entry without inflating the rest, lists at most the files allowed, and closes', async () => {
    const large = Buffer.alloc(300_000, 0x61)
    const file = archive('peek.zip', [{ name: 'a.txt', data: large, deflate: true }, { name: 'b.txt', data: 'b' }, { name: 'c.txt', data: 'c' }])
    const zip = await openZip(file, 'peek.zip', 10)
    expect(await zip.peek('a.txt', 16)).toEqual(new Uint8Array(16).fill(0x61))
    expect((await zip.read('a.txt')).length).toBe(300_000)
    await zip.close()
    await expect(zip.read('b.txt')).rejects.toThrow()
    const error = await asyncRefusal(() => openZip(file, 'peek.zip', 2))
    expect([error.code, error.where.file]).toEqual(['TOO_MANY_FILES', 'peek.zip'])
  })

  it('refuses a truncated archive, naming it', async () => {
    const whole = zipArchive([{ name: 'conversations.json', data: conversations(), deflate: true }])
    const file = path.join(root, 'truncated.zip')
    writeFileSync(file, whole.subarray(0, whole.length - 30))
    const error = await asyncRefusal(() => readSource(file, { from: 'chatgpt' }))
    expect([error.code, error.where.file]).toEqual(['BAD_ARCHIVE', 'truncated.zip'])
  })
})


/**
 * The memory commands of `cairn` (remember, get, query, search, forget, history) against homes
 * made by `cairn init`: what they print for people and with --json, the filters and
 * pagination, forgetting that erases, reads as of a recorded time, and the exit codes (0 ok,
 * 1 failure, 2 bad usage) with one-line errors naming the flag.
 *
 * Most runs go through `runCli` in-process (the entry point's whole path but the process
 * adapter, and ten times faster than spawning tsx); a few run the real executable to show the
 * exit codes and output reach the process the same way.
 */
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { runCliInProcess } from '../helpers/cli-process.js'
import { Memory } from '../../src/index.js'
import { tempDir } from '../helpers/cli-home.js'
import { runCli, type ProcessResult } from '../helpers/run-cli.js'

type Json = Record<string, unknown>

interface HistoryJson {
  id: string
  events: { event: string; local: number; type: string; op?: string; author: string; recordedAt: number; bodyState: string }[]
}

/** Runs `cairn <args>` in this process, collecting what it writes. */
const run = (args: readonly string[]): Promise<ProcessResult> => runCliInProcess(args)

async function newHome(): Promise<string> {
  const dir = path.join(await tempDir(), 'home')
  expect((await run(['init', '--dir', dir])).code).toBe(0)
  return dir
}

/** Runs `cairn <args> --dir <dir>` and expects exit 0 with nothing on stderr. */
async function cairn(dir: string, ...args: string[]): Promise<string> {
  const result = await run([...args, '--dir', dir])
  expect(result.stderr).toBe('')
  expect(result.code).toBe(0)
  return result.stdout
}

async function cairnJson<T = Json>(dir: string, ...args: string[]): Promise<T> {
  return JSON.parse(await cairn(dir, ...args, '--json')) as T
}

/** Exactly one stderr line, `cairn: CODE: …`, no stack, nothing on stdout. */
function expectOneLineError(result: ProcessResult, exitCode: number, code: string): string {
  expect(result.code).toBe(exitCode)
  const lines = result.stderr.split('\n').filter((line) => line.length > 0)
  expect(lines).toHaveLength(1)
  expect(lines[0]).toMatch(new RegExp(`^cairn: ${code}: `))
  expect(result.stderr).not.toMatch(/\n\s+at /)
  expect(result.stdout).toBe('')
  return lines[0] as string
}

async function ids(dir: string, ...args: string[]): Promise<string[]> {
  return (await cairnJson<{ records: Json[] }>(dir, 'query', ...args)).records.map((record) => record.id as string)
}

/** One home with records of several kinds, written through `cairn remember`. */
interface Fixture {
  dir: string
  tea: string
  blackTea: string
  peanuts: string
  drink: string
  human: string
  sam: string
  fact: string
}

async function rememberFixture(): Promise<Fixture> {
  const dir = await newHome()
  const remember = async (...args: string[]) => (await cairnJson<{ id: string }>(dir, 'remember', ...args)).id
  const tea = await remember('Sam prefers green tea in the morning', '--tag', 'drinks', '--tag', 'morning', '--context', 'ctx_home')
  const blackTea = await remember('Sam drinks black tea after lunch', '--tag', 'drinks', '--field', 'confidence=0.9')
  const peanuts = await remember('Sam', 'is', 'allergic', 'to', 'peanuts', '-t', 'health')
  const drink = await remember('--kind', 'preference', '--field', 'key=drink', '--field', 'value=tea')
  const human = await remember('--kind', 'core', '--field', 'id=human', 'Name: Sam.')
  const sam = await remember('--kind', 'entity', '--data', '{"type":"person","canonicalName":"Sam","aliases":["Sammy"]}')
  const fact = await remember('--kind', 'fact', '--data', JSON.stringify({ episodeID: tea, subject: sam, predicate: 'prefers', object: 'green tea' }), '--field', 'confidence=0.95')
  return { dir, tea, blackTea, peanuts, drink, human, sam, fact }
}

// One home with records of several kinds, shared by the read-only tests below.
let f: Fixture
beforeAll(async () => {
  f = await rememberFixture()
})

describe('cairn remember and get', () => {
  it('prints just the new id, which get then shows as aligned field lines (run as a real process)', async () => {
    const dir = await newHome()
    const remembered = await runCli(['remember', 'Meeting moved to Friday', '--dir', dir])
    expect(remembered).toMatchObject({ code: 0, stderr: '' })
    const id = remembered.stdout
    expect(id).toMatch(/^ep_[0-9a-f]{16}\n$/)
    const shown = await runCli(['get', id.trim(), '--dir', dir])
    expect(shown).toMatchObject({ code: 0, stderr: '' })
    const lines = shown.stdout.trimEnd().split('\n')
    expect(lines[0]).toMatch(/^kind +episode$/)
    expect(lines[1]).toBe(`id${' '.repeat((lines[0]?.indexOf('episode') as number) - 2)}${id.trim()}`)
    expect(lines).toContainEqual(expect.stringMatching(/^summary +Meeting moved to Friday$/))
    expect(lines).toContainEqual(expect.stringMatching(/^details +Meeting moved to Friday$/))
    // Every value starts in the same column.
    const column = (line: string) => /^\S+ +/.exec(line)?.[0].length
    expect(new Set(lines.map(column)).size).toBe(1)
  })

  it('stores each kind with the fields given by text, --field (JSON when it parses), --data, --tag and --context', async () => {
    expect(await cairnJson(f.dir, 'get', f.tea)).toMatchObject({
      kind: 'episode', id: f.tea, details: 'Sam prefers green tea in the morning', summary: 'Sam prefers green tea in the morning',
      tags: ['drinks', 'morning'], contextID: 'ctx_home', confidence: 0.7,
    })
    expect(await cairnJson(f.dir, 'get', f.blackTea)).toMatchObject({ confidence: 0.9, tags: ['drinks'] })
    expect(await cairnJson(f.dir, 'get', f.peanuts)).toMatchObject({ details: 'Sam is allergic to peanuts', tags: ['health'] })
    expect(await cairnJson(f.dir, 'get', f.drink)).toEqual({ kind: 'preference', id: f.drink, key: 'drink', value: 'tea' })
    expect(f.human).toBe('human')
    expect(await cairnJson(f.dir, 'get', 'human')).toMatchObject({ kind: 'core', id: 'human', content: 'Name: Sam.' })
    expect(await cairnJson(f.dir, 'get', f.sam)).toMatchObject({ kind: 'entity', canonicalName: 'Sam', aliases: ['Sammy'], type: 'person' })
    expect(await cairnJson(f.dir, 'get', f.fact)).toMatchObject({ kind: 'fact', subject: f.sam, object: 'green tea', confidence: 0.95, episodeID: f.tea })
  })

  it('prints with --json exactly the record the library reads', async () => {
    const printed = await cairnJson(f.dir, 'get', f.fact)
    const memory = await Memory.open({ path: f.dir })
    try {
      expect(printed).toEqual(await memory.get(f.fact))
    } finally {
      await memory.close()
    }
  })

  it('prints multi-line text under its value column', async () => {
    const dir = await newHome()
    await cairn(dir, 'remember', '--kind', 'core', '--field', 'id=persona', 'Helpful.\nBrief.')
    expect(await cairn(dir, 'get', 'persona')).toMatch(/^content +Helpful\.\n {12}Brief\.$/m)
  })

  it('prints what a record holds with terminal escapes shown as \\u escapes, keeping its lines and tabs; --json stays exact', async () => {
    const dir = await newHome()
    const text = 'Red \u001b[31malert\u001b]0;title\u0007\nnext\tline\r\u009b2J \u202eevil'
    const id = (await cairnJson<{ id: string }>(dir, 'remember', text, '--data', JSON.stringify({ 'note\u001b[1m': 'x\u001by' }))).id
    const shown = await cairn(dir, 'get', id)
    expect(shown).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e]/)
    expect(shown).toMatch(/^details +Red \\u001b\[31malert\\u001b\]0;title\\u0007\n {8,}next\tline\\u000d\\u009b2J \\u202eevil$/m)
    expect(shown).toMatch(/^note\\u001b\[1m +x\\u001by$/m)
    const column = (line: string) => /^\S+ +/.exec(line)?.[0].length
    expect(new Set(shown.trimEnd().split('\n').filter((line) => !line.startsWith(' ')).map(column)).size).toBe(1)
    for (const args of [['query'], ['history', id]]) expect(await cairn(dir, ...args)).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e]/)
    expect(await cairn(dir, 'query')).toContain('Red \\u001b[31malert')
    expect(await cairnJson(dir, 'get', id)).toMatchObject({ details: text, 'note\u001b[1m': 'x\u001by' })
  })

  it('creates a home where there is none, saying so on stderr', async () => {
    const dir = path.join(await tempDir(), 'fresh')
    const result = await run(['remember', 'first note', '--dir', dir])
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^ep_[0-9a-f]{16}\n$/)
    expect(result.stderr).toMatch(new RegExp(`^cairn: note: created a new Cairn home in ${dir} \\(space [0-9a-f]{64}\\)\n$`))
    expect(await cairn(dir, 'get', result.stdout.trim())).toMatch(/^summary +first note$/m)
  })

  it('creates no home when the record is refused where there was none', async () => {
    const dir = path.join(await tempDir(), 'typo')
    const refused = await run(['remember', 'x', '--field', 'confidence=abc', '--dir', dir])
    expect(expectOneLineError(refused, 2, 'WRONG_TYPE')).toContain('(field episode.confidence)')
    expect(existsSync(dir)).toBe(false)
    const missing = await run(['remember', '--kind', 'fact', '--field', 'subject=Sam', '--dir', dir])
    expect(expectOneLineError(missing, 2, 'MISSING_FIELD')).toContain('(field fact.')
    expect(existsSync(dir)).toBe(false)
    const ended = await run(['remember', '--kind', 'edge', '--field', 'srcEntityID=ent_a', '--field', 'dstEntityID=ent_b', '--field', 'edgeType=knows', '--field', 'tValidTo=2000-01-01T00:00:00Z', '--dir', dir])
    expect(expectOneLineError(ended, 2, 'OUT_OF_RANGE')).toContain('(field edge.tValidTo)')
    expect(existsSync(dir)).toBe(false)
    // Too large for one event: measured before the home is made too.
    const huge = await run(['remember', 'x'.repeat(1_200_000), '--dir', dir])
    expect(expectOneLineError(huge, 1, 'BODY_TOO_LARGE')).toContain('(field episode.')
    expect(existsSync(dir)).toBe(false)
  })
})

describe('cairn query', () => {
  it('filters by kind, tags, context, entity and confidence', async () => {
    const sorted = (list: string[]) => [...list].sort()
    expect(sorted(await ids(f.dir, '--kind', 'episode'))).toEqual(sorted([f.tea, f.blackTea, f.peanuts]))
    expect(sorted(await ids(f.dir, '--kind', 'fact', '--kind', 'preference'))).toEqual(sorted([f.fact, f.drink]))
    expect(sorted(await ids(f.dir, '--tag', 'drinks'))).toEqual(sorted([f.tea, f.blackTea]))
    expect(await ids(f.dir, '--tag', 'drinks', '--tag', 'morning')).toEqual([f.tea])
    expect(sorted(await ids(f.dir, '--any-tag', 'health', '--any-tag', 'morning'))).toEqual(sorted([f.tea, f.peanuts]))
    expect(await ids(f.dir, '--kind', 'episode', '--no-tag', 'drinks')).toEqual([f.peanuts])
    expect(await ids(f.dir, '--context', 'ctx_home')).toEqual([f.tea])
    expect(await ids(f.dir, '--entity', f.sam)).toEqual([f.fact])
    expect(sorted(await ids(f.dir, '--min-confidence', '0.9'))).toEqual(sorted([f.blackTea, f.fact]))
    for (const decimal of ['.9', '9e-1', '+0.90']) expect(sorted(await ids(f.dir, '--min-confidence', decimal))).toEqual(sorted([f.blackTea, f.fact]))
    expect(await ids(f.dir, '--kind', 'edge')).toEqual([])
  })

  it('pages with --limit and --cursor: the pages hold every record once, in the unpaged order', async () => {
    const all = await ids(f.dir)
    expect(all).toHaveLength(7)
    const paged: string[] = []
    let cursor: string | null = null
    for (let page = 0; page < 10; page++) {
      const result: { records: Json[]; cursor: string | null } = await cairnJson(f.dir, 'query', '--limit', '3', ...(cursor === null ? [] : ['--cursor', cursor]))
      expect(result.records.length).toBeLessThanOrEqual(3)
      paged.push(...result.records.map((record) => record.id as string))
      cursor = result.cursor
      if (cursor === null) break
    }
    expect(cursor).toBeNull()
    expect(paged).toEqual(all)
  })

  it('prints a table and the cursor that continues it', async () => {
    const first = (await cairn(f.dir, 'query', '--limit', '5')).trimEnd().split('\n')
    expect(first[0]).toMatch(/^id +kind +summary$/)
    expect(first).toHaveLength(1 + 5 + 1)
    const cursor = /^more: --cursor (\S+)$/.exec(first[6] as string)?.[1]
    expect(cursor).toBeDefined()
    const rest = (await cairn(f.dir, 'query', '--limit', '5', '--cursor', cursor as string)).trimEnd().split('\n')
    expect(rest).toHaveLength(1 + 2)
    const rows = [...first.slice(1, 6), ...rest.slice(1)]
    expect(rows.map((line) => line.split(/ +/)[0])).toEqual(await ids(f.dir))
    expect(rows).toContainEqual(expect.stringMatching(new RegExp(`^${f.drink} +preference +drink = tea$`)))
    expect(rows).toContainEqual(expect.stringMatching(/^human +core +Name: Sam\.$/))
    expect(rows).toContainEqual(expect.stringMatching(new RegExp(`^${f.sam} +entity +Sam$`)))
    expect(await cairn(f.dir, 'query', '--kind', 'edge')).toBe('(no records match)\n')
  })
})

describe('cairn search', () => {
  it('ranks the records that match more of the words first, with scores best first', async () => {
    const { results } = await cairnJson<{ results: { record: Json; score: number }[] }>(f.dir, 'search', 'green', 'tea')
    const found = results.map((result) => result.record.id)
    expect(new Set(found.slice(0, 2))).toEqual(new Set([f.tea, f.fact]))
    expect(found).toContain(f.blackTea)
    expect(found).not.toContain(f.peanuts)
    const scores = results.map((result) => result.score)
    expect(scores).toEqual([...scores].sort((a, b) => b - a))
    expect(scores[1]).toBeGreaterThan(scores[found.indexOf(f.blackTea)] as number)
  })

  it('takes the query filters and --limit, and prints rank, score, id, kind and summary', async () => {
    const lines = (await cairn(f.dir, 'search', 'tea', '--kind', 'episode', '--limit', '1')).trimEnd().split('\n')
    expect(lines[0]).toMatch(/^# +score +id +kind +summary$/)
    expect(lines).toHaveLength(2)
    expect(lines[1]).toMatch(/^1 +\d+\.\d{3} +ep_[0-9a-f]{16} +episode +Sam .*tea/)
    expect(await cairn(f.dir, 'search', 'peanuts', '--tag', 'drinks')).toBe('(no matches)\n')
  })
})

describe('cairn forget and history', () => {
  it('forgets for good: get fails with FORGOTTEN, search no longer finds it, its create event body is erased', async () => {
    const dir = await newHome()
    const remember = async (...args: string[]) => (await cairn(dir, 'remember', ...args)).trim()
    const tea = await remember('Sam prefers green tea')
    const blackTea = await remember('Sam drinks black tea')
    const fact = await remember('--kind', 'fact', '--data', JSON.stringify({ episodeID: tea, subject: 'Sam', predicate: 'prefers', object: 'green tea' }))
    const before = await cairnJson<HistoryJson>(dir, 'history', tea)
    expect(before.events.map((event) => event.op)).toEqual(['memory.create'])
    const created = before.events[0]?.event as string
    const text = await cairn(dir, 'forget', tea, '--reason', 'wrong person')
    // The fact extracted from the episode goes with it (proof of reach).
    expect(text).toMatch(new RegExp(`^forgot ${tea} \\(episode\\)\ntombstone +tomb_[0-9a-f]{16}, signed by [0-9a-f]{12}… at \\S+Z\nderived +1 fact removed with it\nreason +wrong person\n$`))
    expect(expectOneLineError(await run(['get', tea, '--dir', dir]), 1, 'FORGOTTEN')).toContain(tea)
    expectOneLineError(await run(['get', fact, '--dir', dir]), 1, 'FORGOTTEN')
    const found = (await cairnJson<{ results: { record: Json }[] }>(dir, 'search', 'green tea')).results.map((result) => result.record.id)
    expect(found).toEqual([blackTea])
    const after = await cairnJson<HistoryJson>(dir, 'history', tea)
    expect(after.events.map((event) => [event.type, event.op])).toEqual([['tombstone', 'memory.delete']])
    const log = (await cairn(dir, 'log', '--json')).trimEnd().split('\n').map((line) => JSON.parse(line) as Json)
    expect(log.find((event) => event.id === created)).toMatchObject({ bodyState: 'erased', body: null })
    expectOneLineError(await run(['forget', tea, '--dir', dir]), 1, 'FORGOTTEN')
    expectOneLineError(await run(['remember', '--field', `id=${tea}`, 'back again', '--dir', dir]), 1, 'FORGOTTEN')
  })

  it('expire forgets what has expired, with --json listing the ids, and nothing the second time', async () => {
    const dir = await newHome()
    const memory = await Memory.open({ path: dir })
    let gone: string
    try {
      gone = await memory.remember({ kind: 'episode', summary: 'a scratch note', expirationDate: '2020-01-01T00:00:00Z' })
      await memory.remember({ kind: 'episode', summary: 'a note to keep' })
    } finally {
      await memory.close()
    }
    expect(await cairn(dir, 'expire')).toBe(`expired 1 record\n  ${gone}\n`)
    expect(await cairnJson(dir, 'expire')).toEqual({ expired: [] })
    expectOneLineError(await run(['get', gone, '--dir', dir]), 1, 'FORGOTTEN')
    expectOneLineError(await run(['expire', 'extra', '--dir', dir]), 2, 'UNEXPECTED_ARGUMENT')
  })

  it('prints the signed tombstone with --json', async () => {
    const dir = await newHome()
    const id = (await cairn(dir, 'remember', 'to be forgotten')).trim()
    const { author } = JSON.parse(await readFile(path.join(dir, 'config.json'), 'utf8')) as { author: string }
    const tombstone = await cairnJson(dir, 'forget', id)
    expect(tombstone).toMatchObject({ op: 'delete', targetKind: 'episode', targetID: id, actor: author, derived: { factIDs: [], edgeIDs: [] } })
    expect(tombstone.id).toMatch(/^tomb_[0-9a-f]{16}$/)
    expect(tombstone.signature).toMatch(new RegExp(`^ed25519:${author}:[0-9a-f]{128}$`))
    expect(tombstone).not.toHaveProperty('reason')
  })

  it('lists create and later events with position, op, author, time and body state', async () => {
    const dir = await newHome()
    const id = (await cairn(dir, 'remember', 'first version')).trim()
    const memory = await Memory.open({ path: dir })
    try {
      await memory.update(id, { set: { summary: 'second version' } })
    } finally {
      await memory.close()
    }
    const rows = (await cairn(dir, 'history', id)).trimEnd().split('\n')
    expect(rows[0]).toMatch(/^# +op +author +recorded +body +event$/)
    expect(rows[1]).toMatch(/^2 +memory\.create +[0-9a-f]{12}… \(me\) +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z +present +[0-9a-f]{12}…$/)
    expect(rows[2]).toMatch(/^3 +memory\.patch +[0-9a-f]{12}… \(me\) +\S+ +present +[0-9a-f]{12}…$/)
    expect(rows).toHaveLength(3)
  })
})

describe('--as-of reads what the replica showed at a recorded time', () => {
  it('shows the earlier value after an update made through the library', async () => {
    const dir = await newHome()
    const id = (await cairn(dir, 'remember', 'Sam drinks coffee', '--tag', 'drinks')).trim()
    // Recorded times are milliseconds; make sure the update lands in a later one.
    await new Promise((resolve) => setTimeout(resolve, 5))
    const memory = await Memory.open({ path: dir })
    try {
      await memory.update(id, { set: { summary: 'Sam drinks tea' } })
    } finally {
      await memory.close()
    }
    const { events } = await cairnJson<HistoryJson>(dir, 'history', id)
    const [created, patched] = events.map((event) => event.recordedAt) as [number, number]
    expect(patched).toBeGreaterThan(created)
    expect(await cairnJson(dir, 'get', id)).toMatchObject({ summary: 'Sam drinks tea' })
    expect(await cairnJson(dir, 'get', id, '--as-of', String(created))).toMatchObject({ summary: 'Sam drinks coffee' })
    expect(await cairnJson(dir, 'get', id, '--as-of', new Date(created).toISOString())).toMatchObject({ summary: 'Sam drinks coffee' })
    expect(await cairnJson(dir, 'get', id, '--as-of', String(patched))).toMatchObject({ summary: 'Sam drinks tea' })
    expect(await cairn(dir, 'get', id, '--as-of', String(created))).toMatch(/^summary +Sam drinks coffee$/m)
    const page = await cairnJson<{ records: Json[] }>(dir, 'query', '--tag', 'drinks', '--as-of', String(created))
    expect(page.records.map((record) => record.summary)).toEqual(['Sam drinks coffee'])
    expect(expectOneLineError(await run(['get', id, '--as-of', String(created - 1), '--dir', dir]), 1, 'UNKNOWN_RECORD')).toContain('did not exist yet')
  })
})

describe('cairn rebuild', () => {
  it('derives the records again from the log, and says whether they had differed', async () => {
    const dir = await newHome()
    const first = (await cairn(dir, 'remember', 'the kettle is broken')).trim()
    const second = (await cairn(dir, 'remember', 'tea at four')).trim()
    expect(await cairn(dir, 'rebuild')).toMatch(/^rebuilt space [0-9a-f]{12}… from \d+ events: 2 records; the records were already what the log gives \(digest [0-9a-f]{12}…\); indexes rebuilt\n$/)
    // Damage the derived records below the log: the first record's view now holds the second's.
    const memory = await Memory.open({ path: dir })
    const storage = (memory.log as unknown as { storage: { get(key: string): Promise<Uint8Array | undefined>; write(ops: object[]): Promise<void> } }).storage
    const viewKey = (id: string): string => `${memory.space}:q:v:${id}`
    const secondView = await storage.get(viewKey(second))
    expect(secondView).toBeDefined()
    await storage.write([{ type: 'put', key: viewKey(first), value: secondView }])
    await memory.close()
    expect(await cairn(dir, 'get', first)).toContain('tea at four')
    const report = await cairnJson<{ changed: boolean; records: number; events: number; digestBefore: string; digestAfter: string }>(dir, 'rebuild')
    expect(report).toMatchObject({ changed: true, records: 2 })
    expect(report.digestAfter).not.toBe(report.digestBefore)
    expect(await cairn(dir, 'get', first)).toContain('the kettle is broken')
    expect((await cairnJson<{ changed: boolean }>(dir, 'rebuild')).changed).toBe(false)
  })

  it('refuses a directory that is not a home, naming it', async () => {
    const result = await run(['rebuild', '--dir', path.join(await tempDir(), 'nothing-here')])
    expect(result.code).not.toBe(0)
    expect(result.stderr).toMatch(/^cairn: [A-Z_]+: /)
  })
})

describe('failures', () => {
  let dir: string
  let record: string
  beforeAll(async () => {
    dir = await newHome()
    record = (await cairn(dir, 'remember', 'a record')).trim()
  })

  it('exits 1 with UNKNOWN_RECORD for an id this replica does not hold', async () => {
    for (const command of ['get', 'forget', 'history']) {
      expect(expectOneLineError(await run([command, 'ep_0000000000000000', '--dir', dir]), 1, 'UNKNOWN_RECORD')).toContain('ep_0000000000000000')
    }
  })

  it('refuses with NOT_INITIALIZED, creating nothing, where there is no home (except remember)', async () => {
    const missing = path.join(await tempDir(), 'nowhere')
    for (const args of [['get', record], ['query'], ['search', 'x'], ['forget', record], ['history', record]]) {
      expect(expectOneLineError(await run([...args, '--dir', missing]), 1, 'NOT_INITIALIZED')).toContain(missing)
    }
    expect(existsSync(missing)).toBe(false)
  })

  const usage: { args: string[]; code: string; names: string }[] = [
    { args: ['get'], code: 'MISSING_ARGUMENT', names: '<id>' },
    { args: ['get', 'a', 'b'], code: 'UNEXPECTED_ARGUMENT', names: '"b"' },
    { args: ['get', 'a', '--as-of', 'soon'], code: 'BAD_TIMESTAMP', names: '(flag --as-of)' },
    { args: ['query', '--limit', '0'], code: 'BAD_FLAG_VALUE', names: '(flag --limit)' },
    { args: ['query', '--limit', '5000'], code: 'OUT_OF_RANGE', names: '(flag --limit)' },
    { args: ['query', '--kind', 'bogus'], code: 'UNKNOWN_KIND', names: '(flag --kind)' },
    { args: ['query', '--min-confidence', 'high'], code: 'BAD_FLAG_VALUE', names: '(flag --min-confidence)' },
    { args: ['query', '--min-confidence', '0x10'], code: 'BAD_FLAG_VALUE', names: 'expected a decimal number, got "0x10"' },
    { args: ['query', '--min-confidence', '0b1'], code: 'BAD_FLAG_VALUE', names: 'expected a decimal number, got "0b1"' },
    { args: ['query', '--min-confidence', '0o1'], code: 'BAD_FLAG_VALUE', names: 'expected a decimal number, got "0o1"' },
    { args: ['query', '--min-confidence', ' 0.5'], code: 'BAD_FLAG_VALUE', names: 'expected a decimal number, got " 0.5"' },
    { args: ['query', '--min-confidence', '1e400'], code: 'BAD_FLAG_VALUE', names: 'expected a decimal number, got "1e400"' },
    { args: ['query', '--valid-at', 'yesterday'], code: 'BAD_TIMESTAMP', names: '(flag --valid-at)' },
    { args: ['query', '--tag'], code: 'MISSING_VALUE', names: '(flag --tag)' },
    { args: ['query', 'extra'], code: 'UNEXPECTED_ARGUMENT', names: '"extra"' },
    { args: ['search'], code: 'MISSING_ARGUMENT', names: '<text>' },
    { args: ['search', 'x', '--limit', 'ten'], code: 'BAD_FLAG_VALUE', names: '(flag --limit)' },
    { args: ['forget', 'a', '--reason'], code: 'MISSING_VALUE', names: '(flag --reason)' },
    { args: ['history', 'a', '--frob'], code: 'UNKNOWN_FLAG', names: '(flag --frob)' },
    { args: ['history', 'a', '--json=yes'], code: 'FLAG_TAKES_NO_VALUE', names: '(flag --json)' },
    { args: ['remember', 'x', '--kind', 'episode', '--kind', 'fact'], code: 'REPEATED_FLAG', names: '--kind "episode", then --kind "fact"' },
    { args: ['query', '--limit', '5', '-n', '10'], code: 'REPEATED_FLAG', names: '(flag --limit)' },
    { args: ['remember'], code: 'MISSING_ARGUMENT', names: 'nothing to remember' },
    { args: ['remember', 'x', '--kind', 'nope'], code: 'UNKNOWN_KIND', names: '(flag --kind)' },
    { args: ['remember', '--field', 'novalue'], code: 'BAD_FLAG_VALUE', names: '(flag --field)' },
    { args: ['remember', '--data', '{'], code: 'BAD_JSON', names: '(flag --data)' },
    { args: ['remember', '--data', '[1]'], code: 'WRONG_TYPE', names: '(flag --data)' },
    { args: ['remember', 'text', '--field', 'details=more'], code: 'DUPLICATE_FIELD', names: '<text>' },
    { args: ['remember', '--kind', 'edge', 'some text'], code: 'UNEXPECTED_ARGUMENT', names: 'takes no <text>' },
    { args: ['remember', '--field', 'summary=5'], code: 'WRONG_TYPE', names: '(field episode.summary)' },
    { args: ['remember', '--kind', 'fact', '--field', 'subject=Sam'], code: 'MISSING_FIELD', names: '(field fact.' },
    { args: ['remember', 'x', '--field', 'confidence=high'], code: 'WRONG_TYPE', names: '(field episode.confidence)' },
    {
      args: ['remember', '--kind', 'edge', '--field', 'srcEntityID=ent_a', '--field', 'dstEntityID=ent_b', '--field', 'edgeType=knows', '--field', 'tValidFrom=2025-02-01T00:00:00Z', '--field', 'tValidTo=2025-01-01T00:00:00Z'],
      code: 'OUT_OF_RANGE', names: '(field edge.tValidTo)',
    },
  ]

  it.each(usage)('exits 2 for `cairn $args` with $code naming the offender', async ({ args, code, names }) => {
    expect(expectOneLineError(await run([...args, '--dir', dir]), 2, code)).toContain(names)
  })

  it('stores nothing when remember is refused', async () => {
    // Runs after the table above: tests of a describe run in order.
    expect(await ids(dir)).toEqual([record])
    expect((await cairn(dir, 'log', '--json')).trimEnd().split('\n')).toHaveLength(2)
  })

  it('reaches the process: exit 2 and one line from the real executable', async () => {
    const result = await runCli(['query', '--limit', 'ten', '--dir', dir])
    expect(expectOneLineError(result, 2, 'BAD_FLAG_VALUE')).toContain('(flag --limit)')
  })
})

describe('help', () => {
  it('lists the memory commands and documents their operands and repeatable flags', async () => {
    const overview = await run(['--help'])
    for (const name of ['remember', 'get', 'query', 'search', 'forget', 'history']) expect(overview.stdout).toMatch(new RegExp(`^  ${name} `, 'm'))
    const help = await run(['query', '--bogus', '--help'])
    expect(help).toMatchObject({ code: 0, stderr: '' })
    expect(help.stdout).toMatch(/^usage: cairn query \[--kind K …\]/)
    expect(help.stdout).toMatch(/--tag T +.*\(repeatable\)/)
    expect((await run(['get', '--help'])).stdout).toMatch(/^arguments:\n {2}<id> +the record id$/m)
  })
})

/**
 * The `cairn` CLI and the `npm start` demo, run as real processes: what they print, the files
 * they leave, and the exit codes (0 ok, 1 failure, 2 bad usage) with one-line errors.
 */
import { chmod, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { shortId } from '../../src/index.js'
import { LevelLogStorage } from '../../src/log/level-storage.js'
import { appendEvents, tamperStoredEvent, tempDir } from '../helpers/cli-home.js'
import { runCli, runScript, type ProcessResult } from '../helpers/run-cli.js'
import { runCliInProcess } from '../helpers/cli-process.js'
import { expectOneLineError } from '../helpers/cli-expect.js'

interface Config { space: string; author: string }

/** The shape `cairn log --json` documents for each line. */
interface JsonEvent {
  id: string
  local: number
  recordedAt: number
  header: Record<string, unknown>
  bodyState: string
  body: { op: string; data: unknown; salt: string } | null
  signature: string | null
}

async function readConfig(dir: string): Promise<Config> {
  return JSON.parse(await readFile(path.join(dir, 'config.json'), 'utf8')) as Config
}

/**
 * A home with `count` data events after the genesis, made by `cairn init` run in this process
 * (the same entry point; `cairn init` itself runs as a real process in its own tests below), so
 * only the command under test pays for a child process.
 */
async function initializedHome(count = 0): Promise<{ dir: string; config: Config; ids: string[] }> {
  const dir = path.join(await tempDir(), 'home')
  const result = await runCliInProcess(['init', '--dir', dir])
  expect(result.code).toBe(0)
  return { dir, config: await readConfig(dir), ids: count > 0 ? await appendEvents(dir, count) : [] }
}

describe('cairn init', () => {
  it('creates ./.cairn in the working directory with a private key file and prints the space and author', async () => {
    const cwd = await tempDir()
    const result = await runCli(['init'], { cwd })
    expect(result.code).toBe(0)
    expect(result.stderr).toBe('')
    const dir = path.join(cwd, '.cairn')
    expect(((await stat(path.join(dir, 'identity.json'))).mode & 0o777).toString(8)).toBe('600')
    expect((await stat(path.join(dir, 'store'))).isDirectory()).toBe(true)
    const config = await readConfig(dir)
    expect(result.stdout).toContain(dir)
    expect(result.stdout).toContain(`space   ${config.space}`)
    expect(result.stdout).toContain(`author  ${config.author}`)
  })

  it('resolves --dir against the working directory and prints JSON with --json', async () => {
    const cwd = await tempDir()
    const result = await runCli(['init', '--dir', 'nested/home', '--name', 'work', '--json'], { cwd })
    expect(result.code).toBe(0)
    const dir = path.join(cwd, 'nested/home')
    const { space, author } = await readConfig(dir)
    expect(JSON.parse(result.stdout)).toEqual({ dir, space, author })
    expect(existsSync(path.join(cwd, '.cairn'))).toBe(false)
  })

  it('refuses a second init and leaves the existing key untouched', async () => {
    const { dir } = await initializedHome()
    const key = await readFile(path.join(dir, 'identity.json'), 'utf8')
    const line = expectOneLineError(await runCli(['init', '--dir', dir]), 1, 'ALREADY_INITIALIZED')
    expect(line).toContain(dir)
    expect(await readFile(path.join(dir, 'identity.json'), 'utf8')).toBe(key)
  })
})

describe('cairn log', () => {
  it('prints one row per event in apply order with short ids', async () => {
    const { dir, config, ids } = await initializedHome(4)
    const result = await runCli(['log', '--dir', dir])
    expect(result.code).toBe(0)
    const rows = result.stdout.trimEnd().split('\n')
    expect(rows[0]).toContain('5 events, 1 author')
    expect(rows).toHaveLength(2 + 5)
    expect(rows[2]).toContain(shortId(config.space))
    expect(rows[2]).toContain('space.genesis')
    ids.forEach((id, i) => expect(rows[3 + i]).toContain(shortId(id)))
    expect(rows[3]).toContain('{"text":"note 1"}')
    expect(rows[6]).toContain('memory.fact')
  })

  it('prints JSON Lines with --json: one complete event per line', async () => {
    const { dir, config, ids } = await initializedHome(4)
    const result = await runCli(['log', '--dir', dir, '--json'])
    expect(result.code).toBe(0)
    const events = result.stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as JsonEvent)
    expect(events.map((event) => event.id)).toEqual([config.space, ...ids])
    expect(events.map((event) => event.local)).toEqual([1, 2, 3, 4, 5])
    const second = events[1] as JsonEvent
    expect(second.header).toMatchObject({ v: 1, space: config.space, author: config.author, seq: 2, prev: config.space, kind: 'data' })
    expect(Object.keys(second.header).sort()).toEqual(['author', 'bodyHash', 'bodySize', 'clock', 'deps', 'kind', 'prev', 'seq', 'space', 'v'])
    expect(second.body).toMatchObject({ op: 'memory.note', data: { text: 'note 1' } })
    expect(second.body?.salt).toMatch(/^[0-9a-f]{32}$/)
    expect(second.bodyState).toBe('present')
    expect(second.signature).toMatch(/^[0-9a-f]{128}$/)
    // Genesis and two single appends are signed each; the batch of two only at its newest event.
    expect(events.map((event) => event.signature !== null)).toEqual([true, true, true, false, true])
  })
})

describe('cairn verify', () => {
  it('exits 0 on an intact store', async () => {
    const { dir } = await initializedHome(5)
    const result = await runCli(['verify', '--dir', dir])
    expect(result).toMatchObject({ code: 0, stderr: '' })
    expect(result.stdout).toMatch(/^ok: .*6 events, 1 author, 4 signatures/)
  })

  it('exits 1 naming the first bad event when a stored body was altered', async () => {
    const { dir, config, ids } = await initializedHome(5)
    await tamperStoredEvent(dir, config.space, ids[3] as string, 'body')
    await tamperStoredEvent(dir, config.space, ids[1] as string, 'body')
    const result = await runCli(['verify', '--dir', dir])
    const line = expectOneLineError(result, 1, 'VERIFY_FAILED')
    expect(line).toContain(`first bad event ${ids[1]}: BAD_BODY`)
    // Both altered events are listed; what follows them in the chain may be listed too.
    expect(result.stdout).toMatch(/^FAILED: space \S+: \d+ problems in \d+ events checked\n/)
    expect(result.stdout).not.toContain('passed')
    expect(result.stdout).toMatch(new RegExp(`BAD_BODY: .*event ${shortId(ids[1] as string)}`))
    expect(result.stdout).toMatch(new RegExp(`BAD_BODY: .*event ${shortId(ids[3] as string)}`))
  })

  it('exits 1 naming the event when a stored header was altered, and reports it in --json', async () => {
    const { dir, config, ids } = await initializedHome(3)
    await tamperStoredEvent(dir, config.space, ids[2] as string, 'header')
    const result = await runCli(['verify', '--dir', dir, '--json'])
    expect(expectOneLineError(result, 1, 'VERIFY_FAILED')).toContain(`first bad event ${ids[2]}: BAD_ID`)
    const report = JSON.parse(result.stdout) as { ok: boolean; problems: { code: string; event?: string }[] }
    expect(report.ok).toBe(false)
    expect(report.problems[0]).toMatchObject({ code: 'BAD_ID', event: ids[2] })
  })

  it('with --projection, checks the records and indexes against the log: a changed view exits 1 naming it, until a rebuild', async () => {
    const { dir, config } = await initializedHome()
    const remembered = await runCliInProcess(['remember', '--dir', dir, '--tag', 'drinks', 'the user likes green tea'])
    expect(remembered.code).toBe(0)
    const id = remembered.stdout.trim()
    // A clock that never moves: no progress line, whatever this machine's speed.
    const frozen = { clock: { nowMs: () => 0 } }
    const intact = await runCliInProcess(['verify', '--dir', dir, '--projection'], frozen)
    expect(intact).toMatchObject({ code: 0, stderr: '' })
    // One that moves a second per reading: the derivation reports its progress, to its end.
    let nowMs = 0
    const ticking = await runCliInProcess(['verify', '--dir', dir, '--projection'], { clock: { nowMs: () => (nowMs += 1000) } })
    expect(ticking.stderr.trim().split('\n').at(-1)).toBe('verify: deriving the records again 2/2 events (100%)')
    expect(intact.stdout).toMatch(/^ok: space \S+ verified: 2 events.*\nok: the records and indexes are what the log gives: \d+ keys compared, digest [0-9a-f]{12}…\n$/)

    // Below the log: the record's view says something else, and its tag entry is gone.
    const storage = await LevelLogStorage.openDisk(path.join(dir, 'store'))
    await storage.write([
      { type: 'put', key: `${config.space}:q:v:${id}`, value: new TextEncoder().encode(`{"id":"${id}","kind":"episode","summary":"the user hates tea"}`) },
      { type: 'del', key: `${config.space}:q:t:drinks:${id}` },
    ])
    await storage.close()
    // The log itself still holds: plain verify passes.
    expect((await runCliInProcess(['verify', '--dir', dir])).code).toBe(0)
    const damaged = await runCliInProcess(['verify', '--dir', dir, '--projection'], frozen)
    expect(expectOneLineError(damaged, 1, 'PROJECTION_MISMATCH')).toBe(
      `cairn: PROJECTION_MISMATCH: the records and indexes differ from what the log gives in 2 keys; first: missing t:drinks:${id} (record ${id}); \`cairn rebuild\` derives them again`)
    expect(damaged.stdout).toContain(`FAILED: the records and indexes differ from what the log gives: 2 of `)
    expect(damaged.stdout).toContain(`  changed: v:${id} (record ${id})\n`)
    const json = JSON.parse((await runCliInProcess(['verify', '--dir', dir, '--projection', '--json'], frozen)).stdout) as { ok: boolean; projection: { ok: boolean; differences: number; named: unknown[] } }
    expect(json.ok).toBe(false) // everything checked: the log held, the projection did not
    expect(json.projection).toMatchObject({ ok: false, differences: 2, named: [{ key: `t:drinks:${id}`, change: 'missing', record: id }, { key: `v:${id}`, change: 'changed', record: id }] })

    expect((await runCliInProcess(['rebuild', '--dir', dir])).code).toBe(0)
    expect((await runCliInProcess(['verify', '--dir', dir, '--projection'], frozen)).code).toBe(0)
  })

  it('exits 1 when the store lost the space it was created with, rather than calling it verified', async () => {
    const { dir } = await initializedHome(1)
    await rm(path.join(dir, 'store'), { recursive: true })
    await LevelLogStorage.openDisk(path.join(dir, 'store')).then((storage) => storage.close())
    expect(expectOneLineError(await runCli(['verify', '--dir', dir]), 1, 'CORRUPT_STORE')).toContain('lost the space')
  })

  it('exits 1 when the store directory lost its files, rather than creating a new store', async () => {
    const { dir } = await initializedHome(1)
    await rm(path.join(dir, 'store'), { recursive: true })
    await mkdir(path.join(dir, 'store'))
    expectOneLineError(await runCli(['verify', '--dir', dir]), 1, 'STORE_MISSING')
  })
})

describe.concurrent('bad command lines exit 2 with one line naming the offender', () => {
  const cases: { args: string[]; code: string; names: string }[] = [
    { args: ['log', '--frob'], code: 'UNKNOWN_FLAG', names: '(flag --frob)' },
    { args: ['verify', '-x'], code: 'UNKNOWN_FLAG', names: '(flag -x)' },
    { args: ['log', '--dir'], code: 'MISSING_VALUE', names: '(flag --dir)' },
    { args: ['log', '--dir', '--json'], code: 'MISSING_VALUE', names: '(flag --dir)' },
    { args: ['log', '--json=yes'], code: 'FLAG_TAKES_NO_VALUE', names: '(flag --json)' },
    { args: ['init', '--dir='], code: 'EMPTY_VALUE', names: '(flag --dir)' },
    { args: ['log', '--dir', 'a', '--dir', 'b'], code: 'REPEATED_FLAG', names: '(--dir "a", then --dir "b"); give it once (flag --dir)' },
    { args: ['init', '-d', 'a', '--dir=a'], code: 'REPEATED_FLAG', names: '-d "a", then --dir "a"' },
    // A long value (a token, a path) is quoted cut short, not whole.
    { args: ['log', '--dir', 'x'.repeat(30), '--dir', 'b'], code: 'REPEATED_FLAG', names: `(--dir "${'x'.repeat(24)}…", then --dir "b")` },
    { args: ['log', 'extra'], code: 'UNEXPECTED_ARGUMENT', names: '"extra"' },
    { args: ['frob'], code: 'UNKNOWN_COMMAND', names: 'commands: init, log, verify' },
    { args: ['--json'], code: 'UNKNOWN_FLAG', names: '(flag --json)' },
    { args: [], code: 'MISSING_COMMAND', names: 'commands: init, log, verify' },
  ]
  for (const { args, code, names } of cases) {
    it(`refuses \`cairn ${args.join(' ')}\` with ${code}`, async () => {
      const cwd = await tempDir()
      expect(expectOneLineError(await runCli(args, { cwd }), 2, code)).toContain(names)
      expect(existsSync(path.join(cwd, '.cairn'))).toBe(false)
    })
  }

  it('prints help for `--help` and `<command> --help` and exits 0', async () => {
    const overview = await runCli(['--help'])
    expect(overview).toMatchObject({ code: 0, stderr: '' })
    for (const name of ['init', 'log', 'verify']) expect(overview.stdout).toMatch(new RegExp(`^  ${name} `, 'm'))
    const logHelp = await runCli(['log', '--frob', '--help'])
    expect(logHelp).toMatchObject({ code: 0, stderr: '' })
    expect(logHelp.stdout).toMatch(/^usage: cairn log \[--dir D\] \[--json\]/)
    expect(logHelp.stdout).toContain('JSON Lines')
    // Over a flag given twice as well, as for the commands that take operands (`cairn get`).
    for (const args of [['log', '--dir', 'a', '--dir', 'b', '--help'], ['get', 'x', '--dir', 'a', '--dir', 'b', '--help']]) {
      const repeatedHelp = await runCli(args)
      expect(repeatedHelp, args.join(' ')).toMatchObject({ code: 0, stderr: '' })
      expect(repeatedHelp.stdout).toMatch(new RegExp(`^usage: cairn ${args[0]} `))
    }
  })
})

describe.concurrent('a missing, corrupt or locked store fails with one line and exit 1', () => {
  it('reports NOT_INITIALIZED for a directory that is not a home', async () => {
    const missing = path.join(await tempDir(), 'nonexistent')
    expect(expectOneLineError(await runCli(['log', '--dir', missing]), 1, 'NOT_INITIALIZED')).toContain(missing)
    expect(existsSync(missing)).toBe(false)
  })

  it('reports NOT_A_DIRECTORY for a --dir that is a file, leaving the file alone (init, remember, serve)', async () => {
    const file = path.join(await tempDir(), 'plain-file')
    await writeFile(file, 'not a home')
    for (const args of [['init', '--dir', file], ['remember', '--dir', path.join(file, 'below'), 'a note'], ['serve', '--port', '0', '--dir', file]]) {
      expect(expectOneLineError(await runCliInProcess(args), 1, 'NOT_A_DIRECTORY'), args[0]).toContain(file)
    }
    expect(await readFile(file, 'utf8')).toBe('not a home')
  })

  it('reports BAD_CONFIG for a garbled config.json', async () => {
    const { dir } = await initializedHome()
    await writeFile(path.join(dir, 'config.json'), '{ not json')
    expectOneLineError(await runCli(['log', '--dir', dir]), 1, 'BAD_CONFIG')
  })

  it('reports CORRUPT_STORE when the store directory was replaced by a file', async () => {
    const { dir } = await initializedHome(1)
    await rm(path.join(dir, 'store'), { recursive: true })
    await writeFile(path.join(dir, 'store'), 'not a database')
    expect(expectOneLineError(await runCli(['verify', '--dir', dir]), 1, 'CORRUPT_STORE')).toContain('not a directory')
  })

  it('reports BAD_KEY_FILE for a key file of another type, saying so once and naming the file once', async () => {
    const { dir } = await initializedHome()
    const keyFile = path.join(dir, 'identity.json')
    await writeFile(keyFile, '{"type":"something-else"}', { mode: 0o600 })
    const line = expectOneLineError(await runCli(['log', '--dir', dir]), 1, 'BAD_KEY_FILE')
    expect(line).toBe(`cairn: BAD_KEY_FILE: expected type "cairn-identity" version 1 (${keyFile})`)
    await writeFile(keyFile, '{"type":"cairn-identity","version":1,"publicKey":"zz","seed":"00"}', { mode: 0o600 })
    expect(expectOneLineError(await runCli(['log', '--dir', dir]), 1, 'BAD_KEY_FILE')).toMatch(/^cairn: BAD_KEY_FILE: key file does not decode: .*publicKey/)
  })

  it('reports KEY_FILE_PERMISSIONS for a key file others can read', async () => {
    const { dir } = await initializedHome()
    await chmod(path.join(dir, 'identity.json'), 0o644)
    expectOneLineError(await runCli(['log', '--dir', dir]), 1, 'KEY_FILE_PERMISSIONS')
  })

  it('reports STORE_LOCKED while another process holds the store', async () => {
    const { dir } = await initializedHome(1)
    const storage = await LevelLogStorage.openDisk(path.join(dir, 'store'))
    try {
      expectOneLineError(await runCli(['log', '--dir', dir]), 1, 'STORE_LOCKED')
    } finally {
      await storage.close()
    }
    expect((await runCli(['log', '--dir', dir])).code).toBe(0)
  })

  it('adds the stack trace only when CAIRN_DEBUG=1', async () => {
    const missing = path.join(await tempDir(), 'nonexistent')
    const result = await runCli(['log', '--dir', missing], { env: { CAIRN_DEBUG: '1' } })
    expect(result.code).toBe(1)
    expect(result.stderr).toMatch(/^cairn: NOT_INITIALIZED: .*\n[\s\S]*\n\s+at /)
  })
})

describe('npm start (the demo)', () => {
  it('runs in a temporary directory, shows verification passing, tampering refused, two memory replicas converging, sync through a relay, and cleans up', async () => {
    const result = await runScript('src/demo/start.ts', [])
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    const out = result.stdout
    expect(out).toMatch(/holds 6 events covered by 4 signatures/)
    expect(out).toMatch(/heads .* equal: true/)
    expect(out).toMatch(/vectors .* equal: true/)
    expect(out).toMatch(/alice: ok \(10 events, 2 authors/)
    expect(out).toMatch(/bob: ok \(10 events, 2 authors/)
    expect(out).toMatch(/body byte flipped in event [0-9a-f]{12}…: refused with BAD_BODY: .*\(event [0-9a-f]{64}\)/)
    expect(out).toMatch(/header byte flipped in event [0-9a-f]{12}…: refused with BAD_ID: /)
    expect(out).toMatch(/refused with NOT_AUTHORIZED: /)
    // The memory on two replicas: divergence, convergence, LWW, both text appends, a forget that reaches.
    expect(out).toMatch(/digests laptop [0-9a-f]{12}… phone [0-9a-f]{12}…: differ: true/)
    expect(out).toMatch(/laptop → phone \d+ events?, phone → laptop \d+; digests ([0-9a-f]{12}…) \1: equal: true/)
    expect(out).toMatch(/drink = "(green|black) tea": last writer wins, and the later write \(by clock\) was (laptop|phone)'s/)
    const human = /human = "([^"]*)": both appends kept/.exec(out)?.[1]
    expect(human).toContain('Likes hiking.')
    expect(human).toContain('Works nights.')
    expect(out).toMatch(/laptop's history of it: memory\.delete; its create event [0-9a-f]{12}… now has body erased/)
    expect(out).toMatch(/laptop search "door code": 0 results; digests equal: true/)
    expect(out).toMatch(/^ {2}1\. \d\.\d{3} {2}\S+ +.*tea/m)
    // Sync through a relay on loopback: live convergence, a forget that reaches, a scoped token.
    expect(out).toMatch(/relay ws:\/\/127\.0\.0\.1:\d+ \(key [0-9a-f]{12}…\)/)
    expect(out).toMatch(/one-time syncs, laptop then phone: phone received \d+ events; digests equal: true/)
    expect(out).toMatch(/laptop: editor = "vim"; phone: editor = "helix"; digests differ: true/)
    expect(out).toMatch(/laptop received [1-9]\d*, phone received [1-9]\d*; digests ([0-9a-f]{12}…) \1: equal: true/)
    expect(out).toMatch(/editor = "(vim|helix)" on both \(last writer wins\)/)
    const notes = /notes = "([^"]*)"/.exec(out)?.[1]
    expect(notes).toContain('Laptop: hikes on Sundays.')
    expect(notes).toContain('Phone: works nights.')
    expect(out).toMatch(/get → nothing; history: memory\.delete; create event [0-9a-f]{12}… body erased; digests equal: true/)
    expect(out).toMatch(/it sees 2 records: preference \w+ = \w+, preference \w+ = \w+\n/)
    expect(out).toMatch(/episode ep_[0-9a-f]+: absent; its create event arrived as a signed header only \(body absent\)/)
    expect(out).toMatch(/the relay withheld 1 event of 2 sent: the note stays on the agent \(body at the laptop: absent\); the laptop now has music = "quiet jazz while working"/)
    const root = /on the embedded store in (\S+)/.exec(out)?.[1]
    expect(root).toBeDefined()
    expect(out).toContain(`removed ${root}`)
    expect(existsSync(root as string)).toBe(false)
  })
})

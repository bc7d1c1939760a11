/**
 * The sync commands of `cairn` (serve, sync, token create/inspect/revoke, grant, init --space)
 * against a real relay process on loopback: an owner syncs up, a joined replica with a grant
 * and a token syncs down and writes back, a scoped token sees only its kinds, revoked and
 * forged tokens are refused with one-line errors, a relay stopped by SIGTERM keeps what it
 * stored, and bad command lines exit 2.
 *
 * The relay runs as a real `cairn serve` process (signals and the printed address are part of
 * what is tested); the short commands mostly run in-process, which is the same entry point
 * without the process adapter and much faster than spawning tsx.
 */
import { existsSync } from 'node:fs'
import { readdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { createServer, type AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { canonicalJson, Identity, Memory, tokenSignable } from '../../src/index.js'
import { tempDir } from '../helpers/cli-home.js'
import { freePort, runCliInProcess as run, startCli, type RunningCli } from '../helpers/cli-process.js'
import { runCli, type ProcessResult } from '../helpers/run-cli.js'
import { expectOneLineError } from '../helpers/cli-expect.js'

interface HomeInfo { dir: string; space: string; author: string }
interface RecordJson { id: string; kind: string; [field: string]: unknown }

const RELAY_LINE = /^listening on (ws:\/\/127\.0\.0\.1:(\d+)) \(relay key ([0-9a-f]{64})\)$/m

function ok(result: ProcessResult): ProcessResult {
  if (result.code !== 0) throw new Error(`expected exit 0, got ${result.code}: ${result.stderr}`)
  return result
}

async function newOwner(): Promise<HomeInfo> {
  const dir = path.join(await tempDir(), 'owner')
  return JSON.parse(ok(await run(['init', '--dir', dir, '--json'])).stdout) as HomeInfo
}

/** A new home joining `space` (empty until it syncs). */
async function newReplica(space: string): Promise<HomeInfo> {
  const dir = path.join(await tempDir(), 'replica')
  return JSON.parse(ok(await run(['init', '--dir', dir, '--space', space, '--json'])).stdout) as HomeInfo
}

async function createToken(owner: HomeInfo, audience: string, ...flags: string[]): Promise<{ token: string; id: string; expiresAt: number }> {
  return JSON.parse(ok(await run(['token', 'create', '--audience', audience, '--dir', owner.dir, '--json', ...flags])).stdout) as { token: string; id: string; expiresAt: number }
}

async function records(home: HomeInfo): Promise<RecordJson[]> {
  return (JSON.parse(ok(await run(['query', '--dir', home.dir, '--json'])).stdout) as { records: RecordJson[] }).records
}

function digestOf(result: ProcessResult): string {
  return /^digest ([0-9a-f]{64})$/m.exec(result.stdout)?.[1] ?? ''
}

async function startRelay(dir: string): Promise<{ process: RunningCli; url: string; port: number; key: string }> {
  const relay = startCli(['serve', '--port', '0', '--dir', dir])
  const [, url, port, key] = await relay.waitFor(RELAY_LINE)
  return { process: relay, url: url as string, port: Number(port), key: key as string }
}

describe('cairn sync through cairn serve', () => {
  let relay: Awaited<ReturnType<typeof startRelay>>

  beforeAll(async () => {
    relay = await startRelay(path.join(await tempDir(), 'relay'))
  })
  afterAll(async () => {
    await relay.process.stop()
  })

  it('serve prints one line with the actual port and its key, and nothing else on stdout', () => {
    expect(relay.port).toBeGreaterThan(0)
    expect(relay.process.output.stdout.trim().split('\n')).toHaveLength(1)
  })

  it('an owner syncs up; a joined replica with a grant and a token syncs down, writes, and the owner receives it', async () => {
    const owner = await newOwner()
    const episode = ok(await run(['remember', '--dir', owner.dir, '--tag', 'drinks', 'the user likes green tea'])).stdout.trim()
    const preference = ok(await run(['remember', '--dir', owner.dir, '--kind', 'preference', '--field', 'key=tone', 'direct'])).stdout.trim()
    const replica = await newReplica(owner.space)
    expect(await records(replica)).toEqual([])
    const granted = ok(await run(['grant', replica.author, '--dir', owner.dir]))
    expect(granted.stdout).toContain(`granted write to ${replica.author}`)
    const { token } = await createToken(owner, replica.author, '--permission', 'read,write')

    const up = ok(await run(['sync', relay.url, '--dir', owner.dir]))
    // The genesis (it goes in the handshake), two records and the grant.
    expect(up.stdout).toMatch(/^synced with ws:\/\/127\.0\.0\.1:\d+: sent 4 events, received 0$/m)
    const down = ok(await run(['sync', relay.url, '--token', token, '--dir', replica.dir, '--relay-key', relay.key]))
    expect(down.stdout).toMatch(/: sent 0 events, received [1-9]\d*$/m)
    expect(digestOf(down)).toBe(digestOf(up))
    expect((await records(replica)).map((record) => record.id).sort()).toEqual([episode, preference].sort())

    const written = ok(await run(['remember', '--dir', replica.dir, 'written on the second device'])).stdout.trim()
    ok(await runCli(['sync', relay.url, '--dir', replica.dir], { env: { CAIRN_TOKEN: token } }))
    const back = ok(await run(['sync', relay.url, '--dir', owner.dir, '--json']))
    expect(JSON.parse(back.stdout)).toMatchObject({ url: relay.url, received: 1, sent: 0 })
    expect((await records(owner)).map((record) => record.id)).toContain(written)
  })

  it('a one-time sync that caught up both ways exits 0 when what it wrote afterwards is not acknowledged within --timeout', async () => {
    const owner = await newOwner()
    ok(await run(['remember', '--dir', owner.dir, 'a note before the sync']))
    // The owner, an admin, finishes by naming what its catch-up showed deleted: here that never ends.
    const slow = vi.spyOn(Memory.prototype, 'applyPending').mockImplementation(() => new Promise<void>(() => undefined))
    try {
      const started = Date.now()
      const result = ok(await run(['sync', relay.url, '--dir', owner.dir, '--timeout', '1']))
      expect(result.stdout).toMatch(/^synced with /)
      expect(result.stderr).toContain('caught up both ways; events written here after the catch-up were not all acknowledged within 1 s: the next sync sends them')
      expect(Date.now() - started).toBeLessThan(10_000)
    } finally {
      slow.mockRestore()
    }
  })

  it('a token scoped to preferences syncs only preferences', async () => {
    const owner = await newOwner()
    const episode = ok(await run(['remember', '--dir', owner.dir, 'the door code is zebra-quokka'])).stdout.trim()
    const preference = ok(await run(['remember', '--dir', owner.dir, '--kind', 'preference', '--field', 'key=drink', 'tea'])).stdout.trim()
    ok(await run(['sync', relay.url, '--dir', owner.dir]))
    const reader = await newReplica(owner.space)
    const { token } = await createToken(owner, reader.author, '--kind', 'preference')
    ok(await run(['sync', relay.url, '--token', token, '--dir', reader.dir]))
    const seen = await records(reader)
    expect(seen.map((record) => [record.kind, record.id])).toEqual([['preference', preference]])
    expectOneLineError(await run(['get', episode, '--dir', reader.dir]), 1, 'UNKNOWN_RECORD')
    // The episode's event came as a signed header only: its content never reached the reader.
    const log = ok(await run(['log', '--dir', reader.dir, '--json'])).stdout
    expect(log).not.toContain('zebra-quokka')
    expect(log).toMatch(/"bodyState":"absent"/)
  })

  it('a writer whose token does not allow a write is told it stayed on the device, and its later writes still sync', async () => {
    const owner = await newOwner()
    const writer = await newReplica(owner.space)
    ok(await run(['grant', writer.author, '--dir', owner.dir]))
    ok(await run(['sync', relay.url, '--dir', owner.dir]))
    const { token } = await createToken(owner, writer.author, '--kind', 'preference', '--permission', 'read,write')
    ok(await run(['sync', relay.url, '--token', token, '--dir', writer.dir]))
    ok(await run(['remember', '--dir', writer.dir, 'a diary entry about the lighthouse']))
    const kept = ok(await run(['sync', relay.url, '--token', token, '--dir', writer.dir]))
    expect(kept.stdout).toMatch(/^1 event kept on this device only: the token does not allow it \(event [0-9a-f]{12}…: record ep_\w+ is outside the token's scope or does not exist here\); `cairn withheld` lists every such write$/m)
    // The relay's operator sees it too.
    await relay.process.waitFor(new RegExp(`withheld 1 event from ${writer.author.slice(0, 12)}… token [0-9a-f]{12}…: event [0-9a-f]{12}…: record ep_\\w+ is outside the token's scope or does not exist here\n`), 'stderr')
    const preference = ok(await run(['remember', '--dir', writer.dir, '--kind', 'preference', '--field', 'key=light', 'dim'])).stdout.trim()
    ok(await run(['remember', '--dir', writer.dir, 'a note about the fog']))
    const json = JSON.parse(ok(await run(['sync', relay.url, '--token', token, '--dir', writer.dir, '--json'])).stdout)
    expect(json).toMatchObject({ sent: 2, withheld: 1 })
    expect(json.withheldEvents).toEqual([{ event: expect.stringMatching(/^[0-9a-f]{64}$/), reason: expect.stringMatching(/^record ep_\w+ is outside the token's scope or does not exist here$/) }])
    ok(await run(['sync', relay.url, '--dir', owner.dir]))
    expect((await records(owner)).map((record) => record.id)).toEqual([preference])
    expect(ok(await run(['log', '--dir', owner.dir, '--json'])).stdout).not.toContain('lighthouse')
    // Live, it says so as it happens, and goes live all the same.
    ok(await run(['remember', '--dir', writer.dir, 'another diary entry, about the harbour']))
    const live = startCli(['sync', relay.url, '--live', '--token', token, '--dir', writer.dir])
    await live.waitFor(/\d\d:\d\d:\d\d 1 event kept on this device only: the token does not allow it \(event [0-9a-f]{12}…: record ep_\w+ is outside the token's scope/, 'stderr')
    await live.waitFor(/live: caught up both ways/, 'stderr')
    const result = await live.stop('SIGINT')
    expect(result.code).toBe(0)
    // The store kept the relay's word: every withheld write, in the order written, long after the syncs.
    const listed = JSON.parse(ok(await run(['withheld', '--dir', writer.dir, '--json'])).stdout).withheld
    expect(listed.map((note: { record: { kind: string } }) => note.record.kind)).toEqual(['episode', 'episode', 'episode'])
    expect(listed.every((note: { op: string; relay: string; code: string }) => note.op === 'memory.create' && note.relay === relay.url && note.code === 'PERMISSION_DENIED')).toBe(true)
    expect(listed.map((note: { local: number }) => note.local)).toEqual([...listed.map((note: { local: number }) => note.local)].sort((a, b) => a - b))
    const table = ok(await run(['withheld', '--dir', writer.dir])).stdout.split('\n').filter(Boolean)
    expect(table[0]).toMatch(/^#\s+event\s+op\s+record\s+relay\s+since\s+why$/)
    expect(table.slice(1)).toHaveLength(3)
    expect(table[1]).toMatch(/memory\.create\s+episode ep_\w+\s+ws:\/\/.+ \d{4}-\d\d-\d\dT.+Z\s+record ep_\w+ is outside the token's scope or does not exist here$/)
    expect(ok(await run(['withheld', '--dir', owner.dir])).stdout).toBe('no write of this replica is withheld: every relay it synced with took all it sent\n')
    expectOneLineError(await run(['withheld', '--dir', path.join(await tempDir(), 'nowhere')]), 1, 'NOT_INITIALIZED')
  })

  it('a reader given a token with another scope gets the new scope\'s records and is told what was withdrawn', async () => {
    const owner = await newOwner()
    const episode = ok(await run(['remember', '--dir', owner.dir, '--tag', 'drinks', 'the user likes green tea'])).stdout.trim()
    const preference = ok(await run(['remember', '--dir', owner.dir, '--kind', 'preference', '--field', 'key=tone', 'direct'])).stdout.trim()
    ok(await run(['sync', relay.url, '--dir', owner.dir]))
    const reader = await newReplica(owner.space)
    const first = await createToken(owner, reader.author, '--kind', 'preference')
    ok(await run(['sync', relay.url, '--token', first.token, '--dir', reader.dir]))
    expect((await records(reader)).map((record) => record.id)).toEqual([preference])
    const second = await createToken(owner, reader.author, '--any-tag', 'drinks')
    const switched = ok(await run(['sync', relay.url, '--token', second.token, '--dir', reader.dir]))
    expect(switched.stdout).toMatch(/; 1 record withdrawn \(outside the token's scope now\)$/m)
    expect((await records(reader)).map((record) => record.id)).toEqual([episode])
    const again = JSON.parse(ok(await run(['sync', relay.url, '--token', second.token, '--dir', reader.dir, '--json'])).stdout) as Record<string, unknown>
    expect(again.withdrawn).toBeUndefined()
  })

  it('token inspect shows the fields and verifies the signature; a forged token is refused', async () => {
    const owner = await newOwner()
    const replica = await newReplica(owner.space)
    const { token, id, expiresAt } = await createToken(owner, replica.author, '--kind', 'preference', '--any-tag', 'work', '--expires', '7d')
    const text = ok(await run(['token', 'inspect', token])).stdout
    expect(text).toMatch(new RegExp(`^id +${id}$`, 'm'))
    expect(text).toMatch(new RegExp(`^issuer +${owner.author}$`, 'm'))
    expect(text).toMatch(new RegExp(`^audience +${replica.author}$`, 'm'))
    expect(text).toMatch(new RegExp(`^space +${owner.space}$`, 'm'))
    expect(text).toMatch(/^scope +kinds preference and tagged any of work$/m)
    expect(text).toMatch(/^permissions +read$/m)
    expect(text).toMatch(/^expires +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(in (7d|6d 23h)\)$/m)
    expect(text).toMatch(/^expired +no$/m)
    const json = JSON.parse(ok(await run(['token', 'inspect', token, '--json', '--dir', owner.dir])).stdout) as Record<string, unknown>
    expect(json).toMatchObject({ id, expiresAt, issuer: owner.author, audience: replica.author, space: owner.space, permissions: ['read'], expired: false, revoked: false, issuerIsAdmin: true })
    expect(json.scope).toEqual({ kinds: ['preference'], tags: { any: ['work'] } })
    expect(json.expiresAt as number - (json.issuedAt as number)).toBe(7 * 86_400_000)

    // Same signature over a payload that now also grants write.
    const [prefix, payload, signature] = token.split('.') as [string, string, string]
    const widened = Buffer.from(Buffer.from(payload, 'base64url').toString('utf8').replace('"permissions":["read"]', '"permissions":["read","write"]')).toString('base64url')
    expectOneLineError(await run(['token', 'inspect', `${prefix}.${widened}.${signature}`]), 1, 'TOKEN_FORGED')
    expectOneLineError(await run(['token', 'inspect', 'ct1.nonsense']), 1, 'BAD_TOKEN')
  })

  it('a revoked token is refused on the next sync, once the revocation reached the relay', async () => {
    const owner = await newOwner()
    ok(await run(['remember', '--dir', owner.dir, 'something to sync']))
    const replica = await newReplica(owner.space)
    const { token, id } = await createToken(owner, replica.author)
    ok(await run(['sync', relay.url, '--dir', owner.dir]))
    ok(await run(['sync', relay.url, '--token', token, '--dir', replica.dir]))
    const revoked = ok(await run(['token', 'revoke', token, '--dir', owner.dir]))
    expect(revoked.stdout).toContain(`revoked token ${id}`)
    expect(ok(await run(['token', 'revoke', id, '--dir', owner.dir])).stdout).toContain('already revoked')
    ok(await run(['sync', relay.url, '--dir', owner.dir]))
    const refused = expectOneLineError(await runCli(['sync', relay.url, '--token', token, '--dir', replica.dir]), 1, 'TOKEN_REVOKED')
    expect(refused).toContain('flag --token')
  })

  it('grant and token revoke from a home that is not an admin say so as token create does, writing nothing', async () => {
    const owner = await newOwner()
    ok(await run(['sync', relay.url, '--dir', owner.dir]))
    const replica = await newReplica(owner.space)
    const { token, id } = await createToken(owner, replica.author)
    ok(await run(['sync', relay.url, '--token', token, '--dir', replica.dir]))
    const before = ok(await run(['log', '--dir', replica.dir, '--json'])).stdout
    const granted = expectOneLineError(await run(['grant', owner.author, '--dir', replica.dir]), 1, 'NOT_AUTHORIZED')
    expect(granted).toBe(`cairn: NOT_AUTHORIZED: only the owner or an admin of the space grants access (author ${replica.author})`)
    for (const given of [token, id]) {
      const revoked = expectOneLineError(await run(['token', 'revoke', given, '--dir', replica.dir]), 1, 'NOT_AUTHORIZED')
      expect(revoked).toMatch(/^cairn: NOT_AUTHORIZED: only the owner or an admin of the space revokes tokens \(author [0-9a-f]{64}\)$/)
    }
    expect(ok(await run(['log', '--dir', replica.dir, '--json'])).stdout).toBe(before)
  })

  it('token inspect of a garbled token says it does not decode without echoing its bytes', async () => {
    for (const garbled of ['ct1.abc.def', `ct1.${Buffer.from([0x7b, 0xff, 0xfe, 0x01]).toString('base64url')}.x`, `ct1.${Buffer.from('{"v":1').toString('base64url')}.x`]) {
      const line = expectOneLineError(await run(['token', 'inspect', garbled]), 1, 'BAD_TOKEN')
      expect(line).toMatch(/^cairn: BAD_TOKEN: token does not decode: BAD_JSON: /)
      expect(line).toMatch(/^[\x20-\x7e…]+$/)
    }
  })

  it('token inspect refuses a signed token whose expiry no date can show, and one cut short, as BAD_TOKEN saying why', async () => {
    const issuer = Identity.generate()
    const claims = { audience: 'cd'.repeat(32), expiresAt: Number.MAX_SAFE_INTEGER, id: 'ab'.repeat(32), issuedAt: 0, issuer: issuer.author, permissions: ['read'], scope: { all: true }, space: 'ef'.repeat(32), v: 1 }
    const payload = Buffer.from(canonicalJson(claims))
    const token = `ct1.${payload.toString('base64url')}.${Buffer.from(issuer.sign(tokenSignable(payload))).toString('base64url')}`
    for (const args of [['token', 'inspect', token], ['token', 'inspect', token, '--json']]) {
      expect(expectOneLineError(await run(args), 1, 'BAD_TOKEN')).toContain(`OUT_OF_RANGE: ${Number.MAX_SAFE_INTEGER} is outside [0, 253402300799999] (token.expiresAt)`)
    }
    const owner = await newOwner()
    const { token: real } = await createToken(owner, (await newReplica(owner.space)).author)
    expect(expectOneLineError(await run(['token', 'inspect', real.slice(0, -10)]), 1, 'BAD_TOKEN')).toContain('the signature is 57 bytes, not 64')
  })

  it('refusals name their code: no token, a token for another key, an unknown space, the wrong relay key', async () => {
    const owner = await newOwner()
    ok(await run(['sync', relay.url, '--dir', owner.dir]))
    const replica = await newReplica(owner.space)
    const other = await newReplica(owner.space)
    expectOneLineError(await run(['sync', relay.url, '--dir', replica.dir]), 1, 'TOKEN_REQUIRED')
    const { token } = await createToken(owner, other.author)
    expectOneLineError(await run(['sync', relay.url, '--token', token, '--dir', replica.dir]), 1, 'WRONG_AUDIENCE')
    const stranger = await newReplica('ab'.repeat(32))
    expectOneLineError(await run(['sync', relay.url, '--dir', stranger.dir]), 1, 'UNKNOWN_SPACE')
    expectOneLineError(await run(['sync', relay.url, '--dir', owner.dir, '--relay-key', 'cd'.repeat(32)]), 1, 'RELAY_KEY_MISMATCH')
    expectOneLineError(await run(['token', 'create', '--audience', owner.author, '--dir', replica.dir]), 1, 'NOT_AUTHORIZED')
  })

  it('sync --live prints what it receives until SIGINT, then closes and exits 0', async () => {
    const owner = await newOwner()
    ok(await run(['sync', relay.url, '--dir', owner.dir]))
    const replica = await newReplica(owner.space)
    // A read-only token: a live session must never echo what it received back to the relay
    // (that would be a write, and the relay would close the session with PERMISSION_DENIED).
    const { token } = await createToken(owner, replica.author, '--permission', 'read')
    const live = startCli(['sync', relay.url, '--live', '--token', token, '--dir', replica.dir])
    await live.waitFor(/live: caught up both ways/, 'stderr')
    const id = ok(await run(['remember', '--dir', owner.dir, 'pushed while the replica is live'])).stdout.trim()
    ok(await run(['sync', relay.url, '--dir', owner.dir]))
    // The catch-up brought the genesis (1 event); the pushed record makes 2; nothing goes back.
    await live.waitFor(/received 1, sent 0 \(total 2 received, 0 sent\)/)
    const result = await live.stop('SIGINT')
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^stopped: received 2 events, sent 0 in all$/m)
    expect((await records(replica)).map((record) => record.id)).toEqual([id])
  })

  it('gives up on a relay that is not there after --timeout, with one line', async () => {
    const owner = await newOwner()
    const line = expectOneLineError(await runCli(['sync', `ws://127.0.0.1:${await freePort()}`, '--timeout', '2', '--dir', owner.dir]), 1, 'SYNC_TIMEOUT')
    expect(line).toMatch(/not synced within 2 s; last problem: CONNECTION_FAILED: .*ECONNREFUSED/)
  })

  it('gives up on an address that accepts connections and never answers, saying no relay answered', async () => {
    const owner = await newOwner()
    const silent = createServer(() => undefined)
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    try {
      const { port } = silent.address() as AddressInfo
      const line = expectOneLineError(await run(['sync', `ws://127.0.0.1:${port}`, '--timeout', '1', '--dir', owner.dir]), 1, 'SYNC_TIMEOUT')
      expect(line).toMatch(/not synced within 1 s; no relay answered at this address/)
    } finally {
      silent.close()
    }
  })

  it('serve refuses a port in use with one line, exit 1', async () => {
    const dir = path.join(await tempDir(), 'second-relay')
    const line = expectOneLineError(await runCli(['serve', '--port', String(relay.port), '--dir', dir]), 1, 'PORT_IN_USE')
    expect(line).toContain(`127.0.0.1:${relay.port}`)
  })

  it('serve that cannot listen leaves behind none of the directories, key and store it created, and only those', async () => {
    const fresh = path.join(await tempDir(), 'new', 'relay')
    expectOneLineError(await run(['serve', '--port', String(relay.port), '--dir', fresh]), 1, 'PORT_IN_USE')
    expect(existsSync(path.dirname(fresh))).toBe(false)

    const empty = await tempDir()
    await writeFile(path.join(empty, 'notes.txt'), 'mine')
    expectOneLineError(await run(['serve', '--port', String(relay.port), '--dir', empty]), 1, 'PORT_IN_USE')
    expect(await readdir(empty)).toEqual(['notes.txt'])

    // A relay directory that exists keeps its key and store.
    const used = path.join(await tempDir(), 'used-relay')
    const first = await startRelay(used)
    expect((await first.process.stop('SIGTERM')).code).toBe(0)
    const key = await readFile(path.join(used, 'relay-identity.json'), 'utf8')
    expectOneLineError(await run(['serve', '--port', String(relay.port), '--dir', used]), 1, 'PORT_IN_USE')
    expect((await readdir(used)).sort()).toEqual(['relay-identity.json', 'store'])
    expect(await readFile(path.join(used, 'relay-identity.json'), 'utf8')).toBe(key)
  })
})

describe('cairn serve stopping and restarting', () => {
  it('exits 0 on SIGTERM with the store flushed; restarted on the same directory it keeps its key and serves the data', async () => {
    const dir = path.join(await tempDir(), 'relay')
    const first = await startRelay(dir)
    const owner = await newOwner()
    const id = ok(await run(['remember', '--dir', owner.dir, 'kept across a relay restart'])).stdout.trim()
    ok(await run(['sync', first.url, '--dir', owner.dir]))
    const stopped = await first.process.stop('SIGTERM')
    expect(stopped.code).toBe(0)
    expect(stopped.stderr).toMatch(/SIGTERM: stopping: closing \d+ sessions?, flushing the store/)
    expect(stopped.stderr).toMatch(/served 1 space; \d+\.\d+ MB in, \d+\.\d+ MB out/)
    expect(stopped.stderr).toContain(`stopped; store flushed to ${dir}`)

    const second = await startRelay(dir)
    try {
      expect(second.key).toBe(first.key)
      // A fresh replica, and the owner never syncs again: what it receives is what the relay kept.
      const fresh = await newReplica(owner.space)
      const { token } = await createToken(owner, fresh.author)
      ok(await run(['sync', second.url, '--token', token, '--dir', fresh.dir]))
      expect((await records(fresh)).map((record) => record.id)).toEqual([id])
    } finally {
      expect((await second.process.stop('SIGINT')).code).toBe(0)
    }
  })
})

describe('bad command lines exit 2 with one line', () => {
  const key = 'ab'.repeat(32)
  const cases: [string, string[], string][] = [
    ['sync without a url', ['sync'], 'MISSING_ARGUMENT'],
    ['sync to a url that is not ws://', ['sync', 'http://127.0.0.1:7357'], 'BAD_URL'],
    ['sync --live with --timeout', ['sync', 'ws://127.0.0.1:7357', '--live', '--timeout', '2'], 'CONFLICTING_FLAGS'],
    ['sync --timeout that is not a number', ['sync', 'ws://127.0.0.1:7357', '--timeout', 'soon'], 'BAD_FLAG_VALUE'],
    ['sync --relay-key that is not a key', ['sync', 'ws://127.0.0.1:7357', '--relay-key', 'abc'], 'BAD_KEY'],
    ['serve --port out of range', ['serve', '--port', '70000'], 'BAD_FLAG_VALUE'],
    ['serve with an unknown flag', ['serve', '--ports', '1'], 'UNKNOWN_FLAG'],
    ['token without a command', ['token'], 'MISSING_COMMAND'],
    ['token with an unknown command', ['token', 'mint'], 'UNKNOWN_COMMAND'],
    ['token create without --audience', ['token', 'create'], 'MISSING_FLAG'],
    ['token create with an unknown kind', ['token', 'create', '--audience', key, '--kind', 'memo'], 'UNKNOWN_KIND'],
    ['token create with an unknown permission', ['token', 'create', '--audience', key, '--permission', 'read,admin'], 'BAD_FLAG_VALUE'],
    ['token create --expires without a unit', ['token', 'create', '--audience', key, '--expires', '30'], 'BAD_DURATION'],
    ['token create --expires past what a number holds exactly', ['token', 'create', '--audience', key, '--expires', '999999999w'], 'BAD_DURATION'],
    ['sync --token given twice', ['sync', 'ws://127.0.0.1:7357', '--token', 'a', '-t', 'b'], 'REPEATED_FLAG'],
    ['token create --all with --kind', ['token', 'create', '--audience', key, '--all', '--kind', 'fact'], 'CONFLICTING_FLAGS'],
    ['token revoke of something that is neither', ['token', 'revoke', 'xyz'], 'BAD_KEY'],
    // As revoke finds it: no token at all is bad usage; a ct1.… token that does not decode or verify exits 1 (above).
    ['token inspect of something that is no token', ['token', 'inspect', 'junk'], 'BAD_TOKEN'],
    ['token inspect of a token id, which is no token', ['token', 'inspect', key], 'BAD_TOKEN'],
    ['grant of a key that is not hex', ['grant', 'bob'], 'BAD_KEY'],
    ['grant of 64 hex characters that are no point of the curve', ['grant', 'ff'.repeat(32)], 'BAD_KEY'],
    ['grant of a key that is not a point (y not a square)', ['grant', key], 'BAD_KEY'],
    ['grant of a small-order point, for which anyone could sign', ['grant', '00'.repeat(32)], 'BAD_KEY'],
    ['init --space that is not an id', ['init', '--space', 'home'], 'BAD_KEY'],
    ['init --space with --name', ['init', '--space', key, '--name', 'x'], 'CONFLICTING_FLAGS'],
  ]
  for (const [name, args, code] of cases) {
    it(`refuses ${name} (${code})`, async () => {
      const cwd = await tempDir()
      expectOneLineError(await run(args, { cwd }), 2, code)
    })
  }

  it('reaches the process the same way (a real exit code 2)', async () => {
    expectOneLineError(await runCli(['sync', 'ws://127.0.0.1:7357', '--timeout', '-1']), 2, 'MISSING_VALUE')
  })
})

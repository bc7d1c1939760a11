/**
 * The bundle commands of `cairn` (export, import, validate) against homes made by `cairn init`:
 * a round trip through each format into a fresh home, tampered bundles refused by validate and
 * import with the home left exactly as it was, signed bundles and trusted keys, a mem0 export
 * through its adapter, progress on stderr, and bad command lines that exit 2 naming the flag.
 *
 * Runs go through `runCli` in-process (with a clock the progress tests control, so whether a
 * progress line prints never depends on how fast the machine is); one runs the real executable
 * to show the exit code reaches the process.
 */
import { existsSync } from 'node:fs'
import { cp, mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { runCliInProcess } from '../helpers/cli-process.js'
import { Memory, openHome, type Clock, type VersionVector } from '../../src/index.js'
import { tempDir } from '../helpers/cli-home.js'
import { repoRoot, runCli as runProcess, type ProcessResult } from '../helpers/run-cli.js'
import { expectOneLineError } from '../helpers/cli-expect.js'
import { zipArchive } from '../helpers/zip-writer.js'
import { editFile, editManifest } from '../bundle/helpers/mem-fixtures.js'
import { conformancePath } from '../helpers/conformance.js'

type Json = Record<string, unknown>
interface HomeInfo { dir: string; space: string; author: string }

const MEM0_SAMPLE = path.join(repoRoot, 'test/bundle/adapters/samples/mem0/list.json')
const OTHER_KEY = 'ab'.repeat(32)

/** A clock that moves a second each time it is read: every progress report is due. */
function tickingClock(): Clock {
  let nowMs = 0
  return { nowMs: () => (nowMs += 1000) }
}

/** A clock that never moves: no progress report is ever due. */
const frozenClock: Clock = { nowMs: () => 0 }

/** Runs `cairn <args>` in this process, collecting what it writes. */
const run = (args: readonly string[], options: { cwd?: string; clock?: Clock } = {}): Promise<ProcessResult> =>
  runCliInProcess(args, { ...options, clock: options.clock ?? frozenClock })

function ok(result: ProcessResult): ProcessResult {
  if (result.code !== 0) throw new Error(`expected exit 0, got ${result.code}: ${result.stderr}`)
  expect(result.stderr).toBe('')
  return result
}

async function newHome(space?: string): Promise<HomeInfo> {
  const dir = path.join(await tempDir(), 'home')
  return JSON.parse(ok(await run(['init', '--dir', dir, '--json', ...(space !== undefined ? ['--space', space] : [])])).stdout) as HomeInfo
}

async function records(dir: string): Promise<Json[]> {
  return (JSON.parse(ok(await run(['query', '--dir', dir, '--json', '--limit', '1000'])).stdout) as { records: Json[] }).records
}

/** What a refused import must not change: the version vector and every record. */
async function storeState(dir: string): Promise<{ vector: VersionVector; records: Json[] }> {
  const home = await openHome(dir)
  let vector: VersionVector
  try {
    vector = home.log.versionVector()
  } finally {
    await home.store.close()
  }
  return { vector, records: await records(dir) }
}

/** Flips one bit of the first `needle` in `file`. */
async function flipByte(file: string, needle: string): Promise<void> {
  const bytes = await readFile(file)
  const at = bytes.indexOf(needle)
  if (at < 0) throw new Error(`${needle} is not in ${file}`)
  bytes[at] = (bytes[at] as number) ^ 0x01
  await writeFile(file, bytes)
}

/** A copy of the bundle at `source` to tamper with. */
async function copyOf(source: string): Promise<string> {
  const copy = path.join(await tempDir(), path.basename(source))
  await cp(source, copy, { recursive: true })
  return copy
}

interface Fixture {
  home: HomeInfo
  out: string
  mem: string
  signed: string
  log: string
  pam: string
}

let f: Fixture
beforeAll(async () => {
  const home = await newHome()
  const remember = async (...args: string[]) => (JSON.parse(ok(await run(['remember', ...args, '--dir', home.dir, '--json'])).stdout) as { id: string }).id
  const tea = await remember('Sam prefers green tea in the morning', '--tag', 'drinks')
  await remember('Sam is allergic to peanuts')
  await remember('--kind', 'preference', '--field', 'key=drink', '--field', 'value=tea')
  const sam = await remember('--kind', 'entity', '--data', '{"type":"person","canonicalName":"Sam"}')
  await remember('--kind', 'fact', '--data', JSON.stringify({ episodeID: tea, subject: sam, predicate: 'prefers', object: 'green tea' }))
  const out = await tempDir()
  f = {
    home, out,
    mem: path.join(out, 'all.mem'), signed: path.join(out, 'signed.mem'), log: path.join(out, 'all.log'), pam: path.join(out, 'all.pam'),
  }
  ok(await run(['export', f.mem, '--dir', home.dir]))
  ok(await run(['export', f.signed, '--sign', '--dir', home.dir]))
  ok(await run(['export', f.log, '--format', 'log', '--dir', home.dir]))
  ok(await run(['export', f.pam, '--dir', home.dir]))
})

describe('cairn export --evidence-pack', () => {
  it('adds the audit trail and provenance edges; signed, the bundle is L3 and validates with the key', async () => {
    const out = path.join(f.out, 'evidence.mem')
    const exported = JSON.parse(ok(await run(['export', out, '--evidence-pack', '--sign', '--dir', f.home.dir, '--json'])).stdout) as Json
    expect(exported).toMatchObject({ format: 'mem', records: 5 })
    const manifest = JSON.parse(await readFile(path.join(out, 'manifest.json'), 'utf8')) as Json
    expect(manifest.conformanceLevel).toBe('L3')
    expect((manifest.files as { path: string }[]).map((file) => file.path)).toEqual(expect.arrayContaining(['audit/log.jsonl']))
    const key = (JSON.parse(ok(await run(['export', path.join(f.out, 'key.mem'), '--sign', '--dir', f.home.dir, '--json'])).stdout) as Json).signer as string
    expect(ok(await run(['validate', out, '--trusted-key', key])).stdout).toMatch(/^valid: .*L3, signed/)
  })

  it('is in the usage line of `cairn export --help`', async () => {
    expect(ok(await run(['export', '--help'])).stdout).toMatch(/^usage: cairn export <out> .*\[--evidence-pack\]/)
  })
})

describe('a path that is not a Cairn bundle', () => {
  it('suggests --from to import, and nothing validate lacks to validate', async () => {
    const dir = await tempDir()
    const file = path.join(dir, 'memories.json')
    await writeFile(file, '[]')
    const home = await newHome()
    for (const target of [dir, file]) {
      expect(expectOneLineError(await run(['import', target, '--dir', home.dir]), 1, 'UNKNOWN_FORMAT')).toMatch(/; for another system's export, name it with --from \(/)
      const validated = expectOneLineError(await run(['validate', target]), 1, 'UNKNOWN_FORMAT')
      expect(validated).not.toContain('--from')
      expect(validated).toMatch(/: (not a \.mem bundle or a log snapshot|a bundle file must be \.pam or \.pam\.cbor) \(/)
    }
  })
})

describe('cairn export, validate and import: a round trip through each format', () => {
  it('exports a .mem bundle that validates and fills a fresh home with the same records', async () => {
    const again = path.join(f.out, 'again.mem')
    const exported = JSON.parse(ok(await run(['export', again, '--dir', f.home.dir, '--json'])).stdout) as Json
    expect(exported).toMatchObject({ format: 'mem', path: again, records: 5, exportMode: 'full', signer: null })
    expect(ok(await run(['export', path.join(f.out, 'line.mem'), '--dir', f.home.dir])).stdout)
      .toMatch(/^exported 5 records to .*line\.mem: \.mem bundle [\d.]+, full export, L2, unsigned\n$/)

    const validated = ok(await run(['validate', f.mem]))
    expect(validated.stdout).toMatch(/^valid: .*all\.mem: \.mem bundle [\d.]+, 5 records, full export, L2, unsigned\n$/)

    const fresh = await newHome()
    const imported = ok(await run(['import', f.mem, '--dir', fresh.dir]))
    expect(imported.stdout).toContain('written      entity 1, episode 2, fact 1, preference 1 (5 records)')
    expect(await records(fresh.dir)).toEqual(await records(f.home.dir))

    // Importing the same bundle again writes nothing.
    const before = await storeState(fresh.dir)
    const repeat = JSON.parse(ok(await run(['import', f.mem, '--dir', fresh.dir, '--json'])).stdout) as Json
    expect(repeat).toMatchObject({ format: 'mem', imported: {}, unchanged: 5, blocked: 0, warnings: [] })
    expect(await storeState(fresh.dir)).toEqual(before)
  })

  it('exports only what changed since --since, as an incremental bundle', async () => {
    const since = path.join(f.out, 'since.mem')
    const exported = JSON.parse(ok(await run(['export', since, '--since', '2999-01-01T00:00:00Z', '--dir', f.home.dir, '--json'])).stdout) as Json
    expect(exported).toMatchObject({ format: 'mem', exportMode: 'incremental', since: '2999-01-01T00:00:00Z' })
    // Episodes and facts are filtered by their times; preferences and entities go in full.
    expect(exported.records).toBe(2)
    const fresh = await newHome()
    ok(await run(['import', since, '--dir', fresh.dir]))
    expect((await records(fresh.dir)).map((record) => record.kind).sort()).toEqual(['entity', 'preference'])
  })

  it('exports a log snapshot that validates and that a replica of the space imports event for event', async () => {
    const validated = ok(await run(['validate', f.log, '--json']))
    expect(JSON.parse(validated.stdout)).toMatchObject({ format: 'log', valid: true, space: f.home.space, authors: 1, problems: [] })

    const replica = await newHome(f.home.space)
    const imported = ok(await run(['import', f.log, '--dir', replica.dir]))
    expect(imported.stdout).toMatch(/^imported .*all\.log \(log snapshot\): (\d+) events, \1 applied, 0 already here\n$/)
    expect((await storeState(replica.dir)).vector).toEqual((await storeState(f.home.dir)).vector)
    expect(await records(replica.dir)).toEqual(await records(f.home.dir))

    // A home of another space refuses it, naming the snapshot.
    const other = await newHome()
    expect(expectOneLineError(await run(['import', f.log, '--dir', other.dir]), 1, 'WRONG_SPACE')).toContain('all.log')
  })

  it('exports a signed PAM artifact that validates under its key and imports with it', async () => {
    const validated = ok(await run(['validate', f.pam, '--trusted-key', f.home.author]))
    expect(validated.stdout).toMatch(/^valid: .*all\.pam: PAM artifact \(JSON\), \d+ PAM entries, signed by trusted key /)
    // The PAM spec accepts no artifact without a trusted key.
    const keyless = await run(['validate', f.pam])
    expect(keyless.code).toBe(1)
    expect(keyless.stdout).toContain('all.pam: PAM_INVALID_SIGNATURE: phase 3 (signature): no trusted keys were given')

    const fresh = await newHome()
    const refused = expectOneLineError(await run(['import', f.pam, '--dir', fresh.dir]), 1, 'PAM_INVALID_SIGNATURE')
    expect(refused).toContain('--trusted-key')
    const imported = JSON.parse(ok(await run(['import', f.pam, '--dir', fresh.dir, '--trusted-key', f.home.author, '--json'])).stdout) as Json
    expect(imported).toMatchObject({ format: 'pam', signer: f.home.author, blocked: 0 })
    // Counted in records, as the lines below it count them (the artifact's entries map to more records).
    const again = ok(await run(['import', f.pam, '--dir', fresh.dir, '--trusted-key', f.home.author])).stdout
    expect(again).toMatch(new RegExp(`PAM artifact signed by ${f.home.author.slice(0, 12)}…, read as (\\d+) records\\)\\n\\s+written\\s+nothing new\\n\\s+unchanged\\s+\\1 `))
    // PAM keeps content, not Cairn's ids: the same episodes and preference arrive.
    const texts = (list: Json[]) => list.filter((record) => record.kind === 'episode').map((record) => record.details).sort()
    expect(texts(await records(fresh.dir))).toEqual(expect.arrayContaining(texts(await records(f.home.dir))))
    expect(await records(fresh.dir)).toContainEqual(expect.objectContaining({ kind: 'preference', key: 'drink', value: 'tea' }))
  })

  it('writes CBOR for --cbor, and pam is the default format for a .pam.cbor name', async () => {
    const cbor = path.join(f.out, 'all.pam.cbor')
    const exported = JSON.parse(ok(await run(['export', cbor, '--dir', f.home.dir, '--json'])).stdout) as Json
    expect(exported).toMatchObject({ format: 'pam', encoding: 'cbor' })
    expect((await readFile(cbor)).subarray(0, 3).toString()).toBe('PAM')
    expect(ok(await run(['validate', cbor, '--trusted-key', f.home.author])).stdout).toContain('PAM artifact (CBOR)')
  })

  it('refuses to export over something, leaving it as it was', async () => {
    const before = await readFile(f.pam)
    expect(expectOneLineError(await run(['export', f.pam, '--dir', f.home.dir]), 1, 'TARGET_EXISTS')).toContain('all.pam')
    expect(await readFile(f.pam)).toEqual(before)
    expect(expectOneLineError(await run(['export', f.mem, '--dir', f.home.dir]), 1, 'TARGET_NOT_EMPTY')).toContain('all.mem')
  })
})

describe('cairn export of a record no .mem line can hold', () => {
  it('writes the rest and names the record with the field refused, in text and JSON; exit 0', async () => {
    const home = await newHome()
    const memory = await Memory.open({ path: home.dir })
    try {
      await memory.remember({ kind: 'entity', type: 'person', canonicalName: 'Sam' })
      // As any granted peer could sign it: the API refuses such a record.
      await memory.log.append(memory.identity, { op: 'memory.create', data: { kind: 'entity', id: 'ent_bad', fields: {
        id: 'ent_bad', type: 'person', canonicalName: 42, aliases: [], sensitivity: 'low', summary: '', updatedAt: '2026-01-01T00:00:00Z',
      } } })
    } finally {
      await memory.close()
    }
    const out = await tempDir()
    const text = ok(await run(['export', path.join(out, 'a.mem'), '--dir', home.dir])).stdout
    expect(text).toMatch(/^exported 1 record to .*a\.mem: \.mem bundle [\d.]+, full export, L2, unsigned; 1 record skipped\n/)
    expect(text).toContain('  skipped entity ent_bad: WRONG_TYPE: expected a string, got number 42 (records.entity["ent_bad"].canonicalName)\n')
    const json = JSON.parse(ok(await run(['export', path.join(out, 'b.mem'), '--dir', home.dir, '--json'])).stdout) as Json
    expect(json).toMatchObject({ records: 1, skipped: [{ kind: 'entity', id: 'ent_bad', code: 'WRONG_TYPE', field: 'records.entity["ent_bad"].canonicalName' }] })
    ok(await run(['validate', path.join(out, 'a.mem')]))
  })
})

describe('validate counts records apart from the other lines of a bundle', () => {
  it('a bundle with a tombstone and a vendor kind counts only its Portable Memory records as records', async () => {
    const sample = conformancePath('fixtures', 'sample.mem')
    expect(ok(await run(['validate', sample])).stdout).toMatch(/^valid: .*sample\.mem: \.mem bundle [\d.]+, 4 records, 1 tombstone, 1 vendor line, full export, /)
    const details = JSON.parse(ok(await run(['validate', sample, '--json'])).stdout) as Json
    expect(details).toMatchObject({ valid: true, records: 4, tombstones: 1, vendorLines: 1, auditRows: 0, provenanceEdges: 0, extensionLines: 0 })
  })

  it('counts what the bundle holds, not what its manifest says it holds (the difference is a warning)', async () => {
    const sample = await copyOf(conformancePath('fixtures', 'sample.mem'))
    editManifest(sample, (manifest) => {
      manifest.counts = { edge: 1, entity: 1, episode: 4, tombstone: 3, vendorThing: 5 }
    })
    const text = ok(await run(['validate', sample])).stdout
    expect(text).toMatch(/^valid: .*sample\.mem: \.mem bundle [\d.]+, 4 records, 1 tombstone, 1 vendor line, full export, /)
    expect(text).toContain('warning: ')
    expect(text).toContain('COUNT_MISMATCH: manifest counts 4 episode rows, the bundle holds 2')
    const details = JSON.parse(ok(await run(['validate', sample, '--json'])).stdout) as Json
    expect(details).toMatchObject({ valid: true, records: 4, tombstones: 1, vendorLines: 1, counts: { episode: 4, tombstone: 3, vendorThing: 5 } })
  })

  it('an Evidence Pack names its audit rows and provenance edges; Cairn\'s extension lines are fields of the records, not vendor lines', async () => {
    const memory = await Memory.open({})
    const episode = await memory.remember({ kind: 'episode', summary: 'Tea with Ada' })
    await memory.remember({ kind: 'entity', canonicalName: 'Ada', type: 'person', tags: ['people'] })
    const ada = await memory.remember({ kind: 'entity', canonicalName: 'Bea', type: 'person' })
    const tea = await memory.remember({ kind: 'entity', canonicalName: 'Tea', type: 'thing' })
    await memory.remember({ kind: 'edge', srcEntityID: ada, dstEntityID: tea, edgeType: 'likes', evidenceEpisodeIDs: [episode] })
    const dir = path.join(await tempDir(), 'evidence.mem')
    await memory.export(dir, { evidencePack: true })
    await memory.close()
    const counts = (JSON.parse(await readFile(path.join(dir, 'manifest.json'), 'utf8')) as { counts: Record<string, number> }).counts
    const audit = counts.audit as number
    expect(audit).toBeGreaterThan(1)
    expect(ok(await run(['validate', dir])).stdout).toMatch(new RegExp(`, 5 records, ${audit} audit rows, 1 provenance edge, full export, `))
    expect(JSON.parse(ok(await run(['validate', dir, '--json'])).stdout)).toMatchObject({ records: 5, auditRows: audit, provenanceEdges: 1, extensionLines: 1, vendorLines: 0 })
  })
})

describe("validate checks Cairn's extensions file as import reads it", () => {
  it('a bad line there is invalid, naming file, line and field; as exported, the bundle is valid', async () => {
    const memory = await Memory.open({})
    const episode = await memory.remember({ kind: 'episode', summary: 'Tea with Ada' })
    await memory.remember({ kind: 'fact', episodeID: episode, subject: 'Ada', predicate: 'likes', object: 'tea', tags: ['drinks'] })
    const dir = path.join(await tempDir(), 'tagged.mem')
    await memory.export(dir)
    await memory.close()
    expect(ok(await run(['validate', dir])).stdout).toMatch(/^valid: /m)

    editFile(dir, 'items/cairnExtensions.jsonl', (text) => text.replace('["drinks"]', '[7]'))
    const validated = await run(['validate', dir])
    expect(validated.code).toBe(1)
    expect(validated.stdout).toMatch(/tagged\.mem\/items\/cairnExtensions\.jsonl:1: WRONG_TYPE: .*\(at \$\.tags\[0\]\)/)
    const home = await newHome()
    expect(expectOneLineError(await run(['import', dir, '--dir', home.dir]), 1, 'WRONG_TYPE')).toContain('items/cairnExtensions.jsonl:1')
  })
})

describe('tampered bundles: validate names the file, import refuses and changes nothing', () => {
  it('a .mem bundle with one byte changed in a data file', async () => {
    const bad = await copyOf(f.mem)
    await flipByte(path.join(bad, 'items/episode.jsonl'), 'peanuts')
    const validated = await run(['validate', bad])
    expect(validated.code).toBe(1)
    expect(validated.stdout).toMatch(/^INVALID: .*all\.mem: .*: 1 problem\n {2}.*all\.mem\/items\/episode\.jsonl: CHECKSUM_MISMATCH: /)
    expect(expectOneLineError(validated, 1, 'INVALID_BUNDLE')).toContain('all.mem/items/episode.jsonl')

    const home = await newHome()
    ok(await run(['remember', 'already here', '--dir', home.dir]))
    const before = await storeState(home.dir)
    expect(expectOneLineError(await run(['import', bad, '--dir', home.dir]), 1, 'CHECKSUM_MISMATCH')).toContain('all.mem/items/episode.jsonl)')
    expect(await storeState(home.dir)).toEqual(before)
  })

  it('a log snapshot with one byte changed', async () => {
    const bad = await copyOf(f.log)
    await flipByte(path.join(bad, 'events.jsonl'), 'peanuts')
    const validated = await run(['validate', bad, '--json'])
    expect(validated.code).toBe(1)
    expect(JSON.parse(validated.stdout)).toMatchObject({ valid: false, problems: [{ code: 'CHECKSUM_MISMATCH', file: path.join(bad, 'events.jsonl') }] })

    // An empty replica: any event the refused import let through would show in its vector.
    const replica = await newHome(f.home.space)
    const before = await storeState(replica.dir)
    expect(expectOneLineError(await run(['import', bad, '--dir', replica.dir]), 1, 'CHECKSUM_MISMATCH')).toContain('events.jsonl')
    expect(await storeState(replica.dir)).toEqual(before)
  })

  it('a log snapshot whose checksums were redone over a changed event: the event\'s line is named', async () => {
    const bad = await copyOf(f.log)
    const eventsFile = path.join(bad, 'events.jsonl')
    const text = await readFile(eventsFile, 'utf8')
    const line = text.split('\n').findIndex((row) => row.includes('peanuts')) + 1
    const changed = text.replace('peanuts', 'walnuts')
    await writeFile(eventsFile, changed)
    // Redo the manifest and CHECKSUMS as a careless (or malicious) editor would: only the event's own hash can tell.
    const { createHash } = await import('node:crypto')
    const manifest = JSON.parse(await readFile(path.join(bad, 'manifest.json'), 'utf8')) as { files: { path: string; bytes: number; sha256: string }[] }
    manifest.files[0] = { ...manifest.files[0], bytes: Buffer.byteLength(changed), sha256: createHash('sha256').update(changed).digest('hex') } as { path: string; bytes: number; sha256: string }
    await writeFile(path.join(bad, 'manifest.json'), JSON.stringify(manifest))
    await writeFile(path.join(bad, 'CHECKSUMS'), manifest.files.map((file) => `${file.sha256}  ${file.path}\n`).join(''))

    const validated = await run(['validate', bad])
    expect(validated.stdout).toContain(`all.log/events.jsonl:${line}: BAD_BODY: `)
    expect(expectOneLineError(validated, 1, 'INVALID_BUNDLE')).toContain(`events.jsonl:${line}`)

    const replica = await newHome(f.home.space)
    const before = await storeState(replica.dir)
    expect(expectOneLineError(await run(['import', bad, '--dir', replica.dir]), 1, 'BAD_BODY')).toContain(`events.jsonl:${line})`)
    expect(await storeState(replica.dir)).toEqual(before)
  })

  it('a file name and a quoted line from the bundle reach the terminal escaped, not as control characters', async () => {
    // An unlisted file whose name carries a colour escape, in a .mem bundle.
    const mem = await copyOf(f.mem)
    await writeFile(path.join(mem, 'items', 'evil\u001b[31mRED.jsonl'), '')
    // A log snapshot line (checksums redone over it) that sets the terminal's title when printed raw.
    const log = await copyOf(f.log)
    const eventsFile = path.join(log, 'events.jsonl')
    const changed = `${await readFile(eventsFile, 'utf8')}\u001b]0;pwned\u0007{bad\n`
    await writeFile(eventsFile, changed)
    const { createHash } = await import('node:crypto')
    const manifest = JSON.parse(await readFile(path.join(log, 'manifest.json'), 'utf8')) as { files: { path: string; bytes: number; sha256: string }[] }
    manifest.files[0] = { ...manifest.files[0], bytes: Buffer.byteLength(changed), sha256: createHash('sha256').update(changed).digest('hex') } as { path: string; bytes: number; sha256: string }
    await writeFile(path.join(log, 'manifest.json'), JSON.stringify(manifest))
    await writeFile(path.join(log, 'CHECKSUMS'), manifest.files.map((file) => `${file.sha256}  ${file.path}\n`).join(''))

    for (const [bad, shown] of [[mem, 'evil\\u001b[31mRED.jsonl: UNLISTED_FILE'], [log, '\\u001b]0;pwned\\u0007']] as const) {
      const validated = await run(['validate', bad])
      expect(validated.code).toBe(1)
      // eslint-disable-next-line no-control-regex
      for (const text of [validated.stdout, validated.stderr]) expect(text).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/)
      expect(validated.stdout).toContain(shown)
      expect(expectOneLineError(validated, 1, 'INVALID_BUNDLE')).toContain(shown)
    }
  })

  it('a PAM artifact with one byte changed', async () => {
    const bad = await copyOf(f.pam)
    await flipByte(bad, 'peanuts')
    const validated = await run(['validate', bad, '--trusted-key', f.home.author])
    expect(validated.stdout).toMatch(/all\.pam: PAM_HASH_MISMATCH: phase 1 \(hashes\): .* \(at \$\.components\.episodic\[\d+\]\)/)
    expect(expectOneLineError(validated, 1, 'INVALID_BUNDLE')).toContain('all.pam')

    const home = await newHome()
    const before = await storeState(home.dir)
    expect(expectOneLineError(await run(['import', bad, '--trusted-key', f.home.author, '--dir', home.dir]), 1, 'PAM_HASH_MISMATCH')).toContain('all.pam')
    expect(await storeState(home.dir)).toEqual(before)
  })

  it('a PAM artifact with two problems: the refusal counts the other one in the singular', async () => {
    const bad = await copyOf(f.pam)
    // The entry's hash, and so the root hash over the components.
    await flipByte(bad, 'peanuts')
    const validated = await run(['validate', bad, '--trusted-key', f.home.author])
    expect(validated.stdout.match(/PAM_HASH_MISMATCH/g)).toHaveLength(2)
    const home = await newHome()
    const refused = expectOneLineError(await run(['import', bad, '--trusted-key', f.home.author, '--dir', home.dir]), 1, 'PAM_HASH_MISMATCH')
    expect(refused).toMatch(/ \(and 1 more problem\) \(/)
  })

  it('exits 1 from the real executable too', async () => {
    const bad = await copyOf(f.mem)
    await flipByte(path.join(bad, 'items/preference.jsonl'), 'drink')
    const result = await runProcess(['validate', bad])
    expect(result.code).toBe(1)
    expect(result.stdout).toContain('items/preference.jsonl: CHECKSUM_MISMATCH')
  })
})

describe('signed bundles and --trusted-key', () => {
  it('validate calls a bundle whose manifest.sig was removed unsigned, and says so', async () => {
    const stripped = await copyOf(f.signed)
    await rm(path.join(stripped, 'manifest.sig'))
    const text = ok(await run(['validate', stripped]))
    expect(text.stdout).toContain('unsigned (manifest.sig is missing, though the manifest says signed)')
    expect(text.stdout).toContain('SIGNATURE_REMOVED')
    const json = JSON.parse(ok(await run(['validate', stripped, '--json'])).stdout)
    expect(json).toMatchObject({ valid: true, signed: false })
    expect(json.warnings).toEqual([expect.objectContaining({ code: 'SIGNATURE_REMOVED', file: path.join(stripped, 'manifest.sig') })])
    const refused = await run(['validate', stripped, '--trusted-key', f.home.author, '--json'])
    expect(JSON.parse(refused.stdout)).toMatchObject({ valid: false, problems: [{ code: 'SIGNATURE_MISSING' }] })
  })

  it('validate and import accept the signer\'s key and refuse another one', async () => {
    expect(ok(await run(['validate', f.signed])).stdout).toContain('signed (signature not checked: no --trusted-key)')
    expect(ok(await run(['validate', f.signed, '--trusted-key', f.home.author])).stdout).toContain('signed by a trusted key')

    const wrong = await run(['validate', f.signed, '--trusted-key', OTHER_KEY, '--json'])
    expect(wrong.code).toBe(1)
    expect(JSON.parse(wrong.stdout)).toMatchObject({ valid: false, problems: [{ code: 'UNTRUSTED_KEY', file: path.join(f.signed, 'manifest.sig') }] })

    const home = await newHome()
    const before = await storeState(home.dir)
    expect(expectOneLineError(await run(['import', f.signed, '--trusted-key', OTHER_KEY, '--dir', home.dir]), 1, 'UNTRUSTED_KEY')).toContain('manifest.sig')
    expect(await storeState(home.dir)).toEqual(before)

    // Any one of several trusted keys will do; upper-case hex is read as the same key.
    const imported = ok(await run(['import', f.signed, '--trusted-key', OTHER_KEY, '--trusted-key', f.home.author.toUpperCase(), '--dir', home.dir]))
    expect(imported.stdout).toContain('(5 records)')
  })

  it('an unsigned bundle is refused when a key is required', async () => {
    const validated = await run(['validate', f.mem, '--trusted-key', f.home.author])
    expect(validated.stdout).toContain('manifest.sig: SIGNATURE_MISSING')
    const home = await newHome()
    expectOneLineError(await run(['import', f.mem, '--trusted-key', f.home.author, '--dir', home.dir]), 1, 'SIGNATURE_MISSING')
    expect(await records(home.dir)).toEqual([])
  })
})

describe('cairn import --from', () => {
  it('takes who produced a transfer text from --source', async () => {
    const home = await newHome()
    const text = path.join(await tempDir(), 'memories.txt')
    await writeFile(text, '- [2026-01-15] Leads the data team.\n- Has a cat named Pixel\n')
    ok(await run(['import', text, '--from', 'transfer', '--source', 'gemini', '--dir', home.dir]))
    const stored = await records(home.dir)
    expect(stored.map((record) => (record.metadata as Record<string, string>).transfer_source)).toEqual(['gemini', 'gemini'])
  })

  it('imports a mem0 export through its adapter, with its warnings, and once only', async () => {
    const home = await newHome()
    const imported = ok(await run(['import', MEM0_SAMPLE, '--from', 'mem0', '--dir', home.dir]))
    expect(imported.stdout).toMatch(/^imported .*list\.json \(mem0 export\)\n {2}written {4}episode (\d+) \(\1 records\)/)
    // A warning names the file the user gave, not a path inside it.
    expect(imported.stdout).toMatch(/\n {4}.*samples\/mem0\/list\.json: BAD_TIME: .* \(at \$\[\d+\]\.created_at\)/)
    const stored = await records(home.dir)
    expect(stored.map((record) => record.details)).toContain('Prefers oat milk in coffee ☕ and no sugar')

    const again = JSON.parse(ok(await run(['import', MEM0_SAMPLE, '--from', 'mem0', '--dir', home.dir, '--json'])).stdout) as Json
    // One of the sample's memories expired at the end of 2025: imported, but hidden from queries.
    expect(again).toMatchObject({ format: 'source', source: 'mem0', unchanged: stored.length + 1 })
    expect(again.imported).toEqual({})
  })

  it('imports the same mem0 export after an edit here leaving the edit, and says so', async () => {
    const home = await newHome()
    ok(await run(['import', MEM0_SAMPLE, '--from', 'mem0', '--dir', home.dir]))
    const edited = (await records(home.dir)).find((record) => record.details === 'Prefers oat milk in coffee ☕ and no sugar')
    const memory = await Memory.open({ path: home.dir })
    try {
      await memory.update(edited?.id as string, { set: { details: 'Switched to black coffee' } })
    } finally {
      await memory.close()
    }
    const again = ok(await run(['import', MEM0_SAMPLE, '--from', 'mem0', '--dir', home.dir]))
    expect(again.stdout).toContain('\n  kept newer  1 record with values written here after the source last changed them\n')
    expect((await records(home.dir)).find((record) => record.id === edited?.id)?.details).toBe('Switched to black coffee')
    const json = JSON.parse(ok(await run(['import', MEM0_SAMPLE, '--from', 'mem0', '--dir', home.dir, '--json'])).stdout) as Json
    expect(json).toMatchObject({ imported: {}, keptNewer: 1 })
  })

  it('refuses with NOTHING_RECOGNIZED, writing nothing, a file of which the adapter skipped every entry', async () => {
    const home = await newHome()
    const before = await storeState(home.dir)
    const chatgpt = path.join(repoRoot, 'test/bundle/adapters/samples/chatgpt/conversations.json')
    const asMem0 = expectOneLineError(await run(['import', chatgpt, '--from', 'mem0', '--dir', home.dir]), 1, 'NOTHING_RECOGNIZED')
    expect(asMem0).toMatch(/^cairn: NOTHING_RECOGNIZED: no mem0 memory in this export: all 2 entries were skipped \(the first warning: EMPTY_MEMORY: .*\); is --from right\? \(.*chatgpt\/conversations\.json\)$/)
    const asEngram = expectOneLineError(await run(['import', MEM0_SAMPLE, '--from', 'engram', '--dir', home.dir]), 1, 'NOTHING_RECOGNIZED')
    expect(asEngram).toMatch(/no engram memory in this export: all \d+ entries were skipped \(the first warning: NOT_AN_ENGRAM: .*is --from right\?/)
    expect(await storeState(home.dir)).toEqual(before)
  })

  it('imports an export with no entries at all as nothing new, exit 0', async () => {
    const home = await newHome()
    const dir = await tempDir()
    for (const [name, content] of [['empty.json', '[]'], ['wrapped.json', '{"results": [], "total": 0}']] as const) {
      await writeFile(path.join(dir, name), content)
      const result = ok(await run(['import', path.join(dir, name), '--from', 'mem0', '--dir', home.dir, '--json']))
      expect(JSON.parse(result.stdout)).toMatchObject({ imported: {}, unchanged: 0 })
    }
  })

  it('imports a ChatGPT export zip as downloaded, and refuses a corrupt one naming it, writing nothing', async () => {
    const dir = await tempDir()
    const conversations = await readFile(path.join(repoRoot, 'test/bundle/adapters/samples/chatgpt/conversations.json'), 'utf8')
    const archive = path.join(dir, 'chatgpt-export.zip')
    await writeFile(archive, zipArchive([{ name: 'conversations.json', data: conversations, deflate: true }, { name: 'chat.html', data: '<html></html>' }]))
    const home = await newHome()
    const imported = JSON.parse(ok(await run(['import', archive, '--from', 'chatgpt', '--dir', home.dir, '--json'])).stdout) as Json
    expect(imported).toMatchObject({ format: 'source', source: 'chatgpt' })
    expect((await records(home.dir)).length).toBeGreaterThan(0)

    const broken = path.join(dir, 'broken.zip')
    await writeFile(broken, (await readFile(archive)).subarray(0, 100))
    const other = await newHome()
    const before = await storeState(other.dir)
    expect(expectOneLineError(await run(['import', broken, '--from', 'chatgpt', '--dir', other.dir]), 1, 'BAD_ARCHIVE')).toContain('broken.zip')
    expect(await storeState(other.dir)).toEqual(before)
  })
})

describe('progress on stderr', () => {
  let big: string
  beforeAll(async () => {
    const memory = await Memory.open({ path: path.join(await tempDir(), 'big-home') })
    try {
      await memory.rememberMany(Array.from({ length: 3000 }, (_, i) => ({ kind: 'episode', details: `generated note ${i}` })))
      big = path.join(await tempDir(), 'big.mem')
      await memory.export(big)
    } finally {
      await memory.close()
    }
  })

  it('reports each phase of a long import, ending at its total', async () => {
    const home = await newHome()
    const result = await run(['import', big, '--dir', home.dir], { clock: tickingClock() })
    expect(result.code).toBe(0)
    const lines = result.stderr.trim().split('\n')
    expect(lines.some((line) => /^import: checking [\d.]+\/[\d.]+ (bytes|MiB) \(\d+%\)$/.test(line))).toBe(true)
    // The records are checked as they will be written, before the first is: a phase of its own.
    const checkingRecords = lines.findIndex((line) => line === 'import: checking records 3000/3000 records (100%)')
    expect(checkingRecords).toBeGreaterThan(-1)
    expect(checkingRecords).toBeLessThan(lines.findIndex((line) => line.startsWith('import: writing ')))
    const writing = lines.filter((line) => line.startsWith('import: writing '))
    expect(writing.length).toBeGreaterThan(1)
    expect(writing.at(-1)).toBe('import: writing 3000/3000 records (100%)')
    expect(result.stdout).toContain('episode 3000 (3000 records)')
  })

  it('reports both checks of a long validate, ending at their totals, and keeps stdout to the verdict', async () => {
    const result = await run(['validate', big], { clock: tickingClock() })
    expect(result.code).toBe(0)
    const lines = result.stderr.trim().split('\n')
    expect(lines.some((line) => /^validate: checking [\d.]+\/[\d.]+ (bytes|MiB) \(100%\)$/.test(line))).toBe(true)
    expect(lines.at(-1)).toBe('validate: checking records 3000/3000 records (100%)')
    expect(result.stdout).toMatch(/^valid: /)
  })

  it('reports a long export, and keeps stdout to the summary', async () => {
    const home = await newHome()
    ok(await run(['import', big, '--dir', home.dir]))
    const result = await run(['export', path.join(await tempDir(), 'out.mem'), '--dir', home.dir], { clock: tickingClock() })
    expect(result.code).toBe(0)
    expect(result.stderr).toMatch(/^export: writing \d+\/3000 records \(\d+%\)$/m)
    expect(result.stdout.split('\n').filter(Boolean)).toHaveLength(1)
  })

  it('prints nothing for a run that ends within the first interval', async () => {
    const home = await newHome()
    const result = await run(['import', big, '--dir', home.dir], { clock: frozenClock })
    expect(result).toMatchObject({ code: 0, stderr: '' })
  })
})

describe.concurrent('bad command lines exit 2 with one line naming the flag, before anything is read or written', () => {
  const cases: { args: string[]; code: string; names: string }[] = [
    { args: ['export', 'out', '--format', 'xml'], code: 'UNKNOWN_FORMAT', names: '(flag --format)' },
    { args: ['import', 'in', '--format', 'zip'], code: 'UNKNOWN_FORMAT', names: 'formats: mem, log, pam (flag --format)' },
    { args: ['validate', 'in', '--format', 'zip'], code: 'UNKNOWN_FORMAT', names: '(flag --format)' },
    { args: ['export'], code: 'MISSING_ARGUMENT', names: 'needs <out>' },
    { args: ['import'], code: 'MISSING_ARGUMENT', names: 'needs <path>' },
    { args: ['validate'], code: 'MISSING_ARGUMENT', names: 'needs <path>' },
    { args: ['import', 'in', '--trusted-key', 'abc'], code: 'BAD_KEY', names: '"abc" (flag --trusted-key)' },
    { args: ['validate', 'in', '--trusted-key', OTHER_KEY, '--trusted-key', 'zz'.repeat(32)], code: 'BAD_KEY', names: '(flag --trusted-key)' },
    { args: ['export', 'out', '--since', 'yesterday'], code: 'BAD_TIMESTAMP', names: '(flag --since)' },
    { args: ['export', 'out', '--since', '2024-13-45T00:00:00Z'], code: 'BAD_TIMESTAMP', names: '(flag --since)' },
    { args: ['import', 'in', '--from', 'nope'], code: 'UNKNOWN_SOURCE', names: 'sources: mem0, openmemory' },
    { args: ['export', 'out', '--cbor'], code: 'CONFLICTING_FLAGS', names: '(flag --cbor)' },
    { args: ['export', 'out', '--format', 'log', '--sign'], code: 'CONFLICTING_FLAGS', names: '(flag --sign)' },
    { args: ['export', 'out', '--format', 'log', '--evidence-pack'], code: 'CONFLICTING_FLAGS', names: '(flag --evidence-pack)' },
    { args: ['export', 'out.pam', '--since', '2024-06-01T00:00:00Z'], code: 'CONFLICTING_FLAGS', names: '(flag --since)' },
    { args: ['import', 'in', '--from', 'mem0', '--trusted-key', OTHER_KEY], code: 'CONFLICTING_FLAGS', names: '(flag --trusted-key)' },
    { args: ['import', 'in', '--from', 'mem0', '--format', 'mem'], code: 'CONFLICTING_FLAGS', names: '(flag --format)' },
    { args: ['import', 'in', '--source', 'claude'], code: 'CONFLICTING_FLAGS', names: '(flag --source)' },
    { args: ['import', 'in', '--from', 'transfer', '--source', ' '], code: 'EMPTY', names: '(flag --source)' },
    { args: ['validate', 'in', '--dir', 'x'], code: 'UNKNOWN_FLAG', names: '(flag --dir)' },
    { args: ['import', 'a', 'b'], code: 'UNEXPECTED_ARGUMENT', names: '"b"' },
    { args: ['import', 'in', '--dir', 'a', '--dir', 'b'], code: 'REPEATED_FLAG', names: '--dir "a", then --dir "b"' },
    { args: ['export', 'out', '--format', 'mem', '-f', 'pam'], code: 'REPEATED_FLAG', names: '(flag --format)' },
    { args: ['import', 'in', '--from', 'mem0', '--from', 'chatgpt'], code: 'REPEATED_FLAG', names: '(flag --from)' },
  ]
  for (const { args, code, names } of cases) {
    it(`refuses \`cairn ${args.join(' ')}\` with ${code}`, async () => {
      const cwd = await tempDir()
      expect(expectOneLineError(await run(args, { cwd }), 2, code)).toContain(names)
      for (const name of ['.cairn', 'out', 'out.pam']) expect(existsSync(path.join(cwd, name))).toBe(false)
    })
  }

  it('refuses a log snapshot with --trusted-key, naming the flag', async () => {
    expectOneLineError(await run(['validate', f.log, '--trusted-key', f.home.author]), 2, 'CONFLICTING_FLAGS')
    const replica = await newHome(f.home.space)
    expect(expectOneLineError(await run(['import', f.log, '--trusted-key', f.home.author, '--dir', replica.dir]), 2, 'CONFLICTING_FLAGS')).toContain('(flag --trusted-key)')
  })

  it('names a missing input file with exit 1', async () => {
    const cwd = await tempDir()
    expect(expectOneLineError(await run(['validate', 'nothing.mem'], { cwd }), 1, 'NOT_FOUND')).toContain('(nothing.mem)')
    expect(expectOneLineError(await run(['import', 'nothing.json', '--from', 'mem0'], { cwd }), 1, 'NOT_FOUND')).toContain('(nothing.json)')
  })

  it('says a path is a symbolic link that loops, or a device, rather than missing; the home is left as it was', async () => {
    const cwd = await tempDir()
    await symlink('loop', path.join(cwd, 'loop'))
    const home = await newHome()
    const before = await storeState(home.dir)
    for (const args of [['validate', 'loop'], ['import', 'loop', '--dir', home.dir], ['import', 'loop', '--from', 'transfer', '--dir', home.dir], ['import', 'loop', '--format', 'pam', '--dir', home.dir]]) {
      expect(expectOneLineError(await run(args, { cwd }), 1, 'SYMLINK_LOOP')).toMatch(/symbolic link loops.* \(loop\)$/)
    }
    for (const args of [['validate', '/dev/null'], ['import', '/dev/null', '--dir', home.dir], ['import', '/dev/zero', '--from', 'transfer', '--dir', home.dir]]) {
      expect(expectOneLineError(await run(args, { cwd }), 1, 'NOT_A_FILE')).toMatch(/not a regular file or directory .*\(\/dev\/(null|zero)\)$/)
    }
    expect(expectOneLineError(await run(['import', '.', '--format', 'pam', '--dir', home.dir], { cwd }), 1, 'NOT_A_FILE')).toContain('not a directory')
    expect(await storeState(home.dir)).toEqual(before)
    // A link to a directory is followed as a link to a file is.
    await mkdir(path.join(cwd, 'notes'))
    await writeFile(path.join(cwd, 'notes', 'a.txt'), 'Ada likes tea\n')
    await symlink('notes', path.join(cwd, 'notes-link'))
    ok(await run(['import', 'notes-link', '--from', 'transfer', '--dir', home.dir], { cwd }))
  })

  it('refuses a binary file (NUL bytes) as a text source, naming the file and line, and writes nothing', async () => {
    const cwd = await tempDir()
    await writeFile(path.join(cwd, 'zeros.txt'), new Uint8Array(64))
    await writeFile(path.join(cwd, 'zeros.md'), Buffer.concat([Buffer.from('# Notes\n'), new Uint8Array(64)]))
    const home = await newHome()
    const before = await storeState(home.dir)
    expect(expectOneLineError(await run(['import', 'zeros.txt', '--from', 'transfer', '--dir', home.dir], { cwd }), 1, 'BINARY_FILE')).toMatch(/NUL byte.*\(zeros\.txt:1\)$/)
    expect(expectOneLineError(await run(['import', 'zeros.md', '--from', 'claude-memory', '--dir', home.dir], { cwd }), 1, 'BINARY_FILE')).toMatch(/\(zeros\.md:2\)$/)
    expect(await storeState(home.dir)).toEqual(before)
  })

  it('lists the commands in `cairn --help` and the repeatable flag in `cairn import --help`', async () => {
    const overview = ok(await run(['--help']))
    for (const name of ['export', 'import', 'validate']) expect(overview.stdout).toMatch(new RegExp(`^  ${name} `, 'm'))
    const help = ok(await run(['import', '--help']))
    expect(help.stdout).toMatch(/^usage: cairn import <path> /)
    expect(help.stdout).toMatch(/--trusted-key HEX +.*\(repeatable\)/)
    expect(help.stdout).toContain('mem0')
  })
})

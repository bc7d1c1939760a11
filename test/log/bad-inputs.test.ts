/**
 * Bad input at the store's edge. Every public entry point of SpaceLog and LogStore that takes
 * outside input (and Identity.fromSeed, parseJson, canonicalJson) is fed every value of
 * test/helpers/bad-inputs.ts. Each call must throw a CairnError whose code is one of the codes
 * that entry point documents, and must leave the store exactly as it was: the same version
 * vector, heads, held events, applied listing (headers, bodies, signatures) and raw storage
 * bytes, and a verify() that still passes.
 *
 * Values an entry point rightly accepts (an empty list to ingest, a well-formed id to get) are
 * not garbage there and are skipped; `accepts` decides that without calling the code under
 * test. Cases that fail today because of a bug in src/ are listed in KNOWN_BUGS and run with
 * `it.fails`: they turn red when the bug is fixed, and then the entry should be deleted.
 * The file is long because the entry-point table is; the fixture lives in
 * test/helpers/bad-input-fixture.ts.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CairnError } from '../../src/errors.js'
import { canonicalJson, parseJson } from '../../src/log/canonical-json.js'
import { Identity } from '../../src/log/identity.js'
import { LogStore } from '../../src/log/log-store.js'
import {
  buildFixture, isHex64, isJsonValue, isPlainObject, isPositiveSafeInteger, isValidEntry, isValidJsonText, seed, snapshot,
  type Fixture,
} from '../helpers/bad-input-fixture.js'
import { badEnvelopes, badValues, type BadInput, type RawEnvelope } from '../helpers/bad-inputs.js'

const MAX_MESSAGE_CHARS = 4096

// ---- Entry points. ----

interface EntryPoint {
  readonly name: string
  /** The codes a refusal may carry. */
  readonly codes: readonly string[]
  readonly call: (fixture: Fixture, value: unknown) => unknown
  /** Values this entry point rightly accepts: skipped. */
  readonly accepts?: (value: unknown) => boolean
  /** Feed the envelope-shaped garbage too (ingest only). */
  readonly envelopes?: boolean
}

const ID_CODES = ['WRONG_TYPE', 'BAD_HEX', 'WRONG_LENGTH']
const ENTRY_CODES = ['WRONG_TYPE', 'BAD_OP', 'NOT_JSON', 'NOT_FINITE', 'BAD_STRING', 'TOO_DEEP', 'BODY_TOO_LARGE', 'UNKNOWN_FIELD']
const INGEST_CODES = [
  'BAD_ENVELOPE', 'BAD_ID', 'BAD_HEADER', 'BAD_BODY', 'HEADER_TOO_LARGE', 'BODY_TOO_LARGE', 'WRONG_SPACE',
  'BAD_SIGNATURE', 'UNSIGNED', 'BROKEN_CHAIN',
]
const SEQ_CODES = ['WRONG_TYPE', 'OUT_OF_RANGE']

async function drain(iterable: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of iterable) {
    // reading is the point
  }
}

const ENTRY_POINTS: EntryPoint[] = [
  {
    name: 'SpaceLog.ingest(garbage)',
    codes: ['BAD_ENVELOPE'],
    call: (f, value) => f.log.ingest(value as never),
    accepts: (value) => Array.isArray(value) && value.length === 0,
  },
  {
    name: 'SpaceLog.ingest([garbage])',
    codes: INGEST_CODES,
    call: (f, value) => f.log.ingest([value]),
    envelopes: true,
  },
  {
    name: 'SpaceLog.ingest([...fresh envelopes, garbage])',
    codes: INGEST_CODES,
    call: (f, value) => f.log.ingest([...f.fresh, value]),
    envelopes: true,
  },
  {
    name: 'SpaceLog.ingest([garbage, ...fresh envelopes])',
    codes: INGEST_CODES,
    call: (f, value) => f.log.ingest([value, ...f.fresh]),
    envelopes: true,
  },
  {
    name: 'SpaceLog.append(owner, garbage)',
    codes: ENTRY_CODES,
    call: (f, value) => f.log.append(f.owner, value as never),
    accepts: isValidEntry,
  },
  {
    name: 'SpaceLog.append(garbage identity, entry)',
    codes: ['WRONG_TYPE'],
    call: (f, value) => f.log.append(value as never, { op: 'note', data: 1 }),
  },
  {
    name: 'SpaceLog.appendBatch(owner, garbage)',
    codes: ENTRY_CODES,
    call: (f, value) => f.log.appendBatch(f.owner, value as never),
    // Array.from turns holes into undefined, which every() would skip.
    accepts: (value) => Array.isArray(value) && Array.from(value).every(isValidEntry),
  },
  {
    name: 'SpaceLog.appendBatch(owner, [entry, garbage])',
    codes: ENTRY_CODES,
    call: (f, value) => f.log.appendBatch(f.owner, [{ op: 'note', data: 'valid' }, value as never]),
    accepts: isValidEntry,
  },
  {
    name: 'SpaceLog.appendBatch(owner, [entry], garbage options)',
    codes: ['WRONG_TYPE', 'UNKNOWN_FIELD'],
    call: (f, value) => f.log.appendBatch(f.owner, [{ op: 'note', data: 'valid' }], value as never),
    accepts: (value) => value === undefined || (isPlainObject(value) && Object.keys(value).length === 0),
  },
  {
    name: 'SpaceLog.erase(garbage)',
    codes: [...ID_CODES, 'UNKNOWN_EVENT'],
    call: (f, value) => f.log.erase(value as never),
    accepts: (value) => Array.isArray(value) && value.length === 0,
  },
  {
    name: 'SpaceLog.erase([data id, garbage])',
    codes: [...ID_CODES, 'UNKNOWN_EVENT'],
    call: (f, value) => f.log.erase([f.dataId, value as never]),
  },
  {
    name: 'SpaceLog.get(garbage)',
    codes: ID_CODES,
    call: (f, value) => f.log.get(value as never),
    accepts: isHex64,
  },
  {
    name: 'SpaceLog.getBySeq(garbage, 1)',
    codes: ID_CODES,
    call: (f, value) => f.log.getBySeq(value as never, 1),
    accepts: isHex64,
  },
  {
    name: 'SpaceLog.getBySeq(owner, garbage)',
    codes: SEQ_CODES,
    call: (f, value) => f.log.getBySeq(f.owner.author, value as never),
    accepts: isPositiveSafeInteger,
  },
  {
    name: 'SpaceLog.range(garbage)',
    codes: ID_CODES,
    call: (f, value) => drain(f.log.range(value as never)),
    accepts: isHex64,
  },
  {
    name: 'SpaceLog.range(owner, garbage)',
    codes: SEQ_CODES,
    call: (f, value) => drain(f.log.range(f.owner.author, value as never)),
    accepts: (value) => value === undefined || isPositiveSafeInteger(value),
  },
  {
    name: 'SpaceLog.readApplied(garbage)',
    codes: SEQ_CODES,
    call: (f, value) => drain(f.log.readApplied(value as never)),
    accepts: (value) => value === undefined || (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0),
  },
  {
    name: 'SpaceLog.envelopesSince(garbage)',
    codes: [...ID_CODES, ...SEQ_CODES, 'UNKNOWN_FIELD'],
    call: (f, value) => f.log.envelopesSince(value as never),
    accepts: (value) => value === undefined || (isPlainObject(value) && Object.keys(value).length === 0),
  },
  {
    name: 'SpaceLog.rightsOf(garbage)',
    codes: ID_CODES,
    call: (f, value) => f.log.rightsOf(value as never),
    accepts: isHex64,
  },
  {
    name: 'SpaceLog.grant(owner, garbage)',
    codes: ID_CODES,
    call: (f, value) => f.log.grant(f.owner, value as never),
    accepts: isHex64,
  },
  {
    name: 'SpaceLog.grant(owner, stranger, garbage rights)',
    codes: ['WRONG_TYPE', 'BAD_VALUE', 'EMPTY'],
    call: (f, value) => f.log.grant(f.owner, f.stranger.author, value as never),
    accepts: (value) => value === undefined || (Array.isArray(value) && value.length > 0 && Array.from(value).every((right) => right === 'write' || right === 'admin')),
  },
  {
    name: 'SpaceLog.grant(garbage identity, stranger)',
    codes: ['WRONG_TYPE'],
    call: (f, value) => f.log.grant(value as never, f.stranger.author),
  },
  {
    name: 'SpaceLog.revoke(owner, garbage)',
    codes: ID_CODES,
    call: (f, value) => f.log.revoke(f.owner, value as never),
    accepts: isHex64,
  },
  {
    name: 'LogStore.openSpace(garbage)',
    codes: ID_CODES,
    call: (f, value) => f.store.openSpace(value as never),
    accepts: isHex64,
  },
  {
    name: 'LogStore.existingSpace(garbage)',
    codes: [...ID_CODES, 'UNKNOWN_SPACE'],
    call: (f, value) => f.store.existingSpace(value as never),
  },
  {
    name: 'LogStore.createSpace(owner, garbage options)',
    codes: ['WRONG_TYPE', 'UNKNOWN_FIELD'],
    call: (f, value) => f.store.createSpace(f.owner, value as never),
    accepts: (value) => value === undefined || (isPlainObject(value) && Object.keys(value).length === 0),
  },
  {
    name: 'LogStore.open(garbage)',
    codes: ['WRONG_TYPE', 'UNKNOWN_FIELD'],
    call: async (_f, value) => {
      const store = await LogStore.open(value as never)
      await store.close()
    },
    accepts: (value) => value === undefined || (isPlainObject(value) && Object.keys(value).length === 0),
  },
  {
    name: 'LogStore.open({ path: garbage })',
    codes: ['WRONG_TYPE', 'EMPTY', 'STORE_UNAVAILABLE'],
    call: async (_f, value) => {
      const store = await LogStore.open({ path: value as never })
      await store.close()
    },
    // Any other string names a directory: it would be created, so it is not fed here.
    accepts: (value) => value === undefined || (typeof value === 'string' && value !== '' && !value.includes('\u0000')),
  },
  {
    name: 'LogStore.open({ journalRotateBytes: garbage })',
    codes: ['WRONG_TYPE', 'OUT_OF_RANGE'],
    call: async (_f, value) => {
      const store = await LogStore.open({ journalRotateBytes: value as never })
      await store.close()
    },
    accepts: (value) => value === undefined || (Number.isSafeInteger(value) && (value as number) >= 1),
  },
  {
    name: 'LogStore.open({ writeBufferBytes: garbage })',
    codes: ['WRONG_TYPE', 'OUT_OF_RANGE'],
    call: async (_f, value) => {
      const store = await LogStore.open({ writeBufferBytes: value as never })
      await store.close()
    },
    accepts: (value) => value === undefined || (Number.isSafeInteger(value) && (value as number) >= 64 * 1024 && (value as number) <= 1024 ** 3),
  },
  {
    name: 'Identity.fromSeed(garbage)',
    codes: ['WRONG_TYPE', 'WRONG_LENGTH'],
    call: (_f, value) => Identity.fromSeed(value as never),
    accepts: (value) => value instanceof Uint8Array && value.length === 32,
  },
  {
    name: 'parseJson(garbage)',
    codes: ['WRONG_TYPE', 'BAD_JSON', 'TOO_DEEP'],
    call: (_f, value) => parseJson(value as never),
    accepts: isValidJsonText,
  },
  {
    name: 'canonicalJson(garbage)',
    codes: ['NOT_JSON', 'NOT_FINITE', 'BAD_STRING', 'TOO_DEEP'],
    call: (_f, value) => canonicalJson(value),
    accepts: (value) => isJsonValue(value),
  },
]

/**
 * Cases that fail today because of bugs in src/ (see the report that added this file).
 * '*' means every garbage value fed to that entry point.
 */
const KNOWN_BUGS: Record<string, readonly string[] | '*'> = {}

/** Individual cases, by entry point, that fail today. */
const KNOWN_BUG_CASES: Record<string, readonly string[]> = {}

function isKnownBug(entry: EntryPoint, input: BadInput): boolean {
  const all = KNOWN_BUGS[entry.name]
  if (all === '*') return true
  return KNOWN_BUG_CASES[entry.name]?.includes(input.name) ?? false
}

async function refusal(call: () => unknown): Promise<unknown> {
  try {
    await call()
  } catch (error) {
    return error
  }
  return undefined
}

describe('the fixture', () => {
  it('its fresh envelopes ingest cleanly on their own, so a refusal below is the garbage\'s doing', async () => {
    const fixture = await buildFixture()
    expect((await fixture.log.verify()).ok).toBe(true)
    expect(fixture.log.heldCount).toBe(1)
    const result = await fixture.log.ingest(fixture.fresh)
    expect(result.applied.length).toBe(fixture.fresh.length + 1)
    expect(fixture.log.heldCount).toBe(0)
    expect((await fixture.log.verify()).ok).toBe(true)
  })

  it('the snapshot notices a change: an erasure, an append', async () => {
    const fixture = await buildFixture()
    const before = await snapshot(fixture)
    await fixture.log.erase([fixture.dataId])
    const erased = await snapshot(fixture)
    expect(erased).not.toBe(before)
    await fixture.log.append(fixture.owner, { op: 'note', data: 1 })
    expect(await snapshot(fixture)).not.toBe(erased)
  })

  it('knows no entry point by a wrong name', () => {
    const names = new Set(ENTRY_POINTS.map((entry) => entry.name))
    expect(Object.keys(KNOWN_BUGS).filter((name) => !names.has(name))).toEqual([])
    expect(Object.keys(KNOWN_BUG_CASES).filter((name) => !names.has(name))).toEqual([])
    const inputs = new Set(badValues().map((input) => input.name))
    for (const cases of Object.values(KNOWN_BUG_CASES)) expect(cases.filter((name) => !inputs.has(name))).toEqual([])
  })
})

for (const entry of ENTRY_POINTS) {
  describe(entry.name, () => {
    let fixture: Fixture
    let baseline: string
    beforeAll(async () => {
      fixture = await buildFixture()
      baseline = await snapshot(fixture)
    })
    afterAll(async () => {
      await fixture.store.close()
    })

    // The envelope garbage needs the fixture's real events; its names are known up front.
    const inputs = [...badValues(), ...(entry.envelopes ? badEnvelopeNames().map((name) => ({ name, value: undefined })) : [])]
    for (const input of inputs) {
      const isEnvelope = input.name.startsWith('envelope: ')
      if (!isEnvelope && entry.accepts?.(input.value)) continue
      const test = isKnownBug(entry, input) ? it.fails : it
      test(`refuses ${input.name}`, async () => {
        const value = isEnvelope ? fixture.garbageEnvelopes.find((candidate) => candidate.name === input.name)?.value : input.value
        const error = await refusal(() => entry.call(fixture, value))
        const after = await snapshot(fixture)
        // Re-baseline, before any assertion, so one case that changed the store does not fail
        // every later case.
        const unchanged = after === baseline
        baseline = after
        expect(error, 'should throw').toBeDefined()
        expect(error, String(error)).toBeInstanceOf(CairnError)
        expect(entry.codes, String(error)).toContain((error as CairnError).code)
        expect((error as CairnError).message.length, 'message length').toBeLessThanOrEqual(MAX_MESSAGE_CHARS)
        expect(unchanged, 'the store changed').toBe(true)
      })
    }

    // Raw storage bytes unchanged after every case means verify() sees what it saw before; it
    // runs once here rather than after each of the ~100 cases.
    it('still verifies after every refusal', async () => {
      expect((await fixture.log.verify()).ok).toBe(true)
      expect((await snapshot(fixture)) === baseline, 'the store changed').toBe(true)
    })
  })
}

function badEnvelopeNames(): string[] {
  // Placeholders with the right shape; only the names are read.
  const bytes = new Uint8Array(65)
  const placeholder: RawEnvelope = { id: '00'.repeat(32), header: bytes, body: bytes, signature: bytes.subarray(0, 64) }
  return badEnvelopes(placeholder, placeholder, placeholder).map((input) => input.name)
}

describe('refusals that need a real identity or event', () => {
  let fixture: Fixture
  let baseline: string
  beforeAll(async () => {
    fixture = await buildFixture()
    baseline = await snapshot(fixture)
  })

  const cases: [string, string[], (f: Fixture) => Promise<unknown>][] = [
    ['an append by a stranger', ['NOT_AUTHORIZED'], (f) => f.log.append(f.stranger, { op: 'note', data: 1 })],
    ['a batch by a stranger', ['NOT_AUTHORIZED'], (f) => f.log.appendBatch(f.stranger, [{ op: 'note' }, { op: 'note' }])],
    ['a grant by a writer without admin', ['NOT_AUTHORIZED'], (f) => f.log.grant(f.writer, f.stranger.author)],
    ['a revoke by a writer without admin', ['NOT_AUTHORIZED'], (f) => f.log.revoke(f.writer, f.owner.author)],
    ['a revoke of the owner', ['BAD_CONTROL'], (f) => f.log.revoke(f.owner, f.owner.author)],
    ['a grant to the owner', ['BAD_CONTROL'], (f) => f.log.grant(f.owner, f.owner.author, ['write'])],
    ['erasing the genesis', ['NOT_ERASABLE'], (f) => f.log.erase([f.genesisId])],
    ['erasing a data event and the genesis together', ['NOT_ERASABLE'], (f) => f.log.erase([f.dataId, f.genesisId])],
    ['erasing a data event and an unknown id', ['UNKNOWN_EVENT'], (f) => f.log.erase([f.dataId, 'cd'.repeat(32)])],
    ['erasing a data event and an uppercase id', ['BAD_HEX'], (f) => f.log.erase([f.dataId, f.dataId.toUpperCase()])],
    ['a batch whose last entry is bad', ['NOT_FINITE'], (f) => f.log.appendBatch(f.owner, [{ op: 'note' }, { op: 'note' }, { op: 'note', data: { x: Number.NaN } }])],
    ['a batch by the writer whose first entry is bad', ['BAD_OP'], (f) => f.log.appendBatch(f.writer, [{ op: 'space.revoke' }, { op: 'note' }])],
    ['the existingSpace of a space this store lacks', ['UNKNOWN_SPACE'], (f) => f.store.existingSpace('ef'.repeat(32))],
  ]
  for (const [name, codes, call] of cases) {
    it(`refuses ${name} and changes nothing`, async () => {
      const error = await refusal(() => call(fixture))
      const after = await snapshot(fixture)
      const unchanged = after === baseline
      baseline = after
      expect(error, 'should throw').toBeInstanceOf(CairnError)
      expect(codes, String(error)).toContain((error as CairnError).code)
      expect(unchanged, 'the store changed').toBe(true)
      expect((await fixture.log.verify()).ok).toBe(true)
    })
  }

  it('stores an own __proto__ key in data as data, polluting no prototype', async () => {
    const log = (await buildFixture()).log
    const owner = Identity.fromSeed(seed(1))
    const data = parseJson('{"__proto__":{"polluted":true},"x":1}')
    const event = await log.append(owner, { op: 'note', data })
    const read = await log.get(event.id)
    expect(Object.keys(read?.body?.data as object)).toEqual(['__proto__', 'x'])
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(Object.getPrototypeOf(read?.body?.data)).toBe(Object.prototype)
  })
})

describe('what the store hands out cannot be used to change it', () => {
  async function mutateHandedOut(store: LogStore): Promise<{ before: boolean; after: boolean }> {
    const owner = Identity.fromSeed(seed(1))
    const log = await store.createSpace(owner)
    const event = await log.append(owner, { op: 'note', data: 'keep me' })
    const before = (await log.verify()).ok
    const read = await log.get(event.id)
    if (read?.signature) read.signature[0] = (read.signature[0] as number) ^ 0xff
    const [, envelope] = await log.envelopesSince()
    if (envelope?.body) envelope.body[5] = (envelope.body[5] as number) ^ 0x01
    const after = (await log.verify()).ok
    await store.close()
    return { before, after }
  }

  it('on disk, flipping bytes of a returned signature or envelope body leaves the stored event intact', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'cairn-handed-out-'))
    try {
      expect(await mutateHandedOut(await LogStore.open({ path: dir }))).toEqual({ before: true, after: true })
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  // memory-level keeps the caller's arrays; the storage adapter copies both ways.
  it('in memory, flipping bytes of a returned signature or envelope body leaves the stored event intact', async () => {
    expect(await mutateHandedOut(await LogStore.open())).toEqual({ before: true, after: true })
  })
})

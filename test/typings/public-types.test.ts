/**
 * The public typings, as an app compiles against them (the package root). The `@ts-expect-error`
 * lines are the assertions that matter: `npm run typecheck` (CI) fails if one of them stops
 * being an error, i.e. if the typings loosen. The runtime parts check the values behind them.
 */
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest'
import {
  decodeToken, Memory, type GetOptions, type JsonObject, type JsonValue, type LookupResult, type MemoryRecord, type Permission, type QueryPage,
  type RecordInput, type RecordUpdate, type RememberInput, type SearchHit, type SearchOptions, type SupersedeOptions, type TokenRequest,
  type ProjectionFeatures, type ProgressCallback, type ConformanceLevel, type ExportMode, type PamSourceAgent, type PamComponents,
} from '../../src/index.js'

const open: Memory[] = []
afterEach(async () => {
  for (const memory of open.splice(0)) await memory.close()
})

async function memory(): Promise<Memory> {
  const opened = await Memory.open()
  open.push(opened)
  return opened
}

describe('record inputs are typed per kind', () => {
  it('a literal of each shape compiles and is stored', async () => {
    const m = await memory()
    const preference: RecordInput<'preference'> = { kind: 'preference', key: 'tone', value: 'laconic' }
    const episode: RememberInput = { kind: 'episode', summary: 'Met Ada', importance: 0.9, tags: ['work'], mood: 'glad' }
    const core: RecordInput = { kind: 'core', id: 'human', content: 'Ada' }
    // Lists built `as const` are readonly: inputs take them.
    const tags = ['work', 'people'] as const
    await m.remember({ kind: 'entity', type: 'person', canonicalName: 'Ada', aliases: tags, tags })
    const ids = await m.rememberMany([preference, episode, core])
    expect(ids).toHaveLength(3)
    // An episode's unknown key is kept (an extension), as the type allows.
    expect((await m.get(ids[1] as string))?.mood).toBe('glad')
  })

  it('typos, missing fields and wrong types do not compile, and are refused at run time too', async () => {
    const m = await memory()
    // @ts-expect-error a misspelt field of a preference
    const typo: RememberInput = { kind: 'preference', key: 'tone', valeu: 'x' }
    // @ts-expect-error a preference needs its value
    const missing: RememberInput = { kind: 'preference', key: 'tone' }
    // @ts-expect-error importance is a number
    const wrongType: RememberInput = { kind: 'episode', summary: 'x', importance: 'high' }
    // @ts-expect-error an episode needs summary or details
    const empty: RememberInput = { kind: 'episode', mood: 'glad' }
    // @ts-expect-error a core block needs its id (the block name)
    const nameless: RememberInput = { kind: 'core', content: 'x' }
    // @ts-expect-error no such kind
    const unknownKind: RememberInput = { kind: 'note', summary: 'x' }
    for (const [input, code] of [[typo, 'UNKNOWN_FIELD'], [missing, 'MISSING_FIELD'], [wrongType, 'WRONG_TYPE'], [empty, 'MISSING_FIELD'], [nameless, 'MISSING_FIELD'], [unknownKind, 'UNKNOWN_KIND']] as const) {
      await expect(m.remember(input)).rejects.toMatchObject({ code })
    }
  })
})

describe('reads narrow by kind', () => {
  it('a record narrowed by its kind types its fields', async () => {
    const m = await memory()
    const id = await m.remember({ kind: 'episode', summary: 'Met Ada', tags: ['work'] })
    const chunkOwner = await m.remember({ kind: 'resource', uri: 'file:///a', mimeType: 'text/plain', contentHash: 'h', title: 'A' })
    await m.remember({ kind: 'chunk', resourceID: chunkOwner, position: 2, text: 'hello' })
    const record = await m.get(id)
    expectTypeOf(record).toEqualTypeOf<MemoryRecord | undefined>()
    if (record?.kind !== 'episode') throw new Error('expected the episode')
    expectTypeOf(record.summary).toEqualTypeOf<string>()
    expectTypeOf(record.importance).toEqualTypeOf<number>()
    expectTypeOf(record.tags).toEqualTypeOf<string[] | undefined>()
    expectTypeOf(record.metadata).toEqualTypeOf<{ [key: string]: string }>()
    expect(record.summary).toBe('Met Ada')
    expect(record.importance).toBe(0.5)
    expect(record.tags).toEqual(['work'])
    const page: QueryPage = await m.query({ kind: 'chunk' })
    const chunk = page.records[0]
    if (chunk?.kind !== 'chunk') throw new Error('expected the chunk')
    expectTypeOf(chunk.position).toEqualTypeOf<number>()
    expect(chunk.position).toBe(2)
    // A name the kind lacks reads as untyped JSON (the index signature), not as another kind's field.
    expectTypeOf(chunk.summary).toEqualTypeOf<JsonValue | undefined>()
    expect(chunk.summary).toBeUndefined()
  })

  it('result and option shapes have names', async () => {
    const m = await memory()
    const id = await m.remember({ kind: 'episode', summary: 'tea with Ada' })
    const options: SearchOptions = { kind: 'episode', limit: 5 }
    const hits: SearchHit[] = await m.search('tea', options)
    expect(hits.map((hit) => hit.record.id)).toEqual([id])
    const asOf: GetOptions = { asOf: Date.now() + 1000 }
    expect((await m.get(id, asOf))?.id).toBe(id)
    const looked: LookupResult[] = await m.lookup([id, 'ep_none'])
    expect(looked.map((item) => item.status)).toEqual(['visible', 'absent'])
    const updates: RecordUpdate[] = [{ id, changes: { add: { tags: ['x'] } } }]
    await m.updateMany(updates)
    const supersede: SupersedeOptions = { source: 'asserted' }
    expectTypeOf(supersede).toMatchTypeOf<NonNullable<Parameters<Memory['supersede']>[2]>>()
    expectTypeOf<ProjectionFeatures>().toEqualTypeOf<NonNullable<Parameters<typeof Memory.attach>[3]>>()
    expectTypeOf<ProgressCallback>().toEqualTypeOf<(done: number, total: number) => void>()
    expectTypeOf<ConformanceLevel | ExportMode | PamSourceAgent | PamComponents | JsonObject>().not.toBeAny()
  })
})

describe('tokens', () => {
  it('Memory.createToken takes the exported TokenRequest; permissions default to read, scope to everything', async () => {
    const owner = await memory()
    const holder = await memory()
    const request: TokenRequest = { audience: holder.author, expiresIn: 60_000 }
    const token = decodeToken(owner.createToken(request), owner.crypto)
    expect(token.permissions).toEqual(['read'] satisfies Permission[])
    expect(token.scope).toEqual({ all: true })
    expect(token.expiresAt - token.issuedAt).toBe(60_000)
    // @ts-expect-error the lifetime is `expiresIn` (ms)
    const old: TokenRequest = { audience: holder.author, expiresInMs: 60_000 }
    expect(() => owner.createToken(old)).toThrow(expect.objectContaining({ code: 'UNKNOWN_FIELD' }))
    // @ts-expect-error no such permission
    const wrong: TokenRequest = { audience: holder.author, expiresIn: 1, permissions: ['admin'] }
    expect(() => owner.createToken(wrong)).toThrow(expect.objectContaining({ code: 'BAD_VALUE' }))
  })
})

describe('ingest', () => {
  it('takes events, not any list', async () => {
    const m = await memory()
    // @ts-expect-error numbers are not events
    await expect(m.ingest([1, 2, 3])).rejects.toMatchObject({ name: 'InputError' })
  })
})

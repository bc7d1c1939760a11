/**
 * The `.mem` writer's byte rules (spec notes §1–§4, §8) checked against bytes written out by
 * hand: layout, line order, canonical lines, ext and passthrough, counts, coverage, scopes,
 * since, the Evidence Pack, and what reading gives back.
 */
import { existsSync, statSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { readMemBundle, writeMemBundle, type MemBundleContent } from '../../src/bundle/mem/index.js'
import { editFile, listFiles, readBundleBytes, readRawManifest, sha256Hex, tempBundlePath } from './helpers/mem-fixtures.js'
import { context, edge, emptyContent, entity, episode, OPTIONS, T, tombstone } from './helpers/mem-records.js'

async function written(content: MemBundleContent, options = OPTIONS): Promise<string> {
  const dir = tempBundlePath()
  await writeMemBundle(dir, content, options)
  return dir
}

const text = (dir: string, file: string): string => readBundleBytes(dir, file).toString('utf8')

describe('.mem writer', () => {
  it('writes an empty export as items/, audit/, CHECKSUMS "\\n" and a manifest without coverage or scopes', async () => {
    const dir = await written(emptyContent())
    expect(statSync(path.join(dir, 'items')).isDirectory()).toBe(true)
    expect(statSync(path.join(dir, 'audit')).isDirectory()).toBe(true)
    expect(listFiles(dir)).toEqual(['CHECKSUMS', 'manifest.json'])
    expect(text(dir, 'CHECKSUMS')).toBe('\n')
    expect(text(dir, 'manifest.json')).toBe(
      `{"bundleDigest":"${sha256Hex('\n')}","capabilities":["bitemporal","tombstones","redaction","evidence-pack","ext","passthrough"],` +
        '"conformanceLevel":"L3","counts":{},"createdAt":"2030-01-01T00:00:00Z","embeddingDim":0,"embeddingModel":"none",' +
        '"embeddingsIncluded":false,"exportMode":"full","files":[],"format":"1.1.0","generator":"cairn-test/0.1","schemaVersion":1}',
    )
    const { content } = await readMemBundle(dir)
    expect(content).toEqual(emptyContent())
  })

  it('orders episodes by id and other kinds by the whole canonical line, one "\\n" after each', async () => {
    const dir = await written({
      ...emptyContent(),
      // Line order would be ep_b, ep_a, ep_10 (accessCount is the first key): id order differs.
      records: { episode: [episode('ep_b'), episode('ep_a', { accessCount: 5 }), episode('ep_10', { accessCount: 9 })], entity: [entity('ent_a', ['zed']), entity('ent_b', ['alpha'])] },
    })
    expect(text(dir, 'items/entity.jsonl')).toBe(
      `{"aliases":["alpha"],"canonicalName":"N","id":"ent_b","sensitivity":"low","summary":"","type":"person","updatedAt":"${T}"}\n` +
        `{"aliases":["zed"],"canonicalName":"N","id":"ent_a","sensitivity":"low","summary":"","type":"person","updatedAt":"${T}"}\n`,
    )
    const episodes = text(dir, 'items/episode.jsonl')
    expect(episodes.endsWith('}\n')).toBe(true)
    expect(episodes.split('\n').slice(0, -1).map((line) => (JSON.parse(line) as { id: string }).id)).toEqual(['ep_10', 'ep_a', 'ep_b'])
    expect(text(dir, 'CHECKSUMS')).toBe(
      `${sha256Hex(readBundleBytes(dir, 'items/entity.jsonl'))}  items/entity.jsonl\n${sha256Hex(readBundleBytes(dir, 'items/episode.jsonl'))}  items/episode.jsonl\n`,
    )
    expect(readRawManifest(dir).counts).toEqual({ entity: 2, episode: 3 })
  })

  it('keeps unknown episode keys inline in the canonical line, UInt64 integers exact', async () => {
    const input = { zeta: { b: 1, a: [true, null] }, alpha: 18446744073709551615n, ü: 'x', ...episode('ep_1', { speaker: 'user' }) }
    const dir = await written({ ...emptyContent(), records: { episode: [input] } })
    expect(text(dir, 'items/episode.jsonl')).toBe(
      `{"accessCount":0,"actors":[],"alpha":18446744073709551615,"categories":[],"confidence":0.7,"details":"d","eventTime":"${T}",` +
        `"extractionState":"done","id":"ep_1","importance":0.5,"ingestionTime":"${T}","lifecycleState":"HOT","mentionTime":"${T}",` +
        `"metadata":{},"pinned":false,"sensitivity":"low","sourceType":"note","speaker":"user","summary":"s","vaultRefs":[],` +
        '"zeta":{"a":[true,null],"b":1},"ü":"x"}\n',
    )
    const { content } = await readMemBundle(dir)
    expect(content.records.episode?.[0]).toEqual(input)
  })

  it('re-canonicalizes an episode line read with unsorted keys and spacing', async () => {
    const dir = await written({ ...emptyContent(), records: { episode: [episode('ep_1', { vendor: 1 })] } })
    editFile(dir, 'items/episode.jsonl', (body) => `  { "vendor" : 1 , ${body.trim().slice(1).replace('"vendor":1', '"x":[ 2 ]')}\n`)
    const { content, manifest } = await readMemBundle(dir)
    const again = tempBundlePath()
    await writeMemBundle(again, content, { ...OPTIONS, createdAt: manifest.createdAt })
    expect(text(again, 'items/episode.jsonl')).toContain('"vaultRefs":[],"vendor":1,"x":[2]}\n')
  })

  it('drops unknown keys of other kinds, warning once per file and key, on write and on read', async () => {
    const content = { ...emptyContent(), records: { entity: [entity('ent_a', [], { tags: ['x'] }), entity('ent_b', [], { tags: [], contextID: 'ctx_1' })] } }
    const dir = tempBundlePath()
    const result = await writeMemBundle(dir, content, OPTIONS)
    expect(text(dir, 'items/entity.jsonl')).not.toContain('tags')
    expect(result.warnings.map((warning) => [warning.code, warning.file, warning.message.includes('2 rows')])).toEqual([
      ['UNKNOWN_FIELD_DROPPED', 'items/entity.jsonl', true],
      ['UNKNOWN_FIELD_DROPPED', 'items/entity.jsonl', false],
    ])
    editFile(dir, 'items/entity.jsonl', (body) => body.replace('"id":"ent_b"', '"id":"ent_b","vendorNote":"n"'))
    const read = await readMemBundle(dir)
    expect(read.warnings).toEqual([{ code: 'UNKNOWN_FIELD_DROPPED', message: expect.stringContaining('vendorNote'), file: 'items/entity.jsonl', line: 2 }])
    expect(read.content.records.entity?.[1]).toEqual(entity('ent_b', []))
  })

  it('keeps vendor-kind lines byte for byte in their order, dropping empty lines', async () => {
    const lines = [' {"b": 1, "a":2}\r', '', 'not json at all', '{"id":"vt_0"}']
    const dir = await written({ ...emptyContent(), passthrough: { vendorThing: lines } })
    expect(text(dir, 'items/vendorThing.jsonl')).toBe(' {"b": 1, "a":2}\r\nnot json at all\n{"id":"vt_0"}\n')
    expect(readRawManifest(dir).counts).toEqual({ vendorThing: 3 })
    const { content } = await readMemBundle(dir)
    expect(content.passthrough).toEqual({ vendorThing: [' {"b": 1, "a":2}\r', 'not json at all', '{"id":"vt_0"}'] })
  })

  it('sorts tombstones and audit rows by line, fills a partial derived block, and counts them', async () => {
    const dir = await written({
      ...emptyContent(),
      tombstones: [tombstone('tomb_2', 'ep_b'), { ...tombstone('tomb_1', 'ep_a', { reason: 'user erasure' }), derived: { factIDs: ['fact_x'] } }],
      auditLog: [{ ts: T, actor: 'user', op: 'delete', targetID: 'ep_b' }, { ts: T, actor: 'agent', op: 'create', targetID: 'ep_a', reason: 'import' }],
    })
    expect(text(dir, 'audit/tombstones.jsonl')).toBe(
      `{"actor":"user","deletedAt":"${T}","derived":{"chunkIDs":[],"edgeIDs":[],"embeddingCacheKeys":[],"entityIDs":[],"episodeLinkCount":0,"factIDs":["fact_x"],"sentenceIDs":[]},"id":"tomb_1","op":"delete","reason":"user erasure","targetID":"ep_a","targetKind":"episode"}\n` +
        `{"actor":"user","deletedAt":"${T}","derived":{"chunkIDs":[],"edgeIDs":[],"embeddingCacheKeys":[],"entityIDs":[],"episodeLinkCount":0,"factIDs":[],"sentenceIDs":[]},"id":"tomb_2","op":"delete","targetID":"ep_b","targetKind":"episode"}\n`,
    )
    expect(text(dir, 'audit/log.jsonl')).toBe(
      `{"actor":"agent","op":"create","reason":"import","targetID":"ep_a","ts":"${T}"}\n{"actor":"user","op":"delete","targetID":"ep_b","ts":"${T}"}\n`,
    )
    expect(readRawManifest(dir).counts).toEqual({ audit: 2, tombstone: 2 })
    const { content } = await readMemBundle(dir)
    expect(content.tombstones.map((row) => row.id)).toEqual(['tomb_1', 'tomb_2'])
    expect(content.auditLog).toHaveLength(2)
  })

  it('writes Evidence Pack edges to provenance/edges.jsonl, counted as provenanceEdge', async () => {
    const dir = await written({ ...emptyContent(), provenanceEdges: [edge('edge_1')] })
    expect(text(dir, 'provenance/edges.jsonl')).toBe(
      `{"confidence":0.9,"dstEntityID":"ent_b","edgeType":"knows","evidenceEpisodeIDs":["ep_1"],"id":"edge_1","ingestionTime":"${T}","srcEntityID":"ent_a","tValidFrom":"${T}"}\n`,
    )
    expect(readRawManifest(dir).counts).toEqual({ provenanceEdge: 1 })
    expect((await readMemBundle(dir)).content.provenanceEdges).toEqual([edge('edge_1')])
  })

  it('computes coverage from episode eventTimes by instant, keeping them as given, and scopes from contexts', async () => {
    const dir = await written({
      ...emptyContent(),
      records: {
        episode: [
          episode('ep_1', { eventTime: '2023-12-31T23:30:00Z', contextID: 'ctx_b' }),
          episode('ep_2', { eventTime: '2024-01-01T01:00:00+02:00', contextID: '' }),
          episode('ep_3', { eventTime: '2024-06-01T00:00:00.5Z', contextID: 'ctx_a' }),
        ],
        context: [context('ctx_c'), context('ctx_a')],
      },
    })
    const manifest = readRawManifest(dir)
    expect(manifest.coverage).toEqual({ from: '2024-01-01T01:00:00+02:00', to: '2024-06-01T00:00:00.5Z' })
    expect(manifest.scopes).toEqual(['ctx_a', 'ctx_b', 'ctx_c'])
    expect(text(dir, 'items/episode.jsonl')).toContain('"eventTime":"2024-06-01T00:00:00.5Z"')
  })

  it('writes since only for incremental exports, and specURL and schemaVersion as given', async () => {
    const dir = await written(emptyContent(), { ...OPTIONS, exportMode: 'incremental', since: T, specURL: 'https://example.org/spec', schemaVersion: 0 })
    const manifest = readRawManifest(dir)
    expect([manifest.exportMode, manifest.since, manifest.specURL, manifest.schemaVersion]).toEqual(['incremental', T, 'https://example.org/spec', 0])
    const full = tempBundlePath()
    await expect(writeMemBundle(full, emptyContent(), { ...OPTIONS, since: T })).rejects.toMatchObject({ code: 'SINCE_NOT_INCREMENTAL' })
    expect(existsSync(full)).toBe(false)
    expect('since' in readRawManifest(await written(emptyContent(), { ...OPTIONS, exportMode: 'incremental' }))).toBe(false)
  })

  it('keeps numbers in shortest form and writes integral floats as integers', async () => {
    const dir = await written({ ...emptyContent(), records: { episode: [episode('ep_1', { confidence: 0.1 + 0.2, importance: 1e21, vendorTiny: 1e-7 })] } })
    const line = text(dir, 'items/episode.jsonl')
    expect(line).toContain('"confidence":0.30000000000000004')
    expect(line).toContain('"importance":1e+21')
    expect(line).toContain('"vendorTiny":1e-07')
    editFile(dir, 'items/episode.jsonl', (body) => body.replace('"accessCount":0', '"accessCount":2.0').replace('"confidence":0.30000000000000004', '"confidence":1.0'))
    const { content } = await readMemBundle(dir)
    const again = await written(content)
    expect(text(again, 'items/episode.jsonl')).toMatch(/^\{"accessCount":2,"actors":\[\],"categories":\[\],"confidence":1,/)
  })
})

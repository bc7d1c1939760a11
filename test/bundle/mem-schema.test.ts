/**
 * Every row and manifest the writer produces is valid against the Portable Memory JSON Schemas
 * (conformance/portable-memory/Schemas), read where they live and checked with the independent
 * helper test/helpers/json-schema.ts: for random content of every kind and for the golden
 * bundles written again.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { encodeMemBundle, readMemBundle, type EncodedBundle, type MemBundleContent } from '../../src/bundle/mem/index.js'
import { parseJson } from '../../src/log/index.js'
import { RECORD_KINDS } from '../../src/projection/kinds.js'
import { loadPortableMemorySchema, schemaErrors, type JsonSchema } from '../helpers/json-schema.js'
import { bundleContent } from './helpers/mem-arbitraries.js'
import { FIXTURES, optionsFrom, testSigner } from './helpers/mem-fixtures.js'
import { OPTIONS } from './helpers/mem-records.js'

const schemas = new Map<string, JsonSchema>()
for (const name of [...RECORD_KINDS, 'tombstone', 'log', 'manifest']) schemas.set(name, loadPortableMemorySchema(name))

function schemaFor(file: string): string {
  if (file === 'audit/tombstones.jsonl') return 'tombstone'
  if (file === 'audit/log.jsonl') return 'log'
  if (file === 'provenance/edges.jsonl') return 'edge'
  const kind = /^items\/(.+)\.jsonl$/.exec(file)?.[1] ?? ''
  return (RECORD_KINDS as readonly string[]).includes(kind) ? kind : ''
}

/** Schema violations of every row and of the manifest, as `file:line: message`; also how many rows were checked. */
function violations(encoded: EncodedBundle): { errors: string[]; rows: number } {
  const errors: string[] = []
  let rows = 0
  for (const [file, bytes] of encoded.files) {
    const name = schemaFor(file)
    if (name === '') continue
    const lines = Buffer.from(bytes).toString('utf8').split('\n').slice(0, -1)
    lines.forEach((line, i) => {
      rows++
      for (const error of schemaErrors(schemas.get(name) as JsonSchema, parseJson(line))) errors.push(`${file}:${i + 1}: ${error}`)
    })
  }
  for (const error of schemaErrors(schemas.get('manifest') as JsonSchema, parseJson(Buffer.from(encoded.manifestBytes).toString('utf8')))) errors.push(`manifest.json: ${error}`)
  return { errors, rows }
}

describe('JSON Schema conformance of written bundles', () => {
  it('rows of every kind, tombstones, audit rows, Evidence Pack edges and the manifest match their schemas', () => {
    let rows = 0
    const kinds = new Set<string>()
    fc.assert(
      fc.property(bundleContent, (content: MemBundleContent) => {
        const encoded = encodeMemBundle(content, { ...OPTIONS, exportMode: 'incremental', since: '2024-01-01T00:00:00Z', specURL: 'https://example.org/spec' })
        const result = violations(encoded)
        expect(result.errors).toEqual([])
        rows += result.rows
        for (const file of encoded.files.keys()) kinds.add(schemaFor(file))
      }),
      { numRuns: 200 },
    )
    expect(rows).toBeGreaterThan(500)
    expect([...kinds].filter((kind) => kind !== '').sort()).toEqual([...RECORD_KINDS, 'log', 'tombstone'].sort())
  })

  it('the golden bundles written again match their schemas', async () => {
    for (const [dir, isSigned] of [[FIXTURES.sample, false], [FIXTURES.sample11, false], [FIXTURES.signed, true]] as const) {
      const { manifest, content } = await readMemBundle(dir)
      const encoded = encodeMemBundle(content, optionsFrom(manifest, isSigned ? { signer: testSigner() } : {}))
      expect(violations(encoded).errors, dir).toEqual([])
    }
  })

  it('the checker can fail: a row missing a required field is reported', () => {
    expect(schemaErrors(schemas.get('episode') as JsonSchema, { id: 'ep_1' }).length).toBeGreaterThan(0)
  })
})

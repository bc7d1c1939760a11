/**
 * Laws of the `.mem` codec over random content of every kind (spec notes §3, §8): what is
 * written reads back and writes again to identical bytes; the bytes do not depend on the order
 * rows were given in (vendor lines excepted: their order is kept).
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { readMemBundle, writeMemBundle, type MemBundleContent } from '../../src/bundle/mem/index.js'
import { bundleContent } from './helpers/mem-arbitraries.js'
import { listFiles, readBundleBytes, tempBundlePath } from './helpers/mem-fixtures.js'
import { OPTIONS } from './helpers/mem-records.js'

function expectSameBytes(a: string, b: string): void {
  expect(listFiles(b)).toEqual(listFiles(a))
  for (const file of listFiles(a)) expect(readBundleBytes(b, file).equals(readBundleBytes(a, file)), file).toBe(true)
}

function reversed(content: MemBundleContent): MemBundleContent {
  const records = Object.fromEntries(Object.entries(content.records).map(([kind, rows]) => [kind, [...(rows ?? [])].reverse()]))
  return {
    records,
    passthrough: content.passthrough,
    tombstones: [...content.tombstones].reverse(),
    auditLog: [...content.auditLog].reverse(),
    ...(content.provenanceEdges === undefined ? {} : { provenanceEdges: [...content.provenanceEdges].reverse() }),
  }
}

describe('.mem round trip', () => {
  it('write, read, write again gives identical bytes, and reading both gives the same content', async () => {
    await fc.assert(
      fc.asyncProperty(bundleContent, async (content) => {
        const first = tempBundlePath()
        await writeMemBundle(first, content, OPTIONS)
        const read = await readMemBundle(first)
        const second = tempBundlePath()
        await writeMemBundle(second, read.content, OPTIONS)
        expectSameBytes(first, second)
        expect((await readMemBundle(second)).content).toEqual(read.content)
      }),
      { numRuns: 60 },
    )
  })

  it('the bytes do not depend on the order rows are given in', async () => {
    await fc.assert(
      fc.asyncProperty(bundleContent, async (content) => {
        const given = tempBundlePath()
        await writeMemBundle(given, content, OPTIONS)
        const backwards = tempBundlePath()
        await writeMemBundle(backwards, reversed(content), OPTIONS)
        expectSameBytes(given, backwards)
      }),
      { numRuns: 40 },
    )
  })
})

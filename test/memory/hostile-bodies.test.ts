/**
 * Event bodies a granted writer signed that the projection read wrongly (found by
 * test/property/hostile-bodies.property.test.ts):
 * - lines of an unknown kind (`memory.foreign`) under a kind named like an Object.prototype
 *   member: `foreignLines()` gathered them into a plain object, where `out['constructor'] ??= []`
 *   finds Object and `.push` throws, so every call threw from then on, and so did every `.mem`
 *   export and import on every replica that held the event (and a bundle reader dropped a
 *   vendor file named `__proto__`: assigned, it became the passthrough object's prototype);
 * - a patch whose only unknown keys (`ext`, `unsetExt`) are `__proto__`, which no state holds:
 *   applied, it left a record no create had reached blank, unstored, without the kind it gave
 *   it, so a later create of another kind was weighed by whether it came in the same batch;
 * - lines of an unknown kind a `.mem` vendor file cannot hold (a kind that is no safe file-name
 *   stem, a line with a newline or a lone surrogate): kept, they made every `.mem` export throw
 *   on every replica holding them. `rememberForeign` now refuses them, naming the field, and the
 *   projection skips such a signed body like any malformed one.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { JsonValue } from '../../src/log/index.js'
import { Memory } from '../../src/memory/index.js'
import { tempBundlePath } from '../bundle/helpers/mem-fixtures.js'
import { rejection } from '../helpers/error-code.js'

const open: Memory[] = []
afterEach(async () => {
  for (const memory of open.splice(0).reverse()) await memory.close()
})

const PROTOTYPE_NAMES = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf']

describe('foreign lines under a kind named like an Object.prototype member', () => {
  for (const kind of PROTOTYPE_NAMES) {
    it(`${kind}: listed as that kind's lines, on the writer and a peer alike`, async () => {
      const memory = await Memory.open()
      open.push(memory)
      await memory.rememberForeign('vendorThing', ['{"a":1}'])
      await memory.log.append(memory.identity, { op: 'memory.foreign', data: { kind, lines: ['{"b":2}', '{"c":3}'] } })

      const lines = await memory.foreignLines()
      expect(Object.keys(lines).sort()).toEqual([kind, 'vendorThing'].sort())
      expect(Object.hasOwn(lines, kind) ? lines[kind] : undefined).toEqual(['{"b":2}', '{"c":3}'])
      expect(lines.vendorThing).toEqual(['{"a":1}'])

      const peer = await Memory.open({ space: memory.space })
      open.push(peer)
      await peer.ingest(await memory.events())
      expect(await peer.foreignLines()).toEqual(lines)
      expect(await peer.digest()).toBe(await memory.digest())
      // An import reads the lines held to tell what a bundle adds.
      const bundle = tempBundlePath()
      await peer.export(bundle)
      await memory.import(bundle)
      expect(await memory.foreignLines()).toEqual(lines)
      // An importer holding no lines of the kind (`held[kind]` found Object.prototype's member).
      const fresh = await Memory.open()
      open.push(fresh)
      const report = await fresh.import(bundle)
      expect(report.format === 'mem' ? report.passthrough : undefined).toBe(3)
      expect(await fresh.foreignLines()).toEqual(lines)
    })
  }
})

describe('foreign lines a .mem vendor file cannot hold', () => {
  const BAD_KINDS = ['a/b', '.x', 'tombstone', 'provenanceEdge', 'a:b', 'tab\there', 'k'.repeat(129), 'lone\ud800']
  const BAD_LINES: [string, string][] = [['{"a":1}\n{"b":2}', 'BAD_LINE'], ['{"a":"\udc00"}', 'BAD_STRING']]

  it('rememberForeign refuses them, naming the kind or the line, and writes nothing', async () => {
    const memory = await Memory.open()
    open.push(memory)
    const before = memory.versionVector()
    for (const kind of BAD_KINDS) {
      const error = await rejection(memory.rememberForeign(kind, ['{"a":1}']))
      expect([kind, error.code, error.where.field]).toEqual([kind, 'BAD_KIND_NAME', 'kind'])
    }
    for (const [line, code] of BAD_LINES) {
      const error = await rejection(memory.rememberForeign('vendorThing', ['{"ok":1}', line]))
      expect([error.code, error.where.field]).toEqual([code, 'lines[1]'])
    }
    expect(await memory.foreignLines()).toEqual({})
    expect(memory.versionVector()).toEqual(before)
    // A line the file keeps out (empty) is no refusal; a carriage return is kept as given.
    await memory.rememberForeign('vendorThing', ['{"ok":1}', '', '{"cr":1}\r'])
    expect(await memory.foreignLines()).toEqual({ vendorThing: ['{"ok":1}', '', '{"cr":1}\r'] })
  })

  const bodies: { name: string; kind: string; lines: string[] }[] = [
    { name: 'a kind with a slash', kind: 'a/b', lines: ['{"b":2}'] },
    { name: 'a kind with a leading dot', kind: '.x', lines: ['{"b":2}'] },
    { name: 'a reserved count key', kind: 'tombstone', lines: ['{"b":2}'] },
    // A lone surrogate cannot be signed: a body holding one has no canonical form (the log refuses it).
    { name: 'a line with a newline', kind: 'vendorThing', lines: ['{"b":2}', '{"c":3}\n{"d":4}'] },
  ]
  for (const { name, kind, lines } of bodies) {
    it(`${name}: the signed body is skipped, so the writer and a peer still export, alike`, async () => {
      const memory = await Memory.open()
      open.push(memory)
      await memory.rememberForeign('vendorThing', ['{"a":1}'])
      await memory.log.append(memory.identity, { op: 'memory.foreign', data: { kind, lines } })
      expect(await memory.foreignLines()).toEqual({ vendorThing: ['{"a":1}'] })

      const peer = await Memory.open({ space: memory.space })
      open.push(peer)
      await peer.ingest(await memory.events())
      expect(await peer.digest()).toBe(await memory.digest())
      const bundles = [tempBundlePath(), tempBundlePath()]
      await memory.export(bundles[0] as string)
      await peer.export(bundles[1] as string)
      for (const bundle of bundles) expect(readFileSync(path.join(bundle, 'items/vendorThing.jsonl'), 'utf8')).toBe('{"a":1}\n')
      expect((await memory.checkProjection()).named).toEqual([])
    })
  }
})

describe('a patch whose only unknown keys are __proto__', () => {
  const parts: { [key: string]: JsonValue }[] = [{ ext: JSON.parse('{"__proto__": 1}') as JsonValue }, { unsetExt: ['__proto__'] }]
  for (const part of parts) {
    it(`${JSON.stringify(part)}: is no operation, so a later create of another kind is weighed alike in any batching`, async () => {
      const memory = await Memory.open()
      open.push(memory)
      await memory.log.append(memory.identity, { op: 'memory.patch', data: { kind: 'core', id: 'persona', ...part } })
      expect(await memory.get('persona')).toBeUndefined()
      await memory.log.append(memory.identity, { op: 'memory.create', data: { kind: 'episode', id: 'persona', fields: { id: 'persona', summary: 's', details: 's' } } })
      expect(await memory.get('persona')).toMatchObject({ kind: 'episode', summary: 's' })
      expect(await memory.history('persona')).toHaveLength(1)
      expect((await memory.checkProjection()).named).toEqual([])
      const peer = await Memory.open({ space: memory.space })
      open.push(peer)
      await peer.ingest(await memory.events())
      expect(await peer.digest()).toBe(await memory.digest())
    })
  }
})

describe('concurrent supersessions no rule can choose between', () => {
  const supersede = (by: string, validFrom: string, confidence: number): { op: string; data: JsonValue } => ({
    op: 'memory.supersede',
    data: { kind: 'fact', id: 'fact_a', by, at: '2026-01-01T00:00:00Z', validFrom, confidence, source: 'asserted' },
  })
  const cases: Record<string, [{ op: string; data: JsonValue }, { op: string; data: JsonValue }]> = {
    'a validFrom that is no timestamp': [supersede('fact_b', '', 0.5), supersede('fact_c', '2026-01-01T00:00:00Z', 0.5)],
    'confidences all below 0': [supersede('fact_b', '2026-01-01T00:00:00Z', -1), supersede('fact_c', '2026-01-01T00:00:00Z', -2)],
  }
  for (const [name, [mine, theirs]] of Object.entries(cases)) {
    // Each rule (recency, confidence) kept no candidate, the outcome had no winner, and the
    // projection threw reading it: every replica holding both events stopped for good.
    it(`${name}: the clock decides, alike on both writers`, async () => {
      const owner = await Memory.open()
      const writer = await Memory.open({ space: owner.space })
      open.push(owner, writer)
      await owner.grant(writer.author)
      await owner.remember({ kind: 'episode', id: 'ep_a', summary: 's' })
      await owner.remember({ kind: 'fact', id: 'fact_a', episodeID: 'ep_a', subject: 'user', predicate: 'likes', object: 'tea' })
      await writer.ingest(await owner.events())
      await owner.log.append(owner.identity, mine)
      await writer.log.append(writer.identity, theirs)
      await writer.ingest(await owner.events(writer.versionVector()))
      await owner.ingest(await writer.events(owner.versionVector()))

      const shown = await owner.get('fact_a')
      expect(['fact_b', 'fact_c']).toContain(shown?.supersededBy)
      expect((await owner.conflicts()).map((conflict) => conflict.id)).toEqual(['fact_a'])
      expect(await writer.get('fact_a')).toEqual(shown)
      expect(await writer.digest()).toBe(await owner.digest())
      expect((await owner.checkProjection()).named).toEqual([])
    })
  }
})

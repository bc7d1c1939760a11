/**
 * Bundle semantics as laws over random memories: a replica with random records of every kind,
 * updates, supersessions, deletions, redactions and unknown-kind lines exports a `.mem` bundle;
 * importing it into an empty replica and exporting again gives the same bytes, importing it
 * again writes nothing, and a bundle made before a deletion never brings the deleted record back.
 */
import fc from 'fast-check'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { CairnError } from '../../src/errors.js'
import { ManualClock } from '../../src/log/clock.js'
import { Memory, type RememberInput } from '../../src/memory/index.js'
import { listFiles, tempBundlePath } from '../bundle/helpers/mem-fixtures.js'
import { MINIMAL_INPUTS, type MinimalKind } from '../helpers/record-inputs.js'
import { decodeRecord } from '../../src/bundle/mem/record-codec.js'
import { toPortable } from '../../src/bundle/portable-records.js'
import { ViewLine } from '../../src/bundle/view-lines.js'
import { canonicalJson, parseJson } from '../../src/log/index.js'
import type { RecordView } from '../../src/projection/index.js'

const EPISODES = ['ep_a', 'ep_b', 'ep_c']
const FACTS = ['fact_a', 'fact_b']
const WORDS = ['tea', 'coffee', 'oslo', 'rust', 'café ☕', 'line\nbreak']
const KINDS = Object.keys(MINIMAL_INPUTS) as MinimalKind[]
const EXPECTED = new Set(['UNKNOWN_RECORD', 'FORGOTTEN', 'REDACTED', 'NOT_TEMPORAL', 'SUPERSEDED'])

type Step = { action: number; pick: number; value: number }
const steps = fc.array(fc.record({ action: fc.nat(), pick: fc.nat(), value: fc.nat() }), { minLength: 3, maxLength: 24 })

/** Cairn's extension fields, on some records: a `.mem` line has no place for them outside episodes. */
function extensions(step: Step, word: string): { tags?: string[]; contextID?: string } {
  return { ...(step.pick % 3 === 0 ? { tags: [word, 'shared'] } : {}), ...(step.pick % 4 === 1 ? { contextID: `ctx_${step.value % 3}` } : {}) }
}

/** Each record's tags and contextID. */
async function extensionFields(memory: Memory): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {}
  for await (const view of memory.records()) out[view.id] = { tags: view.tags, contextID: view.contextID }
  return out
}

async function act(memory: Memory, step: Step): Promise<void> {
  const episode = EPISODES[step.pick % EPISODES.length] as string
  const fact = FACTS[step.pick % FACTS.length] as string
  const word = WORDS[step.value % WORDS.length] as string
  try {
    switch (step.action % 10) {
      case 0: await memory.remember({ kind: 'episode', id: episode, summary: `about ${word}`, importance: (step.value % 10) / 10, metadata: { k: word }, vendorKey: { nested: [step.value, word] } }); break
      case 1: await memory.update(episode, { set: { confidence: (step.value % 7) / 7 }, add: { categories: [word] } }); break
      case 2: await memory.remember({ kind: 'fact', id: fact, episodeID: episode, subject: 'user', predicate: 'likes', object: word, ...extensions(step, word) }); break
      case 3: await memory.supersede(fact, { episodeID: episode, subject: 'user', predicate: 'likes', object: word }); break
      case 4: {
        const kind = KINDS[step.value % KINDS.length] as MinimalKind
        await memory.remember({ kind, ...MINIMAL_INPUTS[kind], ...extensions(step, word) } as RememberInput)
        break
      }
      case 5: await memory.forget(step.value % 2 === 0 ? episode : fact, { reason: word }); break
      case 6: await memory.redact(episode); break
      case 7: await memory.rememberForeign('vendorThing', [`{"n":${step.value},"w":${JSON.stringify(word)}}`]); break
      case 8: await memory.appendText('human', ` ${word}`); break
      default: await memory.update(episode, { increment: { accessCount: 1 + (step.value % 3) } }); break
    }
  } catch (error) {
    if (!(error instanceof CairnError) || !EXPECTED.has(error.code)) throw error
  }
}

/** A bundle's data files and CHECKSUMS (the manifest differs by createdAt). */
function dataBytes(dir: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const file of listFiles(dir)) if (file !== 'manifest.json' && file !== 'manifest.sig') out[file] = readFileSync(path.join(dir, file), 'utf8')
  return out
}

async function randomMemory(history: readonly Step[]): Promise<Memory> {
  const clock = new ManualClock(Date.UTC(2026, 0, 1))
  const memory = await Memory.open({ clock, name: 'bundle-property' })
  await memory.remember({ kind: 'core', id: 'human', content: 'Notes:' })
  for (const step of history) {
    clock.advance(1 + (step.value % 4000))
    await act(memory, step)
  }
  return memory
}

describe('bundle properties', () => {
  it('export → import into an empty replica → export gives identical bytes and the same tags and contexts, and re-import writes nothing', async () => {
    await fc.assert(fc.asyncProperty(steps, async (history) => {
      const source = await randomMemory(history)
      const target = await Memory.open({})
      try {
        const first = tempBundlePath()
        await source.export(first)
        await target.import(first)
        const second = tempBundlePath()
        await target.export(second)
        expect(dataBytes(second)).toEqual(dataBytes(first))
        expect(await extensionFields(target)).toEqual(await extensionFields(source))

        const before = target.versionVector()
        const again = await target.import(first)
        expect(target.versionVector()).toEqual(before)
        expect(again.format === 'mem' && again.imported).toEqual({})
        // Into the replica it came from, too.
        const own = source.versionVector()
        await source.import(first)
        expect(source.versionVector()).toEqual(own)
      } finally {
        await source.close()
        await target.close()
      }
    }), { numRuns: 25 })
  })

  it('a bundle made before a deletion resurrects nothing, wherever it is imported', async () => {
    await fc.assert(fc.asyncProperty(steps, fc.nat(), async (history, pick) => {
      const source = await randomMemory(history)
      const other = await Memory.open({})
      try {
        const stale = tempBundlePath()
        await source.export(stale)
        const visible = []
        for await (const view of source.records()) if ((await source.status(view.id)) === 'visible') visible.push(view.id)
        fc.pre(visible.length > 0)
        const victim = visible[pick % visible.length] as string
        await source.forget(victim)
        const fresh = tempBundlePath()
        await source.export(fresh)

        // The deleting replica takes its own stale bundle back: the record stays deleted.
        await source.import(stale)
        expect(await source.status(victim)).toBe('deleted')
        // Elsewhere: the new bundle first, then the stale one.
        await other.import(fresh)
        await other.import(stale)
        expect(await other.status(victim)).toBe('deleted')
        expect(await other.get(victim)).toBeUndefined()
        // And the stale one alone, before the deletion reaches it by the new bundle.
        const third = await Memory.open({})
        try {
          await third.import(stale)
          await third.import(fresh)
          expect(await third.status(victim)).toBe('deleted')
        } finally {
          await third.close()
        }
      } finally {
        await source.close()
        await other.close()
      }
    }), { numRuns: 20 })
  })

  it('a line cut from a stored view is the line the codec writes for the parsed view, and every view here can be cut', async () => {
    await fc.assert(fc.asyncProperty(steps, async (history) => {
      const memory = await randomMemory(history)
      try {
        let views = 0
        for await (const bytes of memory.encodedRecords()) {
          const view = parseJson(Buffer.from(bytes).toString('utf8')) as RecordView
          const cut = ViewLine.of(bytes)
          expect(cut, view.id).toBeDefined()
          if (cut === undefined) continue
          expect([cut.kind, cut.id]).toEqual([view.kind, view.id])
          expect(cut.line().toString('utf8')).toBe(canonicalJson(decodeRecord(view.kind, toPortable(view)).record))
          for (const key of [...Object.keys(view), 'absent']) expect(cut.value(key), key).toEqual(view[key])
          views++
        }
        expect(views).toBe(await memory.recordCount())
      } finally {
        await memory.close()
      }
    }), { numRuns: 25 })
  })
})

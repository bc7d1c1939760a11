/**
 * Another system's exports imported again and again beside edits here, as a law over random
 * timelines (src/bundle/source-import.ts, src/bundle/source-times.ts).
 *
 * A mem0 store writes memories (a write dates its entry's `updated_at`; a quiet write changes
 * the text and leaves the time as it was, as a source that dates only creation does), exports
 * snapshots of itself now and then, and a Cairn replica imports any snapshot made so far, in any
 * order and any number of times, while its user edits the imported memories. Every step is a
 * second of its own. Each memory then shows what a model of the rule gives: an import writes an
 * entry's text unless what the replica holds is the same text or was written after the entry's
 * time (an edit here, or an import of a later entry), and writing dates it by the entry's time.
 * So an old export undoes no edit, a newer one writes over an older edit, imports of entries of
 * distinct times commute, and of two entries with one time the later import wins. Also:
 *   - a fresh replica importing the same snapshots in the opposite order shows what the model
 *     gives for that order;
 *   - importing a snapshot right after importing it writes nothing.
 *
 * `RUNS` and `SEED` from the environment override the defaults; `FCPATH` replays one
 * counterexample's path.
 */
import fc from 'fast-check'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/log/clock.js'
import { Memory } from '../../src/memory/index.js'
import { tempDir } from '../bundle/helpers/mem-fixtures.js'
import { checkOptions, timeoutFor } from '../helpers/property-options.js'

/** mem0 ids that are Cairn episode ids as they stand, so the replica's ids are the source's. */
const IDS = ['ep_000000000000000a', 'ep_000000000000000b', 'ep_000000000000000c']
const START = Date.UTC(2026, 0, 1)

type Step =
  | { readonly type: 'mem0-write'; readonly id: number; readonly quiet: boolean }
  | { readonly type: 'export' }
  | { readonly type: 'import'; readonly which: number }
  | { readonly type: 'edit'; readonly id: number }

const stepArbitrary: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.record({ type: fc.constant('mem0-write' as const), id: fc.nat(IDS.length - 1), quiet: fc.boolean() }), weight: 2 },
  { arbitrary: fc.constant({ type: 'export' as const }), weight: 2 },
  { arbitrary: fc.record({ type: fc.constant('import' as const), which: fc.nat(7) }), weight: 3 },
  { arbitrary: fc.record({ type: fc.constant('edit' as const), id: fc.nat(IDS.length - 1) }), weight: 3 },
)

interface Write { readonly text: string; readonly at: number }
interface Mem0Entry { readonly created: number; readonly latest: Write }

const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')

async function snapshotFile(dir: string, n: number, entries: ReadonlyMap<string, Mem0Entry>): Promise<string> {
  const file = path.join(dir, `mem0-${n}.json`)
  await writeFile(file, JSON.stringify([...entries].map(([id, entry]) => ({
    id, memory: entry.latest.text, user_id: 'alice', created_at: iso(entry.created), updated_at: iso(entry.latest.at),
  }))))
  return file
}

type Held = Map<string, Write>

/** The model: what a replica holds after importing `entries` over `held`. */
function importInto(held: Held, entries: ReadonlyMap<string, Mem0Entry>): void {
  for (const [id, { latest: entry }] of entries) {
    const now = held.get(id)
    if (now === undefined || (now.text !== entry.text && now.at <= entry.at)) held.set(id, entry)
  }
}

describe('adapter imports beside edits here', () => {
  it('each memory shows what the rule gives: the latest write, the later import of two entries of one time', async () => {
    await fc.assert(fc.asyncProperty(fc.array(stepArbitrary, { minLength: 4, maxLength: 16 }), async (steps) => {
      const dir = tempDir()
      const clock = new ManualClock(START)
      const memory = await Memory.open({ clock })
      const mem0 = new Map<string, Mem0Entry>()
      const snapshots: { file: string; entries: ReadonlyMap<string, Mem0Entry> }[] = []
      const imported: number[] = []
      // The model of what the replica holds.
      const held: Held = new Map()
      try {
        for (const [n, step] of steps.entries()) {
          clock.advance(1000)
          const now = clock.nowMs()
          if (step.type === 'mem0-write') {
            const id = IDS[step.id] as string
            const before = mem0.get(id)
            const write = { text: `mem0 ${n}`, at: step.quiet && before !== undefined ? before.latest.at : now }
            mem0.set(id, { created: before?.created ?? now, latest: write })
          } else if (step.type === 'export') {
            const entries = new Map(mem0)
            if (entries.size > 0) snapshots.push({ file: await snapshotFile(dir, n, entries), entries })
          } else if (step.type === 'import') {
            const snapshot = snapshots[step.which % Math.max(1, snapshots.length)]
            if (snapshot === undefined) continue
            await memory.import(snapshot.file, { from: 'mem0' })
            imported.push(snapshots.indexOf(snapshot))
            importInto(held, snapshot.entries)
            // Again at once: nothing to write.
            const before = memory.versionVector()
            const again = await memory.import(snapshot.file, { from: 'mem0' })
            expect(again.format === 'source' && again.imported).toEqual({})
            expect(memory.versionVector()).toEqual(before)
          } else {
            // One of the memories held here (an import brought it).
            const visible = (await memory.lookup(IDS)).flatMap((found, i) => (found?.status === 'visible' ? [IDS[i] as string] : []))
            const id = visible[step.id % Math.max(1, visible.length)]
            if (id === undefined) continue
            const text = `edit ${n}`
            await memory.update(id, { set: { details: text } })
            held.set(id, { text, at: now })
          }
        }
        for (const id of IDS) expect((await memory.get(id))?.details, id).toBe(held.get(id)?.text)

        // The same snapshots, the other way round, into a replica with no edits.
        const fresh = await Memory.open({ clock })
        const reversed: Held = new Map()
        try {
          for (const index of [...imported].reverse()) {
            const snapshot = snapshots[index] as (typeof snapshots)[number]
            await fresh.import(snapshot.file, { from: 'mem0' })
            importInto(reversed, snapshot.entries)
          }
          for (const id of IDS) expect((await fresh.get(id))?.details, id).toBe(reversed.get(id)?.text)
        } finally {
          await fresh.close()
        }
      } finally {
        await memory.close()
      }
    }), checkOptions(100, 1500))
  }, timeoutFor(100, 1500))
})

/**
 * Bundles travelling between replicas that also sync, as laws over random histories.
 *
 * Replicas of one space (granted writers) remember records of several kinds (episodes, facts of
 * a fixed episode, entities, edges between fixed entities, fact links; with tags and contexts),
 * update them (set, unset, map keys, tags, counters, core text), supersede facts, forget and
 * redact; in between they export full and incremental `.mem` bundles and native log snapshots,
 * import earlier bundles into random replicas (in random order, some twice) and pass events to
 * each other. Once every replica holds every event:
 *   - every replica shows the same memory (equal digests) and its projection is what the log
 *     gives (`checkProjection`);
 *   - every id forgotten anywhere, before or after any export, is deleted on every replica: an
 *     import never brings it back ("Tombstones first, no resurrection"; delete wins forever);
 *   - no event body on any replica holds content written to a record that ends deleted or
 *     redacted (each write carries a unique marker word in fields a redaction purges);
 *   - importing a bundle right after importing it writes nothing ("Re-import is a no-op").
 *
 * And import order, into fresh replicas: one bundle into two fresh replicas shows the same
 * memory; two bundles in either order (each twice, the second time writing nothing) show the
 * same statuses for every id, and the same memory when the bundles agree on every record they
 * both carry. Bundles made seconds apart that disagree on a record show the newer one's values
 * in every order (an import keeps a value written after its bundle was made, and what it writes
 * for a record new here carries its bundle's time): b1, b2 and b2, b1 and b2, b1, b2 show the
 * same, except for a record the two carry different tombstones for, which keeps the first one
 * it got. (Bundles made in one second do not commute: the first import's values are kept.)
 * Three bundles made seconds apart show the newest one's values in six import orders, records
 * a tombstone reaches and the documented case of a record the first and newest carry alike
 * compared by status only.
 *
 * Not asserted, as documented limits (docs/design-decisions.md, Bundles): which value a field
 * ends with after a stale or incremental bundle is imported (an import re-asserts its lines, so
 * a later unset or tag removal can come back); counters imported concurrently on two replicas
 * (the import rule for counters has no increment identity yet, memory-model §1.5, §6.2).
 *
 * `RUNS` and `SEED` from the environment override the defaults; `FCPATH` replays one
 * counterexample's path.
 */
import fc from 'fast-check'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { CairnError } from '../../src/errors.js'
import { ManualClock } from '../../src/log/clock.js'
import { canonicalJson, type JsonValue } from '../../src/log/index.js'
import { Memory } from '../../src/memory/index.js'
import { alreadyHolds, parentIdsOf, recordIdOf } from '../../src/bundle/portable-records.js'
import { isRecordKind } from '../../src/projection/index.js'
import { listFiles, tempBundlePath } from '../bundle/helpers/mem-fixtures.js'
import { bodyText, closeAll, deliver, exchangeAll, openReplicas } from '../helpers/memory-replicas.js'
import { checkOptions, timeoutFor } from '../helpers/property-options.js'
import { SeededRandom } from '../helpers/seeded-random.js'

const EPISODES = ['ep_a', 'ep_b', 'ep_c']
/** Each fact id has one parent episode, whoever writes it (creates of one id under two parents are a documented open case). */
const FACTS: Record<string, string> = { fact_a: 'ep_a', fact_b: 'ep_b' }
const ENTITIES = ['ent_a', 'ent_b', 'ent_c']
/** Each edge id joins the same two entities, whoever writes it. */
const EDGES: Record<string, [string, string]> = { edge_a: ['ent_a', 'ent_b'], edge_b: ['ent_b', 'ent_c'] }
const TAGS = ['x', 'y', 'z']
const EXPECTED = new Set(['UNKNOWN_RECORD', 'FORGOTTEN', 'REDACTED', 'SUPERSEDED', 'NOT_TEMPORAL'])
const START = Date.UTC(2026, 0, 1)


type Step = { replica: number; action: number; pick: number; value: number }
const step = fc.record({ replica: fc.nat(), action: fc.nat(), pick: fc.nat(), value: fc.nat() })

interface Bundle { readonly path: string; readonly format: 'mem' | 'log'; readonly madeAt: number }

/** What a history wrote and removed: the markers written into each record, the ids forgotten. */
class World {
  readonly markers = new Map<string, string[]>()
  readonly forgotten = new Set<string>()
  /** Fact ids (the fixed ones and successors) and their parent episode. */
  readonly facts = new Map<string, string>(Object.entries(FACTS))
  readonly bundles: Bundle[] = []
  private next = 0

  constructor(readonly clock: ManualClock, readonly random: SeededRandom) {}

  /** A word written once, into fields a redaction purges, noted as `id`'s content. */
  marker(id: string): string {
    const word = `zq${this.next++}qz`
    this.markers.set(id, [...(this.markers.get(id) ?? []), word])
    return word
  }
}

/** Imports `bundle` into `memory`, then again: the second import writes nothing. */
async function importTwice(memory: Memory, bundle: Bundle): Promise<void> {
  await memory.import(bundle.path)
  const before = canonicalJson(memory.versionVector() as JsonValue)
  const again = await memory.import(bundle.path)
  expect(canonicalJson(memory.versionVector() as JsonValue), `re-import of ${bundle.format} bundle wrote`).toBe(before)
  if (again.format === 'mem') expect([again.imported, again.tombstones, again.passthrough]).toEqual([{}, 0, 0])
}

/** The `pick`th of `ids` this replica shows (the `pick`th of all when it shows none). */
async function shownHere(memory: Memory, ids: readonly string[], pick: number): Promise<string> {
  const shown = []
  for (const id of ids) if ((await memory.status(id)) === 'visible') shown.push(id)
  const from = shown.length > 0 ? shown : ids
  return from[pick % from.length] as string
}

/** One random operation or bundle move on `memories[step.replica]`; refusals the API documents are fine. */
async function act(memories: readonly Memory[], world: World, step: Step, withBundles: boolean): Promise<void> {
  const memory = memories[step.replica % memories.length] as Memory
  const episode = EPISODES[step.pick % EPISODES.length] as string
  const factIds = [...world.facts.keys()]
  const fact = factIds[step.pick % factIds.length] as string
  const entity = ENTITIES[step.pick % ENTITIES.length] as string
  const edge = Object.keys(EDGES)[step.value % 2] as string
  const tag = TAGS[step.value % TAGS.length] as string
  const context = step.value % 3 === 0 ? { contextID: `ctx_${step.pick % 2}` } : {}
  try {
    // Forgets and redactions twice as often as the rest when bundles move (18, 19).
    const action = step.action % (withBundles ? 20 : 14)
    switch (action >= 18 ? action - 9 : action) {
      case 0: await memory.remember({ kind: 'episode', id: episode, summary: `about ${world.marker(episode)}`, tags: [tag], metadata: { k0: world.marker(episode) }, ...context }); break
      case 1: await memory.update(episode, { set: { details: `more ${world.marker(episode)}`, importance: (step.value % 10) / 10 } }); break
      case 2: await memory.update(episode, { unset: ['metadata.k0', ...(step.value % 2 === 0 ? ['contextID'] : [])], remove: { tags: [tag] } }); break
      case 3: await memory.update(episode, { set: { [`metadata.k${step.value % 2}`]: world.marker(episode) }, add: { tags: [tag] } }); break
      case 4: {
        const id = Object.keys(FACTS)[step.pick % 2] as string
        await memory.remember({ kind: 'fact', id, episodeID: FACTS[id] as string, subject: 'user', predicate: 'likes', object: world.marker(id), tags: [tag], ...context })
        break
      }
      case 5: {
        // The successor's id is the replica's to pick: its content is noted once it has one.
        const parent = world.facts.get(fact) as string
        const object = `zqs${step.value}`
        const successor = await memory.supersede(fact, { episodeID: parent, subject: 'user', predicate: 'likes', object })
        world.facts.set(successor, parent)
        world.markers.set(successor, [object])
        break
      }
      case 6: await memory.remember({ kind: 'entity', id: entity, type: 'person', canonicalName: world.marker(entity), summary: `knows ${world.marker(entity)}`, tags: [tag] }); break
      case 7: {
        const [src, dst] = EDGES[edge] as [string, string]
        await memory.remember({ kind: 'edge', id: edge, srcEntityID: src, dstEntityID: dst, edgeType: 'knows', ...context })
        break
      }
      case 8: await memory.remember({ kind: 'factLink', srcFactID: fact, dstFactID: factIds[step.value % factIds.length] as string, linkType: 'derived_from' }); break
      case 9: {
        const target = await shownHere(memory, [episode, fact, entity, edge], step.value)
        await memory.forget(target)
        world.forgotten.add(target)
        break
      }
      case 10: await memory.redact(await shownHere(memory, [episode, fact, entity], step.value)); break
      case 11: await memory.update(episode, { increment: { accessCount: 1 + (step.value % 3) } }); break
      case 12: await memory.appendText('human', ` w${step.value % 100}`); break
      case 13: await deliver(memories[step.value % memories.length] as Memory, memory, world.random); break
      // Bundle moves (the histories of the fresh-replica property leave them out).
      case 14: {
        const target = tempBundlePath()
        await memory.export(target)
        world.bundles.push({ path: target, format: 'mem', madeAt: world.clock.nowMs() })
        break
      }
      case 15: {
        // Incremental: since an earlier bundle was made, or a few seconds back.
        const earlier = world.bundles.length === 0 ? undefined : world.bundles[step.value % world.bundles.length]
        const since = earlier?.madeAt ?? world.clock.nowMs() - 1000 * (step.value % 5)
        const target = tempBundlePath()
        await memory.export(target, { since })
        world.bundles.push({ path: target, format: 'mem', madeAt: world.clock.nowMs() })
        break
      }
      case 16: {
        if (step.value % 3 === 0) {
          const target = tempBundlePath('snapshot')
          await memory.export(target, { format: 'log' })
          world.bundles.push({ path: target, format: 'log', madeAt: world.clock.nowMs() })
        }
        if (world.bundles.length === 0) break
        // Some twice in a row; later ones in whatever order the picks give.
        const bundle = world.bundles[step.pick % world.bundles.length] as Bundle
        if (step.value % 2 === 0) await importTwice(memory, bundle)
        else await memory.import(bundle.path)
        break
      }
      default: {
        if (world.bundles.length === 0) break
        await memory.import((world.bundles[step.pick % world.bundles.length] as Bundle).path)
        break
      }
    }
  } catch (error) {
    if (!(error instanceof CairnError) || !EXPECTED.has(error.code)) throw error
  }
}

/** Exchanges until every replica holds every event (an admin's naming deletes included). */
async function syncAll(memories: readonly Memory[]): Promise<void> {
  for (let round = 0; round < 4; round++) {
    await exchangeAll(memories)
    if (new Set(memories.map((memory) => canonicalJson(memory.versionVector() as JsonValue))).size === 1) return
  }
  throw new Error('replicas still differ in events after four exchanges')
}

async function playHistory(memories: readonly Memory[], world: World, history: readonly Step[], withBundles: boolean): Promise<void> {
  await (memories[0] as Memory).remember({ kind: 'core', id: 'human', content: 'Notes:' })
  for (const replica of memories.slice(1)) await deliver(memories[0] as Memory, replica)
  for (const step of history) {
    world.clock.advance(step.value % 4 === 0 ? 0 : 1 + (step.value % 3000))
    await act(memories, world, step, withBundles)
  }
}

/** Every record id a replica shows or holds a tombstone for, with its status. */
async function statuses(memory: Memory, ids: Iterable<string>): Promise<string> {
  const out: string[] = []
  for (const id of [...new Set(ids)].sort()) out.push(`${id}:${(await memory.status(id)).replace('absent', 'deleted')}`)
  return out.join(' ')
}

async function idsOf(memory: Memory): Promise<string[]> {
  const ids: string[] = []
  for await (const view of memory.records()) ids.push(view.id)
  for (const tombstone of await memory.tombstones()) ids.push(tombstone.targetID as string)
  return ids
}

/**
 * The records a replica shows, with the elements of every list sorted: every list these histories write
 * is an add-wins set, whose elements materialize in the order of their earliest add, so two
 * import orders list them differently (docs/design-decisions.md, add-wins sets). Tombstones are
 * compared by the statuses they give: of two tombstones reaching one record, an import keeps the
 * first it applies (see recordLines).
 */
async function shownUnordered(memory: Memory, except: ReadonlySet<string> = new Set()): Promise<string[]> {
  const records: string[] = []
  for await (const view of memory.records()) {
    if (except.has(view.id)) continue
    records.push(canonicalJson(Object.fromEntries(Object.entries(view).map(([key, value]) => [key, Array.isArray(value) ? [...value].sort() : value])) as JsonValue))
  }
  return records
}

/**
 * Each record line of a `.mem` bundle (extension lines and tombstones included), by file and
 * record key; a tombstone by every record it reaches (a direct one, or one deriving it from a
 * parent).
 */
function recordLines(dir: string): Map<string, string> {
  const lines = new Map<string, string>()
  for (const file of listFiles(dir)) {
    if (!file.startsWith('items/') && file !== 'audit/tombstones.jsonl') continue
    for (const text of readFileSync(path.join(dir, file), 'utf8').split('\n')) {
      if (text === '') continue
      const line = JSON.parse(text) as Record<string, unknown>
      if (file === 'audit/tombstones.jsonl') {
        // A tombstone by every record it deletes (its target and those it derives): two
        // replicas' tombstones reaching one record are two lines for it.
        const derived = Object.values((line.derived ?? {}) as Record<string, unknown>).flatMap((ids) => (Array.isArray(ids) ? ids : []))
        for (const id of [line.targetID, ...derived]) lines.set(`${file}:${String(id)}`, text)
        continue
      }
      const key = typeof line.id === 'string' ? line.id : JSON.stringify([line.srcFactID, line.dstFactID, line.srcEpisodeID, line.dstEpisodeID, line.linkType])
      lines.set(`${file}:${key}`, text)
    }
  }
  return lines
}

/** The records a bundle's tombstones reach (their targets and what they derive). */
function tombstoned(lines: ReadonlyMap<string, string>): Set<string> {
  const prefix = 'audit/tombstones.jsonl:'
  return new Set([...lines.keys()].filter((key) => key.startsWith(prefix)).map((key) => key.slice(prefix.length)))
}

/** Whether a bundle carries a record under a parent the other's tombstones reach. */
function namesReached(lines: ReadonlyMap<string, string>, reached: ReadonlySet<string>): boolean {
  for (const [key, line] of lines) {
    const kind = /^items\/([A-Za-z]+)\.jsonl:/.exec(key)?.[1]
    if (kind === undefined || !isRecordKind(kind)) continue
    if (parentIdsOf(kind, JSON.parse(line) as Parameters<typeof parentIdsOf>[1]).some((id) => reached.has(id))) return true
  }
  return false
}

/**
 * Whether two bundles agree: the same line for every record both carry, but for records either
 * one's tombstones reach (a tombstone wins over any line, and between two tombstones of one
 * record the same one wins whatever the import order: tombstoneBeats ranks their lines), and
 * neither carries a record under a parent the other deletes. Such a record (a fact of an episode
 * the other bundle forgot) is deleted with its parent in either order, but by another
 * tombstone: inferred where it came first, named by the importing admin where the parent's
 * deletion did (Memory.nameBlockedOrphans); statuses agree, digests do not.
 */
function agree(a: string, b: string): boolean {
  const [left, right] = [recordLines(a), recordLines(b)]
  const reached = new Set([...tombstoned(left), ...tombstoned(right)])
  const idOf = (key: string): string => key.slice(key.indexOf(':') + 1)
  for (const [key, line] of right) if (left.has(key) && left.get(key) !== line && !reached.has(idOf(key))) return false
  return !namesReached(left, tombstoned(right)) && !namesReached(right, tombstoned(left))
}

describe('bundle merge properties', () => {
  it('replicas that sync and move bundles between them end alike, with nothing forgotten back and no erased content left', async () => {
    await fc.assert(fc.asyncProperty(fc.integer({ min: 2, max: 3 }), fc.array(step, { minLength: 8, maxLength: 36, size: 'max' }), fc.nat(), async (count, history, seed) => {
      const { memories, clock } = await openReplicas(count, new ManualClock(START))
      const world = new World(clock, new SeededRandom(seed))
      try {
        await playHistory(memories, world, history, true)
        await syncAll(memories)

        const digests = await Promise.all(memories.map((memory) => memory.digest()))
        expect(new Set(digests).size).toBe(1)
        for (const memory of memories) expect((await memory.checkProjection()).named).toEqual([])
        // Delete wins forever: whatever bundle was imported where, before or after the forget.
        for (const memory of memories) {
          for (const id of world.forgotten) {
            expect(await memory.status(id), id).toBe('deleted')
            expect(await memory.get(id)).toBeUndefined()
          }
        }
        // Content written to a record that ends deleted or redacted is in no body anywhere,
        // whichever bundle or replica carried it.
        const first = memories[0] as Memory
        const erased: string[] = []
        for (const [id, words] of world.markers) {
          const status = await first.status(id)
          if (status === 'deleted' || status === 'redacted') erased.push(...words.map((word) => `${word} (${id}, ${status})`))
        }
        for (const memory of memories) {
          const bodies = await bodyText(memory)
          expect(erased.filter((entry) => bodies.includes(entry.split(' ')[0] as string))).toEqual([])
        }
      } finally {
        await closeAll(memories)
      }
    }), checkOptions(80, 1500))
  }, timeoutFor(80, 1500))

  it('imports into fresh replicas: one bundle gives one memory, two commute when they agree, and the newer decides in every order when they do not', async () => {
    await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 4, maxLength: 24, size: 'max' }), fc.nat(), async (history, seed) => {
      const { memories, clock } = await openReplicas(2, new ManualClock(START))
      const world = new World(clock, new SeededRandom(seed))
      const fresh: Memory[] = []
      try {
        await playHistory(memories, world, history, false)
        // b2 made seconds after b1, the imports seconds after both (a bundle's time has whole
        // seconds, and an import keeps what was written in its bundle's second).
        const [one, two] = [tempBundlePath(), tempBundlePath()]
        await (memories[0] as Memory).export(one)
        const b1: Bundle = { path: one, format: 'mem', madeAt: clock.nowMs() }
        clock.advance(2000)
        await (memories[1] as Memory).export(two)
        const b2: Bundle = { path: two, format: 'mem', madeAt: clock.nowMs() }
        clock.advance(2000)
        for (let i = 0; i < 4; i++) fresh.push(await Memory.open({ clock }))
        const [x, y, z, w] = fresh as [Memory, Memory, Memory, Memory]

        // One bundle, two fresh replicas.
        await importTwice(x, b1)
        await w.import(b1.path)
        expect(await w.digest()).toBe(await x.digest())

        // Either order, each twice.
        await importTwice(x, b2)
        await importTwice(y, b2)
        await importTwice(y, b1)
        const ids = [...(await idsOf(x)), ...(await idsOf(y))]
        expect(await statuses(y, ids)).toBe(await statuses(x, ids))
        if (agree(one, two)) expect(await y.digest()).toBe(await x.digest())

        // The newer bundle decides, whichever came first (set elements aside, which list in the
        // order of their first add), but for records the two bundles carry different tombstones
        // for (found with SEED=5: two redactions of one fact, each skeleton shown where its
        // bundle came first). Each value an import writes for a record new to the replica
        // carries its bundle's time, and an import keeps a value written after its bundle.
        await z.import(b2.path)
        await z.import(b1.path)
        await z.import(b2.path)
        const shown = await shownUnordered(x)
        expect(await shownUnordered(y)).toEqual(shown)
        expect(await shownUnordered(z)).toEqual(shown)
        expect(await statuses(z, ids)).toBe(await statuses(x, ids))
      } finally {
        await closeAll([...memories, ...fresh])
      }
    }), checkOptions(60, 1500))
  }, timeoutFor(60, 1500))

  it('three bundles made seconds apart: the newest one\'s values show in every import order (oldest first, newest first, mixed, some twice)', async () => {
    // helper-83. b1 from replica 0, b2 from replica 1 two seconds later, b3 from either after
    // further steps. Records any bundle's tombstones reach, or whose parent they reach, are
    // compared by status only (as above).
    await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 4, maxLength: 20, size: 'max' }), fc.array(step, { minLength: 1, maxLength: 8 }), fc.nat(), fc.nat(), async (history, later, third, seed) => {
      const { memories, clock } = await openReplicas(2, new ManualClock(START))
      const world = new World(clock, new SeededRandom(seed))
      const fresh: Memory[] = []
      try {
        await playHistory(memories, world, history, false)
        const paths = [tempBundlePath(), tempBundlePath(), tempBundlePath()] as [string, string, string]
        await (memories[0] as Memory).export(paths[0])
        clock.advance(2000)
        await (memories[1] as Memory).export(paths[1])
        clock.advance(2000)
        for (const next of later) {
          clock.advance(next.value % 4 === 0 ? 0 : 1 + (next.value % 3000))
          await act(memories, world, next, false)
        }
        clock.advance(2000)
        await (memories[third % 2] as Memory).export(paths[2])
        clock.advance(2000)
        const [b1, b2, b3] = paths
        const orders = [[b1, b2, b3], [b3, b2, b1], [b2, b3, b1, b1], [b1, b3, b2], [b3, b1, b2, b2], [b2, b1, b3, b2]]
        for (const order of orders) {
          const memory = await Memory.open({ clock })
          fresh.push(memory)
          for (const bundle of order) await memory.import(bundle)
        }
        const lines = paths.map(recordLines)
        const reached = new Set(lines.flatMap((bundle) => [...tombstoned(bundle)]))
        const except = new Set(reached)
        const recordsOf = (bundle: ReadonlyMap<string, string>): { kind: Parameters<typeof recordIdOf>[0]; id: string; line: Parameters<typeof recordIdOf>[1] }[] => [...bundle].flatMap(([key, text]) => {
          const kind = /^items\/([A-Za-z]+)\.jsonl:/.exec(key)?.[1]
          if (kind === undefined || !isRecordKind(kind)) return []
          const line = JSON.parse(text) as Parameters<typeof recordIdOf>[1]
          return [{ kind, id: recordIdOf(kind, line), line }]
        })
        // Transitively: a link between facts of a forgotten episode goes with them (seed 5).
        for (let size = -1; size !== except.size;) {
          size = except.size
          for (const bundle of lines) for (const { kind, id, line } of recordsOf(bundle)) if (parentIdsOf(kind, line).some((parent) => except.has(parent))) except.add(id)
        }
        // A known limit (helper-83): a record b1 leaves holding all b3 carries (its line and its
        // extension line: the same, or fewer map keys, tags or fields, an unset not travelling),
        // which b2 carries otherwise, is not written by b3 imported after b1 (it is held:
        // "re-import is a no-op"), so its values keep b1's time and b2 imported last writes over
        // them (seeds 1 and 11). Such records are compared by status only.
        const scratch = await Memory.open({ clock })
        fresh.push(scratch)
        await scratch.import(b1)
        const extension = (bundle: ReadonlyMap<string, string>, id: string): Record<string, unknown> => {
          const text = bundle.get(`items/cairnExtensions.jsonl:${id}`)
          if (text === undefined) return {}
          const { id: _id, kind: _kind, ...fields } = JSON.parse(text) as Record<string, unknown>
          return fields
        }
        const lineOf = (bundle: ReadonlyMap<string, string>, id: string): string | undefined => {
          const found = recordsOf(bundle).find((record) => record.id === id)
          return found === undefined ? undefined : canonicalJson({ ...found.line, ...extension(bundle, id) } as JsonValue)
        }
        for (const { id, line } of recordsOf(lines[2] as Map<string, string>)) {
          const view = await scratch.get(id)
          const other = lineOf(lines[1] as Map<string, string>, id)
          if (view && alreadyHolds(view, { ...line, ...extension(lines[2] as Map<string, string>, id) } as Parameters<typeof alreadyHolds>[1], canonicalJson) && other !== undefined && other !== lineOf(lines[2] as Map<string, string>, id)) except.add(id)
        }
        fresh.pop()
        await scratch.close()
        const ids = (await Promise.all(fresh.map(idsOf))).flat()
        const first = fresh[0] as Memory
        const shown = await shownUnordered(first, except)
        for (const [n, memory] of fresh.entries()) {
          expect(await statuses(memory, ids), `order ${n}`).toBe(await statuses(first, ids))
          expect(await shownUnordered(memory, except), `order ${n}`).toEqual(shown)
          // What b3 carries shows as it carries it (sets and counters at least).
          for (const { id, line } of recordsOf(lines[2] as Map<string, string>)) {
            if (except.has(id)) continue
            const view = await memory.get(id)
            expect(view !== undefined && alreadyHolds(view, line, canonicalJson), `order ${n}: ${id} ${JSON.stringify(line)} shows ${JSON.stringify(view)}`).toBe(true)
          }
        }
      } finally {
        await closeAll([...memories, ...fresh])
      }
    }), checkOptions(40, 2000))
  }, timeoutFor(40, 2000))
})

/**
 * The provenance DAG of an artifact (seed 000 §3.2, PAM spec §3.2): nodes are entries, named by
 * their content ids; `parent_ids` point from a derived entry to what it was derived from.
 *
 * Invariant of a valid DAG (checked by `checkProvenance`, verification phase 2): ids are
 * unique, every parent is an entry of the artifact (PAM_DANGLING_REFERENCE), there is no cycle
 * (PAM_PROVENANCE_CYCLE), and at least one entry is a root, with `parent_ids = []`
 * (PAM_NO_ROOT). With ids that match content (phase 1) a cycle cannot be built without
 * breaking BLAKE3, so the cycle check is defence in depth for entries that fail phase 1.
 * Walks are iterative: a chain of 100,000 entries must not overflow the stack.
 */
import { PAM_COMPONENTS, entryPath, type EntryPlace, type PamComponents } from './pam-types.js'

export interface ProvenanceProblem {
  readonly code: 'PAM_DUPLICATE_ENTRY' | 'PAM_DANGLING_REFERENCE' | 'PAM_PROVENANCE_CYCLE' | 'PAM_NO_ROOT'
  readonly reason: string
  readonly path: string
  readonly entry?: string
}

/** Every entry of the five components by id; the first place wins when an id repeats. */
export function indexEntries(components: PamComponents): Map<string, EntryPlace> {
  const index = new Map<string, EntryPlace>()
  for (const component of PAM_COMPONENTS) {
    components[component].forEach((entry, i) => {
      if (!index.has(entry.id)) index.set(entry.id, { component, index: i, entry })
    })
  }
  return index
}

/** Phase 2: unique ids, no dangling parents, no cycles, at least one root. */
export function checkProvenance(components: PamComponents): ProvenanceProblem[] {
  const problems: ProvenanceProblem[] = []
  const index = indexEntries(components)
  let hasRoot = false
  for (const component of PAM_COMPONENTS) {
    components[component].forEach((entry, i) => {
      const path = entryPath(component, i)
      const first = index.get(entry.id)
      if (first !== undefined && (first.component !== component || first.index !== i)) {
        problems.push({ code: 'PAM_DUPLICATE_ENTRY', reason: `same id as ${entryPath(first.component, first.index)}`, path, entry: entry.id })
      }
      if (entry.parent_ids.length === 0) hasRoot = true
      entry.parent_ids.forEach((parent, p) => {
        if (!index.has(parent)) {
          problems.push({ code: 'PAM_DANGLING_REFERENCE', reason: `parent ${parent} is not in the artifact`, path: `${path}.parent_ids[${p}]`, entry: entry.id })
        }
      })
    })
  }
  if (!hasRoot) problems.push({ code: 'PAM_NO_ROOT', reason: 'no entry has parent_ids = [] (PAM spec §3.2)', path: '$.components' })
  for (const id of findCycleEntries(index)) {
    const place = index.get(id) as EntryPlace
    problems.push({ code: 'PAM_PROVENANCE_CYCLE', reason: 'the entry is its own ancestor', path: entryPath(place.component, place.index), entry: id })
  }
  return problems
}

const WHITE = 0
const GREY = 1
const BLACK = 2

/** One entry on each cycle (where the walk closed it), in a deterministic order. */
function findCycleEntries(index: ReadonlyMap<string, EntryPlace>): string[] {
  const color = new Map<string, number>()
  const closing: string[] = []
  for (const start of index.keys()) {
    if ((color.get(start) ?? WHITE) !== WHITE) continue
    const stack: { id: string; next: number }[] = [{ id: start, next: 0 }]
    color.set(start, GREY)
    while (stack.length > 0) {
      const top = stack[stack.length - 1] as { id: string; next: number }
      const parents = index.get(top.id)?.entry.parent_ids ?? []
      if (top.next >= parents.length) {
        color.set(top.id, BLACK)
        stack.pop()
        continue
      }
      const parent = parents[top.next++] as string
      if (!index.has(parent)) continue
      const state = color.get(parent) ?? WHITE
      if (state === GREY) closing.push(parent)
      else if (state === WHITE) {
        color.set(parent, GREY)
        stack.push({ id: parent, next: 0 })
      }
    }
  }
  return [...new Set(closing)]
}

/**
 * The given ids and all their transitive ancestors. Parents missing from the index are
 * returned in `missing` rather than followed.
 */
export function closeOverAncestors(index: ReadonlyMap<string, EntryPlace>, ids: Iterable<string>): { closed: Set<string>; missing: Set<string> } {
  const closed = new Set<string>()
  const missing = new Set<string>()
  const stack = [...ids]
  while (stack.length > 0) {
    const id = stack.pop() as string
    if (closed.has(id) || missing.has(id)) continue
    const place = index.get(id)
    if (place === undefined) {
      missing.add(id)
      continue
    }
    closed.add(id)
    for (const parent of place.entry.parent_ids) stack.push(parent)
  }
  return { closed, missing }
}

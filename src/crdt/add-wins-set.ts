/**
 * Add-wins (observed-remove) set of strings. Each add is tagged with its event (a dot); a remove
 * takes away only the adds in its causal past, so an add concurrent with a remove survives.
 * Delivery is causal (the log applies an event only after its past), so when a remove is
 * applied, every add it observed is already here, and adds arriving later are never in its past.
 *
 * Materialized order: by the stamp of each element's earliest surviving add, then by position
 * within that add: a list added in one operation keeps its order, and every replica agrees.
 */
import { ownEntry, RESERVED_KEY } from './own-keys.js'
import { compareStamps, stampSeenBy, type Stamp } from './stamp.js'

export interface Dot {
  readonly stamp: Stamp
  /** Position of the element in the operation that added it. */
  readonly position: number
}

export type AddWinsSet = Readonly<Record<string, readonly Dot[]>>

export function addToSet(set: AddWinsSet, elements: readonly string[], stamp: Stamp): AddWinsSet {
  const out: Record<string, readonly Dot[]> = { ...set }
  elements.forEach((element, position) => {
    if (element === RESERVED_KEY) return
    const dots = ownEntry(out, element) ?? []
    if (!dots.some((dot) => compareStamps(dot.stamp, stamp) === 0)) out[element] = [...dots, { stamp, position }]
  })
  return out
}

/** Removes the elements' adds that the remover had seen (its causal vector). */
export function removeFromSet(set: AddWinsSet, elements: readonly string[], seen: Readonly<Record<string, number>>): AddWinsSet {
  const out: Record<string, readonly Dot[]> = { ...set }
  for (const element of elements) {
    const dots = ownEntry(out, element)
    if (!dots) continue
    const surviving = dots.filter((dot) => !stampSeenBy(dot.stamp, seen))
    if (surviving.length > 0) out[element] = surviving
    else delete out[element]
  }
  return out
}

function earliest(dots: readonly Dot[]): Dot {
  let best = dots[0] as Dot
  for (const dot of dots) {
    const order = compareStamps(dot.stamp, best.stamp)
    if (order < 0 || (order === 0 && dot.position < best.position)) best = dot
  }
  return best
}

/** The elements present, in materialized order. */
export function setValues(set: AddWinsSet): string[] {
  return Object.entries(set)
    .map(([element, dots]) => ({ element, first: earliest(dots) }))
    .sort((a, b) => compareStamps(a.first.stamp, b.first.stamp) || a.first.position - b.first.position || (a.element < b.element ? -1 : 1))
    .map((entry) => entry.element)
}

/**
 * When what a record holds was written (memory-types.ts, WriteTimes), read off its merge state
 * and, for each winning write, its event: an import's creates and patches carry when their
 * source was made (`madeAt`, bulk-writes.ts), which is the time their values were current, and
 * a held record's the own times of the values it carried again as kept (`keptAt`).
 * What an import needs to leave alone writes made after its source was (merge-records.ts).
 */
import { lastTextChangeTime, type RecordState, type Stamp } from '../crdt/index.js'
import type { SpaceLog } from '../log/index.js'
import type { WriteTimes } from './memory-types.js'

/**
 * What a write's event says of its values' time: `madeAt`, when the import's source was made,
 * and `keptAt`, the times of values a held record's import write carried again as they were
 * (merge-records.ts keeps what was written after the source: those keep their own time).
 */
interface SourceTimes {
  readonly madeAt?: number
  readonly keptAt?: Readonly<Record<string, unknown>>
}

const finite = (value: unknown): number | undefined => (typeof value === 'number' && Number.isFinite(value) ? value : undefined)

function sourceTimesOf(data: unknown): SourceTimes {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return {}
  const { madeAt, keptAt } = data as { madeAt?: unknown; keptAt?: unknown }
  const made = finite(madeAt)
  const kept = typeof keptAt === 'object' && keptAt !== null && !Array.isArray(keptAt) ? keptAt as Record<string, unknown> : undefined
  return { ...(made !== undefined ? { madeAt: made } : {}), ...(kept ? { keptAt: kept } : {}) }
}

/**
 * The write times of each state (undefined for none), reading the winning events once, in one
 * batch (SpaceLog.getManyBySeq). With `from`, a write whose event is older than it is given its
 * event's time unread: its source's time is at most that, so it is before `from` either way (all
 * an import asks). A time an event claims is at most the event's own.
 */
export async function writeTimesOf(states: readonly (RecordState | undefined)[], log: Pick<SpaceLog, 'getManyBySeq'>, from?: number): Promise<(WriteTimes | undefined)[]> {
  const unread = (stamp: Stamp): boolean => from !== undefined && stamp.wall < from
  const refOf = (stamp: Stamp): string => `${stamp.author}:${stamp.seq}`
  // First every event to read, then one read.
  const wanted = new Map<string, Stamp>()
  for (const state of states) {
    if (state === undefined) continue
    const stamps = [...Object.values(state.ext), ...Object.values(state.registers), ...Object.values(state.maps).flatMap((map) => Object.values(map))].map((register) => register.stamp)
    for (const stamp of stamps) if (!unread(stamp)) wanted.set(refOf(stamp), stamp)
  }
  const refs = [...wanted.values()]
  const events = refs.length > 0 ? await log.getManyBySeq(refs.map((stamp) => ({ author: stamp.author, seq: stamp.seq }))) : []
  const sources = new Map(refs.map((stamp, i) => [refOf(stamp), sourceTimesOf(events[i]?.body?.data)]))
  /** `field`, or `key` of map `field`. */
  const timeOf = (stamp: Stamp, field: string, key?: string): number => {
    const found = unread(stamp) ? undefined : sources.get(refOf(stamp))
    if (found === undefined) return stamp.wall
    const { madeAt, keptAt } = found
    const kept = keptAt !== undefined && Object.hasOwn(keptAt, field) ? keptAt[field] : undefined
    const keptTime = key === undefined ? finite(kept) : typeof kept === 'object' && kept !== null && Object.hasOwn(kept, key) ? finite((kept as Record<string, unknown>)[key]) : undefined
    const time = keptTime ?? madeAt
    return time === undefined ? stamp.wall : Math.min(time, stamp.wall)
  }
  return states.map((state) => {
    if (state === undefined) return undefined
    const fields: Record<string, number> = {}
    for (const [key, register] of Object.entries(state.ext)) fields[key] = timeOf(register.stamp, key)
    for (const [field, register] of Object.entries(state.registers)) fields[field] = timeOf(register.stamp, field)
    for (const [field, document] of Object.entries(state.texts)) fields[field] = lastTextChangeTime(document)
    const entries: Record<string, Record<string, number>> = {}
    for (const [field, map] of Object.entries(state.maps)) {
      const times: Record<string, number> = {}
      for (const [key, register] of Object.entries(map)) times[key] = timeOf(register.stamp, field, key)
      entries[field] = times
    }
    return { fields, entries }
  })
}

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
 * The write times of each state (undefined for none), reading each winning event once. With
 * `from`, a write whose event is older than it is given its event's time unread: its source's
 * time is at most that, so it is before `from` either way (all an import asks). A time an event
 * claims is at most the event's own.
 */
export async function writeTimesOf(states: readonly (RecordState | undefined)[], log: Pick<SpaceLog, 'getBySeq'>, from?: number): Promise<(WriteTimes | undefined)[]> {
  const sources = new Map<string, Promise<SourceTimes>>()
  /** `field`, or `key` of map `field`. */
  const timeOf = async (stamp: Stamp, field: string, key?: string): Promise<number> => {
    if (from !== undefined && stamp.wall < from) return stamp.wall
    const id = `${stamp.author}:${stamp.seq}`
    let found = sources.get(id)
    if (found === undefined) {
      found = log.getBySeq(stamp.author, stamp.seq).then((event) => sourceTimesOf(event?.body?.data))
      sources.set(id, found)
    }
    const { madeAt, keptAt } = await found
    const kept = keptAt !== undefined && Object.hasOwn(keptAt, field) ? keptAt[field] : undefined
    const keptTime = key === undefined ? finite(kept) : typeof kept === 'object' && kept !== null && Object.hasOwn(kept, key) ? finite((kept as Record<string, unknown>)[key]) : undefined
    const time = keptTime ?? madeAt
    return time === undefined ? stamp.wall : Math.min(time, stamp.wall)
  }
  return Promise.all(states.map(async (state) => {
    if (state === undefined) return undefined
    const fields: Record<string, number> = {}
    for (const [key, register] of Object.entries(state.ext)) fields[key] = await timeOf(register.stamp, key)
    for (const [field, register] of Object.entries(state.registers)) fields[field] = await timeOf(register.stamp, field)
    for (const [field, document] of Object.entries(state.texts)) fields[field] = lastTextChangeTime(document)
    const entries: Record<string, Record<string, number>> = {}
    for (const [field, map] of Object.entries(state.maps)) {
      const times: Record<string, number> = {}
      for (const [key, register] of Object.entries(map)) times[key] = await timeOf(register.stamp, field, key)
      entries[field] = times
    }
    return { fields, entries }
  }))
}

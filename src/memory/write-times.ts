/**
 * When what a record holds was written (memory-types.ts, WriteTimes), read off its merge state
 * and, for each winning write, its event: an import's creates and patches carry when their
 * source was made (`madeAt`, bulk-writes.ts), which is the time their values were current.
 * What an import needs to leave alone writes made after its source was (merge-records.ts).
 */
import { lastTextChangeTime, type RecordState, type Stamp } from '../crdt/index.js'
import type { SpaceLog } from '../log/index.js'
import type { WriteTimes } from './memory-types.js'

/**
 * The write times of each state (undefined for none), reading each winning event once. With
 * `from`, a write whose event is older than it is given its event's time unread: its source's
 * time is at most that, so it is before `from` either way (all an import asks).
 */
export async function writeTimesOf(states: readonly (RecordState | undefined)[], log: Pick<SpaceLog, 'getBySeq'>, from?: number): Promise<(WriteTimes | undefined)[]> {
  const sourceTimes = new Map<string, Promise<number | undefined>>()
  const timeOf = async (stamp: Stamp): Promise<number> => {
    if (from !== undefined && stamp.wall < from) return stamp.wall
    const key = `${stamp.author}:${stamp.seq}`
    let found = sourceTimes.get(key)
    if (found === undefined) {
      found = log.getBySeq(stamp.author, stamp.seq).then((event) => {
        const data = event?.body?.data
        const madeAt = typeof data === 'object' && data !== null && !Array.isArray(data) ? (data as { madeAt?: unknown }).madeAt : undefined
        return typeof madeAt === 'number' && Number.isFinite(madeAt) ? madeAt : undefined
      })
      sourceTimes.set(key, found)
    }
    const madeAt = await found
    return madeAt === undefined ? stamp.wall : Math.min(madeAt, stamp.wall)
  }
  return Promise.all(states.map(async (state) => {
    if (state === undefined) return undefined
    const fields: Record<string, number> = {}
    for (const [key, register] of Object.entries(state.ext)) fields[key] = await timeOf(register.stamp)
    for (const [field, register] of Object.entries(state.registers)) fields[field] = await timeOf(register.stamp)
    for (const [field, document] of Object.entries(state.texts)) fields[field] = lastTextChangeTime(document)
    const entries: Record<string, Record<string, number>> = {}
    for (const [field, map] of Object.entries(state.maps)) {
      const times: Record<string, number> = {}
      for (const [key, register] of Object.entries(map)) times[key] = await timeOf(register.stamp)
      entries[field] = times
    }
    return { fields, entries }
  }))
}

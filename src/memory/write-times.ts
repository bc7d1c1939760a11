/**
 * When what a record holds was written (memory-types.ts, WriteTimes), read off its merge state:
 * what an import needs to leave alone writes made after its source was (merge-records.ts).
 */
import { lastTextChangeTime, type RecordState } from '../crdt/index.js'
import type { WriteTimes } from './memory-types.js'

export function writeTimesOf(state: RecordState): WriteTimes {
  const fields: Record<string, number> = {}
  for (const [key, register] of Object.entries(state.ext)) fields[key] = register.stamp.wall
  for (const [field, register] of Object.entries(state.registers)) fields[field] = register.stamp.wall
  for (const [field, document] of Object.entries(state.texts)) fields[field] = lastTextChangeTime(document)
  const entries: Record<string, Record<string, number>> = {}
  for (const [field, map] of Object.entries(state.maps)) {
    const times: Record<string, number> = {}
    for (const [key, register] of Object.entries(map)) times[key] = register.stamp.wall
    entries[field] = times
  }
  return { fields, entries }
}

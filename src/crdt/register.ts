/**
 * Last-writer-wins register: a value with the stamp that wrote it. `undefined` is a written
 * "unset", which still wins over older values. Merging keeps the higher stamp.
 */
import type { JsonValue } from '../log/index.js'
import { compareStamps, type Stamp } from './stamp.js'

export interface Register {
  readonly value: JsonValue | undefined
  readonly stamp: Stamp
}

/** The register after a write; the older of the two loses. */
export function writeRegister(current: Register | undefined, value: JsonValue | undefined, stamp: Stamp): Register {
  if (current && compareStamps(current.stamp, stamp) >= 0) return current
  return { value, stamp }
}

/**
 * Every entry point of src/bundle/pam that takes outside input is fed every value of
 * test/helpers/bad-inputs.ts, in each argument position. Each call must throw an InputError or
 * LimitError (never a TypeError or a crash) with a bounded message. Values an entry point
 * rightly accepts are skipped by `accepts`, decided without calling the code under test.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  createPamEntry, decodePam, decodePamCbor, decodePamJson, disclose, encodePamCbor, encodePamJson, pamFromRecords, readPamArtifact,
  recordsFromPam, signPam, verifyPam, type PamArtifact, type PamEntry,
} from '../../../src/bundle/pam/index.js'
import { InputError, LimitError } from '../../../src/errors.js'
import { canonicalJson } from '../../../src/log/index.js'
import { badValues } from '../../helpers/bad-inputs.js'
import { NOW_MS, OPERATOR, SOURCE_AGENT, pamArtifact } from './pam-arbitraries.js'

const MAX_MESSAGE_CHARS = 4096
const { artifact, entries } = fc.sample(pamArtifact, { numRuns: 1, seed: 21 })[0] as { artifact: PamArtifact; entries: PamEntry[] }

function isContentObject(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value) as unknown
  if (proto !== Object.prototype && proto !== null) return false
  if (Object.hasOwn(value, 'id')) return false
  try {
    canonicalJson(value)
    return true
  } catch {
    return false
  }
}

const ENTRY_POINTS: { name: string; call: (value: unknown) => unknown; accepts?: (value: unknown) => boolean }[] = [
  { name: 'decodePamJson', call: (value) => decodePamJson(value as string) },
  { name: 'decodePamCbor', call: (value) => decodePamCbor(value as Uint8Array) },
  { name: 'decodePam', call: (value) => decodePam(value as Uint8Array) },
  { name: 'readPamArtifact', call: (value) => readPamArtifact(value) },
  { name: 'encodePamJson', call: (value) => encodePamJson(value as PamArtifact) },
  { name: 'encodePamCbor', call: (value) => encodePamCbor(value as PamArtifact) },
  { name: 'verifyPam(artifact)', call: (value) => verifyPam(value as PamArtifact, { trustedKeys: [OPERATOR.author] }) },
  { name: 'verifyPam(options)', call: (value) => verifyPam(artifact, value as never) },
  { name: 'disclose(artifact)', call: (value) => disclose(value as PamArtifact, [(entries[0] as PamEntry).id], { identity: OPERATOR, nowMs: NOW_MS }) },
  { name: 'disclose(entryIds)', call: (value) => disclose(artifact, value as string[], { identity: OPERATOR, nowMs: NOW_MS }) },
  { name: 'disclose(options)', call: (value) => disclose(artifact, [(entries[0] as PamEntry).id], value as never) },
  { name: 'recordsFromPam(artifact)', call: (value) => recordsFromPam(value as PamArtifact, { nowMs: NOW_MS }) },
  { name: 'recordsFromPam(options)', call: (value) => recordsFromPam(artifact, value as never) },
  { name: 'pamFromRecords(records)', call: (value) => pamFromRecords(value as never, { identity: OPERATOR, nowMs: NOW_MS }) },
  { name: 'pamFromRecords(options)', call: (value) => pamFromRecords([{ kind: 'episode', id: 'ep_1' }], value as never) },
  { name: 'createPamEntry', call: (value) => createPamEntry(value as never), accepts: isContentObject },
  { name: 'signPam', call: (value) => signPam(value as never) },
  // An empty components object is well formed; signing it fails phase 2 (no root), a VerifyError.
  { name: 'signPam(components)', call: (value) => signPam({ components: value as never, sourceAgent: SOURCE_AGENT, identity: OPERATOR, nowMs: NOW_MS }), accepts: (value) => isContentObject(value) && Object.keys(value as object).length === 0 },
]

for (const entry of ENTRY_POINTS) {
  describe(entry.name, () => {
    for (const input of badValues()) {
      if (entry.accepts?.(input.value)) continue
      it(`refuses ${input.name}`, () => {
        let error: unknown
        try {
          entry.call(input.value)
        } catch (caught) {
          error = caught
        }
        expect(error, 'should throw').toBeDefined()
        expect(error instanceof InputError || error instanceof LimitError, String(error)).toBe(true)
        expect((error as Error).message.length).toBeLessThanOrEqual(MAX_MESSAGE_CHARS)
      })
    }
  })
}

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  PAM_COMPONENTS, assertVerified, checkProvenance, computeEntryId, computeRootHash, createPamEntry, encodePamCbor, encodePamJson,
  openPam, readPamArtifact, signPam, verifyPam, type PamArtifact, type PamEntry, type PamReport,
} from '../../../src/bundle/pam/index.js'
import { CairnError, VerifyError } from '../../../src/errors.js'
import { NOW_MS, OPERATOR, SOURCE_AGENT, STRANGER, pamArtifact } from './pam-arbitraries.js'

const trusted = { trustedKeys: [OPERATOR.author] }

function failure(report: PamReport): Exclude<PamReport, { ok: true }> {
  if (report.ok) throw new Error('expected the artifact to fail verification')
  return report
}

function entriesOf(artifact: PamArtifact): { component: (typeof PAM_COMPONENTS)[number]; index: number; entry: PamEntry }[] {
  return PAM_COMPONENTS.flatMap((component) => artifact.components[component].map((entry, index) => ({ component, index, entry })))
}

/** Changes one code point of a string (a different one, so the string always changes). */
function nudge(text: string, at: number): string {
  const points = Array.from(text)
  if (points.length === 0) return 'x'
  const i = at % points.length
  points[i] = points[i] === 'A' ? 'B' : 'A'
  return points.join('')
}

/** A different value of the same type (and range, for scores and counts). */
function tamper(value: unknown, at: number): unknown {
  if (typeof value === 'string') return nudge(value, at)
  if (typeof value === 'number') return Number.isInteger(value) ? (value === 1 ? 0 : value === 0 ? 1 : value + 1) : value === 0.5 ? 0.25 : 0.5
  if (typeof value === 'boolean') return !value
  if (Array.isArray(value)) return value.slice(1)
  return { ...(value as object), tampered: true }
}

/** Replaces one hex digit of a `blake3:`/`ed25519:` string by another. */
function flipHex(value: string, at: number): string {
  const start = value.indexOf(':') + 1
  const i = start + (at % (value.length - start))
  const digit = value[i] as string
  return value.slice(0, i) + (digit === '0' ? '1' : '0') + value.slice(i + 1)
}

function reread(value: unknown): PamArtifact {
  return readPamArtifact(JSON.parse(JSON.stringify(value)))
}

describe('verifyPam', () => {
  it('accepts an artifact signed by a trusted key, naming the signer', () => {
    fc.assert(fc.property(pamArtifact, ({ artifact, entries }) => {
      const report = verifyPam(artifact, { trustedKeys: [STRANGER.author, OPERATOR.author] })
      expect(report).toEqual({ ok: true, rootHash: artifact.root_hash, signer: OPERATOR.author, entryCount: entries.length })
      expect(openPam(encodePamCbor(artifact), trusted)).toEqual(artifact)
      expect(openPam(encodePamJson(artifact), trusted)).toEqual(artifact)
    }), { numRuns: 40 })
  })

  it('fails phase 1 when any byte of an entry changes, naming the entry', () => {
    fc.assert(fc.property(pamArtifact, fc.nat(), fc.nat(), ({ artifact }, which, at) => {
      const all = entriesOf(artifact)
      const target = all[which % all.length] as (typeof all)[number]
      const tampered = structuredClone(artifact) as unknown as { components: Record<string, Record<string, unknown>[]> }
      const entry = tampered.components[target.component]?.[target.index] as Record<string, unknown>
      const fields = Object.keys(entry).filter((key) => key !== 'id' && entry[key] !== null && !(Array.isArray(entry[key]) && (entry[key] as unknown[]).length === 0))
      const field = fields[at % fields.length] as string
      entry[field] = tamper(entry[field], at)
      let report: PamReport
      try {
        report = verifyPam(reread(tampered), trusted)
      } catch (error) {
        // A nudged timestamp can stop being a timestamp: then the structure check refuses it.
        expect((error as CairnError).code).toBe('BAD_TIMESTAMP')
        return
      }
      const failed = failure(report)
      expect(failed.phase).toBe(1)
      expect(failed.problems[0]).toMatchObject({ phase: 1, code: 'PAM_HASH_MISMATCH', entry: target.entry.id, path: `$.components.${target.component}[${target.index}]` })
      expect(failed.problems.some((problem) => problem.phase === 3 && problem.code === 'PAM_HASH_MISMATCH')).toBe(true)
    }), { numRuns: 80 })
  })

  it('fails phase 1 when a parent id changes, and phase 2 when the forger also recomputes the id', () => {
    fc.assert(fc.property(pamArtifact, fc.nat(), ({ artifact }, at) => {
      const child = entriesOf(artifact).find(({ entry }) => entry.parent_ids.length > 0)
      fc.pre(child !== undefined)
      const { component, index } = child as NonNullable<typeof child>
      const tampered = structuredClone(artifact) as unknown as { components: Record<string, PamEntry[]> }
      const entry = tampered.components[component]?.[index] as PamEntry
      entry.parent_ids = [flipHex(entry.parent_ids[0] as string, at), ...entry.parent_ids.slice(1)]
      expect(failure(verifyPam(reread(tampered), trusted)).phase).toBe(1)
      entry.id = computeEntryId(entry)
      const failed = failure(verifyPam(reread(tampered), trusted))
      expect(failed.phase).toBe(2)
      expect(failed.problems.find((problem) => problem.phase === 2)).toMatchObject({ code: 'PAM_DANGLING_REFERENCE', entry: entry.id })
    }), { numRuns: 60 })
  })

  it('fails phase 3 when a byte of the root hash or of the signature changes', () => {
    fc.assert(fc.property(pamArtifact, fc.nat(), ({ artifact }, at) => {
      const badRoot = failure(verifyPam(reread({ ...artifact, root_hash: flipHex(artifact.root_hash, at) }), trusted))
      expect(badRoot.phase).toBe(3)
      expect(badRoot.problems.map((problem) => problem.code).sort()).toEqual(['PAM_HASH_MISMATCH', 'PAM_INVALID_SIGNATURE'])
      const badSignature = failure(verifyPam(reread({ ...artifact, signature: flipHex(artifact.signature, at) }), trusted))
      expect(badSignature.phase).toBe(3)
      expect(badSignature.problems).toEqual([expect.objectContaining({ phase: 3, code: 'PAM_INVALID_SIGNATURE', path: '$.signature' })])
    }), { numRuns: 40 })
  })

  it('fails phase 3 when a forger rebuilds ids and root hash but cannot sign', () => {
    fc.assert(fc.property(pamArtifact, ({ artifact }) => {
      const forged = structuredClone(artifact) as unknown as { components: Record<string, PamEntry[]>; root_hash: string }
      const target = PAM_COMPONENTS.find((component) => (forged.components[component]?.length ?? 0) > 0) as string
      const entries = forged.components[target] as PamEntry[]
      const leaf = entries.findIndex((entry) => !entriesOf(artifact).some(({ entry: other }) => other.parent_ids.includes(entry.id)))
      fc.pre(leaf >= 0)
      const { id: _id, ...content } = entries[leaf] as PamEntry
      entries[leaf] = createPamEntry({ ...content, created_at: '1999-12-31T23:59:59Z' })
      forged.root_hash = computeRootHash(forged.components)
      const failed = failure(verifyPam(reread(forged), trusted))
      expect(failed.phase).toBe(3)
      expect(failed.problems).toEqual([expect.objectContaining({ code: 'PAM_INVALID_SIGNATURE' })])
    }), { numRuns: 30 })
  })

  it('refuses a valid artifact under the wrong key, or with no trusted key', () => {
    const { artifact } = fc.sample(pamArtifact, { numRuns: 1, seed: 5 })[0] as { artifact: PamArtifact }
    expect(failure(verifyPam(artifact, { trustedKeys: [STRANGER.author] })).problems).toEqual([expect.objectContaining({ phase: 3, code: 'PAM_INVALID_SIGNATURE' })])
    expect(failure(verifyPam(artifact, { trustedKeys: [] })).problems[0]?.reason).toMatch(/no trusted keys/)
    expect(() => openPam(encodePamCbor(artifact), { trustedKeys: [STRANGER.author] })).toThrow(VerifyError)
    expect(() => verifyPam(artifact, { trustedKeys: ['AB'.repeat(32)] })).toThrow(/BAD_HEX/)
  })

  it('refuses cycles and missing parents in phase 2', () => {
    const base = { created_at: '2025-01-01T00:00:00Z', version: '1.0', timestamp: '2025-01-01T00:00:00Z', actor: 'user:a', salience: 0.5, tags: [] }
    const root = createPamEntry({ ...base, observation: 'root', parent_ids: [] })
    const a = { ...base, observation: 'a', id: `blake3:${'a'.repeat(64)}`, parent_ids: [`blake3:${'b'.repeat(64)}`] }
    const b = { ...base, observation: 'b', id: `blake3:${'b'.repeat(64)}`, parent_ids: [`blake3:${'a'.repeat(64)}`] }
    const components = { episodic: [root, a, b], semantic: [], procedural: [], working: [], identity: [] }
    const cyclic = reread({ ...signPam({ components: { episodic: [root] }, sourceAgent: SOURCE_AGENT, identity: OPERATOR, nowMs: NOW_MS }), components })
    expect(checkProvenance(cyclic.components).map((problem) => problem.code)).toEqual(['PAM_PROVENANCE_CYCLE'])
    const report = failure(verifyPam(cyclic, trusted))
    expect(report.phase).toBe(1)
    expect(report.problems.filter((problem) => problem.phase === 2).map((problem) => problem.code)).toEqual(['PAM_PROVENANCE_CYCLE'])
    expect(checkProvenance({ ...components, episodic: [a] }).map((problem) => problem.code)).toEqual(['PAM_DANGLING_REFERENCE', 'PAM_NO_ROOT'])
    expect(checkProvenance({ ...components, episodic: [root, root] }).map((problem) => problem.code)).toEqual(['PAM_DUPLICATE_ENTRY'])
    expect(checkProvenance({ ...components, episodic: [] }).map((problem) => problem.code)).toEqual(['PAM_NO_ROOT'])
  })

  it('never signs an artifact that fails phase 1 or 2', () => {
    const base = { created_at: '2025-01-01T00:00:00Z', version: '1.0', timestamp: '2025-01-01T00:00:00Z', actor: 'user:a', salience: 0.5, tags: [], observation: 'x' }
    const orphan = createPamEntry({ ...base, parent_ids: [`blake3:${'c'.repeat(64)}`] })
    expect(() => signPam({ components: { episodic: [orphan] }, sourceAgent: SOURCE_AGENT, identity: OPERATOR, nowMs: NOW_MS })).toThrow(/PAM_DANGLING_REFERENCE/)
    const lying = { ...createPamEntry({ ...base, parent_ids: [] }), observation: 'changed' }
    expect(() => signPam({ components: { episodic: [lying] }, sourceAgent: SOURCE_AGENT, identity: OPERATOR, nowMs: NOW_MS })).toThrow(/PAM_HASH_MISMATCH/)
  })

  it('throws a VerifyError naming the phase, the code and the entry', () => {
    const { artifact } = fc.sample(pamArtifact, { numRuns: 1, seed: 11 })[0] as { artifact: PamArtifact }
    const tampered = structuredClone(artifact) as unknown as { components: Record<string, PamEntry[]> }
    const component = PAM_COMPONENTS.find((name) => (tampered.components[name]?.length ?? 0) > 0) as string
    const entry = tampered.components[component]?.[0] as PamEntry
    entry.created_at = '2001-01-01T00:00:00Z'
    expect(() => assertVerified(reread(tampered), trusted)).toThrow(new RegExp(`PAM_HASH_MISMATCH: phase 1 \\(hashes\\).*at \\$\\.components\\.${component}\\[0\\].*key ${entry.id.replace('blake3:', 'blake3:')}`))
  })
})

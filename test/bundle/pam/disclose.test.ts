import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { PAM_COMPONENTS, checkDisclosure, disclose, readPamArtifact, verifyPam, type PamArtifact, type PamEntry } from '../../../src/bundle/pam/index.js'
import { NOW_MS, OPERATOR, STRANGER, pamArtifact } from './pam-arbitraries.js'
import { codeOf } from '../../helpers/error-code.js'

function idsOf(artifact: PamArtifact): string[] {
  return PAM_COMPONENTS.flatMap((component) => artifact.components[component].map((entry) => entry.id))
}

/** Ancestors computed here, independently of the code under test. */
function withAncestors(entries: readonly PamEntry[], chosen: readonly string[]): Set<string> {
  const byId = new Map(entries.map((entry) => [entry.id, entry]))
  const out = new Set<string>()
  const visit = (id: string): void => {
    if (out.has(id)) return
    out.add(id)
    for (const parent of byId.get(id)?.parent_ids ?? []) visit(parent)
  }
  chosen.forEach(visit)
  return out
}

describe('disclose', () => {
  it('keeps exactly the chosen entries and their ancestors, unchanged, and verifies under the discloser key', () => {
    fc.assert(fc.property(pamArtifact, fc.array(fc.nat(), { minLength: 1, maxLength: 4 }), ({ artifact, entries }, picks) => {
      const chosen = picks.map((pick) => (entries[pick % entries.length] as PamEntry).id)
      const disclosed = disclose(artifact, chosen, { identity: STRANGER, nowMs: NOW_MS })
      const expected = withAncestors(entries, chosen)
      expect(new Set(idsOf(disclosed))).toEqual(expected)
      expect(idsOf(disclosed)).toHaveLength(expected.size)
      for (const component of PAM_COMPONENTS) {
        expect(disclosed.components[component]).toEqual(artifact.components[component].filter((entry) => expected.has(entry.id)))
      }
      expect(verifyPam(disclosed, { trustedKeys: [STRANGER.author] })).toMatchObject({ ok: true, signer: STRANGER.author, entryCount: expected.size })
      expect(checkDisclosure(disclosed, artifact)).toEqual([])
      expect(disclosed.disclosed_from).toEqual({ root_hash: artifact.root_hash, signature: artifact.signature })
      expect(disclosed.source_agent).toEqual(artifact.source_agent)
    }), { numRuns: 60 })
  })

  it('is signed by the discloser, not the exporter', () => {
    const { artifact, entries } = fc.sample(pamArtifact, { numRuns: 1, seed: 3 })[0] as { artifact: PamArtifact; entries: PamEntry[] }
    const disclosed = disclose(artifact, [(entries.at(-1) as PamEntry).id], { identity: STRANGER, nowMs: NOW_MS })
    expect(verifyPam(disclosed, { trustedKeys: [OPERATOR.author] })).toMatchObject({ ok: false, phase: 3 })
  })

  it('checkDisclosure finds entries that are not in the source', () => {
    const [first, second] = fc.sample(pamArtifact, { numRuns: 2, seed: 8 }) as [{ artifact: PamArtifact; entries: PamEntry[] }, { artifact: PamArtifact; entries: PamEntry[] }]
    const disclosed = disclose(first.artifact, [(first.entries[0] as PamEntry).id], { identity: OPERATOR, nowMs: NOW_MS })
    expect(checkDisclosure(disclosed, second.artifact).length).toBeGreaterThan(0)
  })

  it('refuses no ids, unknown ids and a source that fails phase 1', () => {
    const { artifact, entries } = fc.sample(pamArtifact, { numRuns: 1, seed: 4 })[0] as { artifact: PamArtifact; entries: PamEntry[] }
    expect(codeOf(() => disclose(artifact, [], { identity: OPERATOR, nowMs: NOW_MS }))).toBe('EMPTY')
    expect(codeOf(() => disclose(artifact, [`blake3:${'0'.repeat(64)}`], { identity: OPERATOR, nowMs: NOW_MS }))).toBe('UNKNOWN_ENTRY')
    const tampered = structuredClone(artifact) as unknown as { components: Record<string, PamEntry[]> }
    const component = PAM_COMPONENTS.find((name) => (tampered.components[name]?.length ?? 0) > 0) as string
    ;(tampered.components[component]?.[0] as PamEntry).created_at = '2001-01-01T00:00:00Z'
    expect(codeOf(() => disclose(readPamArtifact(tampered), [(entries[0] as PamEntry).id], { identity: OPERATOR, nowMs: NOW_MS }))).toBe('PAM_HASH_MISMATCH')
  })
})

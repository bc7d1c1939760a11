import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  PAM_COMPONENTS, createPamEntry, decodePamCbor, encodePamCbor, pamFromRecords, readPamArtifact, recordsFromPam, signPam, verifyPam,
  type PamArtifact, type PamEntry, type PamRecord,
} from '../../../src/bundle/pam/index.js'
import { canonicalJson } from '../../../src/log/index.js'
import { recordIdFor } from '../../../src/projection/index.js'
import { NOW_MS, OPERATOR, SOURCE_AGENT, cairnRecords, pamArtifact } from './pam-arbitraries.js'
import { codeOf } from '../../helpers/error-code.js'

const key = (record: PamRecord): string => `${record.kind} ${record.id}`
const byKey = (records: readonly PamRecord[]): Map<string, string> => new Map(records.map((record) => [key(record), canonicalJson(record)]))

function idsOf(artifact: PamArtifact): Set<string> {
  return new Set(PAM_COMPONENTS.flatMap((component) => artifact.components[component].map((entry) => entry.id)))
}

describe('records → PAM → records', () => {
  it('keeps every field of every exported record, and lists what PAM cannot hold', () => {
    fc.assert(fc.property(cairnRecords, fc.boolean(), (records, shuffle) => {
      const input = shuffle ? [...records].reverse() : records
      const { artifact, skipped } = pamFromRecords(input, { identity: OPERATOR, nowMs: NOW_MS, sourceAgent: SOURCE_AGENT })
      expect(verifyPam(artifact, { trustedKeys: [OPERATOR.author] }).ok).toBe(true)
      const imported = recordsFromPam(decodePamCbor(encodePamCbor(artifact)), { nowMs: NOW_MS })
      const back = byKey(imported.records)
      const skippedKeys = new Set(skipped.map((record) => `${record.kind} ${record.id}`))
      for (const record of records) {
        if (skippedKeys.has(key(record))) continue
        expect(back.get(key(record)), key(record)).toBe(canonicalJson(record))
      }
      for (const record of skipped) expect(record.kind === 'resource' || record.kind === 'context' || record.kind.endsWith('Link')).toBe(true)
      expect(skipped.some((record) => record.kind === 'resource')).toBe(records.some((record) => record.kind === 'resource'))
      const extra = imported.records.filter((record) => !records.some((original) => key(original) === key(record)))
      expect(extra.map((record) => record.kind).sort()).toEqual(['context', 'entity', 'episode'])
      expect(imported.personaAppends).toEqual([])
    }), { numRuns: 80 })
  })

  it('signs the write time given for each record in its entry, and gives it back by record id', () => {
    fc.assert(fc.property(cairnRecords, fc.integer({ min: 0, max: 2 ** 41 }), (records, base) => {
      const writtenAtMs = new Map(records.filter((_, i) => i % 3 !== 0).map((record, i) => [record.id, base + i]))
      const { artifact, skipped } = pamFromRecords(records, { identity: OPERATOR, nowMs: NOW_MS, writtenAtMs })
      const reversed = pamFromRecords([...records].reverse(), { identity: OPERATOR, nowMs: NOW_MS, writtenAtMs })
      expect(reversed.artifact.root_hash).toBe(artifact.root_hash)
      const imported = recordsFromPam(decodePamCbor(encodePamCbor(artifact)), { nowMs: NOW_MS })
      const skippedIds = new Set(skipped.map((record) => record.id))
      const expected = new Map([...writtenAtMs].filter(([id]) => !skippedIds.has(id)))
      expect(new Map([...imported.writtenAtMs].sort())).toEqual(new Map([...expected].sort()))
      // Without times, the entries are those an export made before them (no key at all).
      expect(canonicalJson(pamFromRecords(records, { identity: OPERATOR, nowMs: NOW_MS }).artifact)).not.toContain('writtenAtMs')
    }), { numRuns: 40 })
  })

  it('does not depend on the order of the records', () => {
    fc.assert(fc.property(cairnRecords, (records) => {
      const one = pamFromRecords(records, { identity: OPERATOR, nowMs: NOW_MS })
      const other = pamFromRecords([...records].reverse(), { identity: OPERATOR, nowMs: NOW_MS })
      expect(other.artifact.root_hash).toBe(one.artifact.root_hash)
    }), { numRuns: 30 })
  })

  it('turns derived_from links into parent_ids and keeps other links attached', () => {
    const episode = (id: string, details: string): PamRecord => ({
      kind: 'episode', id, eventTime: '2025-01-01T00:00:00Z', mentionTime: '2025-01-01T00:00:00Z', ingestionTime: '2025-01-01T00:00:00Z', sourceType: 'note',
      actors: [], summary: details, details, sensitivity: 'low', metadata: {}, categories: [], importance: 0.5, confidence: 0.7,
      lifecycleState: 'HOT', extractionState: 'done', accessCount: 0, pinned: false, vaultRefs: [],
    })
    const link = (src: string, dst: string, linkType: string): PamRecord => ({ kind: 'episodeLink', id: recordIdFor('episodeLink', { srcEpisodeID: src, dstEpisodeID: dst, linkType }), srcEpisodeID: src, dstEpisodeID: dst, linkType, weight: 1 })
    const records = [episode('ep_a', 'source'), episode('ep_b', 'derived'), link('ep_b', 'ep_a', 'derived_from'), link('ep_a', 'ep_b', 'derived_from'), link('ep_a', 'ep_b', 'related')]
    const { artifact } = pamFromRecords(records, { identity: OPERATOR, nowMs: NOW_MS })
    const entries = artifact.components.episodic
    // ep_a and ep_b derive from each other: the walk keeps one direction as a parent, the other only attached.
    expect(entries.map((entry) => entry.parent_ids.length).sort()).toEqual([0, 1])
    const back = byKey(recordsFromPam(artifact, { nowMs: NOW_MS }).records)
    for (const record of records) expect(back.get(key(record))).toBe(canonicalJson(record))
  })
})

function specArtifact(): { artifact: PamArtifact; entries: Record<string, PamEntry> } {
  const base = { version: '1.0' }
  const ep1 = createPamEntry({ ...base, parent_ids: [], created_at: '2025-01-15T08:30:00Z', timestamp: '2025-01-15T08:30:00Z', actor: 'user:alice', observation: "User asked: What were ACME Corp's Q3 2024 results?", salience: 0.9, tags: ['finance', 'query', 'acme'] })
  const ep2 = createPamEntry({ ...base, parent_ids: [ep1.id], created_at: '2025-01-15T08:30:05.5Z', timestamp: '2025-01-15T08:30:05+00:00', actor: 'agent:research-bot', observation: 'Retrieved ACME Corp 10-Q filing.', salience: 0.95, tags: ['finance', 'finance'], context: { session: 's1' } })
  const sem1 = createPamEntry({ ...base, parent_ids: [ep2.id], created_at: '2025-01-15T08:31:00Z', subject: 'ACME Corp', predicate: 'q3_2024_revenue', object: '$4.2 billion', confidence: 0.95, source_event_ids: [ep2.id] })
  const sem2 = createPamEntry({ ...base, parent_ids: [sem1.id], created_at: '2025-01-16T08:31:00Z', subject: 'ACME Corp', predicate: 'q3_2024_revenue', object: '$4.3 billion', confidence: 0.9, source_event_ids: [ep2.id] })
  const proc = createPamEntry({ ...base, parent_ids: [], created_at: '2025-01-15T09:00:00Z', name: 'summarize_financial_report', params: [{ name: 'report_text', type: 'string', required: true }, { name: 'max_length', type: 'integer', required: false, default: 500 }], body: '1. Extract metrics.\n2. Identify YoY changes.', preconditions: ['report_text is non-empty'], usage_count: 14, last_used: '2025-01-15T08:30:05Z' })
  const work = createPamEntry({ ...base, parent_ids: [ep1.id], created_at: '2025-01-15T08:30:05Z', goals: ['Answer user query about ACME Corp Q3 2024 results'], subgoals: ['Retrieve 10-Q filing', 'Draft response'], scratch: { q3_revenue: '$4.2B' }, pending_actions: [{ action: 'tool_call', tool: 'calculator', args: { expression: '4.2 / 3.8 - 1' }, status: 'completed' }] })
  const ident = createPamEntry({ ...base, parent_ids: [], created_at: '2025-01-01T00:00:00Z', preferences: { verbosity: 'concise', max_items: 5 }, persona: { name: 'ResearchBot', role: 'Financial Research Assistant', tone: 'professional' }, language: 'en', policies: ['Always cite data sources.', 'Never provide investment advice.'], _redaction_metadata: { original_id: ep1.id, redaction_count: 0 } })
  const artifact = signPam({ components: { episodic: [ep1, ep2], semantic: [sem1, sem2], procedural: [proc], working: [work], identity: [ident] }, sourceAgent: SOURCE_AGENT, identity: OPERATOR, nowMs: NOW_MS })
  return { artifact, entries: { ep1, ep2, sem1, sem2, proc, work, ident } }
}

describe('PAM → records (docs/memory-model.md §2)', () => {
  const { artifact, entries } = specArtifact()
  const imported = recordsFromPam(artifact, { nowMs: NOW_MS })
  const find = (kind: string, predicate: (record: PamRecord) => boolean): PamRecord => {
    const found = imported.records.find((record) => record.kind === kind && predicate(record))
    if (found === undefined) throw new Error(`no ${kind}`)
    return found
  }
  const carrierOf = (entry: PamEntry): PamRecord => find('episode', (record) => (record.metadata as Record<string, string>).pam_id === entry.id)

  it('makes the envelope an import episode, an agent entity and an agent context', () => {
    const episode = find('episode', (record) => record.id === imported.importEpisodeID)
    expect(episode).toMatchObject({ sourceType: 'event', eventTime: '2025-06-01T12:00:00Z', summary: 'Imported PAM artifact from research-bot' })
    expect(episode.metadata).toMatchObject({ pam_version: '1.0', pam_schema_version: '1.0', pam_root_hash: artifact.root_hash, pam_signature: artifact.signature, pam_capability_tokens: '[]', pam_source_agent: canonicalJson(SOURCE_AGENT) })
    const context = find('context', (record) => record.label === 'research-bot')
    expect(episode.contextID).toBe(context.id)
    const agent = find('entity', (record) => record.canonicalName === 'research-bot')
    expect(agent).toMatchObject({ type: 'agent', summary: 'gpt-4 langchain-v0.1.5', aliases: ['agent:research-bot'] })
  })

  it('maps episodic entries to event carriers with their actors, times and tags', () => {
    const first = carrierOf(entries.ep1 as PamEntry)
    expect(first).toMatchObject({ sourceType: 'event', actors: ['user:alice'], speaker: 'user', importance: 0.9, confidence: 0.7, categories: ['finance', 'query', 'acme'], eventTime: '2025-01-15T08:30:00Z', sourceID: imported.importEpisodeID })
    expect(first.details).toBe("User asked: What were ACME Corp's Q3 2024 results?")
    const second = carrierOf(entries.ep2 as PamEntry)
    expect(second.metadata).toMatchObject({ pam_created_at: '2025-01-15T08:30:05.5Z', pam_timestamp: '2025-01-15T08:30:05+00:00', pam_context: '{"session":"s1"}', pam_tags: '["finance","finance"]', pam_parent_ids: canonicalJson([(entries.ep1 as PamEntry).id]) })
    expect(second).toMatchObject({ ingestionTime: '2025-01-15T08:30:05Z', categories: ['finance'], speaker: 'agent' })
    expect(find('entity', (record) => record.canonicalName === 'alice')).toMatchObject({ type: 'person', aliases: ['user:alice'] })
    expect(find('episodeLink', (record) => record.srcEpisodeID === second.id)).toMatchObject({ dstEpisodeID: first.id, linkType: 'derived_from', weight: 1 })
  })

  it('maps semantic entries to a carrier and a fact, and the later object supersedes the earlier one', () => {
    const older = find('fact', (record) => record.object === '$4.2 billion')
    const newer = find('fact', (record) => record.object === '$4.3 billion')
    expect(older).toMatchObject({ subject: 'ACME Corp', predicate: 'q3_2024_revenue', text: 'ACME Corp q3_2024_revenue $4.2 billion', confidence: 0.95, importance: 0.5, tValidFrom: '2025-01-15T08:31:00Z', episodeID: carrierOf(entries.sem1 as PamEntry).id })
    expect(imported.supersessions).toEqual([{ oldID: older.id, newID: newer.id, at: '2025-01-16T08:31:00Z' }])
    expect(find('factLink', (record) => record.srcFactID === newer.id)).toMatchObject({ dstFactID: older.id, linkType: 'derived_from' })
    expect(carrierOf(entries.sem1 as PamEntry).metadata).toMatchObject({ pam_source_event_ids: canonicalJson([(entries.ep2 as PamEntry).id]) })
  })

  it('maps procedural entries to a procedure whose steps join back to the body', () => {
    const procedure = find('procedure', () => true)
    expect(procedure).toMatchObject({ name: 'summarize_financial_report', steps: ['1. Extract metrics.', '2. Identify YoY changes.'], triggerPattern: 'report_text is non-empty', successCount: 14, failureCount: 0, enabled: true, lastUsed: '2025-01-15T08:30:05Z' })
    const carrier = carrierOf(entries.proc as PamEntry)
    expect(carrier.details).toBe('summarize_financial_report(report_text, max_length)\n1. Extract metrics.\n2. Identify YoY changes.')
    expect(JSON.parse((carrier.metadata as Record<string, string>).cairn_derived as string)).toEqual([procedure.id])
  })

  it('maps working entries to a task context and an expiring carrier tagged working', () => {
    const carrier = carrierOf(entries.work as PamEntry)
    const task = find('context', (record) => record.id === carrier.contextID)
    expect(task).toMatchObject({ label: 'Answer user query about ACME Corp Q3 2024 results', parentID: find('context', (record) => record.label === 'research-bot').id })
    expect(carrier).toMatchObject({ tags: ['working'], sourceType: 'note', lifecycleState: 'HOT', expirationDate: '2025-06-02T12:00:00Z' })
    expect(carrier.details).toBe('Goals: Answer user query about ACME Corp Q3 2024 results\nSubgoals: Retrieve 10-Q filing; Draft response\nScratch: {"q3_revenue":"$4.2B"}\nPending: tool_call calculator [completed]')
    expect(carrier.metadata).toMatchObject({ pam_goals: canonicalJson(['Answer user query about ACME Corp Q3 2024 results']), pam_scratch: '{"q3_revenue":"$4.2B"}' })
  })

  it('maps identity entries to persona text, preferences and the persona entity', () => {
    expect(imported.personaAppends).toEqual(['Name: ResearchBot\nRole: Financial Research Assistant\nTone: professional\nPolicies:\nAlways cite data sources.\nNever provide investment advice.'])
    expect(find('preference', (record) => record.key === 'verbosity')).toMatchObject({ value: 'concise', id: recordIdFor('preference', { key: 'verbosity' }) })
    expect(find('preference', (record) => record.key === 'max_items').value).toBe('5')
    expect(find('preference', (record) => record.key === 'language').value).toBe('en')
    expect(find('entity', (record) => record.canonicalName === 'ResearchBot').type).toBe('agent')
    const carrier = carrierOf(entries.ident as PamEntry)
    expect(carrier.metadata).toMatchObject({ pam_preferences: '{"max_items":5,"verbosity":"concise"}', pam__redaction_metadata: canonicalJson({ original_id: (entries.ep1 as PamEntry).id, redaction_count: 0 }) })
    expect(find('episodeLink', (record) => record.srcEpisodeID === carrier.id).dstEpisodeID).toBe(carrierOf(entries.ep1 as PamEntry).id)
  })

  it('gives unique records, with the same ids on every import', () => {
    const keys = imported.records.map(key)
    expect(new Set(keys).size).toBe(keys.length)
    expect(recordsFromPam(artifact, { nowMs: NOW_MS })).toEqual(imported)
  })

  it('keeps a component it does not know as pam_raw carriers', () => {
    const value = readPamArtifact({ ...artifact, components: { ...artifact.components, sensory: [{ frame: 1 }] } })
    const raw = recordsFromPam(value, { nowMs: NOW_MS }).records.find((record) => (record.metadata as Record<string, string> | undefined)?.pam_component === 'sensory')
    expect(raw?.metadata).toMatchObject({ pam_raw: '{"frame":1}' })
  })
})

describe('PAM → records → PAM', () => {
  it('emits every imported entry unchanged, so content ids survive a pass through Cairn', () => {
    fc.assert(fc.property(pamArtifact, ({ artifact }) => {
      const imported = recordsFromPam(artifact, { nowMs: NOW_MS })
      // Given write times (as an export from a replica is), the foreign path still emits the original bytes.
      const writtenAtMs = new Map(imported.records.map((record) => [record.id, NOW_MS]))
      const { artifact: again } = pamFromRecords(imported.records, { identity: OPERATOR, nowMs: NOW_MS + 1000, sourceAgent: SOURCE_AGENT, writtenAtMs })
      const ids = idsOf(again)
      for (const id of idsOf(artifact)) expect(ids.has(id), id).toBe(true)
      expect(verifyPam(again, { trustedKeys: [OPERATOR.author] }).ok).toBe(true)
    }), { numRuns: 60 })
  })

  it('falls back to a Cairn entry when an imported record changed, keeping the change', () => {
    const { artifact, entries } = specArtifact()
    const records = recordsFromPam(artifact, { nowMs: NOW_MS }).records.map((record) =>
      record.kind === 'fact' && record.object === '$4.2 billion' ? { ...record, importance: 0.99 } : record)
    const { artifact: again } = pamFromRecords(records, { identity: OPERATOR, nowMs: NOW_MS, sourceAgent: SOURCE_AGENT })
    const ids = idsOf(again)
    expect(ids.has((entries.sem1 as PamEntry).id)).toBe(false)
    expect(ids.has((entries.ep1 as PamEntry).id)).toBe(true)
    const back = byKey(recordsFromPam(again, { nowMs: NOW_MS }).records)
    const changed = records.find((record) => record.kind === 'fact' && record.importance === 0.99) as PamRecord
    expect(back.get(key(changed))).toBe(canonicalJson(changed))
  })
})

describe('restoreCairnRecords: false', () => {
  it('imports Cairn entries as foreign ones, keeping the cairn field as metadata', () => {
    const records = fc.sample(cairnRecords, { numRuns: 1, seed: 2 })[0] as PamRecord[]
    const { artifact } = pamFromRecords(records, { identity: OPERATOR, nowMs: NOW_MS })
    const imported = recordsFromPam(artifact, { nowMs: NOW_MS, restoreCairnRecords: false })
    const ids = new Set(imported.records.map((record) => record.id))
    for (const record of records) if (record.kind === 'episode') expect(ids.has(record.id)).toBe(false)
    const carriers = imported.records.filter((record) => typeof (record.metadata as Record<string, string> | undefined)?.pam_id === 'string')
    expect(carriers.length).toBe(PAM_COMPONENTS.reduce((sum, component) => sum + artifact.components[component].length, 0))
    for (const carrier of carriers) expect(JSON.parse((carrier.metadata as Record<string, string>).pam_cairn as string)).toBeTypeOf('object')
  })
})

describe('bad input', () => {
  const { artifact } = specArtifact()

  it('refuses a malformed cairn field, naming its path', () => {
    const entry = createPamEntry({ version: '1.0', parent_ids: [], created_at: '2025-01-01T00:00:00Z', timestamp: '2025-01-01T00:00:00Z', actor: 'user:a', observation: 'x', salience: 0.5, tags: [], cairn: { record: { kind: 'fact', id: 'fact_1' } } })
    const bad = signPam({ components: { episodic: [entry] }, sourceAgent: SOURCE_AGENT, identity: OPERATOR, nowMs: NOW_MS })
    expect(() => recordsFromPam(bad, { nowMs: NOW_MS })).toThrow(/BAD_CAIRN_FIELD.*episodic entry cannot stand for a fact.*\$\.components\.episodic\[0\]\.cairn\.record\.kind/)
  })

  it('refuses a malformed write time, or one naming no record of its entry, naming its path', () => {
    const base = { version: '1.0', parent_ids: [], created_at: '2025-01-01T00:00:00Z', timestamp: '2025-01-01T00:00:00Z', actor: 'user:a', observation: 'x', salience: 0.5, tags: [] }
    for (const [writtenAtMs, message] of [
      [{ ep_1: -1 }, /whole milliseconds since 1970, got -1/],
      [{ ep_1: 1.5 }, /whole milliseconds since 1970/],
      [{ ep_1: '2025-01-01T00:00:00Z' }, /whole milliseconds since 1970/],
      [{ ep_other: 1 }, /"ep_other" names no record of this entry/],
      [[1], /expected an object/],
    ] as const) {
      const entry = createPamEntry({ ...base, cairn: { record: { kind: 'episode', id: 'ep_1' }, writtenAtMs } as never })
      const bad = signPam({ components: { episodic: [entry] }, sourceAgent: SOURCE_AGENT, identity: OPERATOR, nowMs: NOW_MS })
      expect(() => recordsFromPam(bad, { nowMs: NOW_MS })).toThrow(message)
      expect(() => recordsFromPam(bad, { nowMs: NOW_MS })).toThrow(/BAD_CAIRN_FIELD.*\$\.components\.episodic\[0\]\.cairn\.writtenAtMs/)
    }
  })

  it('refuses malformed records and options', () => {
    expect(codeOf(() => pamFromRecords([{ kind: 'episode' } as unknown as PamRecord], { identity: OPERATOR, nowMs: NOW_MS }))).toBe('WRONG_TYPE')
    const resource = { kind: 'resource', id: 'res_1' } as PamRecord
    expect(codeOf(() => pamFromRecords([resource], { identity: OPERATOR, nowMs: NOW_MS }))).toBe('NOTHING_TO_EXPORT')
    expect(codeOf(() => pamFromRecords([resource, resource], { identity: OPERATOR, nowMs: NOW_MS }))).toBe('DUPLICATE_RECORD')
    expect(codeOf(() => pamFromRecords([], { identity: 'key' as never, nowMs: NOW_MS }))).toBe('WRONG_TYPE')
    const episode = { kind: 'episode', id: 'ep_1' } as PamRecord
    expect(codeOf(() => pamFromRecords([episode], { identity: OPERATOR, nowMs: NOW_MS, writtenAtMs: { ep_1: 1 } as never }))).toBe('WRONG_TYPE')
    expect(codeOf(() => pamFromRecords([episode], { identity: OPERATOR, nowMs: NOW_MS, writtenAtMs: new Map([['ep_1', -1]]) }))).toBe('OUT_OF_RANGE')
    expect(codeOf(() => pamFromRecords([episode], { identity: OPERATOR, nowMs: NOW_MS, writtenAtMs: new Map([['ep_1', 0.5]]) }))).toBe('WRONG_TYPE')
    expect(codeOf(() => recordsFromPam(artifact, { nowMs: 1.5 }))).toBe('WRONG_TYPE')
    expect(codeOf(() => recordsFromPam(artifact, { nowMs: NOW_MS, ttl: 1 } as never))).toBe('UNKNOWN_FIELD')
  })
})

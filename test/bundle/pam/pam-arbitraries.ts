/**
 * fast-check arbitraries for PAM tests: JSON values, spec-form PAM artifacts with random
 * provenance DAGs, and Cairn records of every exported kind. Ids of composite-key records come
 * from the projection's recordIdFor, never from the code under test.
 */
import fc from 'fast-check'
import { Identity, type JsonValue } from '../../../src/log/index.js'
import { recordIdFor } from '../../../src/projection/index.js'
import { PAM_COMPONENTS, createPamEntry, signPam, type PamArtifact, type PamComponentName, type PamEntry, type PamRecord } from '../../../src/bundle/pam/index.js'

export const OPERATOR = Identity.fromSeed(new Uint8Array(32).fill(7))
export const STRANGER = Identity.fromSeed(new Uint8Array(32).fill(9))
export const NOW_MS = Date.UTC(2025, 5, 1, 12, 0, 0)
export const SOURCE_AGENT = { name: 'research-bot', model_family: 'gpt-4', runtime: 'langchain-v0.1.5' }

export const text = fc.oneof(
  fc.string({ maxLength: 16 }),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 8 }),
  fc.constantFrom('', 'a\nb', 'quote " and \\ backslash', '\u0000\u001f\u2028', 'ACME Corp', '😀 émoji'),
)

/** An object key: Cairn refuses __proto__ as one (crdt/own-keys.ts), and fast-check likes to try it. */
const key = text.filter((value) => value !== '__proto__')

/** A string that can never be read as JSON: metadata round trips keep it a string. */
export const plainText = text.map((value) => `x${value}`)

export const score = fc.double({ min: 0, max: 1, noNaN: true }).map((value) => (value === 0 ? 0 : value))

const leaf: fc.Arbitrary<JsonValue> = fc.oneof(
  fc.boolean(),
  fc.constant(null),
  fc.integer({ min: -1_000_000_000, max: 1_000_000_000 }),
  fc.maxSafeInteger(),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((value) => !Object.is(value, -0) && (!Number.isInteger(value) || Number.isSafeInteger(value))),
  text,
)

/** JSON values without -0 or unsafe integers, which JSON itself cannot tell apart. */
export const jsonValue: fc.Arbitrary<JsonValue> = fc.letrec<{ value: JsonValue }>((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, fc.array(tie('value'), { maxLength: 4 }), fc.dictionary(key, tie('value'), { maxKeys: 4 })),
})).value

export const jsonObject = fc.dictionary(key, jsonValue, { maxKeys: 4 })

const MS_2000 = Date.UTC(2000, 0, 1)
const MS_2040 = Date.UTC(2040, 0, 1)

/** RFC 3339 timestamps in the forms PAM writers use: whole seconds, fractions, offsets. */
export const timestamp = fc.tuple(fc.integer({ min: MS_2000 / 1000, max: MS_2040 / 1000 }), fc.integer({ min: 0, max: 999 }), fc.constantFrom('Z', 'ms', '+01:00', '-05:30')).map(([seconds, ms, form]) => {
  if (form === 'Z') return new Date(seconds * 1000).toISOString().slice(0, 19) + 'Z'
  if (form === 'ms') return new Date(seconds * 1000 + ms).toISOString()
  const offsetMinutes = form === '+01:00' ? 60 : -330
  return new Date(seconds * 1000 + offsetMinutes * 60_000).toISOString().slice(0, 19) + form
})

/** Whole-second UTC, as Cairn records hold times. */
export const recordTime = fc.integer({ min: MS_2000 / 1000, max: MS_2040 / 1000 }).map((seconds) => new Date(seconds * 1000).toISOString().slice(0, 19) + 'Z')

const snake = fc.stringMatching(/^[a-z][a-z0-9_]{0,8}$/)

function fieldsOf(component: PamComponentName, earlier: readonly PamEntry[], picks: readonly number[]): fc.Arbitrary<Record<string, JsonValue>> {
  const episodes = earlier.filter((entry) => typeof entry.actor === 'string').map((entry) => entry.id)
  const extra = fc.option(fc.record({ x_note: fc.oneof(plainText, jsonObject, fc.integer()) }, { requiredKeys: [] }), { nil: undefined }).map((value) => value ?? {})
  const base = { created_at: timestamp, version: fc.constant('1.0') }
  switch (component) {
    case 'episodic':
      return fc.record({
        ...base, timestamp, actor: fc.tuple(fc.constantFrom('user', 'agent', 'system', 'tool'), fc.stringMatching(/^[a-z.@_-]{1,8}$/)).map(([type, name]) => `${type}:${name}`),
        observation: text, salience: score, tags: fc.array(fc.constantFrom('finance', 'acme', 'q3', 'public'), { maxLength: 4 }),
        context: fc.option(jsonObject, { nil: undefined }), extra,
      }).map(({ extra: more, context, ...fields }) => ({ ...fields, ...(context === undefined ? {} : { context }), ...more }))
    case 'semantic':
      return fc.record({ ...base, subject: text, predicate: fc.constantFrom('q3_revenue', 'located_in', 'likes'), object: text, confidence: score, extra }).map(({ extra: more, ...fields }) => ({
        ...fields, source_event_ids: [...new Set(picks.map((pick) => episodes[pick % Math.max(1, episodes.length)]).filter((id): id is string => id !== undefined))], ...more,
      }))
    case 'procedural':
      return fc.record({
        ...base, name: snake, body: text,
        params: fc.array(fc.record({ name: snake, type: fc.constantFrom('string', 'integer'), required: fc.boolean() }), { maxLength: 3 }),
        preconditions: fc.array(text, { maxLength: 3 }), usage_count: fc.nat(1000), last_used: fc.option(timestamp, { nil: null }),
      })
    case 'working':
      return fc.record({
        ...base, goals: fc.array(text, { maxLength: 3 }), subgoals: fc.array(text, { maxLength: 3 }), scratch: jsonObject,
        pending_actions: fc.array(fc.record({ action: fc.constantFrom('tool_call', 'message'), tool: fc.constantFrom('calculator', 'search'), args: jsonObject, status: fc.constantFrom('pending', 'completed') }), { maxLength: 2 }),
      })
    case 'identity':
      return fc.record({
        ...base, preferences: fc.dictionary(snake, fc.oneof(plainText, fc.integer(), fc.boolean()), { maxKeys: 3 }),
        persona: fc.record({ name: fc.stringMatching(/^[A-Za-z]{1,8}$/), role: text }), language: fc.constantFrom('en', 'de-CH', 'fr'),
        policies: fc.array(text, { maxLength: 3 }),
      })
  }
}

export interface GeneratedArtifact {
  readonly artifact: PamArtifact
  /** Entries in creation order (parents before children). */
  readonly entries: PamEntry[]
}

/** Spec-form artifacts: 1–10 entries of any component, each derived from random earlier ones. */
export const pamArtifact: fc.Arbitrary<GeneratedArtifact> = fc
  .array(fc.record({ component: fc.constantFrom(...PAM_COMPONENTS), picks: fc.array(fc.nat(20), { maxLength: 3 }), seed: fc.nat() }), { minLength: 1, maxLength: 10 })
  .chain((plan) => {
    // Fields depend on earlier entries (parents, source events), so entries are drawn one by one.
    // An entry equal to an earlier one has its id too and is left out: ids are unique.
    let draw: fc.Arbitrary<{ entry: PamEntry; component: PamComponentName }[]> = fc.constant([])
    for (const [i, step] of plan.entries()) {
      draw = draw.chain((earlier) => fieldsOf(step.component, earlier.map((item) => item.entry), step.picks).map((fields) => {
        const parents = i === 0 ? [] : [...new Set(step.picks.map((pick) => (earlier[pick % earlier.length] as { entry: PamEntry }).entry.id))]
        const sources = Array.isArray(fields.source_event_ids) ? (fields.source_event_ids as string[]) : []
        const entry = createPamEntry({ ...fields, parent_ids: [...new Set([...parents, ...sources])] })
        return earlier.some((item) => item.entry.id === entry.id) ? earlier : [...earlier, { entry, component: step.component }]
      }))
    }
    return draw
  })
  .map((drawn) => {
    const components: Partial<Record<PamComponentName, PamEntry[]>> = {}
    for (const { entry, component } of drawn) components[component] = [...(components[component] ?? []), entry]
    return { artifact: signPam({ components, sourceAgent: SOURCE_AGENT, identity: OPERATOR, nowMs: NOW_MS }), entries: drawn.map((item) => item.entry) }
  })

const hexId = (prefix: string): fc.Arbitrary<string> => fc.stringMatching(/^[0-9a-f]{16}$/).map((hex) => prefix + hex)
const metadata = fc.dictionary(fc.stringMatching(/^[a-z_]{1,8}$/), text, { maxKeys: 3 })

function episodeArb(contexts: readonly string[]): fc.Arbitrary<PamRecord> {
  return fc.record({
    id: hexId('ep_'), eventTime: recordTime, mentionTime: recordTime, ingestionTime: recordTime, sourceType: fc.constantFrom('note', 'chat', 'event'),
    actors: fc.array(fc.constantFrom('user', 'user:alice', 'agent:bot', 'someone'), { maxLength: 2 }), summary: text, details: text,
    sensitivity: fc.constantFrom('low', 'high'), metadata, categories: fc.array(fc.constantFrom('work', 'home'), { maxLength: 2 }),
    importance: score, confidence: score, lifecycleState: fc.constantFrom('HOT', 'COLD'), extractionState: fc.constant('done'),
    accessCount: fc.nat(50), pinned: fc.boolean(), vaultRefs: fc.array(text, { maxLength: 1 }),
    speaker: fc.option(fc.constantFrom('user', 'agent'), { nil: undefined }),
    tags: fc.option(fc.array(fc.constantFrom('working', 'public'), { minLength: 1, maxLength: 2 }), { nil: undefined }),
    contextID: fc.option(fc.constantFrom(...contexts, 'ctx_elsewhere'), { nil: undefined }),
    expirationDate: fc.option(recordTime, { nil: undefined }), x_custom: fc.option(jsonValue, { nil: undefined }),
  }, { requiredKeys: ['id', 'eventTime', 'mentionTime', 'ingestionTime', 'sourceType', 'actors', 'summary', 'details', 'sensitivity', 'metadata', 'categories', 'importance', 'confidence', 'lifecycleState', 'extractionState', 'accessCount', 'pinned', 'vaultRefs'] })
    .chain((record) => fc.subarray(['summary', 'vaultRefs', 'eventTime', 'actors', 'importance'], { maxLength: 2 }).map((dropped) => {
      // Records missing fields the PAM side always writes (partial or older records) must survive too.
      const out: Record<string, unknown> = { kind: 'episode', ...record }
      for (const field of dropped) delete out[field]
      return withoutUndefined(out)
    }))
}

function withoutUndefined(record: Record<string, unknown>): PamRecord {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as PamRecord
}

const pick = <T>(items: readonly T[], index: number): T | undefined => items[index % Math.max(1, items.length)]

/** Cairn records of every kind PAM carries, plus a resource (which it does not). */
export const cairnRecords: fc.Arbitrary<PamRecord[]> = fc
  .record({ contexts: fc.uniqueArray(hexId('ctx_'), { maxLength: 2 }), count: fc.integer({ min: 1, max: 5 }) })
  .chain(({ contexts, count }) => fc.record({
    contexts: fc.constant(contexts),
    episodes: fc.uniqueArray(episodeArb(contexts), { minLength: 1, maxLength: count, selector: (record) => record.id }),
    entities: fc.uniqueArray(fc.record({ id: hexId('ent_'), type: fc.constantFrom('person', 'org'), canonicalName: text, aliases: fc.array(text, { maxLength: 2 }), summary: text, sensitivity: fc.constant('low'), updatedAt: recordTime }), { maxLength: 3, selector: (record) => record.id }),
    picks: fc.array(fc.nat(100), { minLength: 12, maxLength: 12 }),
    facts: fc.array(fc.record({ id: hexId('fact_'), subject: text, predicate: text, object: text, text, tValidFrom: recordTime, confidence: score, importance: score, createdAt: recordTime, tValidTo: fc.option(recordTime, { nil: undefined }) }), { maxLength: 3 }),
    procedures: fc.array(fc.record({ id: hexId('proc_'), name: text, triggerPattern: text, steps: fc.array(text, { maxLength: 3 }), successCount: fc.nat(9), failureCount: fc.nat(9), enabled: fc.boolean(), lastUsed: fc.option(recordTime, { nil: undefined }) }), { maxLength: 2 }),
    cores: fc.subarray([{ id: 'persona' }, { id: 'human' }, { id: 'notes' }]).chain((cores) => fc.tuple(...cores.map((core) => fc.record({ content: text, charBudget: fc.nat(4000), version: fc.integer({ min: 1, max: 9 }) }).map((fields) => ({ ...core, ...fields }))))),
    preferences: fc.uniqueArray(fc.record({ key: fc.oneof(snake, text), value: text }), { maxLength: 3, selector: (record) => record.key }),
    links: fc.array(fc.record({ from: fc.nat(20), to: fc.nat(20), linkType: fc.constantFrom('derived_from', 'related'), weight: score }), { maxLength: 4 }),
    withResource: fc.boolean(),
  }))
  .map(({ contexts, episodes, entities, picks, facts, procedures, cores, preferences, links, withResource }) => {
    const records: PamRecord[] = [...episodes]
    for (const id of contexts) records.push({ kind: 'context', id, label: `label ${id}`, archived: false, createdAt: '2025-01-01T00:00:00Z' })
    for (const entity of entities) records.push({ kind: 'entity', ...entity })
    const factIds: string[] = []
    facts.forEach((fact, i) => {
      if (factIds.includes(fact.id)) return
      factIds.push(fact.id)
      const episode = pick(episodes, picks[i] ?? 0) as PamRecord
      records.push(withoutUndefined({ kind: 'fact', ...fact, episodeID: (picks[i] ?? 0) % 5 === 4 ? 'ep_missing' : episode.id }))
    })
    if (entities.length > 0) {
      const src = pick(entities, picks[3] ?? 0)?.id as string
      const dst = pick(entities, picks[4] ?? 0)?.id as string
      records.push({ kind: 'edge', id: 'edge_0123456789abcdef', srcEntityID: src, dstEntityID: dst, edgeType: 'works_with', tValidFrom: '2025-01-01T00:00:00Z', ingestionTime: '2025-01-02T00:00:00Z', confidence: 0.8, evidenceEpisodeIDs: [pick(episodes, picks[5] ?? 0)?.id as string] })
    }
    const procIds = new Set<string>()
    for (const procedure of procedures) if (!procIds.has(procedure.id)) procIds.add(procedure.id) && records.push(withoutUndefined({ kind: 'procedure', ...procedure }))
    for (const core of cores) records.push({ kind: 'core', ...core })
    for (const preference of preferences) records.push({ kind: 'preference', id: recordIdFor('preference', preference), ...preference })
    const linkIds = new Set<string>()
    for (const link of links) {
      const useFacts = factIds.length > 0 && link.from % 2 === 1
      const ids = useFacts ? factIds : episodes.map((episode) => episode.id)
      const src = pick(ids, link.from) as string
      const dst = pick(ids, link.to) as string
      const record: PamRecord = useFacts
        ? { kind: 'factLink', id: recordIdFor('factLink', { srcFactID: src, dstFactID: dst, linkType: link.linkType }), srcFactID: src, dstFactID: dst, linkType: link.linkType, createdAt: '2025-01-03T00:00:00Z' }
        : { kind: 'episodeLink', id: recordIdFor('episodeLink', { srcEpisodeID: src, dstEpisodeID: dst, linkType: link.linkType }), srcEpisodeID: src, dstEpisodeID: dst, linkType: link.linkType, weight: link.weight }
      if (!linkIds.has(record.id)) linkIds.add(record.id) && records.push(record)
    }
    if (withResource) records.push({ kind: 'resource', id: 'res_0123456789abcdef', uri: 'file:///a', mimeType: 'text/plain', contentHash: 'ab', title: 't', summary: '', created: '2025-01-01T00:00:00Z', modified: '2025-01-01T00:00:00Z' })
    return records
  })

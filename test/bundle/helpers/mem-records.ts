/**
 * Small, complete Portable Memory rows for the codec tests, written out by hand (never produced
 * by the code under test), and the write options the tests share.
 */
import type { JsonObject, MemBundleContent, WriteOptions } from '../../../src/bundle/mem/index.js'

export const T = '2024-03-09T16:00:00Z'

export const OPTIONS: WriteOptions = {
  generator: 'cairn-test/0.1',
  createdAt: '2030-01-01T00:00:00Z',
  exportMode: 'full',
  conformanceLevel: 'L3',
  embeddingModel: 'none',
  embeddingDim: 0,
}

export function emptyContent(): MemBundleContent {
  return { records: {}, passthrough: {}, tombstones: [], auditLog: [] }
}

export function episode(id: string, extra: JsonObject = {}): JsonObject {
  return {
    id, eventTime: T, mentionTime: T, ingestionTime: T, sourceType: 'note', actors: [], summary: 's', details: 'd',
    sensitivity: 'low', metadata: {}, categories: [], importance: 0.5, confidence: 0.7, lifecycleState: 'HOT',
    extractionState: 'done', accessCount: 0, pinned: false, vaultRefs: [], ...extra,
  }
}

export function entity(id: string, aliases: string[], extra: JsonObject = {}): JsonObject {
  return { id, type: 'person', canonicalName: 'N', aliases, summary: '', sensitivity: 'low', updatedAt: T, ...extra }
}

export function edge(id: string, extra: JsonObject = {}): JsonObject {
  return {
    id, srcEntityID: 'ent_a', dstEntityID: 'ent_b', edgeType: 'knows', tValidFrom: T, ingestionTime: T, confidence: 0.9,
    evidenceEpisodeIDs: ['ep_1'], ...extra,
  }
}

export function context(id: string): JsonObject {
  return { id, label: id, archived: false, createdAt: T }
}

export const EMPTY_DERIVED: JsonObject = {
  chunkIDs: [], edgeIDs: [], embeddingCacheKeys: [], entityIDs: [], episodeLinkCount: 0, factIDs: [], sentenceIDs: [],
}

export function tombstone(id: string, targetID: string, extra: JsonObject = {}): JsonObject {
  return { id, op: 'delete', targetKind: 'episode', targetID, deletedAt: T, actor: 'user', derived: { ...EMPTY_DERIVED }, ...extra }
}

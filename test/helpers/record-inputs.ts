/**
 * The smallest input each record kind accepts in `remember({ kind, ...fields })`: exactly the
 * fields the PM schema requires that have no default. Written by hand from the schemas and the
 * documented defaults, not read from the table under test.
 */
export const MINIMAL_INPUTS = {
  episode: { summary: 'Met Ada at the lab' },
  entity: { type: 'person', canonicalName: 'Ada' },
  edge: { srcEntityID: 'ent_ada', dstEntityID: 'ent_lab', edgeType: 'works_at' },
  fact: { episodeID: 'ep_1', subject: 'Ada', predicate: 'likes', object: 'tea' },
  factLink: { srcFactID: 'fact_1', dstFactID: 'fact_2', linkType: 'refines' },
  episodeLink: { srcEpisodeID: 'ep_1', dstEpisodeID: 'ep_2', linkType: 'follows' },
  resource: { uri: 'file:///notes.pdf', mimeType: 'application/pdf', contentHash: 'sha256:00ff', title: 'Notes' },
  chunk: { resourceID: 'res_1', position: 0, text: 'First chunk.' },
  core: { id: 'human' },
  procedure: { name: 'deploy', triggerPattern: 'deploy *' },
  context: { label: 'Work' },
  community: { label: 'Lab team' },
  category: { name: 'Work' },
  preference: { key: 'units', value: 'metric' },
  secretRef: { label: 'GitHub token', category: 'api-key', preview: 'ghp_••••abcd', encryptionMetadata: 'aes-256-gcm/keychain' },
} as const satisfies Record<string, Record<string, unknown>>

export type MinimalKind = keyof typeof MINIMAL_INPUTS

/** The fixed time and randomness the record tests use: 2024-02-29T12:30:45.999Z, hex 0123456789abcdef. */
export const NOW_MS = Date.UTC(2024, 1, 29, 12, 30, 45, 999)
export const NOW_TEXT = '2024-02-29T12:30:45Z'
export const RANDOM_HEX = '0123456789abcdef'
export const fixedContext = { nowMs: NOW_MS, randomHex: (bytes: number): string => RANDOM_HEX.repeat(Math.ceil(bytes / 8)).slice(0, bytes * 2) }

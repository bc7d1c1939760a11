/**
 * Small rules shared by the PAM ↔ record mappings (docs/memory-model.md §1.3, §1.8, §5):
 * the id hash H, the ids of imported units, metadata keys and values, summaries.
 *
 * Invariant: every id here is a pure function of the artifact's content, so importing the
 * same artifact twice yields the same records (memory-model §5 rule 7).
 */
import { canonicalJson, parseJson, type JsonValue } from '../../log/index.js'
import { hashParts, recordIdFor } from '../../projection/index.js'

/** H(p1, …, pn) of memory-model §1.3 (hashParts). */
export const H = hashParts

/** The carrier episode of a PAM entry: `ep_` + H("pam", entry id) (§2.1). */
export function carrierIdOf(entryId: string): string {
  return `ep_${H('pam', entryId)}`
}

/** A record derived from a PAM entry: `<prefix>` + H("pam", entry id, kind) (§2.1). */
export function derivedIdOf(prefix: string, entryId: string, kind: string): string {
  return `${prefix}${H('pam', entryId, kind)}`
}

export const factIdOf = (entryId: string): string => derivedIdOf('fact_', entryId, 'fact')
export const procedureIdOf = (entryId: string): string => derivedIdOf('proc_', entryId, 'procedure')
export const taskContextIdOf = (entryId: string): string => derivedIdOf('ctx_', entryId, 'context')

/** The entity of a `user:`/`agent:` actor or a source agent: `ent_` + H(type, identifier) (§2.2). */
export function actorEntityIdOf(type: 'user' | 'agent', identifier: string): string {
  return `ent_${H(type, identifier)}`
}

export function preferenceIdOf(key: string): string {
  return recordIdFor('preference', { key })
}

export function episodeLinkIdOf(src: string, dst: string, linkType: string): string {
  return recordIdFor('episodeLink', { srcEpisodeID: src, dstEpisodeID: dst, linkType })
}

export function factLinkIdOf(src: string, dst: string, linkType: string): string {
  return recordIdFor('factLink', { srcFactID: src, dstFactID: dst, linkType })
}

/** The metadata key of a source field (§5 rule 2): `pam_` + name, unless it already starts so. */
export function metadataKeyOf(field: string): string {
  return field.startsWith('pam_') ? field : `pam_${field}`
}

/**
 * A value as a metadata string (§5 rule 3): strings as they are, booleans "1"/"0", numbers and
 * everything else as canonical JSON; null gives undefined (treated as absent).
 */
export function metadataValueOf(value: JsonValue): string | undefined {
  if (value === null) return undefined
  if (typeof value === 'string') return value
  if (typeof value === 'boolean') return value ? '1' : '0'
  return canonicalJson(value)
}

/**
 * The inverse of metadataValueOf where the type is unknown: canonical JSON of a non-string
 * becomes that value again, anything else stays a string. Ambiguous cases ("1" for a string)
 * are resolved towards JSON; the exporter's hash check catches a wrong guess.
 */
export function valueFromMetadata(text: string): JsonValue {
  if (text.length === 0) return text
  try {
    const value = parseJson(text)
    if (typeof value !== 'string' && canonicalJson(value) === text) return value
  } catch {
    // Not JSON: a string.
  }
  return text
}

/** The PM adapters' summary: the first 120 code points of the details (§1.8). */
export function summaryOf(details: string): string {
  let out = ''
  let count = 0
  for (const character of details) {
    if (count++ === 120) break
    out += character
  }
  return out
}

/**
 * Episodes → Engram-spec YAML (the reverse of engram.ts, spec §10 `render_yaml`). Episodes that
 * came from engrams are restored from their `engram_*` metadata; other episodes become valid
 * synthesized engrams. `kind: 'episodes'` writes a PLUR episodes.yaml instead.
 *
 * Invariant: the output is deterministic and the PM reference's byte for byte
 * (`fixtures/engram/expected-render.yaml`): keys in the spec's order then sorted by code point,
 * strings double-quoted as JSON, numbers in canonical form, scalar lists inline, multi-line
 * strings as literal block scalars with the chomping that restores them exactly. Reading the
 * output back (yaml-subset.ts) gives the same engrams.
 */
import { canonicalJson, compareCodePoints, parseJson, type JsonValue } from '../../log/index.js'
import { firstLineSummary } from './text-values.js'

type JsonObject = Record<string, JsonValue>

/** Engram keys whose values are strings in the spec: restored as they are ("null" → null). */
const STRING_KEYS = new Set([
  'id', 'status', 'type', 'scope', 'visibility', 'polarity', 'created_at', 'updated_at', 'statement', 'rationale', 'source', 'pack',
  'abstract', 'derived_from', 'domain', 'claim_class', 'content_hash', 'commitment', 'locked_at', 'locked_reason', 'summary',
])
/** Emission order for engram keys (the spec's order); anything else follows, sorted. */
const KEY_ORDER = [
  'id', 'version', 'status', 'type', 'scope', 'visibility', 'polarity', 'statement', 'rationale', 'contraindications', 'tags', 'domain',
  'consolidated', 'pinned', 'activation', 'entities', 'temporal', 'episodic', 'usage', 'associations', 'relations', 'knowledge_type',
  'knowledge_anchors', 'dual_coding', 'source', 'provenance', 'attribution', 'claim_class', 'derivation_count', 'pack', 'abstract',
  'derived_from', 'feedback_signals', 'exchange', 'structured_data', 'insight', 'commitment', 'created_at', 'updated_at', 'summary',
  'content_hash',
]
const EPISODE_KEY_ORDER = ['id', 'timestamp', 'summary', 'agent', 'channel', 'session_id']
const STATUS: Readonly<Record<string, string>> = { HOT: 'active', COLD: 'dormant', ARCHIVED: 'retired' }
const KEY_CHARACTER = /^[\p{L}\p{N}_\-./]$/u

const isObject = (value: JsonValue | undefined): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value)

function put(target: JsonObject, key: string, value: JsonValue): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

function setDefault(target: JsonObject, key: string, value: JsonValue): void {
  if (!Object.hasOwn(target, key)) put(target, key, value)
}

function unstringify(key: string, text: string): JsonValue {
  if (STRING_KEYS.has(key)) return text === 'null' ? null : text
  if (key === 'record') return text
  try {
    return parseJson(text)
  } catch {
    return text
  }
}

function restored(metadata: Readonly<Record<string, string>>): JsonObject {
  const out: JsonObject = {}
  for (const [key, value] of Object.entries(metadata)) {
    if (key === 'engram_record' || !key.startsWith('engram_')) continue
    const name = key.slice('engram_'.length)
    put(out, name, unstringify(name, value))
  }
  return out
}

const text = (value: JsonValue | undefined): string => (typeof value === 'string' ? value : '')

function toEngram(episode: JsonObject): JsonObject {
  const metadata = (isObject(episode.metadata) ? episode.metadata : {}) as Record<string, string>
  const isEngram = metadata.engram_record === 'engram'
  const out = isEngram ? restored(metadata) : {}
  // An id Cairn could not use was kept as engram_id; the engram gets it back.
  put(out, 'id', isEngram && typeof out.id === 'string' ? out.id : text(episode.id))
  put(out, 'statement', text(episode.details) || text(episode.summary))
  if (isEngram) return out
  setDefault(out, 'version', 2)
  setDefault(out, 'status', STATUS[text(episode.lifecycleState)] ?? 'active')
  setDefault(out, 'type', 'terminological')
  setDefault(out, 'scope', text(episode.contextID) || 'global')
  const summary = text(episode.summary)
  if (summary !== '' && summary !== firstLineSummary(out.statement as string)) setDefault(out, 'summary', summary)
  const categories = Array.isArray(episode.categories) ? episode.categories : []
  if (categories.length > 0) setDefault(out, 'tags', [...categories])
  if (episode.pinned === true) put(out, 'pinned', true)
  const importance = typeof episode.importance === 'number' ? episode.importance : 0.5
  const activation: JsonObject = { retrieval_strength: importance, storage_strength: importance, frequency: episode.accessCount ?? 0 }
  if (typeof episode.lastAccessed === 'string') activation.last_accessed = episode.lastAccessed.slice(0, 10)
  put(out, 'activation', activation)
  const temporal: JsonObject = { learned_at: text(episode.eventTime).slice(0, 10) }
  if (typeof episode.expirationDate === 'string') temporal.valid_until = episode.expirationDate.slice(0, 10)
  put(out, 'temporal', temporal)
  setDefault(out, 'source', 'portable-memory')
  return out
}

function toPlurEpisode(episode: JsonObject): JsonObject {
  const metadata = (isObject(episode.metadata) ? episode.metadata : {}) as Record<string, string>
  const out = metadata.engram_record === 'episode' ? restored(metadata) : {}
  put(out, 'id', text(episode.id))
  put(out, 'summary', text(episode.details) || text(episode.summary))
  setDefault(out, 'timestamp', text(episode.eventTime))
  if (text(episode.speaker) !== '') setDefault(out, 'agent', text(episode.speaker))
  if (text(episode.contextID) !== '') setDefault(out, 'session_id', text(episode.contextID))
  return out
}

const quote = (value: string): string => JSON.stringify(value)

function emitKey(key: string): string {
  const isPlain = key !== '' && !'-.'.includes(key[0] as string) && [...key].every((character) => KEY_CHARACTER.test(character))
  return isPlain ? key : quote(key)
}

function emitScalar(value: JsonValue): string {
  if (value === null) return 'null'
  if (typeof value === 'boolean') return value ? 'true' : 'false'
  if (typeof value === 'number' || typeof value === 'bigint') return canonicalJson(value)
  if (typeof value === 'string') return quote(value)
  return quote(canonicalJson(value))
}

const isScalarList = (items: readonly JsonValue[]): boolean =>
  items.every((item) => (typeof item !== 'object' || item === null) && !(typeof item === 'string' && item.includes('\n')))

const flowList = (items: readonly JsonValue[]): string => `[${items.map(emitScalar).join(', ')}]`

function isBlockable(value: string): boolean {
  return value.split('\n').every((line) => !line.startsWith(' ') && !line.startsWith('\t'))
}

function scalarLines(prefix: string, value: JsonValue, indent: number): string[] {
  if (typeof value === 'string' && value.includes('\n') && isBlockable(value)) {
    const body = value.replace(/\n+$/, '')
    const trailing = value.length - body.length
    const lines = [`${prefix.replace(/ +$/, '')} ${trailing === 0 ? '|-' : trailing === 1 ? '|' : '|+'}`]
    for (const line of body.split('\n')) lines.push(line === '' ? '' : ' '.repeat(indent) + line)
    for (let i = 1; i < trailing; i++) lines.push('')
    return lines
  }
  return [prefix + emitScalar(value)]
}

function orderedKeys(object: JsonObject, order: readonly string[]): string[] {
  const known = order.filter((key) => Object.hasOwn(object, key))
  const rest = Object.keys(object).filter((key) => !order.includes(key)).sort(compareCodePoints)
  return [...known, ...rest]
}

function emitMapping(object: JsonObject, indent: number): string[] {
  const pad = ' '.repeat(indent)
  const order = Object.hasOwn(object, 'timestamp') && !Object.hasOwn(object, 'statement') ? EPISODE_KEY_ORDER : KEY_ORDER
  const out: string[] = []
  for (const key of orderedKeys(object, order)) {
    const value = object[key] as JsonValue
    const head = `${pad}${emitKey(key)}:`
    if (isObject(value)) {
      if (Object.keys(value).length === 0) out.push(`${head} {}`)
      else out.push(head, ...emitMapping(value, indent + 2))
    } else if (Array.isArray(value)) {
      if (value.length === 0) out.push(`${head} []`)
      else if (isScalarList(value)) out.push(`${head} ${flowList(value)}`)
      else out.push(head, ...emitSequence(value, indent + 2))
    } else out.push(...scalarLines(`${head} `, value, indent + 2))
  }
  return out
}

function emitSequence(items: readonly JsonValue[], indent: number): string[] {
  const pad = ' '.repeat(indent)
  const out: string[] = []
  for (const item of items) {
    if (isObject(item)) {
      const body = emitMapping(item, indent + 2)
      if (body.length === 0) out.push(`${pad}- {}`)
      else out.push(`${pad}- ${(body[0] as string).slice(indent + 2)}`, ...body.slice(1))
    } else if (Array.isArray(item)) {
      if (isScalarList(item)) out.push(`${pad}- ${flowList(item)}`)
      else out.push(`${pad}-`, ...emitSequence(item, indent + 2))
    } else out.push(...scalarLines(`${pad}- `, item, indent + 2))
  }
  return out
}

export interface EngramRenderOptions {
  /** `engrams` (default) writes an engrams.yaml, skipping PLUR episodes; `episodes` writes a PLUR episodes.yaml of all episodes. */
  readonly kind?: 'engrams' | 'episodes'
  /** Nest the list under an `engrams:` / `episodes:` key, as PLUR's pack files do (default: a bare list). */
  readonly wrapped?: boolean
}

/** Renders episode records (PM field objects) as Engram YAML. */
export function renderEngramYaml(episodes: readonly Readonly<JsonObject>[], options: EngramRenderOptions = {}): string {
  const kind = options.kind ?? 'engrams'
  const items = episodes
    .filter((episode) => kind === 'episodes' || (episode.metadata as Record<string, string> | undefined)?.engram_record !== 'episode')
    .map((episode) => (kind === 'episodes' ? toPlurEpisode(episode) : toEngram(episode)))
  const lines = options.wrapped === true
    ? [`${kind}:`, ...(items.length > 0 ? emitSequence(items, 2) : ['  []'])]
    : items.length > 0 ? emitSequence(items, 0) : ['[]']
  return `${lines.join('\n')}\n`
}

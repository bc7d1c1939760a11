/**
 * Engram adapter (PLUR YAML, spec §10): engrams (`engrams.yaml`, a bare list or an `engrams:`
 * root, or JSON) and PLUR episodes (`episodes.yaml`) → episodes.
 *
 * Mapping (the PM reference's, so `fixtures/engram` reproduces byte for byte):
 * - engram: statement → details; id, else `eng_` + sha256(statement)[:24]; `temporal.learned_at`,
 *   else `created_at` → eventTime; `updated_at` → mentionTime; `activation.last_accessed` →
 *   lastAccessed, `frequency` → accessCount, `retrieval_strength` → importance (clamped to
 *   [0, 1]); `episodic.confidence` (1–10) / 10 → confidence; tags → categories; scope →
 *   contextID; `temporal.valid_until` → expirationDate; status active/candidate → HOT, dormant →
 *   COLD, retired → ARCHIVED; `pinned: true` → pinned.
 * - PLUR episode: summary → details; id, else `epx_` + sha256(timestamp + "\n" + summary)[:24];
 *   timestamp → event and mention time; agent → speaker; session_id → contextID; sourceType event.
 * - metadata: every top-level key but id and statement/summary as `engram_<key>` (strings as
 *   they are, everything else canonical JSON), plus `engram_record` = engram | episode.
 *
 * Invariant: nothing in a file is lost silently: entries that are neither engrams nor episodes,
 * and root keys beside an `engrams:` list, are reported as warnings; an id Cairn cannot use is
 * replaced by the hash id and kept as `engram_id`.
 */
import { InputError, LimitError } from '../../errors.js'
import { isPlainObject } from '../../assert.js'
import { parseJson, type JsonValue } from '../../log/index.js'
import { formatTimestamp } from '../../projection/index.js'
import { assertInput, ImportContext, isUsableId, sha256Hex } from './import-context.js'
import { MetadataBuilder, jsonString } from './metadata.js'
import { decodeSource } from './source-text.js'
import { firstCodePoints, firstLineSummary, pyStrip, utcDate } from './text-values.js'
import { isIsoDate } from './transfer-entries.js'
import type { AdapterInput, AdapterOptions, AdapterResult } from './types.js'
import { readYaml } from './yaml-subset.js'

const LIFECYCLE: Readonly<Record<string, string>> = { active: 'HOT', candidate: 'HOT', dormant: 'COLD', retired: 'ARCHIVED' }

type JsonObject = Record<string, JsonValue>

interface Found {
  readonly value: JsonObject
  readonly path: string
}

/** Engram's own date reader: `YYYY-MM-DD`, or `YYYY-MM-DD[T ]HH:MM:SS[.frac][Z|±HH:MM]`; undefined otherwise. */
export function engramDate(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined
  const text = pyStrip(value)
  const part = (from: number, to: number): number => Number(text.slice(from, to))
  if (text.length === 10 && isIsoDate(text)) {
    const ms = utcDate(part(0, 4), part(5, 7), part(8, 10))
    return ms === undefined ? undefined : formatTimestamp(ms)
  }
  if (text.length < 19 || !isIsoDate(text.slice(0, 10)) || !'T '.includes(text[10] as string) || text[13] !== ':' || text[16] !== ':') return undefined
  if (![11, 12, 14, 15, 17, 18].every((i) => /[0-9]/.test(text[i] as string))) return undefined
  const base = utcDate(part(0, 4), part(5, 7), part(8, 10), part(11, 13), part(14, 16), part(17, 19))
  if (base === undefined) return undefined
  let rest = text.slice(19)
  if (rest.startsWith('.')) rest = rest.replace(/^\.[0-9]*/, '')
  let ms: number | undefined
  if (rest === '' || rest === 'Z' || rest === 'z') ms = base
  else if (/^[+-][0-9]{2}:[0-9]{2}$/.test(rest)) {
    const minutes = Number(rest.slice(1, 3)) * 60 + Number(rest.slice(4, 6))
    ms = base - (rest[0] === '+' ? 1 : -1) * minutes * 60_000
  }
  if (ms === undefined) return undefined
  try {
    return formatTimestamp(ms)
  } catch {
    return undefined
  }
}

/** An integral number as a safe integer (the reference's `_int`), else undefined. */
function integral(value: JsonValue | undefined): number | undefined {
  if (typeof value === 'bigint') return undefined
  return typeof value === 'number' && Number.isSafeInteger(value) ? value : undefined
}

/** A number clamped to [0, 1] (the reference's `_unit`), else the default. */
function unit(value: JsonValue | undefined, fallback: number): number {
  if (typeof value !== 'number' && typeof value !== 'bigint') return fallback
  return Math.min(Math.max(Number(value), 0), 1)
}

const objectAt = (value: JsonValue | undefined): JsonObject => (isPlainObject(value) ? (value as JsonObject) : {})
const textAt = (value: JsonValue | undefined): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined)

/** Lists nested deeper than this are refused (canonical JSON's limit). */
const MAX_LIST_DEPTH = 256

/** Engrams and PLUR episodes anywhere in the document, with their JSON paths. */
function collect(node: JsonValue, path: string, engrams: Found[], episodes: Found[], context: ImportContext, file: string, depth = 0): void {
  if (depth > MAX_LIST_DEPTH) throw new LimitError('TOO_DEEP', `lists nested deeper than ${MAX_LIST_DEPTH}`, { file, path: path.slice(0, 64) })
  if (Array.isArray(node)) {
    node.forEach((item, index) => {
      if (Array.isArray(item) || isPlainObject(item)) collect(item, `${path}[${index}]`, engrams, episodes, context, file, depth + 1)
      else context.skip('NOT_AN_ENGRAM', `a ${item === null ? 'null' : typeof item} entry is neither an engram nor an episode; skipped`, { file, path: `${path}[${index}]` })
    })
    return
  }
  if (!isPlainObject(node)) return
  const object = node as JsonObject
  if (Array.isArray(object.engrams) || Array.isArray(object.episodes)) {
    for (const key of ['engrams', 'episodes'] as const) {
      const list = object[key]
      if (!Array.isArray(list)) continue
      list.forEach((item, index) => {
        const at = `${path}.${key}[${index}]`
        if (isPlainObject(item)) (key === 'engrams' ? engrams : episodes).push({ value: item as JsonObject, path: at })
        else context.skip('NOT_AN_ENGRAM', 'an entry that is not a mapping; skipped', { file, path: at })
      })
    }
    const others = Object.keys(object).filter((key) => key !== 'engrams' && key !== 'episodes')
    if (others.length > 0) context.warn('ROOT_KEYS_NOT_IMPORTED', `root keys beside the list are not imported: ${others.join(', ')}`, { file, path })
    return
  }
  if ('statement' in object) engrams.push({ value: object, path })
  else if ('summary' in object && ('timestamp' in object || 'agent' in object || 'session_id' in object)) episodes.push({ value: object, path })
  else context.skip('NOT_AN_ENGRAM', 'a mapping with neither `statement` nor an episode `summary`; skipped', { file, path })
}

function metadataOf(object: JsonObject, record: 'engram' | 'episode', skipped: readonly string[]): MetadataBuilder {
  const metadata = new MetadataBuilder()
  metadata.set('engram_record', record)
  for (const [key, value] of Object.entries(object)) if (!skipped.includes(key)) metadata.set(`engram_${key}`, jsonString(value))
  return metadata
}

/** The id to use, or undefined for the hash fallback (keeping an unusable id in `engram_id`). */
function ownId(object: JsonObject, metadata: MetadataBuilder, context: ImportContext, where: { file: string; path: string }): string | undefined {
  const id = object.id
  if (typeof id === 'string' && id !== '' && isUsableId('episode', id)) return id
  if (id !== undefined && id !== null && id !== '') {
    metadata.set('engram_id', jsonString(id))
    context.warn('UNUSABLE_ID', 'the id cannot be a Cairn id; the hash id is used and the original kept as engram_id', where)
  }
  return undefined
}

function addEngram(context: ImportContext, found: Found, file: string): void {
  const engram = found.value
  const where = { file, path: found.path }
  const raw = engram.statement
  const statement = typeof raw === 'string' ? raw : raw === null || raw === undefined ? '' : jsonString(raw)
  const metadata = metadataOf(engram, 'engram', ['id', 'statement'])
  const id = ownId(engram, metadata, context, where) ?? (pyStrip(statement) === '' ? undefined : `eng_${sha256Hex(statement).slice(0, 24)}`)
  if (id === undefined) {
    context.skip('EMPTY_ENGRAM', 'an engram with neither an id nor a statement; skipped', where)
    return
  }
  const temporal = objectAt(engram.temporal)
  const activation = objectAt(engram.activation)
  const confidence = integral(objectAt(engram.episodic).confidence)
  const eventTime = engramDate(temporal.learned_at) ?? engramDate(engram.created_at) ?? context.now
  const tags = engram.tags
  const scope = textAt(engram.scope)
  const lastAccessed = engramDate(activation.last_accessed)
  const expirationDate = engramDate(temporal.valid_until)
  context.add('episode', {
    id, eventTime, mentionTime: engramDate(engram.updated_at) ?? eventTime, ingestionTime: context.now, sourceType: 'note', actors: [],
    summary: firstCodePoints(textAt(engram.summary) ?? firstLineSummary(statement)), details: statement,
    metadata: metadata.toObject(), categories: Array.isArray(tags) ? tags.filter((tag) => typeof tag === 'string') : [],
    importance: unit(activation.retrieval_strength, 0.5),
    confidence: confidence !== undefined && confidence >= 1 && confidence <= 10 ? confidence / 10 : 0.7,
    lifecycleState: LIFECYCLE[typeof engram.status === 'string' ? engram.status : ''] ?? 'HOT',
    accessCount: Math.max(integral(activation.frequency) ?? 0, 0), pinned: engram.pinned === true,
    ...(scope === undefined ? {} : { contextID: scope }),
    ...(lastAccessed === undefined ? {} : { lastAccessed }),
    ...(expirationDate === undefined ? {} : { expirationDate }),
  }, where)
}

function addPlurEpisode(context: ImportContext, found: Found, file: string): void {
  const episode = found.value
  const where = { file, path: found.path }
  const summary = episode.summary
  if (typeof summary !== 'string' || pyStrip(summary) === '') {
    context.skip('EMPTY_EPISODE', 'an episode without a summary; skipped', where)
    return
  }
  const timestamp = typeof episode.timestamp === 'string' ? episode.timestamp : ''
  const metadata = metadataOf(episode, 'episode', ['id', 'summary'])
  const id = ownId(episode, metadata, context, where) ?? `epx_${sha256Hex(`${timestamp}\n${summary}`).slice(0, 24)}`
  const when = engramDate(timestamp) ?? context.now
  const agent = textAt(episode.agent)
  const session = textAt(episode.session_id)
  context.add('episode', {
    id, eventTime: when, mentionTime: when, ingestionTime: context.now, sourceType: 'event', actors: [],
    summary: firstLineSummary(summary), details: summary, metadata: metadata.toObject(), categories: [],
    ...(session === undefined ? {} : { contextID: session }),
    ...(agent === undefined ? {} : { speaker: agent }),
  }, where)
}

/** A YAML or JSON text (JSON first when it looks like JSON, as the reference does). */
function loadText(text: string, file: string): JsonValue {
  const head = text.replace(/^[ \t\r\n]+/, '')
  if (head.startsWith('[') || head.startsWith('{')) {
    try {
      return parseJson(text)
    } catch {
      // Not JSON after all: YAML flow syntax reads it, or names the line.
    }
  }
  return readYaml(text, file)
}

/**
 * Maps engram and PLUR episode files (or parsed data) to episodes: engrams first, then
 * episodes, per file, in document order.
 * @throws InputError BAD_YAML, BAD_UTF8, WRONG_TYPE; LimitError TOO_DEEP, LINE_TOO_LONG, FILE_TOO_LARGE
 */
export function parseEngram(input: AdapterInput, options?: AdapterOptions): AdapterResult {
  assertInput(input)
  const context = new ImportContext('engram', 'engram_', options)
  const documents: { root: JsonValue; file: string }[] = 'files' in input
    ? input.files.map((file) => ({ root: loadText(decodeSource(file), file.path), file: file.path }))
    : [{ root: input.json as JsonValue, file: input.path ?? '<data>' }]
  for (const { root, file } of documents) {
    if (root === null) continue
    if (!Array.isArray(root) && !isPlainObject(root)) {
      throw new InputError('WRONG_TYPE', 'expected engrams (a list or a mapping), got a scalar', { file, path: '$' })
    }
    const engrams: Found[] = []
    const episodes: Found[] = []
    collect(root, '$', engrams, episodes, context, file)
    for (const found of engrams) addEngram(context, found, file)
    for (const found of episodes) addPlurEpisode(context, found, file)
  }
  return context.result()
}

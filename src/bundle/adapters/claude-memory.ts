/**
 * Claude memory files adapter (spec §10 "Claude"): a directory of Markdown memory files
 * (`MEMORY.md` and `CLAUDE.md` indexes, topic files with `---` frontmatter) → note episodes,
 * one per file.
 *
 * Mapping (the PM reference's): flat frontmatter (`key: value`, one nesting level as
 * `parent.child`); id = frontmatter `name`, else the file stem; summary = `description`, else
 * the first non-empty line, else the name (120 code points); details = the body, trimmed;
 * categories = [type] (`metadata.type`, else `type`); metadata `claude_{path,name,type,
 * description}` and `claude_role` = index for MEMORY.md and CLAUDE.md; sourceID = the path.
 *
 * Beyond the reference: quoted values lose their YAML quotes (the reference keeps them); so
 * nothing is lost, every other frontmatter key goes to `claude_<key>`, and the raw frontmatter as `claude_frontmatter` whenever the flat reader could not hold all of it
 * (lists, comments, keys without values, repeats); an id Cairn cannot use (`fact_…`, control
 * characters) becomes `ep_` + H("claude", path) with a warning.
 */
import { describeType } from '../../assert.js'
import { InputError } from '../../errors.js'
import { assertInput, hashId, ImportContext, isUsableId } from './import-context.js'
import { isObject } from './json-fields.js'
import { MetadataBuilder } from './metadata.js'
import { baseName, decodeSource, splitLines } from './source-text.js'
import { firstCodePoints, pyStrip, pyStripStart } from './text-values.js'
import type { AdapterInput, AdapterOptions, AdapterResult, SourceFile } from './types.js'

const INDEX_FILES = new Set(['MEMORY.md', 'CLAUDE.md'])
/** Python `str.splitlines` separators. */
const LINE_BREAK = /\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/

interface Frontmatter {
  readonly fields: Map<string, string>
  readonly raw: string | undefined
  /** True when some of the frontmatter did not fit the flat reader. */
  readonly isLossy: boolean
  readonly body: string
}

function pySplitLines(text: string): string[] {
  const lines = text.split(LINE_BREAK)
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop()
  return lines
}

/**
 * A frontmatter value without its YAML quotes: `"…"` read with JSON escapes, `'…'` with `''` for a
 * quote. (The reference keeps the quotes; they are syntax, not part of the value.)
 */
function unquote(value: string): string {
  if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) {
    try {
      const parsed = JSON.parse(value) as unknown
      if (typeof parsed === 'string') return parsed
    } catch {
      // Not JSON-escaped: keep the text as written.
    }
    return value
  }
  if (value.length >= 2 && value.startsWith("'") && value.endsWith("'")) return value.slice(1, -1).replaceAll("''", "'")
  return value
}

/** Splits a leading `---` frontmatter block off `content` and reads it flat. */
export function splitFrontmatter(content: string): Frontmatter {
  const lines = pySplitLines(content)
  const none: Frontmatter = { fields: new Map(), raw: undefined, isLossy: false, body: content }
  if (lines.length === 0 || pyStrip(lines[0] as string) !== '---') return none
  const end = lines.findIndex((line, index) => index > 0 && pyStrip(line) === '---')
  if (end === -1) return none
  const fields = new Map<string, string>()
  let parent: string | undefined
  let parentHasChild = true
  let isLossy = false
  for (const raw of lines.slice(1, end)) {
    if (pyStrip(raw) === '') continue
    if (pyStripStart(raw).startsWith('#')) {
      isLossy = true
      continue
    }
    const isIndented = raw[0] === ' ' || raw[0] === '\t'
    const stripped = pyStrip(raw)
    const colon = stripped.indexOf(':')
    if (colon === -1) {
      isLossy = true
      continue
    }
    const key = pyStrip(stripped.slice(0, colon))
    const rawValue = pyStrip(stripped.slice(colon + 1))
    const value = unquote(rawValue)
    let name: string
    if (isIndented && parent !== undefined) {
      name = `${parent}.${key}`
      parentHasChild = true
    } else if (rawValue === '') {
      if (!parentHasChild) isLossy = true
      parent = key
      parentHasChild = false
      continue
    } else {
      if (!parentHasChild) isLossy = true
      name = key
      parent = undefined
      parentHasChild = true
    }
    if (fields.has(name)) isLossy = true
    fields.set(name, value)
  }
  if (!parentHasChild) isLossy = true
  return { fields, raw: lines.slice(1, end).join('\n'), isLossy, body: lines.slice(end + 1).join('\n') }
}

/** The files of the input: given files, or [{path, content}] / [path, content] pairs / {path: content}. */
function memoryFiles(input: AdapterInput): SourceFile[] {
  if ('files' in input) return [...input.files]
  const file = input.path ?? '<data>'
  const value = input.json
  if (isObject(value)) {
    return Object.entries(value).map(([path, content]) => {
      if (typeof content !== 'string') throw new InputError('WRONG_TYPE', `expected file content as a string, got ${describeType(content)}`, { file, path: `$[${JSON.stringify(path)}]` })
      return { path, content }
    })
  }
  if (!Array.isArray(value)) throw new InputError('WRONG_TYPE', 'expected files: [{path, content}], [path, content] pairs or {path: content}', { file, path: '$' })
  return Array.from(value as unknown[], (item: unknown, index) => {
    const where = { file, path: `$[${index}]` }
    if (Array.isArray(item) && item.length === 2 && typeof item[1] === 'string') return { path: typeof item[0] === 'string' ? item[0] : '', content: item[1] }
    if (isObject(item)) {
      const path = [item.path, item.name].find((candidate) => typeof candidate === 'string')
      const content = [item.content, item.text, item.body].find((candidate) => typeof candidate === 'string')
      if (typeof content === 'string') return { path: typeof path === 'string' ? path : '', content }
    }
    throw new InputError('WRONG_TYPE', 'expected {path, content} or [path, content]', where)
  })
}

function addFile(context: ImportContext, file: SourceFile): void {
  const where = { file: file.path }
  const content = decodeSource(file)
  splitLines(content, file.path) // refuses a line over MAX_LINE_BYTES, naming it
  const frontmatter = splitFrontmatter(content)
  const text = pyStrip(frontmatter.body || content)
  if (text === '') {
    context.skip('EMPTY_FILE', 'a memory file without text; skipped', where)
    return
  }
  const base = file.path === '' ? '' : baseName(file.path)
  const stem = base.endsWith('.md') ? base.slice(0, -3) : base
  const fields = frontmatter.fields
  const name = fields.get('name') || stem || undefined
  const description = fields.get('description')
  const typeKey = fields.get('metadata.type') ? 'metadata.type' : 'type'
  const type = fields.get(typeKey) || undefined
  const firstLine = pySplitLines(text).map(pyStrip).find((line) => line !== '') ?? ''

  const metadata = new MetadataBuilder()
  metadata.put('claude_path', file.path)
  metadata.put('claude_name', name)
  metadata.put('claude_type', type)
  metadata.put('claude_description', description)
  if (INDEX_FILES.has(base)) metadata.set('claude_role', 'index')
  let isLossy = frontmatter.isLossy
  for (const [key, value] of fields) {
    if (key === 'name' || key === 'description' || key === typeKey) continue
    if (!metadata.set(`claude_${key}`, value) && metadata.get(`claude_${key}`) !== value) isLossy = true
  }
  if (isLossy && frontmatter.raw !== undefined) metadata.set('claude_frontmatter', frontmatter.raw)

  let id = name ?? context.randomEpisodeId()
  if (!isUsableId('episode', id)) {
    id = hashId('ep_', 'claude', file.path || id)
    context.warn('UNUSABLE_ID', `the name cannot be a Cairn id; ${id} is used (the name is in claude_name)`, where)
  }
  context.add('episode', {
    id, sourceType: 'note', summary: firstCodePoints(description || firstLine || name || ''), details: text,
    metadata: metadata.toObject(), categories: type === undefined ? [] : [type],
    ...(file.path === '' ? {} : { sourceID: file.path }),
  }, where)
}

/**
 * Maps Claude memory files to note episodes.
 * @throws InputError WRONG_TYPE, BAD_UTF8; LimitError FILE_TOO_LARGE
 */
export function parseClaudeMemory(input: AdapterInput, options?: AdapterOptions): AdapterResult {
  assertInput(input)
  const context = new ImportContext('claude-memory', 'claude_', options)
  for (const file of memoryFiles(input)) addFile(context, file)
  return context.result()
}

/**
 * The projects of a Claude data export (`projects.json`): a project's description, its custom
 * instructions and its knowledge documents. Part of the claude-export adapter
 * (claude-export.ts); follows its conventions (ids from H("claude", …), contextID = the
 * project uuid, unknown keys as `claude_<key>` metadata).
 *
 * Mapping:
 * - project → import episode `ep_` + H("claude", "project", uuid): description (else name) →
 *   details; category `claude_project`; created_at/updated_at → event/mention time; every other
 *   key but `docs` and `prompt_template` as `claude_<key>` metadata.
 * - prompt_template (the project's instructions) → episode `ep_` + H("claude",
 *   "project-instructions", uuid), category `project_instructions`, sourceID = the project's.
 * - docs[] → a `resource` `res_` + H("claude", "project-doc", doc uuid) (title = filename,
 *   mimeType from the extension, contentHash = SHA-256 of the content, uri
 *   `claude-project:<project uuid>/<doc uuid>`) and its content as `chunk`s of at most
 *   CHUNK_CODE_POINTS, cut at a paragraph, line or word boundary when there is one; both carry
 *   contextID = the project uuid. A resource has no metadata, so everything of a document but
 *   its content (its times as written, keys with no field) stays on the project episode as
 *   `claude_docs`, the canonical JSON of the list.
 */
import { InputError } from '../../errors.js'
import { canonicalJson } from '../../log/index.js'
import { hashId, sha256Hex, type ImportContext } from './import-context.js'
import { objectItems, type FieldReader } from './json-fields.js'
import { MetadataBuilder, metadataString } from './metadata.js'
import { firstCodePoints, looseTimestamp, pyStrip } from './text-values.js'

/** A chunk's text is at most this many code points (an event body holds at most 1 MiB). */
export const CHUNK_CODE_POINTS = 8000

const PROJECT_CONTENT_KEYS = new Set(['docs', 'prompt_template'])

const MIME_TYPES: Readonly<Record<string, string>> = {
  md: 'text/markdown', markdown: 'text/markdown', txt: 'text/plain', json: 'application/json', csv: 'text/csv',
  html: 'text/html', htm: 'text/html', xml: 'application/xml', yaml: 'application/yaml', yml: 'application/yaml',
}

function mimeTypeOf(filename: string): string {
  const extension = /\.([A-Za-z0-9]+)$/.exec(filename)?.[1]?.toLowerCase()
  return (extension !== undefined ? MIME_TYPES[extension] : undefined) ?? 'text/plain'
}

/** Splits text into pieces of at most `limit` code points, preferring to cut after a blank line, a line, then a space. */
export function chunkText(text: string, limit = CHUNK_CODE_POINTS): string[] {
  const points = Array.from(text)
  const pieces: string[] = []
  let start = 0
  while (start < points.length) {
    let end = Math.min(points.length, start + limit)
    if (end < points.length) {
      const window = points.slice(start, end).join('')
      // Cut just after the last separator of the strongest kind (a code-unit index in the window,
      // counted back to code points).
      for (const separator of ['\n\n', '\n', ' ']) {
        const at = window.lastIndexOf(separator)
        if (at <= 0) continue
        end = start + Array.from(window.slice(0, at + separator.length)).length
        break
      }
    }
    pieces.push(points.slice(start, end).join(''))
    start = end
  }
  return pieces
}

function timeOf(context: ImportContext, reader: FieldReader, key: string): string | undefined {
  const raw = reader.string(key)
  if (raw === undefined || raw === '') return undefined
  const value = looseTimestamp(raw)
  if (value === undefined) context.warn('BAD_TIME', `${JSON.stringify(raw.slice(0, 64))} is not a timestamp; kept in claude_${key}`, reader.where(key))
  return value
}

function addDocument(context: ImportContext, doc: FieldReader, index: number, project: { uuid: string; created?: string }): void {
  const docUuid = doc.string('uuid')
  const filename = doc.string('filename') ?? `document ${index + 1}`
  const content = doc.string('content') ?? ''
  const created = timeOf(context, doc, 'created_at') ?? project.created ?? context.now
  const resourceId = hashId('res_', 'claude', 'project-doc', docUuid ?? `${project.uuid}#${index}`)
  context.add('resource', {
    id: resourceId, uri: `claude-project:${project.uuid}/${docUuid ?? index}`, mimeType: mimeTypeOf(filename),
    contentHash: sha256Hex(content), title: filename, summary: firstCodePoints(pyStrip(content)), created, modified: created,
    contextID: project.uuid,
  }, doc.where())
  chunkText(content).forEach((text, position) => {
    context.add('chunk', { id: hashId('chk_', 'claude', 'project-doc', resourceId, String(position)), resourceID: resourceId, position, text, contextID: project.uuid }, doc.where('content'))
  })
}

/** One project of projects.json. @throws InputError MISSING_FIELD, WRONG_TYPE */
export function addProject(context: ImportContext, project: FieldReader): void {
  const uuid = project.string('uuid')
  if (uuid === undefined || uuid === '') throw new InputError('MISSING_FIELD', 'a project needs a uuid', project.where('uuid'))
  const name = project.string('name') ?? ''
  const description = project.string('description') ?? ''
  const created = timeOf(context, project, 'created_at')
  const updated = timeOf(context, project, 'updated_at')
  const docs = objectItems(project.array('docs') ?? [], project.file, `${project.path}.docs`)
  const metadata = new MetadataBuilder()
  for (const [key, value] of Object.entries(project.object)) if (!PROJECT_CONTENT_KEYS.has(key)) metadata.set(`claude_${key}`, metadataString(value))
  if (docs.length > 0) metadata.set('claude_docs', canonicalJson(docs.map(({ object: { content: _content, ...rest } }) => rest)))
  const importId = hashId('ep_', 'claude', 'project', uuid)
  const details = pyStrip(description) !== '' ? description : name || 'Claude project'
  const times = created === undefined ? {} : { eventTime: created, mentionTime: updated ?? created }
  context.add('episode', {
    id: importId, sourceType: 'event', summary: firstCodePoints(name || details), details, metadata: metadata.toObject(),
    contextID: uuid, categories: ['claude_project'], ...times,
  }, project.where())
  const instructions = project.string('prompt_template') ?? ''
  if (pyStrip(instructions) !== '') {
    const about = new MetadataBuilder()
    about.set('claude_project_uuid', uuid)
    about.put('claude_project_name', name || undefined)
    context.add('episode', {
      id: hashId('ep_', 'claude', 'project-instructions', uuid), sourceType: 'note', summary: firstCodePoints(instructions), details: instructions,
      metadata: about.toObject(), contextID: uuid, categories: ['project_instructions'], sourceID: importId, ...times,
    }, project.where('prompt_template'))
  }
  docs.forEach((doc, index) => addDocument(context, doc, index, { uuid, ...(created === undefined ? {} : { created }) }))
}

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
 * - docs[] → a `resource` `res_` + H("claude", "project-doc", project uuid, "uuid", doc uuid)
 *   (or "index", its position, for a document without a uuid) (title = filename,
 *   mimeType from the extension, contentHash = SHA-256 of the content, uri
 *   `claude-project:<project uuid>/<doc uuid>`) and its content as `chunk`s of at most
 *   CHUNK_CODE_POINTS, cut at a paragraph, line or word boundary when there is one; both carry
 *   contextID = the project uuid. Chunk ids are the resource and the position, so a re-imported
 *   document rewrites its chunks in place; each document is declared whole (`wholeDocument`),
 *   and the import empties the chunks it made earlier that the document no longer has
 *   (source-import.ts). A resource has no metadata, so everything of a document but
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

/**
 * Splits text into pieces of at most `limit` code points, cutting just after the last blank
 * line, else line break, else space of each piece when it has one. Walks the string by code
 * points without copying it, so a document of any size the import reads can be cut.
 */
export function chunkText(text: string, limit = CHUNK_CODE_POINTS): string[] {
  const pieces: string[] = []
  let start = 0
  while (start < text.length) {
    let end = start
    for (let count = 0; end < text.length && count < limit; count++) end += (text.codePointAt(end) as number) > 0xffff ? 2 : 1
    if (end < text.length) {
      for (const separator of ['\n\n', '\n', ' ']) {
        const at = text.lastIndexOf(separator, end - separator.length)
        if (at > start) {
          end = at + separator.length
          break
        }
      }
    }
    pieces.push(text.slice(start, end))
    start = end
  }
  return pieces
}

/** A time of the source, normalized; one that is not a time is warned about (`keptIn`: where it is kept as written). */
function timeOf(context: ImportContext, reader: FieldReader, key: string, keptIn = `claude_${key}`): string | undefined {
  const raw = reader.string(key)
  if (raw === undefined || raw === '') return undefined
  const value = looseTimestamp(raw)
  if (value === undefined) context.warn('BAD_TIME', `${JSON.stringify(raw.slice(0, 64))} is not a timestamp; kept in ${keptIn}`, reader.where(key))
  return value
}

function addDocument(context: ImportContext, doc: FieldReader, index: number, project: { uuid: string; created?: string }): void {
  const docUuid = doc.string('uuid')
  const filename = doc.string('filename') ?? `document ${index + 1}`
  const content = doc.string('content') ?? ''
  const own = timeOf(context, doc, 'created_at', 'claude_docs')
  const created = own ?? project.created ?? context.now
  // In its project's namespace (two projects may hold copies of a document), by uuid or by position.
  const resourceId = hashId('res_', 'claude', 'project-doc', project.uuid, ...(docUuid !== undefined ? ['uuid', docUuid] : ['index', String(index)]))
  // Its project's creation says nothing of when the document last changed: not its source time.
  if (own === undefined) context.undated(resourceId)
  context.add('resource', {
    id: resourceId, uri: `claude-project:${project.uuid}/${docUuid ?? index}`, mimeType: mimeTypeOf(filename),
    contentHash: sha256Hex(content), title: filename, summary: firstCodePoints(pyStrip(content)), created, modified: created,
    contextID: project.uuid,
  }, doc.where())
  const chunkIdParts = ['claude', 'project-doc', resourceId]
  chunkText(content).forEach((text, position) => {
    context.add('chunk', { id: hashId('chk_', ...chunkIdParts, String(position)), resourceID: resourceId, position, text, contextID: project.uuid }, doc.where('content'))
  })
  context.wholeDocument({ resource: resourceId, chunkIdParts })
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
  const instructions = project.string('prompt_template') ?? ''
  const hasInstructions = pyStrip(instructions) !== ''
  const metadata = new MetadataBuilder()
  for (const [key, value] of Object.entries(project.object)) if (!PROJECT_CONTENT_KEYS.has(key)) metadata.set(`claude_${key}`, metadataString(value))
  if (docs.length > 0) metadata.set('claude_docs', canonicalJson(docs.map(({ object: { content: _content, ...rest } }) => rest)))
  // Instructions that are only whitespace make no note, but are kept as written.
  if (!hasInstructions && instructions !== '') metadata.set('claude_prompt_template', instructions)
  const importId = hashId('ep_', 'claude', 'project', uuid)
  const details = pyStrip(description) !== '' ? description : name || 'Claude project'
  const times = created === undefined ? {} : { eventTime: created, mentionTime: updated ?? created }
  context.add('episode', {
    id: importId, sourceType: 'event', summary: firstCodePoints(name || details), details, metadata: metadata.toObject(),
    contextID: uuid, categories: ['claude_project'], ...times,
  }, project.where())
  if (hasInstructions) {
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

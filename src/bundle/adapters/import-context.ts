/**
 * The working state of one adapter run: the injected clock and randomness, the records built so
 * far (each through `validateCreate`), and the warnings.
 *
 * Invariants:
 * - every record in a result passed `validateCreate`, so it is a complete PM record;
 * - ids are unique within a result: an exact repeat is folded into the first record, a
 *   different episode under a taken id is kept under a derived id (with a warning and the
 *   original id in metadata), and one id on two kinds is an error (memory-model §1.3);
 * - an error raised while building a record names the source location, not just the field.
 */
import { randomBytes } from 'node:crypto'
import { CairnError, InputError, relocate, type ErrorLocation } from '../../errors.js'
import { canonicalJson, defaultCrypto, type JsonValue } from '../../log/index.js'
import { formatTimestamp, hashParts, newRecordId, readRecordId, validateCreate, type RecordKind } from '../../projection/index.js'
import type { AdapterInput, AdapterOptions, AdapterResult, AdapterWarning, ImportedRecord, SourceName, WholeDocument } from './types.js'


/** Lowercase hex SHA-256 of the UTF-8 text. */
export function sha256Hex(text: string): string {
  return defaultCrypto().sha256Hex(text)
}

/** memory-model H: `prefix` + the first 24 hex of SHA-256 over the canonical JSON array of `parts`. */
export function hashId(prefix: string, ...parts: string[]): string {
  return prefix + hashParts(...parts)
}

/** True when `id` is accepted as an id of `kind` (length, no control characters, no other kind's prefix). */
export function isUsableId(kind: RecordKind, id: unknown): id is string {
  try {
    readRecordId(kind, id)
    return true
  } catch {
    return false
  }
}

/**
 * Checks the shape of an adapter's input at the edge: `{files: [{path, content}]}` or `{json}`.
 * @throws InputError WRONG_TYPE naming the offending member
 */
export function assertInput(input: unknown): asserts input is AdapterInput {
  if (typeof input !== 'object' || input === null) throw new InputError('WRONG_TYPE', 'the input must be {files} or {json}', { field: 'input' })
  if (!('files' in input)) {
    if (!('json' in input)) throw new InputError('WRONG_TYPE', 'the input must be {files} or {json}', { field: 'input' })
    const { path } = input as { path?: unknown }
    if (path !== undefined && typeof path !== 'string') throw new InputError('WRONG_TYPE', 'path must be a string', { field: 'input.path' })
    return
  }
  const { files } = input as { files: unknown }
  if (!Array.isArray(files)) throw new InputError('WRONG_TYPE', 'files must be an array', { field: 'input.files' })
  files.forEach((file: unknown, index) => {
    const { path, content } = (typeof file === 'object' && file !== null ? file : {}) as { path?: unknown; content?: unknown }
    if (typeof path !== 'string') throw new InputError('WRONG_TYPE', 'a file needs a string path', { field: `input.files[${index}].path` })
    if (typeof content !== 'string' && !(content instanceof Uint8Array)) {
      throw new InputError('WRONG_TYPE', 'file content must be a string or bytes', { field: `input.files[${index}].content`, file: path })
    }
  })
}

function defaultRandomHex(bytes: number): string {
  return randomBytes(bytes).toString('hex')
}

export class ImportContext {
  readonly nowMs: number
  /** `nowMs` as a whole-second RFC 3339 UTC timestamp. */
  readonly now: string
  /** The `source` option (transfer text: which assistant wrote it). */
  readonly label: string | undefined
  private readonly randomHex: (bytes: number) => string
  private readonly records: ImportedRecord[] = []
  private readonly byId = new Map<string, ImportedRecord>()
  private readonly warnings: AdapterWarning[] = []
  /** Entries left out (each also a warning): see AdapterResult.skipped. */
  private skippedCount = 0
  /** See AdapterResult.importTimes. */
  private readonly importTimes = new Set<string>()
  /** See AdapterResult.undated. */
  private readonly undatedIds = new Set<string>()
  /** Documents read whole, by resource id. */
  private readonly documents = new Map<string, WholeDocument>()

  /** @throws InputError WRONG_TYPE, BAD_TIMESTAMP for bad options */
  constructor(readonly source: SourceName, readonly prefix: string, options: AdapterOptions = {}) {
    if (typeof options !== 'object' || options === null) throw new InputError('WRONG_TYPE', 'options must be an object', { field: 'options' })
    this.nowMs = options.nowMs ?? Date.now()
    this.now = formatTimestamp(this.nowMs, 'options.nowMs')
    if (options.randomHex !== undefined && typeof options.randomHex !== 'function') {
      throw new InputError('WRONG_TYPE', 'randomHex must be a function', { field: 'options.randomHex' })
    }
    this.randomHex = options.randomHex ?? defaultRandomHex
    if (options.source !== undefined && typeof options.source !== 'string') {
      throw new InputError('WRONG_TYPE', 'source must be a string', { field: 'options.source' })
    }
    this.label = options.source
  }

  warn(code: string, message: string, where: ErrorLocation): void {
    this.warnings.push({ code, message, where })
  }

  /**
   * A timestamp `offsetMs` after the time of the import (an expiry counted from receipt): kept
   * once written, so a later import of the same source does not move it (AdapterResult.importTimes).
   */
  timeFromImport(offsetMs: number): string {
    const time = formatTimestamp(this.nowMs + offsetMs)
    this.importTimes.add(time)
    return time
  }

  /**
   * Marks the record `id` as given no time of its own by the source (its times were taken from
   * another entry): the import does not date it by them (AdapterResult.undated).
   */
  undated(id: string): void {
    this.undatedIds.add(id)
  }

  /** Warns that an entry of the source (a memory, a message, a file) was left out. */
  skip(code: string, message: string, where: ErrorLocation): void {
    this.skippedCount++
    this.warn(code, message, where)
  }

  /** The spec §10 fallback id: `ep_` + 16 random hex from the injected source. */
  randomEpisodeId(): string {
    return newRecordId('episode', this.randomHex)
  }

  /** The record with `id` built so far, if any. */
  get(id: string): ImportedRecord | undefined {
    return this.byId.get(id)
  }

  /**
   * Validates and keeps one record. Returns the record kept under the input's id (or the
   * derived id of a differing duplicate episode).
   * @throws the validateCreate errors, relocated to `where`; InputError ID_CLASH
   */
  add(kind: RecordKind, input: Record<string, unknown>, where: ErrorLocation): ImportedRecord {
    let validated
    try {
      validated = validateCreate(kind, input, { nowMs: this.nowMs, randomHex: this.randomHex })
    } catch (error) {
      if (!(error instanceof CairnError)) throw error
      const field = error.where.field ?? error.where.path
      throw relocate(error, field === undefined ? where : { ...where, field })
    }
    const record: ImportedRecord = { kind, id: validated.id, fields: validated.fields }
    const existing = this.byId.get(record.id)
    if (existing === undefined) return this.keep(record)
    if (existing.kind !== kind) {
      throw new InputError('ID_CLASH', `id ${record.id} would name both a ${existing.kind} and a ${kind}`, where)
    }
    if (canonicalJson(existing.fields) === canonicalJson(record.fields)) return existing
    if (kind !== 'episode') {
      this.warn('DUPLICATE_ID', `a second, different ${kind} ${record.id}: the first is kept`, where)
      return existing
    }
    const { id: _id, ...rest } = record.fields
    const derivedId = hashId('ep_', this.source, 'duplicate', record.id, canonicalJson(rest))
    const metadata = { ...(rest.metadata as Record<string, JsonValue>) }
    const originalKey = `${this.prefix}duplicate_of`
    if (!Object.hasOwn(metadata, originalKey)) metadata[originalKey] = record.id
    this.warn('DUPLICATE_ID', `a second, different episode with id ${record.id} is kept as ${derivedId}`, where)
    return this.add('episode', { ...input, id: derivedId, metadata }, where)
  }

  private keep(record: ImportedRecord): ImportedRecord {
    this.byId.set(record.id, record)
    this.records.push(record)
    return record
  }

  /** Records a document read whole (see WholeDocument); a resource met again keeps its first. */
  wholeDocument(document: WholeDocument): void {
    if (!this.documents.has(document.resource)) this.documents.set(document.resource, document)
  }

  result(): AdapterResult {
    return {
      source: this.source, records: [...this.records], warnings: [...this.warnings],
      ...(this.skippedCount > 0 ? { skipped: this.skippedCount } : {}),
      ...(this.importTimes.size > 0 ? { importTimes: [...this.importTimes] } : {}),
      ...(this.undatedIds.size > 0 ? { undated: [...this.undatedIds] } : {}),
      ...(this.documents.size > 0 ? { documents: [...this.documents.values()] } : {}),
    }
  }
}

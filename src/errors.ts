/**
 * Every error Cairn throws. One base class with a stable `code` and a `where` that names the
 * offender (an event id, a file and line, a frame, a JSON path, a flag), and one subclass per
 * family so callers can branch on `instanceof` or on `code`.
 *
 * Message shape: `CODE: what is wrong (where)`, e.g.
 * `BAD_SIGNATURE: signature does not verify (event 9c1e…)`.
 */

/** Names the thing an error is about. All members optional; the first present is shown. */
export interface ErrorLocation {
  readonly event?: string
  readonly author?: string
  readonly seq?: number
  readonly space?: string
  readonly file?: string
  readonly line?: number
  readonly path?: string
  readonly field?: string
  readonly flag?: string
  readonly frame?: string
  readonly key?: string
}

function describeLocation(where: ErrorLocation): string {
  const parts: string[] = []
  if (where.event !== undefined) parts.push(`event ${where.event}`)
  if (where.author !== undefined) parts.push(`author ${where.author}`)
  if (where.seq !== undefined) parts.push(`seq ${where.seq}`)
  if (where.space !== undefined && where.event === undefined) parts.push(`space ${where.space}`)
  if (where.file !== undefined) parts.push(where.line !== undefined ? `${where.file}:${where.line}` : where.file)
  else if (where.line !== undefined) parts.push(`line ${where.line}`)
  if (where.path !== undefined) parts.push(`at ${where.path}`)
  if (where.field !== undefined) parts.push(`field ${where.field}`)
  if (where.flag !== undefined) parts.push(`flag ${where.flag}`)
  if (where.frame !== undefined) parts.push(`frame ${where.frame}`)
  if (where.key !== undefined) parts.push(`key ${where.key}`)
  return parts.join(', ')
}

export class CairnError extends Error {
  readonly code: string
  readonly where: ErrorLocation
  /** What is wrong, without the code and the location (the middle of `message`). */
  readonly reason: string

  constructor(code: string, message: string, where: ErrorLocation = {}, options?: { cause?: unknown }) {
    const location = describeLocation(where)
    super(`${code}: ${message}${location ? ` (${location})` : ''}`, options)
    this.name = new.target.name
    this.code = code
    this.where = where
    this.reason = message
  }
}

/** The same error (code, family, reason) at another location; the original is its cause. */
export function relocate(error: CairnError, where: ErrorLocation, reason = error.reason): CairnError {
  const Family = error.constructor as new (code: string, message: string, where: ErrorLocation, options?: { cause?: unknown }) => CairnError
  return new Family(error.code, reason, where, { cause: error })
}

/** A caller passed something malformed: an argument, a file, a JSON value. */
export class InputError extends CairnError {}
/** Bytes that should be authentic are not: hashes, chains, signatures, bodies. */
export class VerifyError extends CairnError {}
/** A peer broke the wire protocol. */
export class ProtocolError extends CairnError {}
/** The store could not be opened, read or written. */
export class StorageError extends CairnError {}
/** A key, grant or token does not allow what was attempted. */
export class AuthError extends CairnError {}
/** A named limit (size, count, time) was exceeded. */
export class LimitError extends CairnError {}

export function isCairnError(error: unknown): error is CairnError {
  return error instanceof CairnError
}

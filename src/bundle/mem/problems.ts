/**
 * Collects what a bundle validation finds: problems (the bundle is invalid) and warnings (data
 * the codec will not carry), each naming a file and line where it can. Turns a problem into the
 * error `readMemBundle` throws, in the family its code belongs to.
 *
 * Invariant: at most MAX_PROBLEMS problems and MAX_PROBLEMS warnings are kept, so a corrupt
 * stream of a million bad lines costs bounded memory; `truncated` says when some were left out.
 */
import { CairnError, InputError, LimitError, VerifyError } from '../../errors.js'
import { MAX_PROBLEMS } from './layout.js'
import type { MemProblem } from './types.js'

/** Codes of integrity and authenticity failures: the bytes are not what was signed or listed. */
const VERIFY_CODES = new Set([
  'CHECKSUM_MISMATCH', 'SIZE_MISMATCH', 'CHECKSUMS_MISMATCH', 'DIGEST_MISMATCH',
  'SIGNATURE_MISSING', 'BAD_SIGNATURE', 'UNTRUSTED_KEY', 'MISSING_FILE', 'UNLISTED_FILE',
])
/** Codes of exceeded limits. */
const LIMIT_CODES = new Set(['FILE_TOO_LARGE', 'LINE_TOO_LONG', 'TOO_DEEP', 'TOO_MANY_PROBLEMS'])

export class ProblemList {
  readonly problems: MemProblem[] = []
  readonly warnings: MemProblem[] = []
  private droppedProblems = 0

  add(code: string, message: string, file?: string, line?: number): void {
    if (this.problems.length >= MAX_PROBLEMS) {
      this.droppedProblems++
      return
    }
    this.problems.push(located({ code, message }, file, line))
  }

  warn(code: string, message: string, file?: string, line?: number): void {
    if (this.warnings.length < MAX_PROBLEMS) this.warnings.push(located({ code, message }, file, line))
  }

  /** Records a thrown CairnError (from a decoder) as a problem at `file:line`. */
  addError(error: unknown, file: string, line?: number): void {
    if (!(error instanceof CairnError)) throw error
    // CairnError messages start with their code; the problem carries the code separately.
    const prefix = `${error.code}: `
    this.add(error.code, error.message.startsWith(prefix) ? error.message.slice(prefix.length) : error.message, file, line)
  }

  get isFull(): boolean {
    return this.problems.length >= MAX_PROBLEMS
  }

  /** The problems, with a final note when some were left out. */
  finish(): MemProblem[] {
    if (this.droppedProblems === 0) return this.problems
    const more = this.droppedProblems === 1 ? '1 more problem was' : `${this.droppedProblems} more problems were`
    return [...this.problems, { code: 'TOO_MANY_PROBLEMS', message: `${more} not listed` }]
  }
}

function located(problem: { code: string; message: string }, file?: string, line?: number): MemProblem {
  return { ...problem, ...(file === undefined ? {} : { file }), ...(line === undefined ? {} : { line }) }
}

/** `items/episode.jsonl:3`, `CHECKSUMS`, or nothing. */
export function describeProblemLocation(problem: MemProblem): string {
  if (problem.file === undefined) return ''
  return problem.line === undefined ? problem.file : `${problem.file}:${problem.line}`
}

/**
 * The error for an invalid bundle: the first problem's code, family and location, and how many
 * more there are (`validateMemBundle` lists them all).
 */
export function bundleError(problems: readonly MemProblem[]): CairnError {
  const first = problems[0] as MemProblem
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more problem${problems.length > 2 ? 's' : ''})` : ''
  const where = { ...(first.file === undefined ? {} : { file: first.file }), ...(first.line === undefined ? {} : { line: first.line }) }
  const message = `invalid bundle: ${first.message}${more}`
  if (VERIFY_CODES.has(first.code)) return new VerifyError(first.code, message, where)
  if (LIMIT_CODES.has(first.code)) return new LimitError(first.code, message, where)
  return new InputError(first.code, message, where)
}

/**
 * Unknown keys dropped from rows of kinds without `ext`, counted per file and key so a million
 * records carrying Cairn `tags` give one warning, not a million.
 */
export class DroppedKeys {
  private readonly seen = new Map<string, { file: string; key: string; count: number; line?: number }>()

  note(file: string, keys: readonly string[], line?: number): void {
    for (const key of keys) {
      const id = `${file}\u0000${key}`
      const entry = this.seen.get(id)
      if (entry !== undefined) entry.count++
      else this.seen.set(id, { file, key, count: 1, ...(line === undefined ? {} : { line }) })
    }
  }

  /** One UNKNOWN_FIELD_DROPPED warning per file and key, at the first line that had it. */
  report(problems: ProblemList): void {
    for (const { file, key, count, line } of this.seen.values()) {
      const rows = count === 1 ? '1 row' : `${count} rows`
      const shown = key.length > 64 ? `${key.slice(0, 64)}…` : key
      problems.warn('UNKNOWN_FIELD_DROPPED', `unknown key ${JSON.stringify(shown)} dropped from ${rows}: Portable Memory keeps unknown keys on episodes only`, file, line)
    }
  }
}

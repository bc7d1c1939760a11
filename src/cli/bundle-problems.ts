/**
 * One shape for everything wrong (or dropped) in a bundle, whichever reader found it: a `.mem`
 * problem, a log snapshot's bad event, a PAM phase failure, an adapter's warning. `validate`
 * lists them and `import` and `export` print their warnings in it.
 *
 * Invariant: `file` is always shown under the path the user gave (bundle-errors.ts
 * `displayFile`), so every line names a file the user can open. A problem line is printable:
 * file names and messages come from the bundle (a parser quoting a line back), so a control
 * character or a terminal escape in them is shown escaped, never sent to the terminal.
 */
import type { AdapterWarning, JsonValue, MemProblem } from '../index.js'
import type { BundlePath } from './bundle-flags.js'
import { displayFile } from './bundle-errors.js'
import { printable } from './printable.js'

export interface BundleProblem {
  readonly code: string
  readonly message: string
  /** The file concerned, under the path the user gave. */
  readonly file?: string
  /** 1-based line in `file`. */
  readonly line?: number
  /** JSON path inside `file` (PAM artifacts, adapters' JSON sources). */
  readonly path?: string
}

/** `out.mem/items/episode.jsonl:3: CODE: message (at $.path)`. */
export function problemLine(problem: BundleProblem): string {
  const place = problem.file === undefined ? '' : `${problem.file}${problem.line !== undefined ? `:${problem.line}` : ''}: `
  return printable(`${place}${problem.code}: ${problem.message}${problem.path !== undefined ? ` (at ${problem.path})` : ''}`)
}

export function problemJson(problem: BundleProblem): JsonValue {
  return { ...problem }
}

export function fromMemProblem(problem: MemProblem, bundle: BundlePath): BundleProblem {
  return {
    code: problem.code,
    message: problem.message,
    ...(problem.file !== undefined ? { file: displayFile(problem.file, bundle) } : {}),
    ...(problem.line !== undefined ? { line: problem.line } : {}),
  }
}

export function fromAdapterWarning(warning: AdapterWarning, bundle: BundlePath): BundleProblem {
  const where = warning.where
  return {
    code: warning.code,
    message: warning.message,
    ...(where.file !== undefined ? { file: displayFile(where.file, bundle) } : {}),
    ...(where.line !== undefined ? { line: where.line } : {}),
    ...(where.path !== undefined ? { path: where.path } : where.field !== undefined ? { path: where.field } : {}),
  }
}

/** The `code` of the CairnError a call throws (a marked string for any other error), or undefined when it returns. */
import { CairnError } from '../../src/errors.js'

export function codeOf(run: () => unknown): string | undefined {
  try {
    run()
  } catch (error) {
    return error instanceof CairnError ? error.code : `not a CairnError: ${String(error)}`
  }
  return undefined
}

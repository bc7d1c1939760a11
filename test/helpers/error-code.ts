/**
 * What a call that should be refused threw: the CairnError (a test fails when the call returns,
 * or throws anything else), or just its code.
 */
import { CairnError } from '../../src/errors.js'

/** The `code` of the CairnError a call throws (a marked string for any other error), or undefined when it returns. */
export function codeOf(run: () => unknown): string | undefined {
  try {
    run()
  } catch (error) {
    return error instanceof CairnError ? error.code : `not a CairnError: ${String(error)}`
  }
  return undefined
}

/** The CairnError `run` throws. */
export function refusal(run: () => unknown): CairnError {
  try {
    run()
  } catch (error) {
    if (error instanceof CairnError) return error
    throw error
  }
  throw new Error('expected a refusal, but the call succeeded')
}

/** The CairnError the promise `run` returns rejects with. */
export async function asyncRefusal(run: () => Promise<unknown>): Promise<CairnError> {
  return rejection(run())
}

/** The CairnError `promise` rejects with. */
export async function rejection(promise: Promise<unknown>): Promise<CairnError> {
  try {
    await promise
  } catch (error) {
    if (error instanceof CairnError) return error
    throw error
  }
  throw new Error('expected a refusal, but the call succeeded')
}

/**
 * Values the sync and token commands take from the command line: relay URLs, 64-hex keys and
 * ids, timeouts in seconds. Each check runs before anything is opened or sent.
 *
 * Invariant: a malformed value is a usage error (exit 2) naming the flag or operand; keys are
 * checked by the engine's own asserters, so the CLI accepts exactly what the library does.
 */
import {
  assertAuthorKey, CairnError, decodeToken, InputError, TOKEN_PREFIX, type CapabilityToken, type CryptoProvider, type ErrorLocation,
} from '../index.js'
import { markUsage, usageError } from './operand-args.js'
import { relayUrlProblem } from '../sync/relay-url.js'

/** A relay address: ws:// or wss://, as `cairn serve` prints it. */
export function relayUrlOperand(value: string): string {
  const problem = relayUrlProblem(value)
  if (problem !== undefined) throw usageError('BAD_URL', problem)
  return value
}

/** An Ed25519 public key or a 32-byte id in lowercase hex (author keys, relay keys, token ids). */
/** @param what the expected value with its article, for the message: "an author key" */
export function hexKey(value: string, where: { flag: string } | { field: string }, what = 'a key'): string {
  try {
    return assertAuthorKey(value.trim().toLowerCase(), where)
  } catch (error) {
    if (!(error instanceof InputError)) throw error
    throw markUsage(new InputError('BAD_KEY', `expected ${what}: 64 hex characters, got "${value.length > 80 ? `${value.slice(0, 77)}…` : value}"`, where, { cause: error }))
  }
}

/** Whole or fractional seconds above zero, as milliseconds. */
export function secondsFlag(value: string | undefined, fallbackSeconds: number, flag: string): number {
  if (value === undefined) return fallbackSeconds * 1000
  const seconds = Number(value)
  if (!/^\d+(\.\d+)?$/.test(value) || !(seconds > 0) || seconds > 86_400) {
    throw usageError('BAD_FLAG_VALUE', `expected a number of seconds above 0 (at most 86400), got "${value}"`, { flag })
  }
  return Math.round(seconds * 1000)
}

/**
 * Decodes a token given on the command line (shape and signature only), restating the engine's
 * error to point at where it came from. A value that is no token at all (not `ct1.…`) was typed
 * in the wrong place: a usage error, as a malformed key is (and as `token revoke` finds it). A
 * token that does not decode or verify is a failed check of what it holds, as a bad bundle is.
 * @throws InputError BAD_TOKEN (exit 2) for a value that is not `ct1.…`; AuthError BAD_TOKEN,
 *   TOKEN_FORGED; LimitError TOKEN_TOO_LARGE (exit 1)
 */
export function decodeTokenArgument(text: string, crypto: CryptoProvider, where: ErrorLocation): CapabilityToken {
  const given = text.trim()
  if (!given.startsWith(`${TOKEN_PREFIX}.`)) {
    throw usageError('BAD_TOKEN', `expected a token, ${TOKEN_PREFIX}.<payload>.<signature>, got "${given.length > 80 ? `${given.slice(0, 77)}…` : given}"`, where)
  }
  try {
    return decodeToken(given, crypto)
  } catch (error) {
    if (!(error instanceof CairnError)) throw error
    const message = error.message.slice(error.code.length + 2).replace(/ \(field token\)$/, '')
    const Family = error.constructor as new (code: string, message: string, where: ErrorLocation, options: { cause: unknown }) => CairnError
    throw new Family(error.code, message, where, { cause: error })
  }
}

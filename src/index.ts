/**
 * Cairn: a local-first memory engine for AI agents. The package root re-exports the public API
 * of each part.
 */
export * from './log/index.js'
export {
  CairnError, InputError, VerifyError, ProtocolError, StorageError, AuthError, LimitError, isCairnError,
  type ErrorLocation,
} from './errors.js'

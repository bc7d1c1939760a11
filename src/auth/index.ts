/** Authorization beyond the log's grants: capability tokens and their scopes. */
export {
  createToken, decodeToken, verifyToken, hasPermission, PERMISSIONS, TOKEN_PREFIX, MAX_TOKEN_CHARS, CLOCK_SKEW_MS,
  type CapabilityToken, type Permission, type TokenRequest, type TokenContext,
} from './capability-token.js'
export { parseScope, scopeAllows, MAX_SCOPE_ENTRIES, type TokenScope, type ScopedRecord } from './token-scope.js'

/**
 * Capability tokens: who may read or write which part of a space, for how long. A token is
 * signed by a key that holds the admin right in the space (the owner, or an admin it granted),
 * is bound to an audience key (the holder proves possession of it in the sync handshake), expires,
 * and can be revoked by a `space.revoke-token` event that reaches every replica and relay.
 *
 *   token   = "ct1." base64url(payload) "." base64url(signature)
 *   payload = canonical JSON { audience, expiresAt, id, issuedAt, issuer, permissions, scope, space, v: 1 }
 *   signature = Ed25519(issuer, "cairn/token/v1" 0x00 || payload bytes)
 */
import { assertArray, assertInteger, assertObject, assertOneOf, assertOptions, assertString } from '../assert.js'
import { isUtf8 } from 'node:buffer'
import { AuthError, CairnError, InputError, LimitError } from '../errors.js'
import {
  assertAuthorKey, assertSpaceId, bytesToHex, canonicalJson, parseJson, tokenSignable,
  type AuthorKey, type CryptoProvider, type Identity, type SpaceId,
} from '../log/index.js'
import { LAST_TIMESTAMP_MS } from '../projection/index.js'
import { decodeBase64urlExactly } from '../log/bytes.js'
import { assertPublicKey } from '../log/ids.js'
import { parseScope, type TokenScope } from './token-scope.js'

export const TOKEN_PREFIX = 'ct1'
export const PERMISSIONS = ['read', 'write', 'derive', 'redact', 'export', 'rehydrate'] as const
export type Permission = (typeof PERMISSIONS)[number]
/** A token longer than this is refused before any parsing. */
export const MAX_TOKEN_CHARS = 64 * 1024
/** Tokens are accepted this long after they expire, for clocks that disagree a little. */
export const CLOCK_SKEW_MS = 30_000

export interface CapabilityToken {
  readonly v: 1
  readonly id: string
  readonly space: SpaceId
  readonly issuer: AuthorKey
  readonly audience: AuthorKey
  readonly scope: TokenScope
  readonly permissions: readonly Permission[]
  readonly issuedAt: number
  readonly expiresAt: number
}

/** What `Memory.createToken` (and `createToken`) takes. Checked at run time too: JSON from a CLI or a wire fits. */
export interface TokenRequest {
  /** The holder's author key (hex). */
  readonly audience: string
  /** What the holder may see and touch; by default everything (`{ all: true }`). */
  readonly scope?: TokenScope
  /** By default `['read']`. */
  readonly permissions?: readonly Permission[]
  /** Lifetime in ms (at most ten years). */
  readonly expiresIn: number
}

/** Ed25519 signatures are this long. */
const SIGNATURE_BYTES = 64
const NOT_BASE64URL = 'is not base64url (A-Z, a-z, 0-9, - and _, no padding): the token was copied wrong'

function payloadOf(token: CapabilityToken): string {
  return canonicalJson(token as unknown as Parameters<typeof canonicalJson>[0])
}

/**
 * Creates and signs a token for `space`. The caller checks that the issuer may issue tokens.
 * @throws InputError naming the field
 */
export function createToken(issuer: Identity, space: string, request: TokenRequest, nowMs: number, crypto: CryptoProvider): string {
  const raw = assertOptions(request, ['audience', 'scope', 'permissions', 'expiresIn'], 'token')
  const listed = raw.permissions === undefined ? ['read'] : assertArray(raw.permissions, 'token.permissions')
  const permissions = [...new Set(listed.map((permission, i) => assertOneOf(permission, PERMISSIONS, `token.permissions[${i}]`)))].sort()
  if (permissions.length === 0) throw new InputError('EMPTY', 'a token grants at least one permission', { field: 'token.permissions' })
  const lifetime = assertInteger(raw.expiresIn, 'token.expiresIn', 1, 10 * 365 * 24 * 3600 * 1000)
  const token: CapabilityToken = {
    v: 1,
    id: bytesToHex(crypto.randomBytes(32)),
    space: assertSpaceId(space, 'space'),
    issuer: issuer.author,
    audience: assertPublicKey(raw.audience, 'token.audience'),
    scope: parseScope(raw.scope ?? { all: true }, 'token.scope'),
    permissions,
    issuedAt: nowMs,
    expiresAt: nowMs + lifetime,
  }
  const payload = new TextEncoder().encode(payloadOf(token))
  const signature = issuer.sign(tokenSignable(payload))
  return `${TOKEN_PREFIX}.${Buffer.from(payload).toString('base64url')}.${Buffer.from(signature).toString('base64url')}`
}

/**
 * Reads a token without trusting it: shape and signature only (for `cairn token inspect`).
 * @throws AuthError BAD_TOKEN, TOKEN_FORGED
 */
export function decodeToken(text: unknown, crypto: CryptoProvider): CapabilityToken {
  const value = assertString(text, 'token')
  if (value.length > MAX_TOKEN_CHARS) throw new LimitError('TOKEN_TOO_LARGE', `over ${MAX_TOKEN_CHARS} characters`, { field: 'token' })
  const parts = value.split('.')
  if (parts.length !== 3 || parts[0] !== TOKEN_PREFIX) throw new AuthError('BAD_TOKEN', `a token is ${TOKEN_PREFIX}.<payload>.<signature>`, { field: 'token' })
  let token: CapabilityToken
  let payload: Buffer
  try {
    const bytes = decodeBase64urlExactly(parts[1] as string)
    if (bytes === undefined) throw new InputError('BAD_BASE64', `the payload ${NOT_BASE64URL}`, { field: 'token' })
    payload = bytes
    // Quoting undecodable bytes back in the message would print noise.
    if (!isUtf8(payload) || payload[0] !== 0x7b) throw new InputError('BAD_JSON', 'the payload is not base64url-encoded JSON of an object', { field: 'token' })
    const raw = assertObject(parseJson(payload.toString('utf8')), 'token')
    token = {
      v: raw.v === 1 ? 1 : (() => { throw new InputError('UNSUPPORTED_VERSION', 'token version is not 1', { field: 'token.v' }) })(),
      id: assertAuthorKey(raw.id, 'token.id') as string,
      space: assertSpaceId(raw.space, 'token.space'),
      issuer: assertAuthorKey(raw.issuer, 'token.issuer'),
      audience: assertAuthorKey(raw.audience, 'token.audience'),
      scope: parseScope(raw.scope, 'token.scope'),
      permissions: assertArray(raw.permissions, 'token.permissions').map((permission, i) => assertOneOf(permission, PERMISSIONS, `token.permissions[${i}]`)),
      // Times a date can show (up to 9999-12-31), as a relay and `cairn token inspect` show them.
      issuedAt: assertInteger(raw.issuedAt, 'token.issuedAt', 0, LAST_TIMESTAMP_MS),
      expiresAt: assertInteger(raw.expiresAt, 'token.expiresAt', 0, LAST_TIMESTAMP_MS),
    }
    if (payloadOf(token) !== payload.toString('utf8')) throw new InputError('NOT_CANONICAL', 'payload is not canonical', { field: 'token' })
    // createToken gives every token a lifetime of at least 1 ms; one that ends before it begins
    // would read as expired (or, with the skew allowance, valid) for no reason a holder can see.
    if (token.expiresAt <= token.issuedAt) {
      throw new InputError('BAD_LIFETIME', `it expires (${new Date(token.expiresAt).toISOString()}) no later than it was issued (${new Date(token.issuedAt).toISOString()})`, { field: 'token.expiresAt' })
    }
    // Permissions as createToken writes them: at least one, each once, sorted.
    const { permissions } = token
    if (permissions.length === 0 || permissions.some((permission, i) => i > 0 && (permissions[i - 1] as string) >= permission)) {
      throw new InputError('NOT_CANONICAL', 'permissions must be a non-empty sorted list without repeats', { field: 'token.permissions' })
    }
  } catch (error) {
    // The inner error's own code and reason: its location is the token's, given once.
    const why = error instanceof CairnError ? `${error.code}: ${error.reason}${error.where.field !== undefined && error.where.field !== 'token' ? ` (${error.where.field})` : ''}` : (error as Error).message
    throw new AuthError('BAD_TOKEN', `token does not decode: ${why}`, { field: 'token' }, { cause: error })
  }
  const signature = decodeBase64urlExactly(parts[2] as string)
  if (signature === undefined) throw new AuthError('BAD_TOKEN', `the signature ${NOT_BASE64URL}`, { field: 'token' })
  if (signature.length !== SIGNATURE_BYTES) {
    throw new AuthError('BAD_TOKEN', `the signature is ${signature.length} bytes, not ${SIGNATURE_BYTES}: the token was cut short or copied wrong`, { field: 'token' })
  }
  if (!crypto.verify(signature, tokenSignable(payload), token.issuer)) {
    throw new AuthError('TOKEN_FORGED', 'token signature does not verify', { field: 'token' })
  }
  return token
}

export interface TokenContext {
  readonly space: string
  /** The key the presenter proved it holds. */
  readonly audience: string
  readonly nowMs: number
  readonly crypto: CryptoProvider
  readonly isRevoked: (tokenId: string) => boolean
  /** Whether the issuer may issue tokens here (admin right in the space). */
  readonly canIssue: (issuer: AuthorKey) => boolean
}

/**
 * Checks everything: signature, space, audience, expiry, revocation, issuer's right.
 * @throws AuthError BAD_TOKEN, TOKEN_FORGED, WRONG_SPACE, WRONG_AUDIENCE, TOKEN_EXPIRED,
 *   TOKEN_REVOKED, ISSUER_NOT_AUTHORIZED
 */
export function verifyToken(text: unknown, context: TokenContext): CapabilityToken {
  const token = decodeToken(text, context.crypto)
  if (token.space !== context.space) throw new AuthError('WRONG_SPACE', 'token is for another space', { field: 'token' })
  if (token.audience !== context.audience) throw new AuthError('WRONG_AUDIENCE', 'token was issued to another key', { field: 'token' })
  if (token.expiresAt + CLOCK_SKEW_MS < context.nowMs) throw new AuthError('TOKEN_EXPIRED', `token expired at ${new Date(token.expiresAt).toISOString()}`, { field: 'token' })
  if (context.isRevoked(token.id)) throw new AuthError('TOKEN_REVOKED', 'token was revoked', { field: 'token' })
  if (!context.canIssue(token.issuer)) throw new AuthError('ISSUER_NOT_AUTHORIZED', 'the issuer holds no admin right in this space', { field: 'token' })
  return token
}

export function hasPermission(token: CapabilityToken | undefined, permission: Permission): boolean {
  return token === undefined || token.permissions.includes(permission)
}

/**
 * Who may write to a space. The genesis author owns the space and holds every right forever.
 * Others get rights from `space.grant` events and lose them by `space.revoke` events, issued by
 * an author with the `admin` right. An event is judged by the grants in **its own causal past**
 * (its version vector), never by today's list, so every replica reaches the same verdict.
 *
 * Rules, for author X and an event whose causal past is vector V:
 * - the owner has all rights;
 * - a grant to X counts when it is in V and neither (a) a revoke of X in V is not in the grant's
 *   own past (a revoke concurrent with a grant wins), nor (b) a later grant to X in V replaced it;
 * - X's rights are the union over the grants that count; `admin` implies `write`.
 * A control event is valid if its issuer held `admin` in its causal past; a later revoke of the
 * issuer does not undo what it validly did. A revoked writer can still make events concurrent
 * with the revoke (their past lacks it); events that have seen the revoke are refused.
 */
import { assertArray, assertObject, assertOneOf, assertString } from '../assert.js'
import { AuthError, InputError, VerifyError } from '../errors.js'
import type { EventBody, EventHeader } from './event.js'
import { assertAuthorKey, type AuthorKey, type EventId } from './ids.js'
import { vectorIncludes, type VersionVector } from './version-vector.js'

export type Right = 'write' | 'admin'
export const RIGHTS: readonly Right[] = ['write', 'admin']

export const GENESIS_OP = 'space.genesis'
export const GRANT_OP = 'space.grant'
export const REVOKE_OP = 'space.revoke'
/** Withdraws a capability token (by its id) everywhere the space reaches. */
export const REVOKE_TOKEN_OP = 'space.revoke-token'
const CONTROL_PREFIX = 'space.'

export type ControlAction =
  | { readonly op: typeof GENESIS_OP; readonly name?: string }
  | { readonly op: typeof GRANT_OP; readonly target: AuthorKey; readonly rights: readonly Right[] }
  | { readonly op: typeof REVOKE_OP; readonly target: AuthorKey }
  | { readonly op: typeof REVOKE_TOKEN_OP; readonly target: AuthorKey }

/**
 * A grant, revoke or token revocation that has been applied, with the causal vector of its
 * event. For a token revocation, `target` is the token id (32 bytes hex, like a key).
 */
export interface ControlEntry {
  readonly id: EventId
  readonly author: AuthorKey
  readonly seq: number
  readonly op: typeof GRANT_OP | typeof REVOKE_OP | typeof REVOKE_TOKEN_OP
  readonly target: AuthorKey
  readonly rights: readonly Right[]
  readonly vector: VersionVector
}

/**
 * Reads the action of a control event body.
 * @throws VerifyError BAD_CONTROL naming the event
 */
export function parseControlBody(body: EventBody, eventId: EventId): ControlAction {
  try {
    const data = assertObject(body.data, 'body.data')
    if (body.op === GENESIS_OP) {
      if (data.name === undefined) return { op: GENESIS_OP }
      return { op: GENESIS_OP, name: assertString(data.name, 'body.data.name') }
    }
    if (body.op === GRANT_OP) {
      const target = assertAuthorKey(data.author, 'body.data.author')
      const rights = assertArray(data.rights, 'body.data.rights').map((right, i) =>
        assertOneOf(right, RIGHTS, `body.data.rights[${i}]`),
      )
      if (rights.length === 0) throw new InputError('EMPTY', 'a grant needs at least one right', { field: 'body.data.rights' })
      return { op: GRANT_OP, target, rights: [...new Set(rights)].sort() }
    }
    if (body.op === REVOKE_OP) {
      return { op: REVOKE_OP, target: assertAuthorKey(data.author, 'body.data.author') }
    }
    if (body.op === REVOKE_TOKEN_OP) {
      return { op: REVOKE_TOKEN_OP, target: assertAuthorKey(data.token, 'body.data.token') }
    }
    throw new InputError('BAD_OP', `"${body.op}" is not a control operation`, { field: 'body.op' })
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error)
    throw new VerifyError('BAD_CONTROL', `control event does not decode: ${detail}`, { event: eventId }, { cause: error })
  }
}

export class SpaceAuthority {
  private readonly byTarget = new Map<string, ControlEntry[]>()

  constructor(readonly owner: AuthorKey, entries: Iterable<ControlEntry> = []) {
    for (const entry of entries) this.add(entry)
  }

  add(entry: ControlEntry): void {
    const list = this.byTarget.get(entry.target)
    if (list) list.push(entry)
    else this.byTarget.set(entry.target, [entry])
  }

  /** True once a `space.revoke-token` for this token id has been applied. */
  isTokenRevoked(tokenId: string): boolean {
    return (this.byTarget.get(tokenId) ?? []).some((entry) => entry.op === REVOKE_TOKEN_OP)
  }

  /** Every applied grant and revoke. */
  entries(): ControlEntry[] {
    return [...this.byTarget.values()].flat()
  }

  copy(): SpaceAuthority {
    return new SpaceAuthority(this.owner, this.entries())
  }

  /** The rights `author` holds in the causal past described by `vector`. */
  rightsAt(author: AuthorKey, vector: VersionVector): Set<Right> {
    if (author === this.owner) return new Set(RIGHTS)
    const rights = new Set<Right>()
    const list = this.byTarget.get(author)
    if (!list) return rights
    const seen = list.filter((entry) => vectorIncludes(vector, entry.author, entry.seq))
    for (const grant of seen) {
      if (grant.op !== GRANT_OP) continue
      // (token revocations are keyed by token id, never by an author, so they never appear here)
      const replaced = seen.some((other) => {
        if (other === grant) return false
        if (other.op === REVOKE_OP) return !vectorIncludes(grant.vector, other.author, other.seq)
        return vectorIncludes(other.vector, grant.author, grant.seq)
      })
      if (replaced) continue
      for (const right of grant.rights) rights.add(right)
    }
    if (rights.has('admin')) rights.add('write')
    return rights
  }

  /**
   * Checks that an event may be applied, given its causal vector (which includes itself).
   * Returns the control entry to record, if the event is a grant or revoke.
   * @throws AuthError NOT_AUTHORIZED, BAD_CONTROL
   */
  authorize(id: EventId, header: EventHeader, body: EventBody | undefined, vector: VersionVector): ControlEntry | undefined {
    const where = { event: id, author: header.author }
    if (header.kind === 'data' && header.author === this.owner) return undefined
    if (header.kind === 'data') {
      if (body !== undefined && body.op.startsWith(CONTROL_PREFIX)) {
        // Checked for every author below; the owner is refused earlier by appendBatch's op check.
        throw new AuthError('BAD_CONTROL', `data events may not use the reserved op "${body.op}"`, where)
      }
      if (!this.rightsAt(header.author, vector).has('write')) {
        throw new AuthError('NOT_AUTHORIZED', 'author holds no write right in the event\'s causal past', where)
      }
      return undefined
    }
    if (body === undefined) throw new VerifyError('MISSING_BODY', 'a control event must carry its body', where)
    const action = parseControlBody(body, id)
    if (action.op === GENESIS_OP) {
      throw new AuthError('BAD_CONTROL', 'a genesis event can only start a space', where)
    }
    if (!this.rightsAt(header.author, vector).has('admin')) {
      throw new AuthError('NOT_AUTHORIZED', 'author holds no admin right in the event\'s causal past', where)
    }
    if (action.op !== REVOKE_TOKEN_OP && action.target === this.owner) {
      throw new AuthError('BAD_CONTROL', 'the owner\'s rights cannot be granted or revoked', where)
    }
    return {
      id,
      author: header.author,
      seq: header.seq,
      op: action.op,
      target: action.target,
      rights: action.op === GRANT_OP ? action.rights : [],
      vector,
    }
  }
}

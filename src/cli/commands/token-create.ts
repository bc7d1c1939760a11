/**
 * `cairn token create`: issues a capability token to another key, signed by this home's key
 * (which needs the admin right in the space). The scope comes from flags (kinds, tag
 * predicates, explicit ids, or everything), the lifetime from --expires.
 *
 * Invariant: stdout carries only the token (or, with --json, one object), so
 * `TOKEN=$(cairn token create …)` works; the description goes to stderr. Nothing is written
 * to the log: a token is a signed statement the holder presents, not an event.
 */
import { canonicalJson, InputError, PERMISSIONS, type Permission, type TokenScope } from '../../index.js'
import { EXIT_OK } from '../command.js'
import { formatDuration, parseDuration } from '../duration.js'
import { DIR_FLAG, resolveHomeDir, withMemory } from '../home.js'
import { JSON_FLAG, kindFlag } from '../memory-flags.js'
import { defineOperandCommand } from '../operand-command.js'
import { markUsage, usageError } from '../operand-args.js'
import { decodeTokenArgument, hexKey } from '../sync-flags.js'
import { describeScope } from '../token-format.js'

const DEFAULT_EXPIRES = '24h'
const TAG = { type: 'string', valueName: 'T', multiple: true } as const

interface ScopeFlags {
  readonly kind: readonly string[]
  readonly tag: readonly string[]
  readonly 'any-tag': readonly string[]
  readonly 'no-tag': readonly string[]
  readonly id: readonly string[]
  readonly all: boolean
}

/** The token scope the flags describe; everything when none is given. */
export function scopeOf(flags: ScopeFlags): TokenScope {
  const narrowed = ['kind', 'tag', 'any-tag', 'no-tag', 'id'].filter((name) => (flags[name as keyof ScopeFlags] as readonly string[]).length > 0)
  if (flags.all) {
    if (narrowed.length > 0) throw usageError('CONFLICTING_FLAGS', `--all already covers every record; drop --${narrowed[0] as string}`, { flag: '--all' })
    return { all: true }
  }
  if (narrowed.length === 0) return { all: true }
  const tags = {
    ...(flags.tag.length > 0 ? { all: flags.tag } : {}),
    ...(flags['any-tag'].length > 0 ? { any: flags['any-tag'] } : {}),
    ...(flags['no-tag'].length > 0 ? { none: flags['no-tag'] } : {}),
  }
  return {
    ...(flags.kind.length > 0 ? { kinds: flags.kind.map(kindFlag) } : {}),
    ...(Object.keys(tags).length > 0 ? { tags } : {}),
    ...(flags.id.length > 0 ? { ids: flags.id } : {}),
  }
}

/** `--permission read --permission write` or `--permission read,write`; read when none. */
export function permissionsOf(values: readonly string[]): Permission[] {
  const list = values.flatMap((value) => value.split(',')).map((value) => value.trim()).filter((value) => value !== '')
  for (const permission of list) {
    if (!(PERMISSIONS as readonly string[]).includes(permission)) {
      throw usageError('BAD_FLAG_VALUE', `no permission "${permission}"; permissions: ${PERMISSIONS.join(', ')}`, { flag: '--permission' })
    }
  }
  return list.length === 0 ? ['read'] : [...new Set(list as Permission[])]
}

/** Engine field labels of a token request and the flags that carry them. */
const FLAG_OF_FIELD: readonly (readonly [RegExp, string])[] = [
  [/^token\.audience/, '--audience'], [/^token\.expiresIn/, '--expires'], [/^token\.permissions/, '--permission'],
  [/^token\.scope\.kinds/, '--kind'], [/^token\.scope\.ids/, '--id'], [/^token\.scope\.tags\.any/, '--any-tag'],
  [/^token\.scope\.tags\.all/, '--tag'], [/^token\.scope\.tags\.none/, '--no-tag'],
]

function reaimed(error: unknown): unknown {
  const field = error instanceof InputError ? error.where.field : undefined
  const flag = field === undefined ? undefined : FLAG_OF_FIELD.find(([pattern]) => pattern.test(field))?.[1]
  if (!(error instanceof InputError) || flag === undefined) return error
  const message = error.message.slice(error.code.length + 2).replace(` (field ${field})`, '')
  return markUsage(new InputError(error.code, message, { flag }, { cause: error }))
}

export const tokenCreateCommand = defineOperandCommand({
  name: 'token create',
  summary: 'issue a capability token to another key',
  synopsis: 'token create --audience KEY [--kind K …] [--tag T …] [--any-tag T …] [--no-tag T …] [--id ID …] [--all] [--permission P …] [--expires DURATION] [--dir D] [--json]',
  description: `
Signs a token that lets the replica holding key KEY (its \`cairn init\` printed it) sync the
records in scope through a relay, with the given permissions, until it expires. This home's
key must be the space's owner or an admin. Scope: records of the given kinds (--kind, any of
them) whose tags match (--tag: all of these, --any-tag: at least one, --no-tag: none), or the
records named by --id, or --all (the default when no scope flag is given). Records out of
scope reach the holder as signed headers only, without their content.

Permissions (default read): ${PERMISSIONS.join(', ')}; repeat --permission or separate with
commas. --expires takes 90s, 30m, 12h, 7d, 2w or 1h30m (default ${DEFAULT_EXPIRES}).

Prints the token on stdout and what it allows on stderr; with --json one object:
{"expiresAt": ms, "id": hex, "token": "ct1.…"}. Revoke it with \`cairn token revoke\`.`,
  operands: [],
  flags: {
    dir: DIR_FLAG,
    audience: { type: 'string', short: 'a', valueName: 'KEY', description: 'the author key the token is issued to (required)' },
    kind: { type: 'string', short: 'k', valueName: 'K', multiple: true, description: 'records of kind K (any of the given kinds)' },
    tag: { ...TAG, short: 't', description: 'records tagged T (all of the given tags)' },
    'any-tag': { ...TAG, description: 'records with at least one of these tags' },
    'no-tag': { ...TAG, description: 'no records tagged T' },
    id: { type: 'string', valueName: 'ID', multiple: true, description: 'the record with this id' },
    all: { type: 'boolean', description: 'every record (the default without scope flags)' },
    permission: { type: 'string', short: 'p', valueName: 'P', multiple: true, description: 'a permission to grant (default read)' },
    expires: { type: 'string', short: 'e', valueName: 'DURATION', description: `how long the token is valid (default ${DEFAULT_EXPIRES})` },
    json: JSON_FLAG,
  },
  async run(flags, _operands, context) {
    if (flags.audience === undefined) {
      throw usageError('MISSING_FLAG', '`cairn token create` needs --audience KEY: the author key of the replica that will use the token', { flag: '--audience' })
    }
    const audience = hexKey(flags.audience, { flag: '--audience' }, 'an author key')
    const scope = scopeOf(flags)
    const permissions = permissionsOf(flags.permission)
    const expiresIn = parseDuration(flags.expires ?? DEFAULT_EXPIRES, '--expires')
    const dir = resolveHomeDir(context.cwd, flags.dir)
    const { token, payload } = await withMemory(dir, { create: false }, (memory) => {
      let token: string
      try {
        token = memory.createToken({ audience, scope, permissions, expiresIn })
      } catch (error) {
        throw reaimed(error)
      }
      return Promise.resolve({ token, payload: decodeTokenArgument(token, memory.crypto, {}) })
    })
    if (flags.json) {
      await context.stdout.write(`${canonicalJson({ token, id: payload.id, expiresAt: payload.expiresAt })}\n`)
      return EXIT_OK
    }
    await context.stdout.write(`${token}\n`)
    await context.stderr.write([
      `token ${payload.id}`,
      `  for ${payload.audience}: ${payload.permissions.join(', ')} on ${describeScope(payload.scope)}`,
      `  valid for ${formatDuration(expiresIn)}, until ${new Date(payload.expiresAt).toISOString().slice(0, 19)}Z`,
      '',
    ].join('\n'))
    return EXIT_OK
  },
})

/**
 * `cairn token`: the capability-token commands, create, inspect and revoke, as one entry in
 * the registry (each lives in its own file).
 */
import { defineCommandGroup } from '../command-group.js'
import { tokenCreateCommand } from './token-create.js'
import { tokenInspectCommand } from './token-inspect.js'
import { tokenRevokeCommand } from './token-revoke.js'

export const tokenCommand = defineCommandGroup({
  name: 'token',
  summary: 'issue, inspect and revoke capability tokens',
  description: `
A capability token lets another key sync part of a space through a relay: signed by the
space's owner or an admin, bound to the holder's key (proven in the sync handshake), scoped
to record kinds, tags or ids, limited to permissions, expiring, and revocable by an event that
reaches every replica and relay.`,
  commands: [tokenCreateCommand, tokenInspectCommand, tokenRevokeCommand],
})

/**
 * The commands `cairn` knows, in the order `cairn --help` lists them. Adding a command is one
 * file under `commands/` and one line here.
 */
import type { CliCommand } from './command.js'
import { initCommand } from './commands/init.js'
import { logCommand } from './commands/log.js'
import { verifyCommand } from './commands/verify.js'
import { rememberCommand } from './commands/remember.js'
import { getCommand } from './commands/get.js'
import { queryCommand } from './commands/query.js'
import { searchCommand } from './commands/search.js'
import { expireCommand } from './commands/expire.js'
import { forgetCommand } from './commands/forget.js'
import { historyCommand } from './commands/history.js'
import { exportCommand } from './commands/export.js'
import { importCommand } from './commands/import.js'
import { validateCommand } from './commands/validate.js'
import { grantCommand } from './commands/grant.js'
import { tokenCommand } from './commands/token.js'
import { serveCommand } from './commands/serve.js'
import { syncCommand } from './commands/sync.js'
import { withheldCommand } from './commands/withheld.js'
import { rebuildCommand } from './commands/rebuild.js'

// The log commands keep their places ahead of the memory commands, the bundle commands follow
// the memory commands, and the sync commands come last: scripts and tests read the command
// list in this order.
export const COMMANDS: readonly CliCommand[] = [
  initCommand, logCommand, verifyCommand,
  rememberCommand, getCommand, queryCommand, searchCommand, forgetCommand, historyCommand, expireCommand, rebuildCommand,
  exportCommand, importCommand, validateCommand,
  grantCommand, tokenCommand, serveCommand, syncCommand, withheldCommand,
]

export function findCommand(name: string): CliCommand | undefined {
  return COMMANDS.find((command) => command.name === name)
}

export function commandNames(): string {
  return COMMANDS.map((command) => command.name).join(', ')
}

/** What `cairn --help` prints. */
export function overviewHelp(): string {
  const width = Math.max(...COMMANDS.map((command) => command.name.length))
  return [
    'usage: cairn <command> [flags]',
    '',
    'Cairn: a local-first memory engine for AI agents (typed records on a signed, append-only event log).',
    '',
    'commands:',
    ...COMMANDS.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`),
    '',
    'Run `cairn <command> --help` for its flags. Exit codes: 0 ok, 1 failure, 2 bad usage.',
    'Set CAIRN_DEBUG=1 to print stack traces with errors, and CAIRN_PROGRESS_MS to how often long',
    'commands (import, export, validate, sync) report progress (default 1000; 0 reports every step).',
    '',
  ].join('\n')
}

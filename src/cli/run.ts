/**
 * Dispatch: finds the command named by the first argument, runs it, and turns whatever it
 * throws into one line on stderr and an exit code.
 *
 * Invariants: every nonzero exit writes exactly one `cairn: CODE: message (where)` line to
 * stderr (plus a stack only when CAIRN_DEBUG=1); usage mistakes exit 2, failed operations
 * exit 1; nothing here calls process.exit, so tests can run the CLI in-process.
 */
import { readFile } from 'node:fs/promises'
import { InputError, isCairnError } from '../errors.js'
import { isOperandUsageError } from './operand-args.js'
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE, type CliContext } from './command.js'
import { commandNames, findCommand, overviewHelp } from './registry.js'
import { printable } from './printable.js'

const HELP_WORDS = new Set(['--help', '-h', 'help'])
const VERSION_WORDS = new Set(['--version', '-V'])

async function packageVersion(): Promise<string> {
  // src/cli/run.ts and dist/cli/run.js both sit two levels below package.json.
  const text = await readFile(new URL('../../package.json', import.meta.url), 'utf8')
  const version = (JSON.parse(text) as { version?: unknown }).version
  return typeof version === 'string' ? version : 'unknown'
}

function unknownCommand(name: string): InputError {
  return new InputError('UNKNOWN_COMMAND', `unknown command "${name}"; commands: ${commandNames()} (see \`cairn --help\`)`)
}

async function dispatch(argv: readonly string[], context: CliContext): Promise<number> {
  const [first, ...rest] = argv
  if (first === undefined) {
    throw new InputError('MISSING_COMMAND', `no command given; commands: ${commandNames()} (see \`cairn --help\`)`)
  }
  if (HELP_WORDS.has(first)) {
    const topic = rest[0]
    if (topic === undefined) {
      await context.stdout.write(overviewHelp())
      return EXIT_OK
    }
    const command = findCommand(topic)
    if (!command) throw unknownCommand(topic)
    await context.stdout.write(command.help)
    return EXIT_OK
  }
  if (VERSION_WORDS.has(first)) {
    await context.stdout.write(`cairn ${await packageVersion()}\n`)
    return EXIT_OK
  }
  if (first.startsWith('-')) {
    throw new InputError('UNKNOWN_FLAG', 'flags go after the command, as in `cairn log --json`', { flag: first })
  }
  const command = findCommand(first)
  if (!command) throw unknownCommand(first)
  return command.execute(rest, context)
}

/** The one-line form of any thrown value. */
export function describeError(error: unknown): string {
  const text = isCairnError(error)
    ? error.message
    : `INTERNAL: ${error instanceof Error ? error.message : String(error)} (a bug in cairn; rerun with CAIRN_DEBUG=1 for the stack)`
  // One line, and no control character from elsewhere (a relay's message) reaches the terminal.
  return printable(text.replace(/\s*\n\s*/g, ' '))
}

function debugDetail(error: unknown): string {
  const lines: string[] = []
  let current: unknown = error
  for (let depth = 0; current !== undefined && depth < 8; depth++) {
    lines.push(current instanceof Error ? (current.stack ?? current.message) : String(current))
    current = current instanceof Error ? current.cause : undefined
    if (current !== undefined) lines.push('caused by:')
  }
  return `${lines.join('\n')}\n`
}

/**
 * Runs `cairn` with `argv` (the words after `cairn`) and returns its exit code.
 * Never throws for a bad command line or a failed command; only a broken stderr can escape.
 */
export async function runCli(argv: readonly string[], context: CliContext): Promise<number> {
  try {
    return await dispatch(argv, context)
  } catch (error) {
    await context.stderr.write(`cairn: ${describeError(error)}\n`)
    if (context.env.CAIRN_DEBUG === '1') await context.stderr.write(debugDetail(error))
    // Marked usage errors (a bad flag value a command found) exit 2 like the parser's own.
    return isOperandUsageError(error) ? EXIT_USAGE : EXIT_FAILURE
  }
}

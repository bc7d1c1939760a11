/**
 * A command with subcommands (`cairn token create|inspect|revoke`): one registry entry that
 * hands the rest of the line to the subcommand named by its first word. Each subcommand is an
 * ordinary `CliCommand` whose name is the full phrase ("token create"), so its help, synopsis
 * and messages read as the user types them.
 *
 * Invariant: a missing or unknown subcommand is a usage error (exit 2) listing the subcommands;
 * `--help` anywhere before a subcommand prints the group's help.
 */
import { InputError } from '../errors.js'
import { EXIT_OK, type CliCommand } from './command.js'

export interface CommandGroupDefinition {
  readonly name: string
  readonly summary: string
  readonly description: string
  readonly commands: readonly CliCommand[]
}

const HELP_WORDS = new Set(['--help', '-h', 'help'])

export function defineCommandGroup(definition: CommandGroupDefinition): CliCommand {
  const word = (command: CliCommand): string => command.name.slice(definition.name.length + 1)
  const words = definition.commands.map(word)
  const width = Math.max(...words.map((name) => name.length))
  const help = [
    `usage: cairn ${definition.name} <${words.join('|')}> [flags]`,
    '',
    definition.summary,
    '',
    definition.description.trim(),
    '',
    'commands:',
    ...definition.commands.map((command) => `  ${word(command).padEnd(width)}  ${command.summary}`),
    '',
    `Run \`cairn ${definition.name} <command> --help\` for its flags.`,
    '',
  ].join('\n')
  const list = words.join(', ')
  return {
    name: definition.name,
    summary: definition.summary,
    help,
    async execute(argv, context) {
      const [first, ...rest] = argv
      if (first !== undefined && HELP_WORDS.has(first)) {
        await context.stdout.write(help)
        return EXIT_OK
      }
      if (first === undefined) throw new InputError('MISSING_COMMAND', `\`cairn ${definition.name}\` needs a command: ${list} (see \`cairn ${definition.name} --help\`)`)
      const command = definition.commands.find((candidate) => word(candidate) === first)
      if (!command) throw new InputError('UNKNOWN_COMMAND', `\`cairn ${definition.name}\` has no command "${first}"; commands: ${list}`)
      return command.execute(rest, context)
    },
  }
}

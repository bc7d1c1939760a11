/**
 * `defineCommand` for commands that take operands and repeatable flags (see operand-args.ts):
 * the memory commands. The result is an ordinary `CliCommand` for the registry.
 *
 * Invariant: a usage mistake exits 2 with exactly one `cairn: CODE: message (where)` line,
 * whether the parser found it or the command did while checking flag values; every other
 * error is left to `run.ts` (exit 1). Help is answered before anything else runs.
 */
import { HELP_FLAG } from './args.js'
import { EXIT_OK, EXIT_USAGE, type CliCommand, type CliContext } from './command.js'
import {
  isOperandUsageError, parseCommandLine,
  type OperandDefinition, type OperandFlagSpec, type OperandFlagValues,
} from './operand-args.js'

export interface OperandCommandDefinition<Spec extends OperandFlagSpec> {
  readonly name: string
  readonly summary: string
  /** Synopsis after `cairn`, e.g. "get <id> [--as-of T] [--dir D] [--json]". */
  readonly synopsis: string
  readonly description: string
  readonly operands: readonly OperandDefinition[]
  readonly flags: Spec
  run(flags: OperandFlagValues<Spec>, operands: Readonly<Record<string, string | undefined>>, context: CliContext): Promise<number>
}

function renderHelp(definition: OperandCommandDefinition<OperandFlagSpec>): string {
  const operandRows = definition.operands.map((operand) =>
    [`<${operand.name}>${operand.variadic === true ? '…' : ''}`, `${operand.description}${operand.required ? '' : ' (optional)'}`] as const)
  const flagRows = Object.entries({ ...definition.flags, help: HELP_FLAG }).map(([name, flag]) => {
    const short = flag.short === undefined ? '    ' : `-${flag.short}, `
    const value = flag.type === 'string' ? ` ${flag.valueName ?? 'VALUE'}` : ''
    const repeat = 'multiple' in flag && flag.multiple === true ? ' (repeatable)' : ''
    return [`${short}--${name}${value}`, `${flag.description}${repeat}`] as const
  })
  const width = Math.max(...[...operandRows, ...flagRows].map(([left]) => left.length))
  const rows = (list: readonly (readonly [string, string])[]) => list.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`)
  return [
    `usage: cairn ${definition.synopsis}`,
    '',
    definition.summary,
    '',
    definition.description.trim(),
    '',
    ...(operandRows.length > 0 ? ['arguments:', ...rows(operandRows), ''] : []),
    'flags:',
    ...rows(flagRows),
    '',
  ].join('\n')
}

async function reportUsage(error: Error, context: CliContext): Promise<number> {
  await context.stderr.write(`cairn: ${error.message.replace(/\s*\n\s*/g, ' ')}\n`)
  if (context.env.CAIRN_DEBUG === '1') await context.stderr.write(`${error.stack ?? error.message}\n`)
  return EXIT_USAGE
}

export function defineOperandCommand<const Spec extends OperandFlagSpec>(definition: OperandCommandDefinition<Spec>): CliCommand {
  // As in command.ts: renderHelp reads only the texts and flags, never calls run.
  const help = renderHelp(definition as unknown as OperandCommandDefinition<OperandFlagSpec>)
  const command = `cairn ${definition.name}`
  return {
    name: definition.name,
    summary: definition.summary,
    help,
    async execute(argv, context) {
      try {
        const parsed = parseCommandLine(argv, definition.flags, definition.operands, command)
        if (parsed.isHelp) {
          await context.stdout.write(help)
          return EXIT_OK
        }
        return await definition.run(parsed.values, parsed.operands, context)
      } catch (error) {
        // run.ts maps only args.ts's codes to exit 2; the codes added here are reported here.
        if (isOperandUsageError(error)) return reportUsage(error, context)
        throw error
      }
    },
  }
}

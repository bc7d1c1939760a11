/**
 * The shape of a CLI command and what it runs with. Each command lives in its own file under
 * `commands/` and is listed once in `registry.ts`; the entry point knows nothing else about it.
 *
 * Invariant: a command's flags are parsed (and `--help` answered) before its `run` is called,
 * so `run` only sees validated values; it returns an exit code and never calls process.exit.
 */
import type { Clock } from '../index.js'
import { parseFlags, HELP_FLAG, type FlagSpec, type FlagValues } from './args.js'

/** 0: done; 1: the operation failed (a bad store, a failed verification); 2: bad command line. */
export const EXIT_OK = 0
export const EXIT_FAILURE = 1
export const EXIT_USAGE = 2

/** Where output goes. `write` resolves once the stream can take more, so long listings respect backpressure. */
export interface TextSink {
  write(text: string): Promise<void>
}

export interface CliContext {
  /** Relative `--dir` values resolve against this. */
  readonly cwd: string
  readonly env: Readonly<Record<string, string | undefined>>
  readonly stdout: TextSink
  readonly stderr: TextSink
  /**
   * Ends long-running commands (`serve`, `sync --live`) when aborted. Without it they stop on
   * the process's SIGINT or SIGTERM; embedders and in-process tests pass their own.
   */
  readonly signal?: AbortSignal
  /**
   * Times progress reports (`import`, `export`); the system clock when absent. In-process tests
   * pass their own so whether a progress line is printed never depends on how fast a run is.
   */
  readonly clock?: Clock
}

export interface CliCommand {
  readonly name: string
  /** One line for the command list. */
  readonly summary: string
  /** The full help text, flags included. */
  readonly help: string
  /** Parses `argv` (the words after the command name), then runs. */
  execute(argv: readonly string[], context: CliContext): Promise<number>
}

export interface CommandDefinition<Spec extends FlagSpec> {
  readonly name: string
  readonly summary: string
  /** Synopsis after `cairn`, e.g. "log [--dir D] [--json]". */
  readonly synopsis: string
  /** Paragraphs shown under the synopsis: what the command does and what it prints. */
  readonly description: string
  readonly flags: Spec
  run(flags: FlagValues<Spec>, context: CliContext): Promise<number>
}

function renderHelp(definition: CommandDefinition<FlagSpec>): string {
  const rows = Object.entries({ ...definition.flags, help: HELP_FLAG }).map(([name, flag]) => {
    const short = flag.short === undefined ? '    ' : `-${flag.short}, `
    const value = flag.type === 'string' ? ` ${flag.valueName ?? 'VALUE'}` : ''
    return [`${short}--${name}${value}`, flag.description] as const
  })
  const width = Math.max(...rows.map(([left]) => left.length))
  return [
    `usage: cairn ${definition.synopsis}`,
    '',
    definition.summary,
    '',
    definition.description.trim(),
    '',
    'flags:',
    ...rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`),
    '',
  ].join('\n')
}

/** Turns a typed definition into a registry entry; the generic flag types stop here. */
export function defineCommand<const Spec extends FlagSpec>(definition: CommandDefinition<Spec>): CliCommand {
  // `run` takes the narrower flag values, so the definition is not a CommandDefinition<FlagSpec>
  // by variance; renderHelp reads only the flags and texts, never calls run.
  const help = renderHelp(definition as unknown as CommandDefinition<FlagSpec>)
  return {
    name: definition.name,
    summary: definition.summary,
    help,
    async execute(argv, context) {
      const parsed = parseFlags(argv, definition.flags, `cairn ${definition.name}`)
      if (parsed.isHelp) {
        await context.stdout.write(help)
        return EXIT_OK
      }
      return definition.run(parsed.values, context)
    },
  }
}

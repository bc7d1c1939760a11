/**
 * Command-line flags: a thin layer over node:util `parseArgs` in strict mode.
 *
 * Invariant: every bad argument becomes an `InputError` with one of `USAGE_ERROR_CODES` and a
 * `where` naming the offending flag, so the entry point can map it to exit code 2 with a
 * one-line message. Node's own messages are multi-line and phrased for JavaScript callers, so
 * when strict parsing fails we re-read the arguments as tokens to name the offender exactly.
 */
import { parseArgs } from 'node:util'
import { InputError } from '../errors.js'

/** One flag a command accepts. Only long names are declared; `short` is an optional alias. */
export interface FlagDefinition {
  readonly type: 'string' | 'boolean'
  readonly short?: string
  /** Shown in help, e.g. "D" in `--dir D`. */
  readonly valueName?: string
  readonly description: string
}

export type FlagSpec = Readonly<Record<string, FlagDefinition>>

/** What `parseFlags` returns for a spec: strings may be absent, booleans default to false. */
export type FlagValues<Spec extends FlagSpec> = {
  readonly [Name in keyof Spec]: Spec[Name]['type'] extends 'string' ? string | undefined : boolean
}

/** Every flag spec gets `--help`/`-h`; commands never declare it themselves. */
export const HELP_FLAG: FlagDefinition = { type: 'boolean', short: 'h', description: 'show this help' }

/** Codes that mean "the command line is wrong" (exit 2), as opposed to a failed operation. */
export const USAGE_ERROR_CODES: ReadonlySet<string> = new Set([
  'UNKNOWN_FLAG', 'MISSING_VALUE', 'FLAG_TAKES_NO_VALUE', 'EMPTY_VALUE', 'UNEXPECTED_ARGUMENT',
  'UNKNOWN_COMMAND', 'MISSING_COMMAND', 'REPEATED_FLAG',
])

export function isUsageError(error: unknown): error is InputError {
  return error instanceof InputError && USAGE_ERROR_CODES.has(error.code)
}

export interface ParsedFlags<Spec extends FlagSpec> {
  readonly values: FlagValues<Spec>
  readonly isHelp: boolean
}

type NodeOptions = Record<string, { type: 'string' | 'boolean'; short?: string }>

function nodeOptions(spec: FlagSpec): NodeOptions {
  const options: NodeOptions = {}
  for (const [name, flag] of Object.entries({ ...spec, help: HELP_FLAG })) {
    options[name] = flag.short === undefined ? { type: flag.type } : { type: flag.type, short: flag.short }
  }
  return options
}

interface Token {
  readonly kind: 'option' | 'positional' | 'option-terminator'
  readonly name?: string
  readonly rawName?: string
  readonly value?: string
  readonly inlineValue?: boolean
}

function readTokens(argv: readonly string[], options: NodeOptions): Token[] {
  return parseArgs({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true }).tokens as Token[]
}

/** Finds the first argument strict parsing refused and says what is wrong with it. */
function describeOffender(tokens: readonly Token[], options: NodeOptions, command: string): InputError | undefined {
  const help = `see \`${command} --help\``
  for (const token of tokens) {
    if (token.kind === 'positional') {
      return new InputError('UNEXPECTED_ARGUMENT', `\`${command}\` takes no argument "${token.value ?? ''}"; ${help}`, {})
    }
    if (token.kind !== 'option' || token.name === undefined) continue
    const flag = token.rawName ?? `--${token.name}`
    const option = options[token.name]
    if (option === undefined) {
      return new InputError('UNKNOWN_FLAG', `\`${command}\` has no such flag; ${help}`, { flag })
    }
    if (option.type === 'boolean' && token.value !== undefined) {
      return new InputError('FLAG_TAKES_NO_VALUE', 'this flag is a switch and takes no value', { flag })
    }
    if (option.type === 'string' && token.value === undefined) {
      return new InputError('MISSING_VALUE', 'this flag needs a value', { flag })
    }
    if (option.type === 'string' && !token.inlineValue && token.value?.startsWith('-')) {
      const value = token.value
      return new InputError('MISSING_VALUE', `this flag needs a value, and "${value}" looks like a flag (write ${flag}=${value} if it is the value)`, { flag })
    }
  }
  return undefined
}

/** How much of each value REPEATED_FLAG quotes: a token or a long path given twice need not be printed whole. */
const MAX_SHOWN_VALUE = 24

function quotedShort(value: string | undefined): string {
  const text = value ?? ''
  return `"${text.length > MAX_SHOWN_VALUE ? `${text.slice(0, MAX_SHOWN_VALUE)}…` : text}"`
}

/**
 * A flag that takes one value given more than once (`--dir a --dir b`, `-d a --dir b`): which
 * one was meant is a guess, so neither is taken. Switches (`--json --json`) say the same thing
 * twice and pass; `repeatable` names the string flags that collect every occurrence.
 */
export function repeatedFlag(tokens: readonly { readonly kind: string; readonly name?: string; readonly rawName?: string; readonly value?: string }[],
  options: Readonly<Record<string, { readonly type: 'string' | 'boolean' }>>, repeatable: (name: string) => boolean = () => false): InputError | undefined {
  const seen = new Map<string, { readonly rawName: string; readonly value: string | undefined }>()
  for (const token of tokens) {
    if (token.kind !== 'option' || token.name === undefined || options[token.name]?.type !== 'string' || repeatable(token.name)) continue
    const first = seen.get(token.name)
    const rawName = token.rawName ?? `--${token.name}`
    if (first === undefined) {
      seen.set(token.name, { rawName, value: token.value })
      continue
    }
    const values = `${first.rawName} ${quotedShort(first.value)}, then ${rawName} ${quotedShort(token.value)}`
    return new InputError('REPEATED_FLAG', `this flag takes one value and was given more than once (${values}); give it once`, { flag: `--${token.name}` })
  }
  return undefined
}

/**
 * Parses `argv` (the arguments after the command name) against `spec`.
 * @param command how the command is invoked, for messages: "cairn log"
 * @throws InputError UNKNOWN_FLAG, MISSING_VALUE, FLAG_TAKES_NO_VALUE, EMPTY_VALUE, UNEXPECTED_ARGUMENT, REPEATED_FLAG
 */
export function parseFlags<Spec extends FlagSpec>(argv: readonly string[], spec: Spec, command: string): ParsedFlags<Spec> {
  const options = nodeOptions(spec)
  const tokens = readTokens(argv, options)
  // `--help` wins over any other mistake on the line, as users type it to find out what is wrong.
  const isHelp = tokens.some((token) => token.kind === 'option' && token.name === 'help')
  let values: Record<string, string | boolean | undefined>
  try {
    values = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }).values as Record<string, string | boolean | undefined>
  } catch (error) {
    if (isHelp) return { values: {} as FlagValues<Spec>, isHelp }
    const described = describeOffender(tokens, options, command)
    if (described) throw described
    const detail = (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? ''
    throw new InputError('UNEXPECTED_ARGUMENT', `${detail}; see \`${command} --help\``, {})
  }
  // After the help check, as every other mistake: `--help` wins over a flag given twice too.
  if (isHelp) return { values: {} as FlagValues<Spec>, isHelp }
  const repeated = repeatedFlag(tokens, options)
  if (repeated) throw repeated
  const out: Record<string, string | boolean | undefined> = {}
  for (const [name, flag] of Object.entries(spec)) {
    const value = values[name]
    if (flag.type === 'boolean') {
      out[name] = value === true
    } else {
      if (value === '') throw new InputError('EMPTY_VALUE', 'this flag needs a non-empty value', { flag: `--${name}` })
      out[name] = value
    }
  }
  return { values: out as FlagValues<Spec>, isHelp }
}

/**
 * Command lines with operands (`cairn get <id>`, `cairn remember <text…>`) and repeatable
 * flags (`--tag a --tag b`): the memory commands need both, which `args.ts` (flags only, each
 * once) does not parse. Same strict rules and the same error codes as `parseFlags`.
 *
 * Invariant: every bad argument becomes an `InputError` naming the flag or operand, marked as
 * a usage error (`isOperandUsageError`), so the command exits 2 with one line. Errors whose code
 * is already in `USAGE_ERROR_CODES` are exit 2 for `run.ts` as well; the mark covers the codes
 * this file and the memory commands add (MISSING_ARGUMENT, BAD_FLAG_VALUE, engine validation
 * codes re-aimed at a flag).
 */
import { parseArgs } from 'node:util'
import { InputError, type ErrorLocation } from '../errors.js'
import { HELP_FLAG, isUsageError, repeatedFlag, type FlagDefinition } from './args.js'

/** A flag; a repeatable string flag collects every occurrence in order. */
export interface OperandFlagDefinition extends FlagDefinition {
  readonly multiple?: boolean
}

export type OperandFlagSpec = Readonly<Record<string, OperandFlagDefinition>>

export type OperandFlagValues<Spec extends OperandFlagSpec> = {
  readonly [Name in keyof Spec]: Spec[Name]['type'] extends 'string'
    ? Spec[Name]['multiple'] extends true ? readonly string[] : string | undefined
    : boolean
}

/** A positional argument. Only the last may be variadic (its words are joined by spaces). */
export interface OperandDefinition {
  readonly name: string
  readonly description: string
  readonly required: boolean
  readonly variadic?: boolean
}

export interface ParsedCommandLine<Spec extends OperandFlagSpec> {
  readonly values: OperandFlagValues<Spec>
  /** Operand values by name; a variadic operand's words joined by one space. */
  readonly operands: Readonly<Record<string, string | undefined>>
  readonly isHelp: boolean
}

const usageErrors = new WeakSet<Error>()

/** Marks `error` as a mistake on the command line: the command exits 2. */
export function markUsage<E extends Error>(error: E): E {
  usageErrors.add(error)
  return error
}

/** An `InputError` that exits 2. */
export function usageError(code: string, message: string, where: ErrorLocation = {}): InputError {
  return markUsage(new InputError(code, message, where))
}

export function isOperandUsageError(error: unknown): error is InputError {
  return isUsageError(error) || (error instanceof InputError && usageErrors.has(error))
}

type NodeOptions = Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }>

function nodeOptions(spec: OperandFlagSpec): NodeOptions {
  const options: NodeOptions = {}
  for (const [name, flag] of Object.entries({ ...spec, help: HELP_FLAG as OperandFlagDefinition })) {
    options[name] = {
      type: flag.type,
      ...(flag.short !== undefined ? { short: flag.short } : {}),
      ...(flag.multiple === true ? { multiple: true } : {}),
    }
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

/** The first option strict parsing refused, and what is wrong with it (as `args.ts` says it). */
function describeOffender(tokens: readonly Token[], options: NodeOptions, command: string): InputError | undefined {
  for (const token of tokens) {
    if (token.kind !== 'option' || token.name === undefined) continue
    const flag = token.rawName ?? `--${token.name}`
    const option = options[token.name]
    if (option === undefined) return new InputError('UNKNOWN_FLAG', `\`${command}\` has no such flag; see \`${command} --help\``, { flag })
    if (option.type === 'boolean' && token.value !== undefined) return new InputError('FLAG_TAKES_NO_VALUE', 'this flag is a switch and takes no value', { flag })
    if (option.type === 'string' && token.value === undefined) return new InputError('MISSING_VALUE', 'this flag needs a value', { flag })
    if (option.type === 'string' && !token.inlineValue && token.value?.startsWith('-')) {
      const value = token.value
      return new InputError('MISSING_VALUE', `this flag needs a value, and "${value}" looks like a flag (write ${flag}=${value} if it is the value)`, { flag })
    }
  }
  return undefined
}

function readOperands(words: readonly string[], operands: readonly OperandDefinition[], command: string): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {}
  let index = 0
  for (const operand of operands) {
    const taken = operand.variadic === true ? words.slice(index) : words.slice(index, index + 1)
    index += taken.length
    if (taken.length === 0) {
      if (operand.required) throw usageError('MISSING_ARGUMENT', `\`${command}\` needs <${operand.name}>: ${operand.description}; see \`${command} --help\``)
      continue
    }
    const value = taken.join(' ')
    if (value.trim() === '') throw usageError('EMPTY_VALUE', `<${operand.name}> must not be empty`)
    out[operand.name] = value
  }
  const extra = words[index]
  if (extra !== undefined) {
    const takes = operands.length === 0 ? 'takes no argument' : `takes ${operands.map((operand) => `<${operand.name}>`).join(' ')} only, not also`
    throw new InputError('UNEXPECTED_ARGUMENT', `\`${command}\` ${takes} "${extra}"; see \`${command} --help\``)
  }
  return out
}

/**
 * Parses the words after the command name.
 * @param command how the command is invoked, for messages: "cairn get"
 * @throws InputError UNKNOWN_FLAG, MISSING_VALUE, FLAG_TAKES_NO_VALUE, EMPTY_VALUE, UNEXPECTED_ARGUMENT, MISSING_ARGUMENT,
 *   REPEATED_FLAG (a flag that is not repeatable, given twice)
 */
export function parseCommandLine<Spec extends OperandFlagSpec>(
  argv: readonly string[], spec: Spec, operands: readonly OperandDefinition[], command: string,
): ParsedCommandLine<Spec> {
  const options = nodeOptions(spec)
  const tokens = parseArgs({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true }).tokens as Token[]
  // `--help` wins over any other mistake on the line, as users type it to find out what is wrong.
  const isHelp = tokens.some((token) => token.kind === 'option' && token.name === 'help')
  if (isHelp) return { values: {} as OperandFlagValues<Spec>, operands: {}, isHelp }
  let parsed: { values: Record<string, string | boolean | (string | boolean)[] | undefined>; positionals: string[] }
  try {
    parsed = parseArgs({ args: [...argv], options, strict: true, allowPositionals: true })
  } catch (error) {
    const described = describeOffender(tokens, options, command)
    if (described) throw described
    const detail = (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? ''
    throw new InputError('UNEXPECTED_ARGUMENT', `${detail}; see \`${command} --help\``, {})
  }
  const repeated = repeatedFlag(tokens, options, (name) => options[name]?.multiple === true)
  if (repeated) throw repeated
  const values: Record<string, string | boolean | readonly string[] | undefined> = {}
  for (const [name, flag] of Object.entries(spec)) {
    const value = parsed.values[name]
    if (flag.type === 'boolean') {
      values[name] = value === true
      continue
    }
    const list = value === undefined ? [] : Array.isArray(value) ? value.map(String) : [String(value)]
    if (list.some((item) => item === '')) throw new InputError('EMPTY_VALUE', 'this flag needs a non-empty value', { flag: `--${name}` })
    values[name] = flag.multiple === true ? list : list[0]
  }
  return { values: values as OperandFlagValues<Spec>, operands: readOperands(parsed.positionals, operands, command), isHelp }
}

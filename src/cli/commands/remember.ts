/**
 * `cairn remember`: stores one record of any kind and prints its id. Text on the command line
 * goes to the kind's main text field (an episode's details, from which its summary derives);
 * `--field`, `--data`, `--tag` and `--context` give the rest.
 *
 * Invariant: the record is assembled and checked whole before the one write; every field may
 * come from one source only, so nothing given on the line is silently overridden. Validation
 * errors (the engine's, naming the field) exit 2 and store nothing, and where there was no home
 * they are found before one is created, so a refused record leaves no home behind.
 */
import { buildCreateEntry, canonicalJson, InputError, oversizedRecordRefusal, refuseEndBeforeStart, type RecordKind, type RememberInput } from '../../index.js'
import { EXIT_OK, type CliContext } from '../command.js'
import { DIR_FLAG, isHome, resolveHomeDir, withMemory } from '../home.js'
import { JSON_FLAG, kindFlag } from '../memory-flags.js'
import { defineOperandCommand } from '../operand-command.js'
import { markUsage, usageError } from '../operand-args.js'

/** Where the text operand goes, per kind. Kinds not listed take their text as --field values. */
const TEXT_FIELD: Partial<Record<RecordKind, string>> = {
  episode: 'details', fact: 'text', core: 'content', chunk: 'text', context: 'label', entity: 'summary',
  resource: 'summary', community: 'summary', category: 'description', preference: 'value',
}

/** A `--field` value: JSON when it parses (numbers, booleans, arrays, objects), else the string itself. */
function fieldValue(text: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

function dataObject(text: string): Record<string, unknown> {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    throw usageError('BAD_JSON', `not JSON: ${error instanceof Error ? error.message : String(error)}`, { flag: '--data' })
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw usageError('WRONG_TYPE', 'expected a JSON object of record fields', { flag: '--data' })
  return value as Record<string, unknown>
}

interface RememberFlags {
  readonly kind: string | undefined
  readonly field: readonly string[]
  readonly data: string | undefined
  readonly tag: readonly string[]
  readonly context: string | undefined
}

/** The record to store, from every source on the line. */
export function recordFromFlags(flags: RememberFlags, text: string | undefined): RememberInput {
  const fields: Record<string, unknown> = {}
  const source = new Map<string, string>()
  const put = (name: string, value: unknown, from: string) => {
    const earlier = source.get(name)
    if (earlier !== undefined) throw usageError('DUPLICATE_FIELD', `field "${name}" is given by both ${earlier} and ${from}`, { flag: from.split(' ')[0] as string })
    source.set(name, from)
    fields[name] = value
  }
  if (flags.data !== undefined) for (const [name, value] of Object.entries(dataObject(flags.data))) put(name, value, '--data')
  for (const entry of flags.field) {
    const equals = entry.indexOf('=')
    if (equals < 1) throw usageError('BAD_FLAG_VALUE', `expected name=value, got "${entry}"`, { flag: '--field' })
    put(entry.slice(0, equals), fieldValue(entry.slice(equals + 1)), `--field ${entry.slice(0, equals)}`)
  }
  const dataKind = fields.kind
  delete fields.kind
  source.delete('kind')
  const kind = kindFlag(flags.kind ?? (typeof dataKind === 'string' ? dataKind : 'episode'))
  if (flags.kind !== undefined && dataKind !== undefined && dataKind !== flags.kind) {
    throw usageError('DUPLICATE_FIELD', `--kind ${flags.kind} disagrees with kind ${JSON.stringify(dataKind)} in --data/--field`, { flag: '--kind' })
  }
  if (text !== undefined) {
    const field = TEXT_FIELD[kind]
    if (field === undefined) throw usageError('UNEXPECTED_ARGUMENT', `a ${kind} takes no <text>; give its fields with --field name=value or --data`, { flag: '--kind' })
    put(field, text, '<text>')
  }
  if (flags.tag.length > 0) put('tags', [...flags.tag], '--tag')
  if (flags.context !== undefined) put('contextID', flags.context, '--context')
  if (kind === 'episode' && Object.keys(fields).length === 0) {
    throw usageError('MISSING_ARGUMENT', 'nothing to remember: give <text>, --field or --data; see `cairn remember --help`')
  }
  // Flags are typed at run time: remember checks each field against the kind.
  return { kind, ...fields } as RememberInput
}

/** Author key of the dry run (collaborative text's changes name their actor); nothing is signed with it. */
const DRY_RUN_AUTHOR = '0'.repeat(64)

/**
 * The engine's refusal of the record's own fields is what the user typed: a usage error (exit
 * 2). A deleted id (FORGOTTEN) is a refused operation instead.
 */
function asUsage(error: unknown): unknown {
  return error instanceof InputError && error.code !== 'FORGOTTEN' ? markUsage(error) : error
}

/**
 * Checks the record as `remember` will, without a replica: run before a home is created, so a
 * field the kind refuses leaves no new identity and space behind.
 * @throws InputError (exit 2) naming the field, as `remember` would
 */
function checkRecord(record: RememberInput): void {
  let entry
  try {
    entry = buildCreateEntry({ nowMs: Date.now(), randomHex: (bytes) => '0'.repeat(bytes * 2), author: DRY_RUN_AUTHOR }, record)
    refuseEndBeforeStart(entry)
  } catch (error) {
    throw asUsage(error)
  }
  // Too large for one event: refused at the write, after the home was made, unless measured here.
  const tooLarge = oversizedRecordRefusal(entry)
  if (tooLarge !== undefined) throw tooLarge
}

async function report(id: string, isJson: boolean, context: CliContext): Promise<void> {
  await context.stdout.write(isJson ? `${canonicalJson({ id })}\n` : `${id}\n`)
}

export const rememberCommand = defineOperandCommand({
  name: 'remember',
  summary: 'store a memory record (an episode unless --kind says otherwise) and print its id',
  synopsis: 'remember [<text>…] [--kind K] [--field NAME=VALUE …] [--data JSON] [--tag T …] [--context C] [--dir D] [--json]',
  description: `
Stores one record and prints its id (with --json: {"id": …}). <text> (several words are
joined by spaces) goes to the kind's main text field: an episode's details (its summary is
the first line, up to 120 characters), a fact's text, a core block's content, a preference's
value, an entity's summary, a context's label. Every other field comes from --field
name=value (repeatable; a value that parses as JSON is taken as JSON, so quote strings that
look like numbers: --field 'version="2"') or from --data '{"name": value, …}'. A field may be
given only once. Fields left out take the kind's defaults; unknown or ill-typed fields are
refused (exit 2) naming the field. Remembering an existing id merges into it.

Where <D> holds no home yet, one is created (a new identity and space), and a note saying so
goes to stderr.

examples:
  cairn remember "Sam prefers green tea" --tag drinks
  cairn remember --kind preference --field key=drink --field value=tea
  cairn remember --kind core --field id=human "Name: Sam."
  cairn remember --kind fact --data '{"episodeID":"ep_…","subject":"Sam","predicate":"likes","object":"tea"}'`,
  operands: [{ name: 'text', description: "the record's main text", required: false, variadic: true }],
  flags: {
    dir: DIR_FLAG,
    kind: { type: 'string', short: 'k', valueName: 'K', description: 'the record kind (default episode)' },
    field: { type: 'string', short: 'f', valueName: 'NAME=VALUE', multiple: true, description: 'one field; VALUE is JSON when it parses, else a string' },
    data: { type: 'string', valueName: 'JSON', description: 'the fields as one JSON object' },
    tag: { type: 'string', short: 't', valueName: 'T', multiple: true, description: 'a tag' },
    context: { type: 'string', short: 'c', valueName: 'C', description: 'the context (scope) the record belongs to' },
    json: JSON_FLAG,
  },
  async run(flags, operands, context) {
    const record = recordFromFlags(flags, operands.text)
    const dir = resolveHomeDir(context.cwd, flags.dir)
    if (!isHome(dir)) checkRecord(record)
    const id = await withMemory(dir, { create: true }, async (memory, isNew) => {
      if (isNew) await context.stderr.write(`cairn: note: created a new Cairn home in ${dir} (space ${memory.space})\n`)
      try {
        return await memory.remember(record)
      } catch (error) {
        throw asUsage(error)
      }
    })
    await report(id, flags.json, context)
    return EXIT_OK
  },
})

/**
 * `cairn validate <path>`: checks a `.mem` bundle, a log snapshot or a PAM artifact without a
 * store (bundle-validation.ts) and lists every problem: file, line when known, code, message.
 *
 * Invariant: exit 0 only when the bundle is valid; otherwise exit 1 with every problem on
 * stdout and one `cairn: INVALID_BUNDLE: …` line on stderr naming the first, as `cairn verify`
 * does for a store. Nothing is written anywhere.
 */
import { canonicalJson, detectBundleFormat, type BundleFormat } from '../../index.js'
import { statSourcePath } from '../../bundle/source-path.js'
import { bundlePath, FORMAT_FLAG, formatFlag, TRUSTED_KEY_FLAG, trustedKeysFlag, type BundlePath } from '../bundle-flags.js'
import { withBundleErrors } from '../bundle-errors.js'
import { problemJson, problemLine } from '../bundle-problems.js'
import { BundleProgress } from '../bundle-progress.js'
import { validateBundle, type BundleValidation } from '../bundle-validation.js'
import { EXIT_FAILURE, EXIT_OK, type CliContext } from '../command.js'
import { JSON_FLAG } from '../memory-flags.js'
import { defineOperandCommand } from '../operand-command.js'
import { usageError } from '../operand-args.js'

async function formatOf(source: BundlePath, given: BundleFormat | undefined): Promise<BundleFormat> {
  await statSourcePath(source.resolved, source.given)
  return given ?? withBundleErrors(source, () => detectBundleFormat(source.resolved))
}

async function printValidation(validation: BundleValidation, source: BundlePath, isJson: boolean, context: CliContext): Promise<void> {
  if (isJson) {
    await context.stdout.write(`${canonicalJson({
      format: validation.format, path: source.given, valid: validation.valid, ...validation.details,
      problems: validation.problems.map(problemJson), warnings: validation.warnings.map(problemJson),
    })}\n`)
    return
  }
  const count = validation.problems.length
  const head = validation.valid
    ? `valid: ${source.given}: ${validation.summary}`
    : `INVALID: ${source.given}: ${validation.summary}: ${count} problem${count === 1 ? '' : 's'}`
  await context.stdout.write([
    head,
    ...validation.problems.map((problem) => `  ${problemLine(problem)}`),
    ...validation.warnings.map((warning) => `  warning: ${problemLine(warning)}`),
    '',
  ].join('\n'))
}

export const validateCommand = defineOperandCommand({
  name: 'validate',
  summary: 'check a .mem bundle, log snapshot or PAM artifact without importing it',
  synopsis: 'validate <path> [--format mem|log|pam] [--trusted-key HEX]... [--json]',
  description: `
Checks the bundle at <path> as \`cairn import\` would, without a home and without writing
anything. The format is detected as import detects it, or given with --format.
  mem  the manifest, every file's size and checksum, CHECKSUMS, every line of every file,
       with --trusted-key a manifest signature by one of the keys, then every record as
       the import would write it (ids, fields, repeated ids), so what passes imports
  log  every event: its id, body, chain, signature, clock and grants, replayed in a scratch store
  pam  its structure, then the three phases: entry hashes, the provenance DAG, and the root
       hash and signature, which must verify under a --trusted-key (the PAM spec accepts no
       artifact without a trusted key)

Exits 0 when the bundle is valid, printing what it holds. Otherwise exits 1, lists every
problem on stdout as "file:line: CODE: message" and names the first on stderr
(INVALID_BUNDLE). With --json it prints one object: {"format", "path", "valid",
"problems": [{"code", "message", "file"?, "line"?, "path"?}], "warnings", …}.`,
  operands: [{ name: 'path', description: 'the bundle: a directory, or a .pam / .pam.cbor file', required: true }],
  flags: {
    format: FORMAT_FLAG,
    'trusted-key': TRUSTED_KEY_FLAG,
    json: JSON_FLAG,
  },
  async run(flags, operands, context) {
    const source = bundlePath(context.cwd, operands.path as string)
    const given = formatFlag(flags.format)
    const trustedKeys = trustedKeysFlag(flags['trusted-key'])
    if (given === 'log' && trustedKeys.length > 0) {
      throw usageError('CONFLICTING_FLAGS', 'a log snapshot is authenticated by its events\' signatures; --trusted-key is for .mem and PAM bundles', { flag: '--trusted-key' })
    }
    const format = await formatOf(source, given)
    if (format === 'log' && trustedKeys.length > 0) {
      throw usageError('CONFLICTING_FLAGS', `${source.given} is a log snapshot, authenticated by its events' signatures; --trusted-key is for .mem and PAM bundles`, { flag: '--trusted-key' })
    }
    const validation = await validateBundle(source, format, trustedKeys, BundleProgress.for('validate', context))
    await printValidation(validation, source, flags.json, context)
    if (validation.valid) return EXIT_OK
    const first = validation.problems[0]
    const more = validation.problems.length > 1 ? `; ${validation.problems.length} problems in all` : ''
    await context.stderr.write(`cairn: INVALID_BUNDLE: ${first ? problemLine(first) : 'the bundle is not valid'}${more}\n`)
    return EXIT_FAILURE
  },
})

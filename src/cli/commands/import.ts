/**
 * `cairn import <path>`: brings a `.mem` bundle, a log snapshot, a PAM artifact (the format
 * detected from the path unless --format says) or, with --from, another system's export (a
 * file, a folder, or a zip archive of one) into this home through `memory.import`, and prints what was written by kind, what was already
 * here, what was blocked by a deletion, and the warnings.
 *
 * Invariants: flags are checked and the format detected before the store is opened; the
 * library checks the whole input (checksums, signatures against --trusted-key, every line)
 * before the first write, so a bad file exits 1 naming the file and line and leaves the store
 * exactly as it was. Imported memory is ordinary signed events: it syncs. A stop signal (Ctrl-C)
 * ends the import between two written batches, never inside one, and says how far it got
 * (INTERRUPTED, exit 1): import is idempotent, so running it again finishes it.
 */
import path from 'node:path'
import {
  CairnError, detectBundleFormat, InputError, shortId, SOURCE_NAMES, StorageError,
  type BundleFormat, type ImportOptions, type SourceName,
} from '../../index.js'
import {
  bundlePath, FORMAT_FLAG, formatFlag, sourceFlag, TRUSTED_KEY_FLAG, trustedKeysFlag, type BundlePath,
} from '../bundle-flags.js'
import { statSourcePath } from '../../bundle/source-path.js'
import { restate, withBundleErrors } from '../bundle-errors.js'
import { BundleProgress } from '../bundle-progress.js'
import { describeImport, jsonLine } from '../bundle-report.js'
import { snapshotLines } from '../bundle-validation.js'
import { EXIT_OK, type CliContext } from '../command.js'
import { DIR_FLAG, resolveHomeDir, withMemory } from '../home.js'
import { JSON_FLAG } from '../memory-flags.js'
import { defineOperandCommand } from '../operand-command.js'
import { usageError } from '../operand-args.js'
import { watchForStop } from '../stop-signal.js'

type Target = { readonly from: SourceName; readonly source?: string } | { readonly format: BundleFormat; readonly trustedKeys: readonly string[] }

/** --source: a non-empty name. @throws InputError EMPTY (a usage error) */
function producerFlag(value: string | undefined): string | undefined {
  if (value === undefined) return undefined
  const name = value.trim()
  if (name === '') throw usageError('EMPTY', '--source needs a name (chatgpt, claude, gemini…)', { flag: '--source' })
  return name
}

/** The import's source kind, from the flags and (for bundles) the path; before any store is opened. */
async function targetOf(source: BundlePath, flags: { from: string | undefined; source: string | undefined; format: string | undefined; 'trusted-key': readonly string[] }): Promise<Target> {
  const from = sourceFlag(flags.from)
  const producer = producerFlag(flags.source)
  if (producer !== undefined && from === undefined) throw usageError('CONFLICTING_FLAGS', '--source names who produced another system\'s export; it goes with --from', { flag: '--source' })
  const format = formatFlag(flags.format)
  const trustedKeys = trustedKeysFlag(flags['trusted-key'])
  if (from !== undefined) {
    if (format !== undefined) throw usageError('CONFLICTING_FLAGS', '--from reads another system\'s export; --format is for Cairn bundles', { flag: '--format' })
    if (trustedKeys.length > 0) throw usageError('CONFLICTING_FLAGS', 'other systems\' exports carry no signature; --trusted-key is for .mem and PAM bundles', { flag: '--trusted-key' })
    await statSourcePath(source.resolved, source.given)
    return { from, ...(producer !== undefined ? { source: producer } : {}) }
  }
  const detected = format ?? await withBundleErrors(source, () => detectBundleFormat(source.resolved)).catch((error: unknown) => {
    // Detection names only Cairn's formats; import also reads other systems' exports.
    if (!(error instanceof InputError) || error.code !== 'UNKNOWN_FORMAT') throw error
    throw restate(error, error.where, `${error.reason}; for another system's export, name it with --from`)
  })
  if (detected === 'log' && trustedKeys.length > 0) {
    throw usageError('CONFLICTING_FLAGS', 'a log snapshot is authenticated by its events\' signatures and the space\'s grants; --trusted-key is for .mem and PAM bundles', { flag: '--trusted-key' })
  }
  return { format: detected, trustedKeys }
}

/**
 * The library's progress callbacks, reporting to `progress`. Once `isStopRequested`, the write
 * phase's callback throws INTERRUPTED: the library calls it between batches (before the first
 * and after each), so the import ends with every batch it began written whole. A stop during
 * the check phase waits for that first call, before anything is written.
 */
function optionsOf(target: Target, progress: BundleProgress, isStopRequested: () => boolean): ImportOptions {
  const verify = { label: 'checking', unit: 'bytes' } as const
  const check = { label: 'checking records', unit: 'records' } as const
  const writing = 'from' in target || target.format !== 'log' ? { label: 'writing', unit: 'records' } as const : { label: 'applying', unit: 'events' } as const
  const onWrite = (done: number, total: number): void => {
    progress.update(writing, done, total)
    if (isStopRequested() && done < total) {
      throw new StorageError('INTERRUPTED', `import stopped after ${done} of ${total} ${writing.unit}; what was written is kept, run the same import again to finish`)
    }
  }
  if ('from' in target) return { from: target.from, ...(target.source !== undefined ? { source: target.source } : {}), onProgress: (_phase, done, total) => onWrite(done, total) }
  return {
    format: target.format,
    ...(target.trustedKeys.length > 0 ? { trustedKeys: target.trustedKeys } : {}),
    onProgress: (phase, done, total) => (phase === 'import' ? onWrite(done, total) : progress.update(phase === 'verify' ? verify : check, done, total)),
  }
}

/**
 * Points a refusal at what to fix: a snapshot's bad event at its line in events.jsonl, and a
 * PAM signature refused without --trusted-key at the flag that would admit it.
 */
async function explainRefusal(error: unknown, source: BundlePath, target: Target): Promise<unknown> {
  if (!(error instanceof CairnError) || 'from' in target) return error
  if (target.format === 'log' && error.where.event !== undefined && error.where.file === undefined) {
    const line = (await snapshotLines(source.resolved)).get(error.where.event)
    const where = { file: path.join(source.given, 'events.jsonl'), ...(line !== undefined ? { line } : {}) }
    return restate(error, where, `${error.reason} (event ${shortId(error.where.event)})`)
  }
  if (target.format === 'pam' && error.code === 'PAM_INVALID_SIGNATURE' && target.trustedKeys.length === 0) {
    const hint = 'without --trusted-key only the keys that may write this space are trusted; give the signer\'s key with --trusted-key'
    return restate(error, error.where, `${error.reason}; ${hint}`)
  }
  return error
}

async function runImport(source: BundlePath, target: Target, dir: string, isJson: boolean, context: CliContext): Promise<number> {
  const progress = BundleProgress.for('import', context)
  const stop = watchForStop(context)
  let isStopRequested = false
  void stop.stopped.then(() => { isStopRequested = true })
  try {
    return await withMemory(dir, { create: false }, async (memory) => {
      const report = await withBundleErrors(source, () => memory.import(source.resolved, optionsOf(target, progress, () => isStopRequested)))
        .catch(async (error: unknown) => { throw await explainRefusal(error, source, target) })
      const described = describeImport(report, source)
      await context.stdout.write(isJson ? jsonLine(described.json) : described.text)
      return EXIT_OK
    })
  } finally {
    stop.dispose()
  }
}

export const importCommand = defineOperandCommand({
  name: 'import',
  summary: 'bring a .mem bundle, log snapshot, PAM artifact or another system\'s export into this home',
  synopsis: 'import <path> [--format mem|log|pam] [--trusted-key HEX]... [--from SOURCE [--source NAME]] [--dir D] [--json]',
  description: `
Reads <path> and merges it into this home as ordinary signed events (so it syncs). The format
is detected: a .pam or .pam.cbor file is a PAM artifact, a directory whose manifest.json says
"cairn-log" a log snapshot, any other directory with a manifest.json a .mem bundle; --format
says it outright. With --from SOURCE, <path> is another system's export instead, read by its
adapter: ${SOURCE_NAMES.join(', ')}. --source NAME says who produced such an export when it does
not say itself (a transfer text from chatgpt, claude, gemini…: the episodes' transfer_source).
An export of which the adapter skipped every entry is refused with NOTHING_RECOGNIZED (exit 1):
most likely --from names the wrong system. One with no entries at all imports nothing.

Everything is checked before anything is written: checksums, sizes, every line, and signatures.
With --trusted-key (repeatable), a .mem bundle must carry a manifest signature by one of the
keys and a PAM artifact must be signed by one; without it, a PAM artifact is accepted only from
a key that may already write this space. A log snapshot must be of this home's space (a
replica made by \`cairn init --space S\`); its events keep their authors and signatures.

Deletions apply first and nothing deleted here comes back; importing the same thing again
writes nothing. Prints the records written by kind, how many were already held (unchanged) or
blocked by a deletion, and the warnings (with --json one object: {"format", "path",
"imported", "unchanged", "blocked", "warnings", …}). A long import reports its progress on
stderr. A bad input exits 1 naming the file and line, and the home is left unchanged. Ctrl-C
stops a long import between two batches of writes (INTERRUPTED, exit 1): what was written is
kept, and running the same import again finishes it.`,
  operands: [{ name: 'path', description: 'the bundle (a directory, or a .pam file) or the export to read', required: true }],
  flags: {
    dir: DIR_FLAG,
    format: FORMAT_FLAG,
    'trusted-key': TRUSTED_KEY_FLAG,
    from: { type: 'string', valueName: 'SOURCE', description: `read another system's export: ${SOURCE_NAMES.join(', ')}` },
    source: { type: 'string', valueName: 'NAME', description: 'with --from: who produced the export (transfer text: chatgpt, claude, gemini…)' },
    json: JSON_FLAG,
  },
  async run(flags, operands, context) {
    const source = bundlePath(context.cwd, operands.path as string)
    const target = await targetOf(source, flags)
    return runImport(source, target, resolveHomeDir(context.cwd, flags.dir), flags.json, context)
  },
})

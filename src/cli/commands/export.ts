/**
 * `cairn export <out>`: writes this home's memory through `memory.export`, as a Portable Memory
 * `.mem` directory (default), a native log snapshot (every signed event) or a signed PAM
 * artifact, and prints a one-line summary.
 *
 * Invariants: every flag is checked, and every flag that does not apply to the format refused,
 * before the store is opened; the library writes the bundle whole or not at all and never into
 * an existing target, so a failed export leaves nothing behind and the home unchanged (an export
 * only reads it). Progress goes to stderr, only for a run that lasts (bundle-progress.ts).
 */
import type { BundleFormat, ExportOptions } from '../../index.js'
import { bundlePath, FORMAT_FLAG, formatFlag, isPamName, sinceFlag } from '../bundle-flags.js'
import { withBundleErrors } from '../bundle-errors.js'
import { BundleProgress, type ProgressPhase } from '../bundle-progress.js'
import { describeExport, jsonLine } from '../bundle-report.js'
import { EXIT_OK } from '../command.js'
import { DIR_FLAG, resolveHomeDir, withMemory } from '../home.js'
import { JSON_FLAG } from '../memory-flags.js'
import { defineOperandCommand } from '../operand-command.js'
import { usageError } from '../operand-args.js'

interface ExportFlags {
  readonly since: string | undefined
  readonly sign: boolean
  readonly audit: boolean
  readonly 'evidence-pack': boolean
  readonly cbor: boolean
}

/** Flags the format has no use for are refused by name rather than ignored. */
function checkApplies(format: BundleFormat, flags: ExportFlags): void {
  const refuse = (flag: string, why: string) => usageError('CONFLICTING_FLAGS', why, { flag })
  if (flags.cbor && format !== 'pam') throw refuse('--cbor', 'CBOR is an encoding of PAM artifacts; add --format pam')
  if (format === 'log') {
    if (flags.since !== undefined) throw refuse('--since', 'a log snapshot holds every signed event; it has no incremental form')
    if (flags.sign) throw refuse('--sign', 'a log snapshot is authenticated by the signatures of its events; --sign is for .mem bundles')
    if (flags.audit) throw refuse('--audit', 'a log snapshot is the full history already; --audit is for .mem bundles')
    if (flags['evidence-pack']) throw refuse('--evidence-pack', 'a log snapshot is the full history already; --evidence-pack is for .mem bundles')
  }
  if (format === 'pam') {
    if (flags.since !== undefined) throw refuse('--since', 'a PAM artifact is always a full export')
    if (flags.audit) throw refuse('--audit', 'a PAM artifact has no audit trail; --audit is for .mem bundles')
    if (flags['evidence-pack']) throw refuse('--evidence-pack', 'a PAM artifact carries its provenance in its DAG; --evidence-pack is for .mem bundles')
  }
}

const PHASES: Readonly<Record<BundleFormat, ProgressPhase>> = {
  mem: { label: 'writing', unit: 'records' },
  log: { label: 'writing', unit: 'events' },
  pam: { label: 'writing', unit: 'records' },
}

export const exportCommand = defineOperandCommand({
  name: 'export',
  summary: 'write this home\'s memory to a .mem bundle, a log snapshot or a PAM artifact',
  synopsis: 'export <out> [--format mem|log|pam] [--since T] [--sign] [--audit] [--evidence-pack] [--cbor] [--dir D] [--json]',
  description: `
Writes the memory this home shows to <out>, whole or not at all; <out> must not exist (or be an
empty directory). Formats:
  mem  a Portable Memory .mem directory: records, tombstones, CHECKSUMS (the default)
  log  a native log snapshot: every signed event, verifiable offline, importable by a replica
       of the same space with authors and signatures intact
  pam  a PAM artifact signed by this home's key, one file: JSON, or deterministic CBOR with
       --cbor or a name ending in .cbor (pam is the default when <out> ends in .pam or .pam.cbor)
--since T (mem) writes an incremental bundle: the records created at or after T (episodes by
ingestionTime, facts by createdAt, resources by created, as Portable Memory has it), every record
this home saw change at or after T, tombstones from T on, and the kinds that carry no time
(entities, preferences, ...) whole, as the format asks. An import merges it, so a field or tag
removed since T stays on a restored copy (a newer full export, or --format log, keeps removals).
--sign (mem) signs the manifest with this home's key, so \`cairn import --trusted-key KEY\` can
insist on it; --audit (mem) adds the audit trail (it names every author's key); --evidence-pack
(mem) adds the audit trail and provenance/edges.jsonl (with --sign, the bundle claims
conformance L3).

Prints one line: what was written, how much, and where (with --json one object: {"format",
"path", "records", …} per format), then one line per record left out: in mem, a record no
Portable Memory line or Cairn import can take (a peer's raw event of the wrong shape), with the
field refused; in pam, a record PAM has no place for, one an import would refuse, or a redacted
one (PAM carries no tombstones). A long export reports its progress on stderr. Exits 1 with
TARGET_EXISTS, TARGET_NOT_EMPTY or NOT_EMPTY when <out> holds something.`,
  operands: [{ name: 'out', description: 'where to write: a directory (mem, log) or a file (pam)', required: true }],
  flags: {
    dir: DIR_FLAG,
    format: FORMAT_FLAG,
    since: { type: 'string', valueName: 'T', description: 'mem: an incremental bundle from T on (RFC 3339)' },
    sign: { type: 'boolean', description: 'mem: sign the manifest with this home\'s key (PAM is always signed)' },
    audit: { type: 'boolean', description: 'mem: add the audit trail, one row per change' },
    'evidence-pack': { type: 'boolean', description: 'mem: add the Evidence Pack (audit trail and provenance edges)' },
    cbor: { type: 'boolean', description: 'pam: write deterministic CBOR (.pam.cbor) instead of JSON' },
    json: JSON_FLAG,
  },
  async run(flags, operands, context) {
    const out = bundlePath(context.cwd, operands.out as string)
    const format = formatFlag(flags.format) ?? (isPamName(out.given) ? 'pam' : 'mem')
    checkApplies(format, flags)
    const since = sinceFlag(flags.since)
    const progress = BundleProgress.for('export', context)
    const options: ExportOptions = {
      format,
      ...(since !== undefined ? { since } : {}),
      ...(flags.sign && format === 'mem' ? { sign: true } : {}),
      ...(flags.audit ? { audit: true } : {}),
      ...(flags['evidence-pack'] ? { evidencePack: true } : {}),
      ...(flags.cbor ? { cbor: true } : {}),
      onProgress: progress.phase(PHASES[format]),
    }
    const dir = resolveHomeDir(context.cwd, flags.dir)
    return withMemory(dir, { create: false }, async (memory) => {
      const result = await withBundleErrors(out, () => memory.export(out.resolved, options))
      const isCbor = flags.cbor || /\.cbor$/i.test(out.given)
      const described = describeExport(result, out, { signer: memory.author, isCbor })
      await context.stdout.write(flags.json ? jsonLine(described.json) : described.text)
      return EXIT_OK
    })
  },
})

/**
 * What `cairn validate` checks, per format, without a store: a `.mem` bundle through
 * `validateAndReadMemBundle` (every file, line, checksum, and the signature when keys are given), a log
 * snapshot through `verifyLogSnapshot` (every id, chain, signature and grant, in a scratch
 * store), a PAM artifact through `decodePam` and `verifyPam` (structure, then hashes, DAG and
 * signature). Each becomes one list of problems naming the file (under the path the user gave),
 * the line when known, the code and the message. A `.mem` bundle's Cairn extensions file
 * (`items/cairnExtensions.jsonl`), which other readers keep as an unknown kind, is checked as
 * Cairn's import checks it, so `validate` accepts exactly what `import` would.
 *
 * Invariant: a bad bundle is a value here (`valid: false` with every problem the library
 * reports), never a throw; only a path that cannot be read at all throws.
 */
import { promises as fs } from 'node:fs'
import path from 'node:path'
import {
  CairnError, decodePam, MAX_PAM_BYTES, PAM_MAGIC, PAM_PHASE_NAMES, readLogSnapshot, shortId, verifyLogSnapshot, verifyPam,
  type BundleFormat, type JsonValue, type PamArtifact, type VerifyReport,
} from '../index.js'
import { CAIRN_EXTENSIONS_KIND } from '../bundle/cairn-extensions.js'
import { SIGNATURE_REMOVED, validateAndReadMemBundle } from '../bundle/mem/index.js'
import { planMemImport } from '../bundle/mem-import.js'
import type { MemProblem, RecordFilesReadResult } from '../bundle/mem/index.js'
import { COUNT_KEY_AUDIT, COUNT_KEY_PROVENANCE_EDGE, COUNT_KEY_TOMBSTONE } from '../bundle/mem/layout.js'
import { isRecordKind } from '../projection/index.js'
import type { BundlePath } from './bundle-flags.js'
import { displayFile } from './bundle-errors.js'
import { fromMemProblem, type BundleProblem } from './bundle-problems.js'
import { plural } from './sync-report.js'
import type { BundleProgress } from './bundle-progress.js'

export interface BundleValidation {
  readonly format: BundleFormat
  readonly valid: boolean
  readonly problems: readonly BundleProblem[]
  readonly warnings: readonly BundleProblem[]
  /** What the bundle holds, for people: "4 records, 1 tombstone, 1 vendor line, full export, L2, unsigned". */
  readonly summary: string
  /** The same for programs. */
  readonly details: { readonly [key: string]: JsonValue }
}


async function validateMem(bundle: BundlePath, trustedKeys: readonly string[], progress: BundleProgress): Promise<BundleValidation> {
  const { report, read } = await validateAndReadMemBundle(bundle.resolved, {
    ...(trustedKeys.length > 0 ? { trustedKeys } : {}),
    onProgress: progress.phase({ label: 'checking', unit: 'bytes' }),
  })
  const manifest = report.manifest
  const extensions = read !== undefined ? checkImportable(bundle, read, progress) : { problems: [], warnings: [] }
  // What the bundle holds, as read; the manifest's counts only when it could not be read (a
  // difference between the two is a COUNT_MISMATCH warning).
  const held = heldBy(read !== undefined ? countsRead(read) : Object.entries(manifest?.counts ?? {}))
  // Cairn's extension lines are fields of the records counted, so the summary leaves them out.
  const extras = ([[held.tombstones, 'tombstone'], [held.auditRows, 'audit row'], [held.provenanceEdges, 'provenance edge'], [held.vendorLines, 'vendor line']] as const)
    .filter(([count]) => count > 0).map(([count, noun]) => `, ${plural(count, noun)}`).join('')
  // A bundle says it is signed in its manifest; without manifest.sig it is not.
  const isRemoved = report.warnings.some((warning) => warning.code === SIGNATURE_REMOVED)
  const isSigned = manifest?.capabilities.includes('signed') === true && !isRemoved
  const signature = trustedKeys.length === 0
    ? isSigned ? 'signed (signature not checked: no --trusted-key)' : isRemoved ? 'unsigned (manifest.sig is missing, though the manifest says signed)' : 'unsigned'
    : report.valid ? 'signed by a trusted key' : isSigned ? 'signed' : 'unsigned'
  return {
    format: 'mem',
    valid: report.valid && extensions.problems.length === 0,
    problems: [...report.problems.map((problem) => fromMemProblem(problem, bundle)), ...extensions.problems],
    warnings: [...report.warnings, ...extensions.warnings].map((problem) => fromMemProblem(problem, bundle)),
    summary: manifest === undefined ? '.mem bundle' : `.mem bundle ${manifest.format}, ${plural(held.records, 'record')}${extras}, ${manifest.exportMode} export, ${manifest.conformanceLevel}, ${signature}`,
    details: manifest === undefined ? {} : {
      version: manifest.format, ...held, counts: { ...manifest.counts }, exportMode: manifest.exportMode,
      conformanceLevel: manifest.conformanceLevel, signed: isSigned, signatureChecked: trustedKeys.length > 0,
    },
  }
}

/**
 * The lines a read bundle holds, under the manifest's count keys, as entries (a vendor kind may
 * be named `__proto__`, which an object's key would lose).
 */
function countsRead(read: RecordFilesReadResult): [string, number][] {
  const { passthrough, tombstones, auditLog, provenanceEdges } = read.content
  return [
    ...read.recordFiles.map((file): [string, number] => [file.kind, file.rows]),
    ...Object.entries(passthrough).map(([kind, lines]): [string, number] => [kind, lines.length]),
    [COUNT_KEY_TOMBSTONE, tombstones.length], [COUNT_KEY_AUDIT, auditLog.length], [COUNT_KEY_PROVENANCE_EDGE, provenanceEdges?.length ?? 0],
  ]
}

/** What a bundle's count keys count, by what it is. */
interface HeldLines {
  /** Records of the Portable Memory kinds. */
  records: number
  tombstones: number
  auditRows: number
  provenanceEdges: number
  /** Lines of Cairn's extensions file: tags and contexts of the records above. */
  extensionLines: number
  /** Lines of other vendors' kinds, kept verbatim. */
  vendorLines: number
}

function heldBy(counts: Iterable<readonly [string, number]>): HeldLines {
  const held: HeldLines = { records: 0, tombstones: 0, auditRows: 0, provenanceEdges: 0, extensionLines: 0, vendorLines: 0 }
  for (const [key, count] of counts) {
    if (isRecordKind(key)) held.records += count
    else if (key === COUNT_KEY_TOMBSTONE) held.tombstones += count
    else if (key === COUNT_KEY_AUDIT) held.auditRows += count
    else if (key === COUNT_KEY_PROVENANCE_EDGE) held.provenanceEdges += count
    else if (key === CAIRN_EXTENSIONS_KIND) held.extensionLines += count
    else held.vendorLines += count
  }
  return held
}

/**
 * A `.mem` bundle whose bytes already checked out, taken as import takes it (from the same read):
 * Cairn's extensions put back and every record checked as the merge would write it, so a bundle
 * `validate` passes imports. The first record refused is the problem (import stops there too).
 */
function checkImportable(bundle: BundlePath, read: RecordFilesReadResult, progress: BundleProgress): { problems: BundleProblem[]; warnings: MemProblem[] } {
  try {
    const plan = planMemImport(read, progress.phase({ label: 'checking records', unit: 'records' }))
    return { problems: [], warnings: [...plan.extensionWarnings] }
  } catch (error) {
    if (!(error instanceof CairnError)) throw error
    const { file, line, field } = error.where
    return {
      problems: [{ code: error.code, message: error.reason, ...(file !== undefined ? { file: displayFile(file, bundle) } : {}), ...(line !== undefined ? { line } : {}), ...(field !== undefined ? { path: `$.${field}` } : {}) }],
      warnings: [],
    }
  }
}

/** The line of each event in a snapshot's events.jsonl, by id; empty when the file cannot be read. */
export async function snapshotLines(dir: string): Promise<ReadonlyMap<string, number>> {
  try {
    const { envelopes } = await readLogSnapshot(dir)
    return new Map(envelopes.map((envelope, index) => [envelope.id, index + 1]))
  } catch {
    return new Map()
  }
}

async function validateLog(bundle: BundlePath): Promise<BundleValidation> {
  const eventsFile = path.join(bundle.given, 'events.jsonl')
  // Read again only when something is wrong, and then once: a valid snapshot is read once.
  let lines: Promise<ReadonlyMap<string, number>> | undefined
  const locate = async (event: string | undefined): Promise<Pick<BundleProblem, 'file' | 'line'>> => {
    const line = event === undefined ? undefined : (await (lines ??= snapshotLines(bundle.resolved))).get(event)
    return { file: eventsFile, ...(line !== undefined ? { line } : {}) }
  }
  let report: VerifyReport
  try {
    report = await verifyLogSnapshot(bundle.resolved)
  } catch (error) {
    if (!(error instanceof CairnError)) throw error
    const where = error.where.file !== undefined
      ? { file: displayFile(error.where.file, bundle), ...(error.where.line !== undefined ? { line: error.where.line } : {}) }
      : await locate(error.where.event)
    const event = error.where.event !== undefined ? ` (event ${shortId(error.where.event)})` : ''
    return { format: 'log', valid: false, problems: [{ code: error.code, message: `${error.reason}${event}`, ...where }], warnings: [], summary: 'log snapshot', details: {} }
  }
  const problems: BundleProblem[] = []
  for (const problem of report.problems) {
    const event = problem.event !== undefined ? ` (event ${shortId(problem.event)})` : ''
    problems.push({ code: problem.code, message: `${problem.message}${event}`, ...(await locate(problem.event)) })
  }
  return {
    format: 'log',
    valid: report.ok,
    problems,
    warnings: [],
    summary: `log snapshot of space ${shortId(report.space)}, ${plural(report.events, 'event')} by ${plural(report.authors, 'author')}, ${plural(report.signatures, 'signature')}`,
    details: { space: report.space, events: report.events, authors: report.authors, signatures: report.signatures },
  }
}

async function validatePam(bundle: BundlePath, trustedKeys: readonly string[], progress: BundleProgress): Promise<BundleValidation> {
  const file = bundle.given
  const invalid = (problems: BundleProblem[]): BundleValidation => ({ format: 'pam', valid: false, problems, warnings: [], summary: 'PAM artifact', details: {} })
  const info = await fs.stat(bundle.resolved)
  if (!info.isFile()) return invalid([{ code: 'NOT_A_FILE', message: 'a PAM artifact is one .pam or .pam.cbor file', file }])
  if (info.size > MAX_PAM_BYTES) return invalid([{ code: 'FILE_TOO_LARGE', message: `${info.size} bytes, over ${MAX_PAM_BYTES}`, file }])
  const phase = progress.phase({ label: 'checking', unit: 'bytes' })
  phase(0, info.size)
  const bytes = new Uint8Array(await fs.readFile(bundle.resolved))
  const encoding = PAM_MAGIC.every((byte, i) => bytes[i] === byte) ? 'CBOR' : 'JSON'
  let artifact: PamArtifact
  try {
    artifact = decodePam(bytes)
  } catch (error) {
    if (!(error instanceof CairnError)) throw error
    return invalid([{ code: error.code, message: error.reason, file, ...(error.where.path !== undefined ? { path: error.where.path } : {}) }])
  }
  const report = verifyPam(artifact, { trustedKeys })
  phase(info.size, info.size)
  if (report.ok) {
    return {
      format: 'pam', valid: true, problems: [], warnings: [],
      summary: `PAM artifact (${encoding}), ${report.entryCount} PAM ${report.entryCount === 1 ? 'entry' : 'entries'}, signed by trusted key ${shortId(report.signer)}`,
      details: { entries: report.entryCount, signer: report.signer, rootHash: report.rootHash },
    }
  }
  const noKeys = trustedKeys.length === 0 ? '; give the signer\'s key with --trusted-key' : ''
  const problems: BundleProblem[] = report.problems.map((problem) => ({
    code: problem.code,
    message: `phase ${problem.phase} (${PAM_PHASE_NAMES[problem.phase]}): ${problem.reason}${problem.code === 'PAM_INVALID_SIGNATURE' ? noKeys : ''}`,
    file,
    path: problem.path,
  }))
  if (report.omitted > 0) problems.push({ code: 'TOO_MANY_PROBLEMS', message: `${report.omitted} more problem${report.omitted === 1 ? ' was' : 's were'} not listed`, file })
  return invalid(problems)
}

/**
 * Validates the bundle at `bundle` as `format`.
 * @param trustedKeys `.mem`: when given, a valid `manifest.sig` by one of them is required; PAM:
 *   the keys whose signature is accepted (none: no artifact is accepted, as the PAM spec says)
 * @throws only when the path cannot be read at all (the file system's error; the command checks
 *   that it exists first)
 */
export function validateBundle(bundle: BundlePath, format: BundleFormat, trustedKeys: readonly string[], progress: BundleProgress): Promise<BundleValidation> {
  if (format === 'mem') return validateMem(bundle, trustedKeys, progress)
  if (format === 'log') return validateLog(bundle)
  return validatePam(bundle, trustedKeys, progress)
}

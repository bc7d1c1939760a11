/**
 * `cairn verify`: re-checks everything the home's log holds (ids, bodies, chains, signatures,
 * clocks, grants, the log's own indexes) through `SpaceLog.verify`, trusting none of it; with
 * `--projection`, also the records and indexes derived from it (`Memory.checkProjection`).
 *
 * Invariant: exit 0 only when every report is ok; otherwise exit 1 with the first bad event
 * (or the projection's difference) named on stderr (the report lists problems in apply order,
 * so the first is the earliest damage), and every problem listed on stdout.
 */
import { canonicalJson, shortId, type JsonObject, type ProjectionCheck, type VerifyProblem, type VerifyReport } from '../../index.js'
import { BundleProgress } from '../bundle-progress.js'
import { defineCommand, EXIT_FAILURE, EXIT_OK, type CliContext } from '../command.js'
import { DIR_FLAG, resolveHomeDir, withHome, withMemory } from '../home.js'

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`
}

function summarize(report: VerifyReport): string {
  return [
    plural(report.events, 'event'), plural(report.authors, 'author'), plural(report.signatures, 'signature'),
    `${report.erasedBodies} erased bod${report.erasedBodies === 1 ? 'y' : 'ies'}`, `${report.heldEvents} held`,
  ].join(', ')
}

function describeProblem(problem: VerifyProblem): string {
  const where = [
    problem.event !== undefined ? `event ${shortId(problem.event)}` : undefined,
    problem.author !== undefined ? `author ${shortId(problem.author)}` : undefined,
    problem.seq !== undefined ? `seq ${problem.seq}` : undefined,
  ].filter((part) => part !== undefined).join(', ')
  return `  ${problem.code}: ${problem.message}${where ? ` (${where})` : ''}`
}

/** The line a script greps for: the first problem that names an event, in full. */
function firstBadEventLine(report: VerifyReport): string {
  const first = report.problems.find((problem) => problem.event !== undefined) ?? report.problems[0]
  const count = plural(report.problems.length, 'problem')
  if (!first) return `cairn: VERIFY_FAILED: verification failed (space ${report.space})\n`
  const subject = first.event !== undefined ? `first bad event ${first.event}` : 'first problem'
  return `cairn: VERIFY_FAILED: ${subject}: ${first.code}: ${first.message}; ${count} in all\n`
}

function jsonOf(check: ProjectionCheck): JsonObject {
  return {
    ok: check.ok, events: check.events, keys: check.keys, differences: check.differences,
    named: check.named.map((difference) => ({ ...difference })), digest: { ...check.digest },
  }
}

async function printReport(report: VerifyReport, isJson: boolean, context: CliContext, projection?: ProjectionCheck): Promise<void> {
  if (isJson) {
    // `ok` covers everything checked: a script reading it sees a projection that differs too.
    const json = { ...report, ok: report.ok && (projection?.ok ?? true), problems: report.problems.map((problem) => ({ ...problem })), ...(projection ? { projection: jsonOf(projection) } : {}) }
    await context.stdout.write(`${canonicalJson(json)}\n`)
    return
  }
  if (report.ok) {
    await context.stdout.write(`ok: space ${shortId(report.space)} verified: ${summarize(report)}\n`)
    return
  }
  await context.stdout.write([
    `FAILED: space ${shortId(report.space)}: ${plural(report.problems.length, 'problem')} in ${plural(report.events, 'event')} checked`,
    ...report.problems.map(describeProblem),
    '',
  ].join('\n'))
}

async function printProjection(check: ProjectionCheck, context: CliContext): Promise<void> {
  if (check.ok) {
    await context.stdout.write(`ok: the records and indexes are what the log gives: ${plural(check.keys, 'key')} compared, digest ${shortId(check.digest.stored)}\n`)
    return
  }
  const digest = check.digest.stored === check.digest.derived ? 'the digest agrees' : `digest ${shortId(check.digest.stored)}, the log gives ${shortId(check.digest.derived)}`
  await context.stdout.write([
    `FAILED: the records and indexes differ from what the log gives: ${check.differences} of ${plural(check.keys, 'key')} (${digest})`,
    ...check.named.map((difference) => `  ${difference.change}: ${difference.key}${difference.record !== undefined ? ` (record ${difference.record})` : ''}`),
    ...(check.differences > check.named.length ? [`  … and ${check.differences - check.named.length} more`] : []),
    '',
  ].join('\n'))
}

export const verifyCommand = defineCommand({
  name: 'verify',
  summary: 'check every chain, signature, body and grant in the store',
  synopsis: 'verify [--dir D] [--projection] [--json]',
  description: `
Re-reads every stored event and checks its id against its header bytes, its body against the
header's hash, every stored signature, each author's hash chain up to a signed event, clocks,
and each event's authorization by the grants in its causal past; then the log's own indexes
(runs, order, vectors). Exits 0 when everything holds. Otherwise exits 1, lists the problems in
apply order, and names the first bad event on stderr. A store that holds nothing of the space
(not even its genesis) also exits 1 (EMPTY_STORE): there was nothing to verify.

With --projection, once the log holds, it also checks what \`get\`, \`query\`, \`search\` and
\`history\` read: the records and indexes are derived again from the log in a temporary store
(nothing is written here; it costs about what \`cairn rebuild\` does) and compared with the
stored ones key by key; a long check reports its progress on stderr. Any difference exits 1
(PROJECTION_MISMATCH), naming the first keys and their records; \`cairn rebuild\` repairs them.
A store written by an older version may differ in form only; a rebuild rewrites it too.

With --json it prints the report as one object ("ok" covers the projection too, when checked):
{"ok", "space", "events", "authors", "signatures", "erasedBodies", "heldEvents",
"problems": [{"code", "message", "event"?, "author"?, "seq"?}], "projection"?: {"ok", "events",
"keys", "differences", "named": [{"key", "change", "record"?}], "digest": {"stored", "derived"}}}.`,
  flags: {
    dir: DIR_FLAG,
    projection: { type: 'boolean', description: 'also check the records and indexes against the log' },
    json: { type: 'boolean', description: 'print the report as JSON' },
  },
  async run(flags, context) {
    const dir = resolveHomeDir(context.cwd, flags.dir)
    const { report, hasGenesis, projection } = flags.projection
      ? await withMemory(dir, { create: false }, async (memory) => {
        const report = await memory.log.verify()
        // A projection derived from a damaged log proves nothing: checked only once the log holds.
        const onProgress = BundleProgress.for('verify', context).phase({ label: 'deriving the records again', unit: 'events' })
        return { report, hasGenesis: memory.log.hasGenesis, projection: report.ok && memory.log.hasGenesis ? await memory.checkProjection({ onProgress }) : undefined }
      })
      : { ...await withHome(dir, async ({ log }) => ({ report: await log.verify(), hasGenesis: log.hasGenesis })), projection: undefined }
    await printReport(report, flags.json, context, projection)
    if (!report.ok) {
      await context.stderr.write(firstBadEventLine(report))
      return EXIT_FAILURE
    }
    // An empty store verifies vacuously; saying "ok" would hide a lost or replaced store.
    if (!hasGenesis) {
      await context.stderr.write(`cairn: EMPTY_STORE: the store holds no events of space ${report.space}, so nothing was verified (an unsynced replica, or a lost store)\n`)
      return EXIT_FAILURE
    }
    if (projection) {
      if (!flags.json) await printProjection(projection, context)
      if (!projection.ok) {
        const first = projection.named[0]
        const where = first ? `; first: ${first.change} ${first.key}${first.record !== undefined ? ` (record ${first.record})` : ''}` : ''
        await context.stderr.write(`cairn: PROJECTION_MISMATCH: the records and indexes differ from what the log gives in ${plural(projection.differences, 'key')}${where}; \`cairn rebuild\` derives them again\n`)
        return EXIT_FAILURE
      }
    }
    return EXIT_OK
  },
})

/**
 * `cairn verify`: re-checks everything the home's store holds (ids, bodies, chains,
 * signatures, clocks, grants, indexes) through `SpaceLog.verify`, trusting none of it.
 *
 * Invariant: exit 0 only when the report is ok; otherwise exit 1 with the first bad event
 * named in full on stderr (the report lists problems in apply order, so the first is the
 * earliest damage), and every problem listed on stdout.
 */
import { canonicalJson, shortId, type VerifyProblem, type VerifyReport } from '../../index.js'
import { defineCommand, EXIT_FAILURE, EXIT_OK, type CliContext } from '../command.js'
import { DIR_FLAG, resolveHomeDir, withHome } from '../home.js'

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

async function printReport(report: VerifyReport, isJson: boolean, context: CliContext): Promise<void> {
  if (isJson) {
    await context.stdout.write(`${canonicalJson({ ...report, problems: report.problems.map((problem) => ({ ...problem })) })}\n`)
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

export const verifyCommand = defineCommand({
  name: 'verify',
  summary: 'check every chain, signature, body and grant in the store',
  synopsis: 'verify [--dir D] [--json]',
  description: `
Re-reads every stored event and checks its id against its header bytes, its body against the
header's hash, every stored signature, each author's hash chain up to a signed event, clocks,
and each event's authorization by the grants in its causal past; then the store's indexes.
Exits 0 when everything holds. Otherwise exits 1, lists the problems in apply order, and
names the first bad event on stderr. A store that holds nothing of the space (not even its
genesis) also exits 1 (EMPTY_STORE): there was nothing to verify. With --json it prints the report as one object:
{"ok", "space", "events", "authors", "signatures", "erasedBodies", "heldEvents",
"problems": [{"code", "message", "event"?, "author"?, "seq"?}]}.`,
  flags: {
    dir: DIR_FLAG,
    json: { type: 'boolean', description: 'print the report as JSON' },
  },
  async run(flags, context) {
    const dir = resolveHomeDir(context.cwd, flags.dir)
    const { report, hasGenesis } = await withHome(dir, async ({ log }) => ({ report: await log.verify(), hasGenesis: log.hasGenesis }))
    await printReport(report, flags.json, context)
    if (!report.ok) {
      await context.stderr.write(firstBadEventLine(report))
      return EXIT_FAILURE
    }
    // An empty store verifies vacuously; saying "ok" would hide a lost or replaced store.
    if (!hasGenesis) {
      await context.stderr.write(`cairn: EMPTY_STORE: the store holds no events of space ${report.space}, so nothing was verified (an unsynced replica, or a lost store)\n`)
      return EXIT_FAILURE
    }
    return EXIT_OK
  },
})

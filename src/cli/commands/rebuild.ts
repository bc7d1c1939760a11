/**
 * `cairn rebuild`: derives this home's records and indexes again from its log
 * (Memory.rebuild), and says whether they differed from what the log gives. `verify` checks
 * the log; this repairs what is derived from it (a store damaged below the log, a bug fixed
 * since the records were written).
 *
 * Invariant: the log is only read. The rebuild names itself in the projection's meta until it is
 * done, so one cut short (Ctrl-C, a crash) is done again when the home next opens.
 */
import { canonicalJson, shortId } from '../../index.js'
import { BundleProgress } from '../bundle-progress.js'
import { defineCommand, EXIT_OK } from '../command.js'
import { DIR_FLAG, resolveHomeDir, withMemory } from '../home.js'
import { JSON_FLAG } from '../memory-flags.js'

/** How often the progress line is refreshed from the projection's position in the log. */
const POLL_MS = 250

export const rebuildCommand = defineCommand({
  name: 'rebuild',
  summary: 'derive the records and indexes again from the log',
  synopsis: 'rebuild [--dir D] [--json]',
  description: `
Drops this home's records, indexes and search index and applies its log again from the first
event, as a new replica would. The log is only read. Prints how many events were applied and
records shown, and whether the records had differed from what the log gives (the digest of
records and tombstones before and after; indexes and the search index are rebuilt either
way); with --json {"space", "events", "records", "digestBefore", "digestAfter",
"changed"}. A long rebuild reports its progress on stderr. One cut short is done again when the
home next opens. \`cairn verify\` checks the log itself.`,
  flags: {
    dir: DIR_FLAG,
    json: JSON_FLAG,
  },
  async run(flags, context) {
    const dir = resolveHomeDir(context.cwd, flags.dir)
    const progress = BundleProgress.for('rebuild', context)
    const summary = await withMemory(dir, { create: false }, async (memory) => {
      const digestBefore = await memory.digest()
      const events = memory.log.appliedCount
      const phase = { label: 'applying', unit: 'events' } as const
      const timer = setInterval(() => progress.update(phase, memory.projectedCount, events), POLL_MS)
      try {
        await memory.rebuild()
      } finally {
        clearInterval(timer)
      }
      progress.update(phase, events, events)
      const digestAfter = await memory.digest()
      return { space: memory.space, events, records: await memory.recordCount(), digestBefore, digestAfter, changed: digestBefore !== digestAfter }
    })
    if (flags.json) {
      await context.stdout.write(`${canonicalJson(summary)}\n`)
      return EXIT_OK
    }
    // The digest covers the records and tombstones; indexes and the search index are rebuilt either way.
    const outcome = summary.changed
      ? `the records differed from what the log gives and are repaired (digest ${shortId(summary.digestBefore)} → ${shortId(summary.digestAfter)}); indexes rebuilt`
      : `the records were already what the log gives (digest ${shortId(summary.digestAfter)}); indexes rebuilt`
    await context.stdout.write(`rebuilt space ${shortId(summary.space)} from ${summary.events} events: ${summary.records} records; ${outcome}\n`)
    return EXIT_OK
  },
})

/**
 * `cairn sync <url>`: syncs the home with a relay through `memory.sync`, once (exit 0 when both
 * sides are caught up) or `--live` (until SIGINT/SIGTERM). Tokens are checked locally before
 * connecting (shape, signature, space, audience, expiry), so the common mistakes are named
 * without a round trip; the relay still decides.
 *
 * Invariants: the store is closed on every path, after the client; a refusal that retrying
 * cannot fix exits 1 with one line naming its code; a one-time sync waits at most --timeout
 * to catch up both ways, then at most --timeout again for what that appended here to be
 * acknowledged; a live one retries for as long as it runs. Events already stored stay stored
 * whenever the command stops: each frame is acknowledged only once it is durable.
 */
import {
  AuthError, CairnError, canonicalJson, ProtocolError, shortId,
  type Memory, type SyncClient, type SyncOptions,
} from '../../index.js'
import { EXIT_OK, type CliContext } from '../command.js'
import { DIR_FLAG, resolveHomeDir, withMemory } from '../home.js'
import { JSON_FLAG } from '../memory-flags.js'
import { defineOperandCommand } from '../operand-command.js'
import { usageError } from '../operand-args.js'
import { progressIntervalMs } from '../bundle-progress.js'
import { watchForStop } from '../stop-signal.js'
import { decodeTokenArgument, hexKey, relayUrlOperand, secondsFlag } from '../sync-flags.js'
import { printable } from '../printable.js'
import { describeWithheld, plural, restateRefusal, SyncProgress, withheldReasonText, type SyncTotals } from '../sync-report.js'

const DEFAULT_TIMEOUT_SECONDS = 30
const PROGRESS_INTERVAL_MS = 1000

const clockTime = (): string => new Date().toISOString().slice(11, 19)

/** Local checks of a token for this replica: the relay would refuse it for the same reasons. */
function checkToken(memory: Memory, token: string): void {
  const where = { flag: '--token' }
  const payload = decodeTokenArgument(token, memory.crypto, where)
  if (payload.space !== memory.space) throw new AuthError('WRONG_SPACE', `the token is for space ${shortId(payload.space)}, this home holds ${shortId(memory.space)}`, where)
  if (payload.audience !== memory.author) throw new AuthError('WRONG_AUDIENCE', `the token was issued to ${shortId(payload.audience)}, this home's key is ${shortId(memory.author)}`, where)
  if (payload.expiresAt < Date.now()) throw new AuthError('TOKEN_EXPIRED', `the token expired at ${new Date(payload.expiresAt).toISOString()}`, where)
}

/** Follows a client to its end: resolves once synced, rejects with the fatal error; keeps the last error seen. */
class Outcome {
  lastError: CairnError | undefined
  readonly done: Promise<void>

  constructor(client: SyncClient, waitForSync: boolean) {
    this.done = new Promise((resolve, reject) => {
      client.on('error', (error) => { this.lastError = error })
      // The client reports a fatal error as status 'error' after the 'error' event; synced() alone would never settle then.
      client.on('status', (status) => {
        if (status === 'error') reject(this.lastError ?? new ProtocolError('SYNC_FAILED', 'the sync ended with an error'))
      })
      if (waitForSync) client.synced().then(resolve, reject)
    })
    this.done.catch(() => undefined)
  }
}

async function syncOnce(memory: Memory, url: string, options: SyncOptions, timeoutMs: number, context: CliContext, json: boolean): Promise<number> {
  // Read before the sync starts: a refusal thrown with a client running left the command hanging.
  const intervalMs = progressIntervalMs(context)
  const client = await memory.sync(url, { ...options, live: false })
  const outcome = new Outcome(client, true)
  const progress = new SyncProgress(client, context.stderr, intervalMs, (totals) => `catching up: ${totals.received} received, ${totals.sent} sent\n`)
  const stop = watchForStop(context)
  let timer: NodeJS.Timeout | undefined
  const deadline = (): Promise<'timeout'> => new Promise((resolve) => { timer = setTimeout(() => resolve('timeout'), timeoutMs) })
  const finishing = new Promise<'finishing'>((resolve) => client.on('finishing', () => resolve('finishing')))
  try {
    let result = await Promise.race([
      outcome.done.then(() => 'synced' as const),
      deadline(),
      stop.stopped.then(() => 'stopped' as const),
      finishing,
    ])
    if (result === 'finishing') {
      // Caught up both ways: what that appended here (an admin's named deletions) gets a
      // --timeout of its own, and if it is not acknowledged by then, the next sync sends it.
      clearTimeout(timer)
      result = await Promise.race([outcome.done.then(() => 'synced' as const), deadline(), stop.stopped.then(() => 'stopped' as const)])
      if (result === 'timeout' || result === 'stopped') {
        const why = result === 'timeout' ? `not all acknowledged within ${timeoutMs / 1000} s` : 'not all acknowledged when stopped'
        await context.stderr.write(`caught up both ways; events written here after the catch-up were ${why}: the next sync sends them\n`)
        result = 'synced'
      }
    }
    if (result === 'timeout') {
      // Without a problem to name: connected and catching up, or nothing at that address ever
      // completed the handshake (a port that accepts and stays silent).
      const why = outcome.lastError ? `last problem: ${outcome.lastError.message}`
        : client.status === 'connecting' ? 'no relay answered at this address (the connection or its handshake never completed)'
          : `still catching up (${progress.totals.received} received, ${progress.totals.sent} sent)`
      throw new ProtocolError('SYNC_TIMEOUT', `not synced within ${timeoutMs / 1000} s; ${why}`, { path: url })
    }
    if (result === 'stopped') throw new ProtocolError('INTERRUPTED', `stopped before the sync finished; the ${plural(progress.totals.received, 'event')} received so far are kept`, { path: url })
  } catch (error) {
    throw error instanceof CairnError ? restateRefusal(error, url) : error
  } finally {
    if (timer) clearTimeout(timer)
    stop.dispose()
    progress.dispose()
    await client.close()
  }
  const totals = progress.totals
  const digest = await memory.digest()
  // Records that left the token's scope are gone from this store, and events the token does not
  // allow stayed in it only: say so.
  const withdrawn = progress.withdrawn
  const withheld = progress.withheldCount
  // JSON escapes what it must; the reason stays the relay's text.
  const withheldEvents = progress.withheld.map((event) => ({ event: event.event, reason: withheldReasonText(event) }))
  await context.stdout.write(json
    ? `${canonicalJson({ url, received: totals.received, sent: totals.sent, ...(withdrawn > 0 ? { withdrawn } : {}), ...(withheld > 0 ? { withheld, withheldEvents } : {}), digest })}\n`
    : `synced with ${url}: sent ${plural(totals.sent, 'event')}, received ${totals.received}${withdrawn > 0 ? `; ${plural(withdrawn, 'record')} withdrawn (outside the token's scope now)` : ''}\n` +
      `${withheld > 0 ? `${describeWithheld(withheld, progress.withheld[0])}; \`cairn withheld\` lists every such write\n` : ''}digest ${digest}\n`)
  return EXIT_OK
}

function progressLine(json: boolean): (totals: SyncTotals, change: SyncTotals) => string {
  return json
    ? (totals, change) => `${canonicalJson({ type: 'progress', received: change.received, sent: change.sent, totalReceived: totals.received, totalSent: totals.sent })}\n`
    : (totals, change) => `${clockTime()} received ${change.received}, sent ${change.sent} (total ${totals.received} received, ${totals.sent} sent)\n`
}

async function syncLive(memory: Memory, url: string, options: SyncOptions, context: CliContext, json: boolean): Promise<number> {
  const stop = watchForStop(context)
  const client = await memory.sync(url, { ...options, live: true })
  const outcome = new Outcome(client, false)
  const progress = new SyncProgress(client, context.stdout, PROGRESS_INTERVAL_MS, progressLine(json))
  const note = (text: string): void => void context.stderr.write(`${clockTime()} ${text}\n`)
  client.on('status', (status) => {
    if (status === 'catching-up') note(`connected to ${url}; catching up`)
    if (status === 'live') {
      progress.report()
      note('live: caught up both ways')
    }
  })
  client.on('withheld', ({ events }) => note(describeWithheld(events.length, events[0])))
  client.on('error', (error) => {
    // A fatal error turns the status to 'error' right after this event; only retries are noted here.
    queueMicrotask(() => {
      if (client.status !== 'error') note(`${printable(error.message)}; retrying`)
    })
  })
  // Quiet periods still flush the last counts within an interval.
  const flush = setInterval(() => progress.report(), PROGRESS_INTERVAL_MS)
  try {
    await Promise.race([outcome.done, stop.stopped])
  } catch (error) {
    throw error instanceof CairnError ? restateRefusal(error, url) : error
  } finally {
    clearInterval(flush)
    stop.dispose()
    progress.report()
    progress.dispose()
    await client.close()
  }
  const totals = progress.totals
  const digest = await memory.digest()
  await context.stdout.write(json
    ? `${canonicalJson({ type: 'stopped', url, received: totals.received, sent: totals.sent, digest })}\n`
    : `stopped: received ${plural(totals.received, 'event')}, sent ${totals.sent} in all\ndigest ${digest}\n`)
  return EXIT_OK
}

export const syncCommand = defineOperandCommand({
  name: 'sync',
  summary: 'sync this home with a relay, once or live',
  synopsis: 'sync <url> [--token T] [--live] [--relay-key K] [--timeout S] [--dir D] [--json]',
  description: `
Connects to the relay at <url> (as \`cairn serve\` prints it), proves this home's key, and
exchanges what either side lacks: first deletions, then every other event, then, with --live,
new events as they happen. The space's owner and admins need no token; any other key needs
a capability token issued to it (\`cairn token create --audience KEY\` on an admin's home),
given with --token or the CAIRN_TOKEN environment variable.

Without --live, exits 0 once both sides are caught up and prints what moved and this replica's
digest (with --json: {"digest", "received", "sent", "url"}); a long catch-up reports its
progress on stderr. Connection failures are retried until --timeout (default ${DEFAULT_TIMEOUT_SECONDS} s),
then it exits 1 with SYNC_TIMEOUT. On an admin's home, the deletions the catch-up showed
(records deleted with their parent elsewhere) are named and sent before it exits; that gets a
--timeout of its own, past which the next sync sends them.

With --live, keeps syncing until SIGINT (Ctrl-C) or SIGTERM, printing the events received and
sent at most once a second (with --json, one JSON object per line), reconnecting with backoff
whenever the connection drops, and exits 0 after closing cleanly. The home stays open while
it runs, so other \`cairn\` commands on it fail with STORE_LOCKED until it stops (a program
that writes while syncing embeds the library and calls \`memory.sync\`).

Refusals that retrying cannot fix exit 1 with their code: TOKEN_REQUIRED, TOKEN_EXPIRED,
TOKEN_REVOKED, TOKEN_FORGED, WRONG_AUDIENCE, WRONG_SPACE, UNKNOWN_SPACE (the relay has not
seen the space: its owner syncs first), RELAY_KEY_MISMATCH.`,
  operands: [{ name: 'url', description: 'the relay address, ws://HOST:PORT', required: true }],
  flags: {
    dir: DIR_FLAG,
    token: { type: 'string', short: 't', valueName: 'T', description: 'a capability token for this home\'s key (default: $CAIRN_TOKEN)' },
    live: { type: 'boolean', short: 'l', description: 'keep syncing until stopped' },
    'relay-key': { type: 'string', valueName: 'K', description: 'refuse a relay that does not prove this key (as `cairn serve` prints it)' },
    timeout: { type: 'string', valueName: 'S', description: `give up a one-time sync after S seconds (default ${DEFAULT_TIMEOUT_SECONDS})` },
    json: JSON_FLAG,
  },
  async run(flags, operands, context) {
    const url = relayUrlOperand(operands.url as string)
    if (flags.live && flags.timeout !== undefined) throw usageError('CONFLICTING_FLAGS', '--timeout limits a one-time sync; --live keeps retrying until stopped', { flag: '--timeout' })
    const timeoutMs = secondsFlag(flags.timeout, DEFAULT_TIMEOUT_SECONDS, '--timeout')
    const relayKey = flags['relay-key'] === undefined ? undefined : hexKey(flags['relay-key'], { flag: '--relay-key' }, 'a relay key')
    const fromEnv = context.env.CAIRN_TOKEN
    const token = flags.token?.trim() ?? (fromEnv !== undefined && fromEnv.trim() !== '' ? fromEnv.trim() : undefined)
    const options: SyncOptions = { ...(token !== undefined ? { token } : {}), ...(relayKey !== undefined ? { relayKey } : {}) }
    const dir = resolveHomeDir(context.cwd, flags.dir)
    return withMemory(dir, { create: false }, async (memory) => {
      if (token !== undefined) checkToken(memory, token)
      return flags.live
        ? syncLive(memory, url, options, context, flags.json)
        : syncOnce(memory, url, options, timeoutMs, context, flags.json)
    })
  },
})

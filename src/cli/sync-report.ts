/**
 * What `cairn sync` tells the person watching: running totals of events received and sent,
 * reported at most once per interval (so a 100k-event catch-up prints a few lines, not
 * thousands), and the relay's refusals restated as one error naming the flag to fix.
 *
 * Invariant: nothing is printed for a sync that finishes within the first interval, so a quick
 * one-shot sync's stderr stays empty and a failing one's stays one line.
 */
import { AuthError, CairnError, ProtocolError, shortId, type SyncClient, type WithheldEvent } from '../index.js'
import type { TextSink } from './command.js'
import { printable } from './printable.js'

export interface SyncTotals {
  received: number
  sent: number
}

export class SyncProgress {
  readonly totals: SyncTotals = { received: 0, sent: 0 }
  /** Records the relay withdrew from this replica (they left its token's scope). */
  withdrawn = 0
  /** How many events the relay kept as headers only, the token not allowing them: their content stays here. */
  withheldCount = 0
  /** The first of them (at most MAX_WITHHELD_KEPT: a live session may withhold without end). */
  readonly withheld: WithheldEvent[] = []
  private reported: SyncTotals = { received: 0, sent: 0 }
  private lastReportMs: number
  private readonly stops: (() => void)[]

  /**
   * @param line what to print for the totals so far and the change since the last report
   */
  constructor(
    client: SyncClient,
    private readonly sink: TextSink,
    private readonly intervalMs: number,
    private readonly line: (totals: SyncTotals, change: SyncTotals) => string,
  ) {
    this.lastReportMs = Date.now()
    this.stops = [
      client.on('received', ({ events }) => this.add('received', events)),
      client.on('sent', ({ events }) => this.add('sent', events)),
      client.on('withdrawn', ({ records }) => { this.withdrawn += records }),
      client.on('withheld', ({ events }) => {
        this.withheldCount += events.length
        this.withheld.push(...events.slice(0, MAX_WITHHELD_KEPT - this.withheld.length))
      }),
    ]
  }

  private add(direction: keyof SyncTotals, events: number): void {
    this.totals[direction] += events
    if (Date.now() - this.lastReportMs >= this.intervalMs) this.report()
  }

  /** Prints the totals now if they changed since the last report. */
  report(): void {
    const change = { received: this.totals.received - this.reported.received, sent: this.totals.sent - this.reported.sent }
    this.lastReportMs = Date.now()
    if (change.received === 0 && change.sent === 0) return
    this.reported = { ...this.totals }
    void this.sink.write(this.line(this.totals, change))
  }

  dispose(): void {
    for (const stop of this.stops) stop()
  }
}

export const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`

/** Withheld events a one-time sync lists in its --json result. */
export const MAX_WITHHELD_KEPT = 100

/** A withheld event's reason as the relay gave it, without the event id it appends (given apart). For JSON. */
export function withheldReasonText(event: WithheldEvent): string {
  return event.message.replace(/ \(event [0-9a-f]{64}\)$/, '')
}

/** A withheld event's reason, printable on a line. */
export function withheldReason(event: WithheldEvent): string {
  return printable(withheldReasonText(event))
}

/** One withheld event for a person: its short id and why (cairn sync, cairn serve). */
export function describeWithheldEvent(event: WithheldEvent): string {
  return `event ${shortId(event.event)}: ${withheldReason(event)}`
}

/** What a person reads of events the relay withheld: how many, and which the first was and why. */
export function describeWithheld(count: number, first: WithheldEvent | undefined): string {
  return `${plural(count, 'event')} kept on this device only: the token does not allow ${count === 1 ? 'it' : 'them'}${first ? ` (${describeWithheldEvent(first)})` : ''}`
}

/** Codes the relay sends about the presented token: the fix is a different --token. */
const TOKEN_CODES = /TOKEN|AUDIENCE|WRONG_SPACE|ISSUER/

/**
 * The client reports a relay's refusal as `CODE: relay refused: message (where) (frame error)`
 * (during the handshake) or `CODE: peer reported: message (where) (frame error)` (in a session);
 * this names the relay, and points at --token when the token is what was refused.
 */
export function restateRefusal(error: CairnError, url: string): CairnError {
  const relayed = /^[A-Z_]+: (?:relay refused|peer reported): ([\s\S]*?)(?: \([^()]*\))*$/.exec(error.message)
  if (!relayed) return error
  const where = TOKEN_CODES.test(error.code) ? { flag: '--token' } : { path: url }
  const message = `the relay refused this replica: ${printable(relayed[1] as string)}`
  return error instanceof AuthError
    ? new AuthError(error.code, message, where, { cause: error })
    : new ProtocolError(error.code, message, where, { cause: error })
}

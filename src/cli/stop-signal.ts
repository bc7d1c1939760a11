/**
 * When a long-running command (`serve`, `sync --live`) should stop: the context's AbortSignal
 * when it has one, otherwise the first SIGINT or SIGTERM the process receives.
 *
 * Invariant: the process's signal handlers live only while the command waits; `dispose` (or the
 * first signal) removes them, so a second Ctrl-C during a slow shutdown gets Node's default
 * action and ends the process at once, and short commands never change how signals behave.
 */
import type { CliContext } from './command.js'

const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const

export interface StopWatch {
  /** Resolves with the signal's name ("SIGTERM", or "abort" for the context's AbortSignal). */
  readonly stopped: Promise<string>
  /** Removes the handlers; call it when the command ends for another reason. */
  dispose(): void
}

export function watchForStop(context: CliContext): StopWatch {
  let dispose = (): void => undefined
  const stopped = new Promise<string>((resolve) => {
    const signal = context.signal
    if (signal) {
      if (signal.aborted) return resolve('abort')
      const onAbort = (): void => resolve('abort')
      signal.addEventListener('abort', onAbort, { once: true })
      dispose = () => signal.removeEventListener('abort', onAbort)
      return
    }
    const onSignal = (name: NodeJS.Signals): void => {
      dispose()
      resolve(name)
    }
    for (const name of STOP_SIGNALS) process.on(name, onSignal)
    dispose = () => {
      for (const name of STOP_SIGNALS) process.off(name, onSignal)
    }
  })
  return { stopped, dispose: () => dispose() }
}

/**
 * `cairn serve`: runs a sync relay (src/sync/relay.ts) until SIGINT or SIGTERM. The relay keeps
 * its key and its multi-tenant store in `--dir`, so restarting it on the same directory serves
 * the same spaces under the same key.
 *
 * Invariants: stdout gets exactly one line, the address peers connect to (with the relay's key,
 * which `cairn sync --relay-key` pins), so scripts can read it; everything after that goes to
 * stderr. On a stop signal the relay closes its sessions and flushes its store before the
 * command returns 0; a port that cannot be bound exits 1 with one line and leaves nothing running.
 */
import path from 'node:path'
import { canonicalJson, InputError, Relay } from '../../index.js'
import { defineCommand, EXIT_OK, type CliContext } from '../command.js'
import { usageError } from '../operand-args.js'
import { watchForStop } from '../stop-signal.js'
import { describeWithheldEvent } from '../sync-report.js'

export const DEFAULT_RELAY_DIR = '.cairn-relay'
export const DEFAULT_RELAY_PORT = 7357
export const DEFAULT_RELAY_HOST = '127.0.0.1'
/** @throws InputError BAD_FLAG_VALUE (a usage error) */
export function portFlag(value: string | undefined): number {
  if (value === undefined) return DEFAULT_RELAY_PORT
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65535) throw usageError('BAD_FLAG_VALUE', `expected a port number from 0 to 65535, got "${value}"`, { flag: '--port' })
  return Number(value)
}

/** The relay's listen errors, as one line naming the flag to change. */
function listenError(error: unknown, host: string, port: number): unknown {
  const cause = error instanceof Error && error.cause !== undefined ? error.cause : error
  const code = (cause as NodeJS.ErrnoException | undefined)?.code
  if (code === 'EADDRINUSE') return new InputError('PORT_IN_USE', `${host}:${port} is already in use (another relay?); pick another --port, or 0 for any free one`, { flag: '--port' }, { cause: error })
  if (code === 'EACCES') return new InputError('PORT_DENIED', `not allowed to listen on ${host}:${port} (ports below 1024 need privileges)`, { flag: '--port' }, { cause: error })
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') return new InputError('BAD_HOST', `cannot listen on host "${host}" (${code})`, { flag: '--host' }, { cause: error })
  return error
}

function megabytes(bytes: number): string {
  return `${(bytes / 1e6).toFixed(bytes < 1e5 ? 3 : 1)} MB`
}

function clockTime(): string {
  return new Date().toISOString().slice(11, 19)
}

/**
 * Logs each peer session that opens or closes to stderr, with the number connected, and each
 * frame whose events a token did not allow (kept as headers only), until stopped.
 */
function logPeers(relay: Relay, context: CliContext): () => void {
  const peer = (key: string, token?: string) => `${key.slice(0, 12)}… ${token ? `token ${token.slice(0, 12)}…` : 'full access'}`
  const stopOpen = relay.on('peer-open', ({ key, token }) => {
    void context.stderr.write(`${clockTime()} peers: ${relay.peerCount} (+1 ${peer(key, token)})\n`)
  })
  const stopClose = relay.on('peer-close', ({ key, token, error }) => {
    void context.stderr.write(`${clockTime()} peers: ${relay.peerCount} (-1 ${peer(key, token)}${error ? `: ${error.code}` : ''})\n`)
  })
  const stopWithheld = relay.on('peer-withheld', ({ key, token, events }) => {
    const why = events[0] ? `: ${describeWithheldEvent(events[0])}` : ''
    void context.stderr.write(`${clockTime()} withheld ${events.length === 1 ? '1 event' : `${events.length} events`} from ${peer(key, token)}${why}\n`)
  })
  return () => {
    stopOpen()
    stopClose()
    stopWithheld()
  }
}

export const serveCommand = defineCommand({
  name: 'serve',
  summary: 'run a sync relay that replicas sync through',
  synopsis: 'serve [--port P] [--host H] [--dir D] [--json]',
  description: `
Starts a WebSocket relay: the same engine as a replica, storing many spaces, each served to a
peer only after the peer proves its key, with full access for a space's owner and admins and
what a capability token allows for anyone else. Prints one line on stdout,
  listening on ws://HOST:PORT (relay key HEX)
(with --json: {"key": hex, "url": "ws://…"}), then logs each peer session that opens or
closes to stderr with the number connected, and each write a token did not allow (kept as
a header only; the peer is told). Runs until SIGINT (Ctrl-C) or SIGTERM, then closes every session,
flushes the store, prints the spaces served and the bytes moved, and exits 0. --port 0 listens on any free port (the line says which). The
relay's key is kept in <D>/relay-identity.json and its store in <D>/store/. Exits 1 with
PORT_IN_USE when the port is taken, STORE_LOCKED when another relay runs on <D>.`,
  flags: {
    port: { type: 'string', short: 'p', valueName: 'P', description: `the TCP port (default ${DEFAULT_RELAY_PORT}; 0: any free port)` },
    host: { type: 'string', valueName: 'H', description: `the address to listen on (default ${DEFAULT_RELAY_HOST}; 0.0.0.0 for every interface)` },
    dir: { type: 'string', short: 'd', valueName: 'D', description: `the relay's directory: key and store (default ./${DEFAULT_RELAY_DIR})` },
    json: { type: 'boolean', description: 'print the address line as JSON' },
  },
  async run(flags, context) {
    const port = portFlag(flags.port)
    const host = flags.host ?? DEFAULT_RELAY_HOST
    const dir = path.resolve(context.cwd, flags.dir ?? DEFAULT_RELAY_DIR)
    // Handlers first: a signal that arrives while the store opens still stops us cleanly.
    const stop = watchForStop(context)
    let relay: Relay
    try {
      relay = await Relay.start({ path: dir, port, host })
    } catch (error) {
      stop.dispose()
      throw listenError(error, host, port)
    }
    const stopLogging = logPeers(relay, context)
    try {
      const key = relay.identity.author
      await context.stdout.write(flags.json
        ? `${canonicalJson({ url: relay.url, key })}\n`
        : `listening on ${relay.url} (relay key ${key})\n`)
      const signal = await stop.stopped
      const { peers, spaces, bytesIn, bytesOut } = relay.stats()
      await context.stderr.write(`${clockTime()} ${signal === 'abort' ? 'stopping' : `${signal}: stopping`}: closing ${peers} session${peers === 1 ? '' : 's'}, flushing the store\n`)
      await context.stderr.write(`${clockTime()} served ${spaces.length} space${spaces.length === 1 ? '' : 's'}; ${megabytes(bytesIn)} in, ${megabytes(bytesOut)} out\n`)
    } finally {
      stopLogging()
      stop.dispose()
      await relay.stop()
    }
    await context.stderr.write(`${clockTime()} stopped; store flushed to ${dir}\n`)
    return EXIT_OK
  },
})

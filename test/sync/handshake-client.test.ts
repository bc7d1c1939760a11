/**
 * The client's side of the handshake, against a fake relay on loopback that answers `hello`
 * with a `welcome` of its choosing: a protocol version the client never offered, or a proof
 * made with a key other than the one the welcome names. Either ends the client in `error` with
 * the code that says why, and the fake relay never gets a proof (the client holds back).
 */
import { WebSocketServer } from 'ws'
import { afterEach, expect, it } from 'vitest'
import { defaultCrypto, Identity } from '../../src/log/index.js'
import { checkProof, newNonce, proveKey } from '../../src/sync/handshake.js'
import { decodeMessage, encodeMessage, type Message } from '../../src/sync/messages.js'
import { failureOf, openOwner, sleep, startSync, Teardown, waitFor } from '../helpers/sync-fixtures.js'

const teardown = new Teardown()
afterEach(() => teardown.run())

/** A fake relay: answers each hello with `welcome(hello)`, anything else with `then`; records what clients send. */
async function fakeRelay(
  welcome: (hello: Extract<Message, { type: 'hello' }>) => Message,
  then: (message: Message, send: (reply: Message) => void) => void = () => undefined,
): Promise<{ url: string; received: Message[] }> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  await new Promise<void>((resolve) => server.once('listening', () => resolve()))
  teardown.add(1, () => new Promise<void>((resolve) => {
    for (const client of server.clients) client.terminate()
    server.close(() => resolve())
  }))
  const received: Message[] = []
  server.on('connection', (socket) => {
    socket.on('message', (data) => {
      const message = decodeMessage(new Uint8Array(data as Buffer))
      received.push(message)
      if (message.type === 'hello') socket.send(encodeMessage(welcome(message)))
      // A reply of type close-now closes the connection instead (after what was sent before it).
      else then(message, (reply) => (reply as { type: string }).type === 'close-now' ? socket.close(1001, 'going away') : socket.send(encodeMessage(reply)))
    })
  })
  const { port } = server.address() as { port: number }
  return { url: `ws://127.0.0.1:${port}`, received }
}

const relayKey = Identity.generate()

/** A client syncing with a fake relay whose welcome has `version` and a proof made by `prover`. */
async function syncAgainst(version: number, prover: Identity) {
  const relay = await fakeRelay((hello) => ({
    type: 'welcome', version, relay: relayKey.author, nonce: newNonce(defaultCrypto()),
    proof: proveKey(prover, 'relay', hello.nonce, hello.space, hello.peer),
  }))
  const owner = await openOwner(teardown)
  const failure = await failureOf(await startSync(teardown, owner, relay.url))
  return { failure, sent: relay.received.map((message) => message.type) }
}

it('refuses a relay that picks a protocol version the client did not offer', async () => {
  const { failure, sent } = await syncAgainst(3, relayKey)
  expect(failure.code).toBe('UNSUPPORTED_VERSION')
  expect(sent).toEqual(['hello'])
})

it('refuses a relay whose proof was made with another key than the one it names', async () => {
  const { failure, sent } = await syncAgainst(1, Identity.generate())
  expect(failure.code).toBe('BAD_PROOF')
  expect(sent).not.toContain('proof')
})

it('a relay cannot make a replica that presented no token drop records by calling it scoped', async () => {
  const relay = await fakeRelay((hello) => ({
    type: 'welcome', version: 1, relay: relayKey.author, nonce: newNonce(defaultCrypto()),
    proof: proveKey(relayKey, 'relay', hello.nonce, hello.space, hello.peer),
  }), (message, send) => {
    if (message.type !== 'proof') return
    send({ type: 'ready', permissions: ['read'], full: false })
    send({ type: 'want', vector: {} })
    send({ type: 'withdraw', records: [kept] })
  })
  const owner = await openOwner(teardown)
  const kept = await owner.remember({ kind: 'episode', summary: 'mine, whatever the relay says' })
  const failure = await failureOf(await startSync(teardown, owner, relay.url))
  expect(failure.code).toBe('UNEXPECTED_FRAME')
  expect((await owner.get(kept))?.summary).toBe('mine, whatever the relay says')
  for (const event of await owner.history(kept)) expect(event.bodyState).toBe('present')
})


/** A server that accepts WebSocket upgrades only when `admit` is called, and counts connections. */
async function gatedServer(): Promise<{ url: string; admit: () => void; connections: () => number; closes: () => number }> {
  const pending: (() => void)[] = []
  let connections = 0
  let closes = 0
  const server = new WebSocketServer({
    host: '127.0.0.1', port: 0,
    verifyClient: (_info, done) => pending.push(() => done(true)),
  })
  await new Promise<void>((resolve) => server.once('listening', () => resolve()))
  teardown.add(1, () => new Promise<void>((resolve) => {
    for (const admit of pending.splice(0)) admit()
    for (const client of server.clients) client.terminate()
    server.close(() => resolve())
  }))
  server.on('connection', (socket) => {
    connections++
    socket.on('close', () => closes++)
  })
  const { port } = server.address() as { port: number }
  return { url: `ws://127.0.0.1:${port}`, admit: () => { for (const admit of pending.splice(0)) admit() }, connections: () => connections, closes: () => closes }
}

it('close() while the socket still connects ends the attempt: the socket is closed when it opens, and the status stays closed', async () => {
  const server = await gatedServer()
  const owner = await openOwner(teardown)
  const client = await startSync(teardown, owner, server.url)
  const statuses: string[] = []
  client.on('status', (status) => statuses.push(status))
  await sleep(100)
  expect(client.status).toBe('connecting')
  await client.close()
  expect(client.status).toBe('closed')
  server.admit()
  await sleep(300)
  expect(client.status).toBe('closed')
  expect(statuses).toEqual(['closed'])
  // Either the upgrade was abandoned, or the socket that opened anyway was closed at once.
  expect(server.connections() - server.closes()).toBe(0)
})

it('a relay that never completes the handshake is dropped after handshakeTimeoutMs, and tried again', async () => {
  const quiet = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  await new Promise<void>((resolve) => quiet.once('listening', () => resolve()))
  let connections = 0
  quiet.on('connection', () => connections++)
  teardown.add(1, () => new Promise<void>((resolve) => {
    for (const socket of quiet.clients) socket.terminate()
    quiet.close(() => resolve())
  }))
  const owner = await openOwner(teardown)
  const client = await startSync(teardown, owner, `ws://127.0.0.1:${(quiet.address() as { port: number }).port}`, { handshakeTimeoutMs: 150 })
  const errors: string[] = []
  client.on('error', (error) => errors.push(error.code))
  await waitFor(() => connections >= 2, 'the client to try again')
  expect(errors[0]).toBe('HANDSHAKE_TIMEOUT')
  expect(client.status).toBe('connecting')
})

it('refuses sync options a timer cannot honour, naming the option, before connecting', async () => {
  const owner = await openOwner(teardown)
  const cases: [object, string, string][] = [
    [{ handshakeTimeoutMs: 0 }, 'OUT_OF_RANGE', 'options.handshakeTimeoutMs'],
    [{ handshakeTimeoutMs: 2 ** 31 }, 'OUT_OF_RANGE', 'options.handshakeTimeoutMs'],
    [{ finishTimeoutMs: 0 }, 'OUT_OF_RANGE', 'options.finishTimeoutMs'],
    [{ finishTimeoutMs: 1.5 }, 'WRONG_TYPE', 'options.finishTimeoutMs'],
    [{ initialDelayMs: -1 }, 'OUT_OF_RANGE', 'options.initialDelayMs'],
    [{ initialDelayMs: 0 }, 'OUT_OF_RANGE', 'options.initialDelayMs'],
    [{ initialDelayMs: 500, maxDelayMs: 100 }, 'OUT_OF_RANGE', 'options.initialDelayMs'],
    [{ initialDelayMs: 60_000 }, 'OUT_OF_RANGE', 'options.initialDelayMs'],
    [{ maxDelayMs: 1.5 }, 'WRONG_TYPE', 'options.maxDelayMs'],
    [{ maxDelayMs: '100' }, 'WRONG_TYPE', 'options.maxDelayMs'],
    [{ live: 'yes' }, 'WRONG_TYPE', 'options.live'],
    [{ token: '' }, 'EMPTY', 'options.token'],
  ]
  for (const [options, code, field] of cases) {
    const failure = await owner.sync('ws://127.0.0.1:9', options).then(() => undefined, (error: unknown) => error)
    expect(failure, JSON.stringify(options)).toMatchObject({ code, where: { field } })
  }
  // And a relay address that is none, with a CairnError naming it (it was a raw SyntaxError).
  for (const [url, code] of [['not a url', 'BAD_URL'], ['http://127.0.0.1:9', 'BAD_URL'], ['ws://127.0.0.1:9/#frag', 'BAD_URL'], ['', 'EMPTY'], [7, 'WRONG_TYPE']] as const) {
    const failure = await owner.sync(url as string).then(() => undefined, (error: unknown) => error)
    expect(failure, String(url)).toMatchObject({ code, where: { field: 'url' } })
  }
})

it('a relay that closes right after ready (restarting, say) is tried again: the frames it sent before closing are not a protocol error', async () => {
  let connections = 0
  const relay = await fakeRelay((hello) => {
    connections++
    return {
      type: 'welcome', version: 1, relay: relayKey.author, nonce: newNonce(defaultCrypto()),
      proof: proveKey(relayKey, 'relay', hello.nonce, hello.space, hello.peer),
    }
  }, (message, send) => {
    if (message.type !== 'proof') return
    // What a relay stopping mid-handshake sends: the session's first frames, then its close.
    send({ type: 'ready', permissions: ['*'], full: true })
    send({ type: 'want', vector: {} })
    send({ type: 'close-now' } as unknown as Message)
  })
  const owner = await openOwner(teardown)
  const client = await startSync(teardown, owner, relay.url, { initialDelayMs: 20, maxDelayMs: 50 })
  const errors: string[] = []
  client.on('error', (error) => errors.push(error.code))
  await waitFor(() => connections >= 3, 'the client to try again after each close')
  expect(client.status).not.toBe('error')
  expect(errors).not.toContain('UNEXPECTED_FRAME')
})

it('takes no proof from a key of small order: the all-identity signature verifies under it for any nonce', () => {
  const crypto = defaultCrypto()
  const space = 'ab'.repeat(32)
  const verifier = Identity.generate(crypto)
  const nonce = newNonce(crypto)
  // R = the identity point, s = 0: Ed25519's equation holds for every message under this key.
  const identityPoint = `01${'00'.repeat(31)}`
  const forged = new Uint8Array(64)
  forged[0] = 1
  expect(crypto.verify(forged, nonce, identityPoint)).toBe(true)
  expect(checkProof(crypto, forged, 'client', nonce, space, identityPoint, verifier.author)).toBe(false)
  // A real key's proof still checks, and a forged one under it does not.
  const prover = Identity.generate(crypto)
  expect(checkProof(crypto, proveKey(prover, 'client', nonce, space, verifier.author), 'client', nonce, space, prover.author, verifier.author)).toBe(true)
  expect(checkProof(crypto, forged, 'client', nonce, space, prover.author, verifier.author)).toBe(false)
})

/**
 * The client's side of the handshake, against a fake relay on loopback that answers `hello`
 * with a `welcome` of its choosing: a protocol version the client never offered, or a proof
 * made with a key other than the one the welcome names. Either ends the client in `error` with
 * the code that says why, and the fake relay never gets a proof (the client holds back).
 */
import { WebSocketServer } from 'ws'
import { afterEach, expect, it } from 'vitest'
import { defaultCrypto, Identity } from '../../src/log/index.js'
import { newNonce, proveKey } from '../../src/sync/handshake.js'
import { decodeMessage, encodeMessage, type Message } from '../../src/sync/messages.js'
import { failureOf, openOwner, startSync, Teardown } from '../helpers/sync-fixtures.js'

const teardown = new Teardown()
afterEach(() => teardown.run())

/** A fake relay: answers each hello with `welcome(hello)`; records what clients send. */
async function fakeRelay(welcome: (hello: Extract<Message, { type: 'hello' }>) => Message): Promise<{ url: string; received: Message[] }> {
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
    })
  })
  const { port } = server.address() as { port: number }
  return { url: `ws://127.0.0.1:${port}`, received }
}

const relayKey = Identity.generate()

it('refuses a relay that picks a protocol version the client did not offer', async () => {
  const relay = await fakeRelay((hello) => ({
    type: 'welcome', version: 2, relay: relayKey.author, nonce: newNonce(defaultCrypto()),
    proof: proveKey(relayKey, 'relay', hello.nonce, hello.space, hello.peer),
  }))
  const owner = await openOwner(teardown)
  const failure = failureOf(await startSync(teardown, owner, relay.url))
  expect((await failure).code).toBe('UNSUPPORTED_VERSION')
  expect(relay.received.map((message) => message.type)).toEqual(['hello'])
})

it('refuses a relay whose proof was made with another key than the one it names', async () => {
  const other = Identity.generate()
  const relay = await fakeRelay((hello) => ({
    type: 'welcome', version: 1, relay: relayKey.author, nonce: newNonce(defaultCrypto()),
    proof: proveKey(other, 'relay', hello.nonce, hello.space, hello.peer),
  }))
  const owner = await openOwner(teardown)
  const failure = failureOf(await startSync(teardown, owner, relay.url))
  expect((await failure).code).toBe('BAD_PROOF')
  expect(relay.received.map((message) => message.type)).not.toContain('proof')
})

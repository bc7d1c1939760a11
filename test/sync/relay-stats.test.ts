/**
 * Relay.stats and Relay.settled: what a running relay reports about its spaces, peers and
 * traffic, checked against what the replicas themselves hold.
 */
import { randomBytes } from 'node:crypto'
import { afterEach, expect, it } from 'vitest'
import { proveKey } from '../../src/sync/handshake.js'
import { RawPeer } from '../helpers/raw-peer.js'
import { Teardown, eventCount, openOwner, startRelay, startSync, waitFor } from '../helpers/sync-fixtures.js'

const teardown = new Teardown()
afterEach(() => teardown.run())

it('reports each open space with its vector and peers, and the bytes both ways', async () => {
  const relay = await startRelay(teardown)
  expect(relay.stats()).toEqual({ peers: 0, bytesIn: 0, bytesOut: 0, spaces: [] })
  const owner = await openOwner(teardown)
  const other = await openOwner(teardown)
  await owner.rememberMany([{ kind: 'episode', summary: 'one' }, { kind: 'episode', summary: 'two' }])
  await other.remember({ kind: 'episode', summary: 'elsewhere' })

  const live = await startSync(teardown, owner, relay.url, { live: true })
  await live.synced()
  const once = await startSync(teardown, other, relay.url)
  await once.synced()
  await once.close()
  await waitFor(() => relay.stats().peers === 1, 'the one-shot session to end')
  await relay.settled()

  const stats = relay.stats()
  expect(stats.spaces.map(({ space, versionVector, events, peers }) => ({ space, versionVector, events, peers }))).toEqual([
    { space: owner.space, versionVector: owner.versionVector(), events: eventCount(owner.versionVector()), peers: 1 },
    { space: other.space, versionVector: other.versionVector(), events: eventCount(other.versionVector()), peers: 0 },
  ])
  expect(stats.peers).toBe(1)
  // The events' bytes alone (headers and bodies) arrived; acks, handshakes and caught-up frames went out.
  const uploaded = (await owner.events()).concat(await other.events()).reduce((sum, event) => sum + event.header.length + (event.body?.length ?? 0), 0)
  expect(stats.bytesIn).toBeGreaterThan(uploaded)
  expect(stats.bytesOut).toBeGreaterThan(0)

  // A new write on the live session moves the relay's vector and its byte count.
  await owner.remember({ kind: 'episode', summary: 'three' })
  await waitFor(() => relay.stats().spaces[0]?.events === eventCount(owner.versionVector()), 'the relay to hold the new event')
  expect(relay.stats().bytesIn).toBeGreaterThan(stats.bytesIn)
})

it('lets go of a peer that leaves while its session opens: it is not counted, or served, ever after', async () => {
  const relay = await startRelay(teardown)
  const owner = await openOwner(teardown)
  const client = await startSync(teardown, owner, relay.url, { live: false })
  await client.synced()
  await waitFor(() => relay.peerCount === 0, 'the first session to end')
  let opened = 0
  let closed = 0
  relay.on('peer-open', () => opened++)
  relay.on('peer-close', () => closed++)
  for (let i = 0; i < 10; i++) {
    const peer = await RawPeer.connect(relay.url)
    await peer.sendMessage({ type: 'hello', versions: [1], space: owner.space, peer: owner.author, nonce: new Uint8Array(randomBytes(32)) })
    const welcome = await peer.next('welcome')
    if (!welcome) throw new Error('no welcome')
    // The proof, then gone at once: the relay opens the session as the socket closes.
    await peer.sendMessage({ type: 'proof', proof: proveKey(owner.identity, 'client', welcome.nonce, owner.space, welcome.relay) })
    peer.close()
    await peer.closed
  }
  await waitFor(() => relay.peerCount === 0 && closed === opened, 'every session that opened to be let go')
  expect(relay.stats().spaces.map((space) => space.peers)).toEqual([0])
})

it('opens no space for hellos naming spaces it does not hold: the refusals leave nothing behind', async () => {
  const relay = await startRelay(teardown)
  const owner = await openOwner(teardown)
  for (let i = 0; i < 20; i++) {
    const peer = await RawPeer.connect(relay.url)
    const space = randomBytes(32).toString('hex')
    await peer.sendMessage({ type: 'hello', versions: [1], space, peer: owner.author, nonce: new Uint8Array(randomBytes(32)) })
    const error = await peer.next('error')
    expect(error?.code).toBe('UNKNOWN_SPACE')
    peer.close()
  }
  expect(relay.stats().spaces).toEqual([])
  // The owner of a space brings its genesis, and is served.
  const client = await startSync(teardown, owner, relay.url, { live: false })
  await client.synced()
  expect(relay.stats().spaces.map((space) => space.space)).toEqual([owner.space])
})

it('takes a genesis only from a peer that proved its key: hellos carrying one open nothing until then', async () => {
  const relay = await startRelay(teardown)
  const owner = await openOwner(teardown)
  const [genesis] = await owner.events()
  if (!genesis) throw new Error('no genesis')
  const wire = { header: genesis.header, ...(genesis.body ? { body: genesis.body } : {}), ...(genesis.signature ? { signature: genesis.signature } : {}) }
  for (const ending of ['no proof', 'a wrong proof'] as const) {
    const peer = await RawPeer.connect(relay.url)
    await peer.sendMessage({ type: 'hello', versions: [1], space: owner.space, peer: owner.author, nonce: new Uint8Array(randomBytes(32)), genesis: wire })
    const welcome = await peer.next('welcome')
    if (!welcome) throw new Error('no welcome')
    expect(relay.stats().spaces, ending).toEqual([])
    if (ending === 'a wrong proof') {
      await peer.sendMessage({ type: 'proof', proof: new Uint8Array(64) })
      expect((await peer.next('error'))?.code).toBe('BAD_PROOF')
    }
    peer.close()
    await peer.closed
    expect(relay.stats().spaces, ending).toEqual([])
  }
  // Proved, the owner is served and the space opens.
  const client = await startSync(teardown, owner, relay.url, { live: false })
  await client.synced()
  expect(relay.stats().spaces.map((space) => space.space)).toEqual([owner.space])
})

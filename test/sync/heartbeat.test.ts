/**
 * Heartbeats: a connection whose peer went silent without closing it (a laptop asleep, a
 * network changed, a host lost: no FIN ever comes) is cut within two intervals, on the client
 * (which then connects again) and on the relay (whose session ends), instead of hanging until
 * TCP gives up hours later. Silence is made with a TCP proxy that stops forwarding bytes while
 * keeping both sockets open, or with a WebSocket server that does not answer pings.
 */
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { createServer, connect, type Server, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it, vi } from 'vitest'
import WebSocket, { WebSocketServer } from 'ws'
import { CairnError } from '../../src/errors.js'
import { CLOSE_PEER_TIMEOUT, WebSocketTransport } from '../../src/sync/transport.js'
import { Teardown, openOwner, openReplica, sleep, startRelay, startSync, waitFor } from '../helpers/sync-fixtures.js'

/**
 * A TCP proxy to `target` carrying `rate` bytes/s one way (`up`: client to relay, else relay to
 * client), with backpressure as TCP would: a slow link, alive all along.
 */
async function slowProxy(teardown: Teardown, targetUrl: string, rate: number, up: boolean): Promise<string> {
  const target = new URL(targetUrl)
  const sockets: Socket[] = []
  const server = createServer((accepted) => {
    const dialled = connect(Number(target.port), target.hostname)
    sockets.push(accepted, dialled)
    const [from, to] = up ? [accepted, dialled] : [dialled, accepted]
    const queue: Buffer[] = []
    let queued = 0
    const drain = setInterval(() => {
      let budget = Math.floor(rate / 50)
      while (budget > 0 && queue.length > 0) {
        const head = queue[0] as Buffer
        const part = head.subarray(0, budget)
        to.write(part)
        budget -= part.length
        queued -= part.length
        if (part.length === head.length) queue.shift()
        else queue[0] = head.subarray(part.length)
      }
      if (queued < 64 * 1024) from.resume()
    }, 20)
    from.on('data', (data) => {
      queue.push(data)
      queued += data.length
      if (queued > 64 * 1024) from.pause()
    })
    to.on('data', (data) => from.write(data))
    const end = (): void => {
      clearInterval(drain)
      accepted.destroy()
      dialled.destroy()
    }
    for (const socket of [accepted, dialled]) {
      socket.on('close', end)
      socket.on('error', end)
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  teardown.add(1, () => new Promise<void>((resolve) => {
    for (const socket of sockets) socket.destroy()
    server.close(() => resolve())
  }))
  return `ws://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** A TCP proxy to `target` that can go silent on the connections it holds (`freeze`). */
class SilentProxy {
  private readonly pairs: { client: Socket; upstream: Socket; frozen: boolean }[] = []

  private constructor(private readonly server: Server) {}

  static async start(targetUrl: string): Promise<SilentProxy> {
    const target = new URL(targetUrl)
    let proxy: SilentProxy | undefined
    const server = createServer((client) => {
      const upstream = connect(Number(target.port), target.hostname)
      const pair = { client, upstream, frozen: false }
      proxy?.pairs.push(pair)
      // While frozen, bytes are read and dropped: neither end hears anything, neither is closed.
      client.on('data', (data) => { if (!pair.frozen) upstream.write(data) })
      upstream.on('data', (data) => { if (!pair.frozen) client.write(data) })
      // A frozen pair passes no close on either: the other end never hears of it (a FIN lost).
      const end = (): void => {
        if (pair.frozen) return
        client.destroy()
        upstream.destroy()
      }
      client.on('close', end)
      upstream.on('close', end)
      client.on('error', end)
      upstream.on('error', end)
    })
    proxy = new SilentProxy(server)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return proxy
  }

  get url(): string {
    return `ws://127.0.0.1:${(this.server.address() as AddressInfo).port}`
  }

  /** The connections open now go silent both ways; later ones pass. */
  freeze(): number {
    const open = this.pairs.filter((pair) => !pair.frozen && !pair.client.destroyed)
    for (const pair of open) pair.frozen = true
    return open.length
  }

  async stop(): Promise<void> {
    for (const { client, upstream } of this.pairs) {
      client.destroy()
      upstream.destroy()
    }
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}

let teardown = new Teardown()
afterEach(async () => {
  await teardown.run()
  teardown = new Teardown()
})

/** A WebSocket server on loopback and a client transport connected to it. */
async function pair(options: { autoPong: boolean; heartbeatMs: number }): Promise<{ server: WebSocketServer; serverSide: Promise<WebSocket>; transport: WebSocketTransport; closes: number[] }> {
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1', autoPong: options.autoPong })
  teardown.add(1, () => new Promise<void>((resolve) => {
    for (const client of server.clients) client.terminate()
    server.close(() => resolve())
  }))
  await new Promise<void>((resolve) => server.once('listening', resolve))
  const serverSide = new Promise<WebSocket>((resolve) => server.once('connection', resolve))
  const socket = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`)
  const transport = new WebSocketTransport(socket, { heartbeatMs: options.heartbeatMs })
  teardown.add(0, () => socket.terminate())
  const closes: number[] = []
  transport.onClose((code) => closes.push(code))
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve())
    socket.once('error', reject)
  })
  return { server, serverSide, transport, closes }
}

describe('WebSocketTransport heartbeat', () => {
  it('cuts a connection whose peer answers no ping, reporting CLOSE_PEER_TIMEOUT', async () => {
    const { transport, closes } = await pair({ autoPong: false, heartbeatMs: 40 })
    await waitFor(() => closes.length > 0, 'the silent connection to be cut', 2000)
    expect(closes).toEqual([CLOSE_PEER_TIMEOUT])
    expect(transport.isOpen).toBe(false)
  })

  it('keeps a quiet connection whose peer answers pings, and one whose peer sends without answering them', async () => {
    const answering = await pair({ autoPong: true, heartbeatMs: 40 })
    const sending = await pair({ autoPong: false, heartbeatMs: 40 })
    const peer = await sending.serverSide
    const chatter = setInterval(() => peer.send(Buffer.from([1])), 15)
    try {
      // Ten intervals: a missed answer would have cut either within two.
      await sleep(400)
    } finally {
      clearInterval(chatter)
    }
    expect(answering.closes).toEqual([])
    expect(answering.transport.isOpen).toBe(true)
    expect(sending.closes).toEqual([])
    expect(sending.transport.isOpen).toBe(true)
  })

  it('gives no verdict at a beat that came late (its own event loop was blocked), and cuts two silent intervals later', async () => {
    // Interval timers and the clock are faked (the sockets are real): a late beat is one whose
    // clock moved on by more than an interval and a half since the last.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] })
    try {
      const { transport, closes } = await pair({ autoPong: false, heartbeatMs: 40 })
      vi.advanceTimersByTime(40) // the first ping, which the peer never answers
      vi.setSystemTime(Date.now() + 200) // the loop was blocked: the beat after it is late
      vi.advanceTimersByTime(40)
      await sleep(50)
      expect(closes).toEqual([])
      expect(transport.isOpen).toBe(true)
      vi.advanceTimersByTime(40) // on time, and still no answer: one silent interval is not enough
      await sleep(50)
      expect(closes).toEqual([])
      vi.advanceTimersByTime(40) // two silent intervals since the late beat
      await sleep(50)
      expect(closes).toEqual([CLOSE_PEER_TIMEOUT])
    } finally {
      vi.useRealTimers()
    }
  })

  it('reads a pong that came while its own loop was blocked for just over an interval before judging', async () => {
    // The peer is another process: it answers while this one is blocked, and its pong waits
    // unread when the next beat's timer runs (timers run before the I/O that waited).
    const child = spawn(process.execPath, ['-e', `
      const { WebSocketServer } = require(${JSON.stringify(createRequire(import.meta.url).resolve('ws'))})
      const server = new WebSocketServer({ port: 0, host: '127.0.0.1' })
      server.on('listening', () => console.log(server.address().port))
    `], { stdio: ['ignore', 'pipe', 'inherit'] })
    teardown.add(1, () => { child.kill() })
    const port = await new Promise<number>((resolve) => child.stdout.once('data', (data) => resolve(Number(String(data).trim()))))
    const socket = new WebSocket(`ws://127.0.0.1:${port}`)
    teardown.add(0, () => socket.terminate())
    const transport = new WebSocketTransport(socket, { heartbeatMs: 100 })
    const closes: number[] = []
    transport.onClose((code) => closes.push(code))
    await new Promise((resolve) => socket.once('open', resolve))
    const ping = socket.ping.bind(socket)
    let pings = 0
    socket.ping = ((...args: Parameters<WebSocket['ping']>) => {
      ping(...args)
      // Right after a ping, this side blocks for 1.1 intervals: not late enough to be excused.
      if (++pings === 2) setImmediate(() => { const end = Date.now() + 110; while (Date.now() < end); })
    }) as WebSocket['ping']
    await sleep(600)
    expect(pings).toBeGreaterThan(2)
    expect(closes).toEqual([])
    expect(transport.isOpen).toBe(true)
  })

  it('sends no ping with the heartbeat off', async () => {
    const { serverSide, closes } = await pair({ autoPong: false, heartbeatMs: 0 })
    const peer = await serverSide
    let pings = 0
    peer.on('ping', () => pings++)
    await sleep(200)
    expect(pings).toBe(0)
    expect(closes).toEqual([])
  })
})

describe('sync over a connection that goes silent', () => {
  it('the client connects again and catches up; the relay ends the silent session with PEER_TIMEOUT', async () => {
    const relay = await startRelay(teardown, { heartbeatMs: 200 })
    const proxy = await SilentProxy.start(relay.url)
    teardown.add(1, () => proxy.stop())
    const owner = await openOwner(teardown)
    const device = await openReplica(teardown, owner)
    // Full access: the relay serves an admin without a token.
    await owner.grant(device.author, ['admin'])
    const ownerClient = await startSync(teardown, owner, relay.url, { live: true, heartbeatMs: 200 })
    await ownerClient.synced()
    const relayEnds: (CairnError | undefined)[] = []
    relay.on('peer-close', ({ key, error }) => { if (key === device.author) relayEnds.push(error) })
    const client = await startSync(teardown, device, proxy.url, { live: true, heartbeatMs: 200 })
    await client.synced()
    const errors: CairnError[] = []
    client.on('error', (error) => errors.push(error))

    expect(proxy.freeze()).toBeGreaterThan(0)
    // Written while the device's connection is silent: it arrives once the device is back.
    const id = await owner.remember({ kind: 'episode', summary: 'written while the device was unreachable' })
    await waitFor(() => errors.length > 0, 'the client to notice the silence', 10_000)
    expect(errors[0]).toMatchObject({ code: 'PEER_TIMEOUT' })
    expect(errors[0]?.message).toMatch(/nothing came from the relay for 400 ms/)
    await waitFor(() => relayEnds.length > 0, 'the relay to end the silent session', 10_000)
    expect(relayEnds[0]).toMatchObject({ code: 'PEER_TIMEOUT' })

    await waitFor(async () => (await device.get(id)) !== undefined, 'the record to reach the device over a new connection', 10_000)
    expect(client.status).toBe('live')
  })

  for (const up of [true, false]) {
    it(`${up ? 'uploads' : 'downloads'} a catch-up whose frame takes several intervals to cross a slow link`, async () => {
      const relay = await startRelay(teardown, { heartbeatMs: 200 })
      const owner = await openOwner(teardown)
      // About 700 KB in one frame: some 2.5 s at 300 KB/s, a dozen intervals.
      for (let i = 0; i < 20; i++) await owner.remember({ kind: 'episode', summary: `${i} ${'x'.repeat(30_000)}` })
      const device = await openReplica(teardown, owner)
      await owner.grant(device.author, ['admin'])
      const url = await slowProxy(teardown, relay.url, 300_000, up)
      if (!up) await (await startSync(teardown, owner, relay.url, { live: false })).synced()
      const ends: string[] = []
      relay.on('peer-close', ({ error }) => { if (error) ends.push(error.code) })
      const client = await startSync(teardown, up ? owner : device, url, { live: false, heartbeatMs: 200 })
      // A cut on either end shows as an error here (PEER_TIMEOUT, or CONNECTION_CLOSED).
      await Promise.race([client.synced(), new Promise((_, reject) => client.on('error', reject))])
      expect(ends).toEqual([])
    }, 30_000)
  }

  it('refuses a heartbeat that is not a whole number of ms in range, naming the option', async () => {
    const owner = await openOwner(teardown)
    for (const heartbeatMs of [-1, 1.5, '15000', 2 ** 31]) {
      await expect(owner.sync('ws://127.0.0.1:9', { heartbeatMs } as never)).rejects.toMatchObject({ where: { field: 'options.heartbeatMs' } })
    }
    for (const heartbeatMs of [-1, 1.5, 2 ** 31]) {
      await expect(startRelay(teardown, { heartbeatMs })).rejects.toMatchObject({ where: { field: 'options.heartbeatMs' } })
    }
  })
})

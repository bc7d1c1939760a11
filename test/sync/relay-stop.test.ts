/**
 * Relay.stop ends every connection, not only the peers in a session: a connection still in its
 * handshake when the relay stops used to stay open (and could finish its handshake and start a
 * session after the stop), so the server never finished closing and `stop` never returned. Found
 * by the sync property's relay restarts (test/property/sync.property.test.ts).
 */
import { randomBytes } from 'node:crypto'
import net from 'node:net'
import { expect, it } from 'vitest'
import WebSocket from 'ws'
import { Relay } from '../../src/sync/relay.js'

/** Resolves once `stop` returned, or rejects once it took longer than `limitMs`. */
async function timedStop(relay: Relay, limitMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      relay.stop(),
      new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`stop took longer than ${limitMs} ms`)), limitMs) }),
    ])
  } finally {
    clearTimeout(timer)
  }
}

it('stops while a connection is still in its handshake, closing it as "going away"', async () => {
  // The handshake timeout is far away: only stop itself can end this connection in time.
  const relay = await Relay.start({ handshakeTimeoutMs: 600_000 })
  const socket = new WebSocket(relay.url)
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject))
  const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)))
  await timedStop(relay, 5_000)
  expect(await closed).toBe(1001)
})

it('cuts off a connection that never answers the close, instead of waiting for it', async () => {
  const relay = await Relay.start({ handshakeTimeoutMs: 600_000 })
  // A raw upgrade, then silence: the close frame the relay sends is never answered (ws itself
  // would wait 30 s for the answer).
  const { port } = new URL(relay.url)
  const socket = net.connect(Number(port), '127.0.0.1')
  await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject))
  const upgraded = new Promise<void>((resolve) => socket.once('data', () => resolve()))
  socket.write([
    'GET / HTTP/1.1', `Host: 127.0.0.1:${port}`, 'Upgrade: websocket', 'Connection: Upgrade',
    `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`, 'Sec-WebSocket-Version: 13', '', '',
  ].join('\r\n'))
  await upgraded
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  socket.on('error', () => undefined)
  await timedStop(relay, 15_000)
  await ended
})

it('cuts off connections that never finished their HTTP request (silent, or half a request)', async () => {
  const relay = await Relay.start({ handshakeTimeoutMs: 600_000 })
  const { port } = new URL(relay.url)
  const silent = net.connect(Number(port), '127.0.0.1')
  const half = net.connect(Number(port), '127.0.0.1')
  for (const socket of [silent, half]) {
    socket.on('error', () => undefined)
    await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject))
  }
  half.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\n`)
  const ended = Promise.all([silent, half].map((socket) => new Promise<void>((resolve) => socket.once('close', () => resolve()))))
  await timedStop(relay, 15_000)
  await ended
})

it('answers a plain HTTP request with 426 Upgrade Required', async () => {
  const relay = await Relay.start()
  try {
    const response = await fetch(relay.url.replace('ws://', 'http://'))
    expect(response.status).toBe(426)
  } finally {
    await relay.stop()
  }
})

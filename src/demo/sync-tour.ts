/**
 * The sync part of `npm start`: a relay on loopback (the one `cairn serve` runs) and two homes
 * on disk, a laptop that owns the space and a phone it granted admin, syncing over real
 * WebSockets: concurrent offline edits converge to identical digests, a forget on the phone
 * erases the content on the laptop while both are live, and a third replica holding a token
 * scoped to preferences receives only preferences (other records travel as signed headers
 * without their content); an agent whose token writes only preferences keeps a note it wrote to
 * itself (the relay withholds it); a fifth replica, scoped to a tag, loses a record when the tag
 * is removed.
 *
 * Invariant (as in start.ts): every value printed is read back from the engine at that moment,
 * and every narrated outcome is checked, so a step that misbehaves fails the demo.
 */
import path from 'node:path'
import { Memory, Relay, shortId, type RecordView, type SyncClient } from '../index.js'
import type { Narrator } from './memory-tour.js'

const quote = (text: unknown): string => JSON.stringify(text)
const count = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`
/** Live pushes arrive asynchronously; nothing here should take longer than this on loopback. */
const SETTLE_TIMEOUT_MS = 3000

interface Counted {
  readonly client: SyncClient
  readonly totals: { received: number; sent: number }
}

/** Starts a sync and counts the events it moves. */
async function startSync(memory: Memory, url: string, options: { live: boolean; token?: string }): Promise<Counted> {
  const client = await memory.sync(url, options)
  const totals = { received: 0, sent: 0 }
  client.on('received', ({ events }) => { totals.received += events })
  client.on('sent', ({ events }) => { totals.sent += events })
  return { client, totals }
}

/** Polls `condition` until it holds; returns the ms it took, or fails the demo. */
async function until(condition: () => Promise<boolean>, what: string, check: Narrator['check']): Promise<number> {
  const started = Date.now()
  while (!(await condition())) {
    check(Date.now() - started < SETTLE_TIMEOUT_MS, `${what} within ${SETTLE_TIMEOUT_MS} ms`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  return Date.now() - started
}

function describe(record: RecordView): string {
  return record.kind === 'preference' ? `${String(record.key)} = ${String(record.value)}` : String(record.summary ?? record.id)
}

export async function syncTour(root: string, { say, step, check }: Narrator): Promise<void> {
  step('sync over WebSockets: a relay on loopback, laptop and phone homes on disk')
  const relay = await Relay.start({ path: path.join(root, 'relay'), port: 0 })
  const memories: Memory[] = []
  const clients: SyncClient[] = []
  try {
    const laptop = await Memory.open({ path: path.join(root, 'sync-laptop'), name: 'sam' })
    memories.push(laptop)
    const phone = await Memory.open({ path: path.join(root, 'sync-phone'), space: laptop.space })
    memories.push(phone)
    await laptop.grant(phone.author, ['admin'])
    say(`  relay ${relay.url} (key ${shortId(relay.identity.author)}); laptop owns space ${shortId(laptop.space)}, grants the phone's key admin`)
    const editor = await laptop.remember({ kind: 'preference', key: 'editor', value: 'nano' })
    await laptop.remember({ kind: 'preference', key: 'drink', value: 'tea' })
    await laptop.remember({ kind: 'core', id: 'notes', content: 'Notes on Sam.' })
    const door = await laptop.remember({ kind: 'episode', summary: 'The door code is 4512' })
    const up = await startSync(laptop, relay.url, { live: false })
    await up.client.synced()
    const down = await startSync(phone, relay.url, { live: false })
    await down.client.synced()
    const first = (await laptop.digest()) === (await phone.digest())
    say(`  one-time syncs, laptop then phone: phone received ${count(down.totals.received, 'event')}; digests equal: ${first}`)
    check(first && up.totals.sent > 0 && down.totals.received === up.totals.sent, 'the first sync converges')

    step('offline, concurrently: both set "editor", both append to core block "notes", each remembers an episode')
    await laptop.update(editor, { set: { value: 'vim' } })
    await phone.update(editor, { set: { value: 'helix' } })
    await laptop.appendText('notes', ' Laptop: hikes on Sundays.')
    await phone.appendText('notes', ' Phone: works nights.')
    const tea = await laptop.remember({ kind: 'episode', summary: 'Sam had green tea at 9' })
    await phone.remember({ kind: 'episode', summary: 'Sam called the dentist' })
    const differ = (await laptop.digest()) !== (await phone.digest())
    say(`  laptop: editor = ${quote((await laptop.get(editor))?.value)}; phone: editor = ${quote((await phone.get(editor))?.value)}; digests differ: ${differ}`)
    check(differ, 'offline replicas diverge')

    step('both sync live through the relay')
    const [left, right] = [await startSync(laptop, relay.url, { live: true }), await startSync(phone, relay.url, { live: true })]
    clients.push(left.client, right.client)
    await Promise.all([left.client.synced(), right.client.synced()])
    await until(async () => (await laptop.digest()) === (await phone.digest()), 'live replicas converge', check)
    const [laptopDigest, phoneDigest] = [await laptop.digest(), await phone.digest()]
    // Received counts only: a live session may also echo what it was just pushed (see the sync report).
    say(`  laptop received ${left.totals.received}, phone received ${right.totals.received}; digests ${shortId(laptopDigest)} ${shortId(phoneDigest)}: equal: ${laptopDigest === phoneDigest}`)
    const [merged, notes] = [await laptop.get(editor), String((await laptop.get('notes'))?.content)]
    say(`  editor = ${quote(merged?.value)} on both (last writer wins); notes = ${quote(notes)}`)
    check(merged?.value === (await phone.get(editor))?.value && ['vim', 'helix'].includes(String(merged?.value)), 'both show one winning editor')
    check(notes.includes('Laptop: hikes') && notes.includes('Phone: works nights'), 'both appends survive')

    step(`phone forgets episode ${door} while both are live`)
    const created = (await laptop.history(door)).find((item) => item.op === 'memory.create')
    check(created !== undefined, 'laptop holds the create event')
    await phone.forget(door)
    const waited = await until(async () => (await laptop.get(door)) === undefined, 'the forget reaches the laptop', check)
    const body = (await laptop.log.get(created?.event ?? ''))?.bodyState
    const history = (await laptop.history(door)).map((item) => item.op ?? `(${item.type})`)
    const agreed = (await laptop.digest()) === (await phone.digest())
    say(`  laptop, ${waited} ms later: get → nothing; history: ${history.join(', ')}; create event ${shortId(created?.event ?? '')} body ${body}; digests equal: ${agreed}`)
    check(body === 'erased' && !history.includes('memory.create') && agreed, 'the forget erased the content on the laptop')

    step('a reader holding a token scoped to kinds [preference], read only, syncs once')
    const reader = await Memory.open({ path: path.join(root, 'sync-reader'), space: laptop.space })
    memories.push(reader)
    const token = laptop.createToken({ audience: reader.author, scope: { kinds: ['preference'] }, permissions: ['read'], expiresIn: 3_600_000 })
    const readerSync = await startSync(reader, relay.url, { live: false, token })
    await readerSync.client.synced()
    const seen = (await reader.query({})).records
    say(`  it sees ${count(seen.length, 'record')}: ${seen.map((record) => `${record.kind} ${describe(record)}`).join(', ')}`)
    check(seen.length > 0 && seen.every((record) => record.kind === 'preference'), 'the reader sees only preferences')
    const teaEvent = (await laptop.history(tea)).find((item) => item.op === 'memory.create')?.event ?? ''
    const atReader = await reader.log.get(teaEvent)
    say(`  episode ${tea}: ${(await reader.get(tea)) === undefined ? 'absent' : 'PRESENT (!)'}; its create event arrived as a signed header only (body ${atReader?.bodyState})`)
    check((await reader.get(tea)) === undefined && atReader?.bodyState === 'absent', 'out-of-scope records travel as headers only')

    step('an agent granted write, with a token for kinds [preference], writes a preference and a private note, then syncs')
    const agent = await Memory.open({ path: path.join(root, 'sync-agent'), space: laptop.space })
    memories.push(agent)
    await laptop.grant(agent.author)
    const agentToken = laptop.createToken({ audience: agent.author, scope: { kinds: ['preference'] }, permissions: ['read', 'write'], expiresIn: 3_600_000 })
    const agentOnce = async (): Promise<{ sent: number; withheld: string[] }> => {
      const { client, totals } = await startSync(agent, relay.url, { live: false, token: agentToken })
      const withheld: string[] = []
      client.on('withheld', ({ events }) => withheld.push(...events.map((item) => item.event)))
      await client.synced()
      return { sent: totals.sent, withheld }
    }
    await startSync(laptop, relay.url, { live: false }).then(({ client }) => client.synced())
    await agentOnce()
    const note = await agent.remember({ kind: 'episode', summary: 'private note: the user sounded tired today' })
    const music = await agent.remember({ kind: 'preference', key: 'music', value: 'quiet jazz while working' })
    const agentSync = await agentOnce()
    await startSync(laptop, relay.url, { live: false }).then(({ client }) => client.synced())
    const noteAtLaptop = await laptop.log.get(agentSync.withheld[0] ?? '')
    say(`  the relay withheld ${count(agentSync.withheld.length, 'event')} of ${agentSync.sent} sent: the note stays on the agent (body at the laptop: ${noteAtLaptop?.bodyState}); the laptop now has music = ${quote((await laptop.get(music))?.value)}`)
    check(agentSync.withheld.length === 1 && noteAtLaptop?.bodyState === 'absent' && (await laptop.get(note)) === undefined && (await agent.get(note)) !== undefined &&
      (await laptop.get(music))?.value === 'quiet jazz while working', 'a write outside the token stays on the writer, and the sync goes on')
    const agentKept = await agent.withheld()
    say(`  the agent's store kept the relay's word: memory.withheld() lists ${agentKept.map((item) => `${item.op} of ${item.record?.kind} ${item.record?.id}`).join(', ')}`)
    check(agentKept.length === 1 && agentKept[0]?.record?.id === note && agentKept[0]?.relay === relay.url, 'the writer can list what stayed on its device')

    step('a reader scoped to the tag "shared" syncs; then the laptop untags the one shared episode')
    const shared = await laptop.remember({ kind: 'episode', summary: 'trip plan: Bergen in May', tags: ['shared'] })
    const tagReader = await Memory.open({ path: path.join(root, 'sync-tag-reader'), space: laptop.space })
    memories.push(tagReader)
    const tagToken = laptop.createToken({ audience: tagReader.author, scope: { tags: { any: ['shared'] } }, permissions: ['read'], expiresIn: 3_600_000 })
    const syncOnce = async (memory: Memory, token?: string): Promise<void> => {
      const { client } = await startSync(memory, relay.url, { live: false, ...(token !== undefined ? { token } : {}) })
      await client.synced()
    }
    await syncOnce(laptop)
    await syncOnce(tagReader, tagToken)
    const before = (await tagReader.query({})).records.map((record) => describe(record))
    say(`  before: the tag reader sees ${before.map(quote).join(', ')}`)
    check(before.length === 1 && (await tagReader.get(shared)) !== undefined, 'the tag reader sees the shared episode')
    await laptop.update(shared, { remove: { tags: ['shared'] } })
    await syncOnce(laptop)
    await syncOnce(tagReader, tagToken)
    const createEvent = (await laptop.history(shared)).find((item) => item.op === 'memory.create')?.event ?? ''
    const kept = await tagReader.log.get(createEvent)
    say(`  after: it sees ${count((await tagReader.query({})).records.length, 'record')}; the episode was withdrawn, its create event kept as a header (body ${kept?.bodyState})`)
    check((await tagReader.get(shared)) === undefined && kept?.bodyState === 'absent' && (await tagReader.search('Bergen')).length === 0, 'a record that leaves a tag scope is withdrawn from the reader')
  } finally {
    for (const client of clients) await client.close()
    await relay.stop()
    for (const memory of memories) await memory.close()
  }
}

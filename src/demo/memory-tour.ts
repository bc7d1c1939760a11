/**
 * The memory part of `npm start`: two replicas of one space (a laptop and a phone, each a
 * Cairn home with its own key) diverge while offline, exchange signed events both ways and
 * converge: equal digests, last writer wins on a field both changed, both appends to a shared
 * core block kept, a forget on one replica erasing the content on the other.
 *
 * Invariant (as in start.ts): every value printed is read back from the engine at that moment,
 * and every narrated outcome is checked, so a step that misbehaves fails the demo.
 */
import path from 'node:path'
import { canonicalJson, Memory, shortId, type HistoryItem, type RecordView } from '../index.js'

export interface Narrator {
  say(text?: string): void
  step(title: string): void
  check(condition: boolean, what: string): void
}

const quote = (text: unknown): string => JSON.stringify(text)
const count = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`

/** Sends what `to` lacks from `from`; returns how many events `to` applied. */
async function send(from: Memory, to: Memory): Promise<number> {
  return (await to.ingest(await from.events(to.versionVector()))).applied.length
}

async function episodes(memory: Memory): Promise<RecordView[]> {
  return (await memory.query({ kind: 'episode' })).records
}

/** The patch event that wins last-writer-wins: greatest (clock, author). */
function lastWriter(items: readonly HistoryItem[]): HistoryItem | undefined {
  const order = (item: HistoryItem) => [item.clock.wall, item.clock.logical, item.author] as const
  return items.filter((item) => item.op === 'memory.patch').reduce<HistoryItem | undefined>((best, item) => {
    if (!best) return item
    const [a, b] = [order(item), order(best)]
    return a[0] !== b[0] ? (a[0] > b[0] ? item : best) : a[1] !== b[1] ? (a[1] > b[1] ? item : best) : a[2] > b[2] ? item : best
  }, undefined)
}

export async function memoryTour(root: string, { say, step, check }: Narrator): Promise<void> {
  step('memory on two replicas of one space: laptop creates it, phone joins with its own key')
  const laptop = await Memory.open({ path: path.join(root, 'laptop'), name: 'sam' })
  const replicas = [laptop]
  try {
    const phone = await Memory.open({ path: path.join(root, 'phone'), space: laptop.space })
    replicas.push(phone)
    const names = new Map([[laptop.author, 'laptop'], [phone.author, 'phone']])
    await laptop.grant(phone.author)
    await laptop.remember({ kind: 'core', id: 'human', content: 'Name: Sam.' })
    const drink = await laptop.remember({ kind: 'preference', key: 'drink', value: 'coffee' })
    const door = await laptop.remember({ kind: 'episode', summary: 'The door code is 4512', tags: ['home'] })
    const synced = await send(laptop, phone)
    const same = (await laptop.digest()) === (await phone.digest())
    say(`  laptop remembers core "human", drink = coffee and episode ${door}; phone applies ${count(synced, 'event')}; digests equal: ${same}`)
    check(same, 'the first sync converges')

    step('offline: each remembers something different')
    const tea = await laptop.remember({ kind: 'episode', details: 'Sam prefers green tea in the morning', tags: ['drinks'] })
    const nuts = await phone.remember({ kind: 'episode', details: 'Sam is allergic to peanuts', tags: ['health'] })
    for (const [name, memory] of [['laptop', laptop], ['phone', phone]] as const) {
      const seen = (await episodes(memory)).map((record) => quote(record.summary))
      say(`  ${name.padEnd(6)} sees ${seen.length} episodes: ${seen.join(', ')}`)
    }
    const [laptopDigest, phoneDigest] = [await laptop.digest(), await phone.digest()]
    say(`  digests laptop ${shortId(laptopDigest)} phone ${shortId(phoneDigest)}: differ: ${laptopDigest !== phoneDigest}`)
    check(laptopDigest !== phoneDigest, 'offline replicas diverge')

    step('offline, concurrently: both change drink, both append to core block "human"')
    await laptop.update(drink, { set: { value: 'green tea' } })
    await laptop.appendText('human', ' Likes hiking.')
    await phone.update(drink, { set: { value: 'black tea' } })
    await phone.appendText('human', ' Works nights.')
    say(`  laptop: drink = ${quote((await laptop.get(drink))?.value)}, human = ${quote((await laptop.get('human'))?.content)}`)
    say(`  phone:  drink = ${quote((await phone.get(drink))?.value)}, human = ${quote((await phone.get('human'))?.content)}`)

    step('back online: exchange events both ways')
    const toPhone = await send(laptop, phone)
    const toLaptop = await send(phone, laptop)
    const [left, right] = [await laptop.digest(), await phone.digest()]
    say(`  laptop → phone ${count(toPhone, 'event')}, phone → laptop ${toLaptop}; digests ${shortId(left)} ${shortId(right)}: equal: ${left === right}`)
    check(left === right, 'replicas converge after the exchange')
    const merged = await laptop.get(drink)
    const winner = lastWriter(await laptop.history(drink))
    const winnerName = winner ? names.get(winner.author) ?? shortId(winner.author) : '?'
    say(`  drink = ${quote(merged?.value)}: last writer wins, and the later write (by clock) was ${winnerName}'s`)
    check(canonicalJson(merged ?? null) === canonicalJson((await phone.get(drink)) ?? null), 'both show the same drink')
    check(merged?.value === (winner?.author === phone.author ? 'black tea' : 'green tea'), 'the later write wins')
    const human = String((await laptop.get('human'))?.content)
    say(`  human = ${quote(human)}: both appends kept`)
    check(human.includes('Likes hiking.') && human.includes('Works nights.'), 'both appends survive')
    const both = (await episodes(phone)).map((record) => record.id)
    say(`  each now sees ${both.length} episodes, including ${tea} (laptop's) and ${nuts} (phone's)`)
    check(both.includes(tea) && both.includes(nuts), 'each sees both offline episodes')

    step(`forget reaches every copy: phone forgets laptop's episode ${door}`)
    const created = (await laptop.history(door)).find((item) => item.op === 'memory.create')
    check(created !== undefined, 'laptop holds the create event')
    const tombstone = await phone.forget(door, { reason: 'a secret, shared by mistake' })
    const reached = await send(phone, laptop)
    const gone = (await laptop.get(door)) === undefined
    const history = (await laptop.history(door)).map((item) => item.op ?? `(${item.type})`)
    const body = (await laptop.log.get(created?.event ?? ''))?.bodyState
    say(`  phone signs tombstone ${tombstone.id}; laptop applies ${count(reached, 'event')}; there get → ${gone ? 'nothing' : 'the record (!)'}`)
    say(`  laptop's history of it: ${history.join(', ')}; its create event ${shortId(created?.event ?? '')} now has body ${body}`)
    const found = await laptop.search('door code')
    const converged = (await laptop.digest()) === (await phone.digest())
    say(`  laptop search "door code": ${count(found.length, 'result')}; digests equal: ${converged}`)
    check(gone && body === 'erased' && !history.includes('memory.create') && found.length === 0, 'the forget erased the content on laptop')
    check(converged, 'replicas agree after the forget')

    step('search "tea" on laptop, best first')
    for (const [rank, { record, score }] of (await laptop.search('tea')).entries()) {
      const text = record.kind === 'preference' ? `${String(record.key)} = ${String(record.value)}` : String(record.summary)
      say(`  ${rank + 1}. ${score.toFixed(3)}  ${record.kind.padEnd(10)}  ${text}`)
    }
  } finally {
    for (const memory of replicas) await memory.close()
  }
}

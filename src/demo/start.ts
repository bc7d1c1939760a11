/**
 * `npm start`: a narrated tour of what Cairn does so far, on the embedded store in a fresh
 * temporary directory that is removed at the end: the signed log (here), then the memory on
 * two replicas diverging and converging (memory-tour.ts), then the same story over a relay on
 * loopback with live sync, a forget that reaches, and a scoped token (sync-tour.ts), then
 * portable bundles: signed .mem export, tamper refusal, byte-exact restore, PAM, mem0 (bundle-tour.ts).
 *
 * Invariant: every value printed is read back from the engine at that moment (ids, counts,
 * heads, vectors, error codes); nothing is hard-coded, so the output is evidence, and any
 * step that does not behave as narrated makes the demo exit 1.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { eventTable } from '../cli/index.js'
import {
  buildEvent, canonicalJson, eventSignable, Identity, initHome, isCairnError, LogStore, nextHlc, shortId,
  type EventEnvelope, type Home, type SpaceLog, type VersionVector,
} from '../index.js'
import { memoryTour } from './memory-tour.js'
import { syncTour } from './sync-tour.js'
import { bundleTour } from './bundle-tour.js'

const say = (text = ''): void => console.log(text)
const count = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`
const step = (title: string): void => say(`\n▸ ${title}`)

function check(condition: boolean, what: string): void {
  if (!condition) throw new Error(`demo expectation failed: ${what}`)
}

function showVector(vector: VersionVector, names: ReadonlyMap<string, string>): string {
  return Object.entries(vector).map(([author, seq]) => `${names.get(author) ?? shortId(author)}:${seq}`).join(' ')
}

async function countSignatures(log: SpaceLog): Promise<{ events: number; signatures: number }> {
  let events = 0
  let signatures = 0
  for await (const event of log.readApplied()) {
    events++
    if (event.signature) signatures++
  }
  return { events, signatures }
}

/** Copies envelopes so tampering with one never touches what a store handed out. */
function copyEnvelopes(envelopes: readonly EventEnvelope[]): EventEnvelope[] {
  return envelopes.map((envelope) => ({
    ...envelope,
    header: Uint8Array.from(envelope.header),
    ...(envelope.body ? { body: Uint8Array.from(envelope.body) } : {}),
  }))
}

/** Ingests into a throwaway in-memory replica; returns the refusal, or undefined if accepted. */
async function ingestFresh(space: string, envelopes: readonly EventEnvelope[]): Promise<{ error?: string; events: number }> {
  const store = await LogStore.open()
  try {
    const log = await store.openSpace(space)
    let error: string | undefined
    try {
      await log.ingest(envelopes)
    } catch (caught) {
      if (!isCairnError(caught)) throw caught
      error = caught.message
    }
    return { ...(error !== undefined ? { error } : {}), events: Object.values(log.versionVector()).reduce((a, b) => a + b, 0) }
  } finally {
    await store.close()
  }
}

async function run(root: string): Promise<void> {
  step('init a home: a new identity (alice) and a new space she owns')
  const alice: Home = await initHome(path.join(root, 'alice'), { name: 'demo' })
  const homes: Home[] = [alice]
  try {
    const keyMode = ((await stat(path.join(alice.dir, 'identity.json'))).mode & 0o777).toString(8)
    const space = alice.log.space
    const names = new Map<string, string>([[alice.identity.author, 'alice']])
    say(`  space ${shortId(space)}  owner alice ${shortId(alice.identity.author)}  key file mode ${keyMode}`)

    step('append two events one by one (one signature each), then a batch of three (one signature)')
    await alice.log.append(alice.identity, { op: 'memory.note', data: { text: 'the user prefers tea' } })
    await alice.log.append(alice.identity, { op: 'memory.note', data: { text: 'meeting moved to Friday' } })
    await alice.log.appendBatch(alice.identity, [1, 2, 3].map((n) => ({ op: 'memory.fact', data: { n, text: `imported fact ${n}` } })))
    const counts = await countSignatures(alice.log)
    say(`  alice holds ${counts.events} events covered by ${counts.signatures} signatures (genesis, two singles, one batch)`)
    check(counts.events === 6 && counts.signatures === 4, 'six events, four signatures')

    step('the log, in apply order')
    const table = eventTable(alice.log.versionVector())
    say(`  ${table.heading}`)
    for await (const event of alice.log.readApplied()) say(`  ${table.row(event)}`)

    step('a second replica (bob): same space, his own key; alice grants him write')
    const bob = await initHome(path.join(root, 'bob'), { space })
    homes.push(bob)
    names.set(bob.identity.author, 'bob')
    await alice.log.grant(alice.identity, bob.identity.author, ['write'])
    const toBob = await alice.log.envelopesSince(bob.log.versionVector())
    const atBob = await bob.log.ingest(toBob)
    say(`  alice → bob: ${count(toBob.length, 'envelope')}, ${count(toBob.filter((e) => e.signature).length, 'signature')}; bob applied ${atBob.applied.length}`)
    await bob.log.append(bob.identity, { op: 'memory.note', data: { text: 'bob was here' } })
    await bob.log.appendBatch(bob.identity, [{ op: 'memory.fact', data: { text: 'written offline on bob' } }, { op: 'memory.fact', data: { text: 'and another' } }])
    const toAlice = await bob.log.envelopesSince(alice.log.versionVector())
    const atAlice = await alice.log.ingest(toAlice)
    say(`  bob → alice: ${count(toAlice.length, 'envelope')}, ${count(toAlice.filter((e) => e.signature).length, 'signature')}; alice applied ${atAlice.applied.length}`)
    const headsEqual = canonicalJson(alice.log.heads()) === canonicalJson(bob.log.heads())
    const vectorsEqual = canonicalJson(alice.log.versionVector()) === canonicalJson(bob.log.versionVector())
    say(`  heads   alice ${alice.log.heads().map(shortId).join(' ')}  bob ${bob.log.heads().map(shortId).join(' ')}  equal: ${headsEqual}`)
    say(`  vectors alice ${showVector(alice.log.versionVector(), names)}  bob ${showVector(bob.log.versionVector(), names)}  equal: ${vectorsEqual}`)
    check(headsEqual && vectorsEqual, 'replicas converge')

    step('verify: re-check every id, body hash, chain, signature, clock and grant from disk')
    for (const [name, home] of [['alice', alice], ['bob', bob]] as const) {
      const report = await home.log.verify()
      say(`  ${name}: ${report.ok ? 'ok' : 'FAILED'} (${report.events} events, ${report.authors} authors, ${report.signatures} signatures)`)
      check(report.ok, `${name} verifies`)
    }

    step('tampering: flip one byte of a shipped copy and give it to a fresh replica')
    const shipped = await alice.log.envelopesSince({})
    const clean = await ingestFresh(space, copyEnvelopes(shipped))
    say(`  untouched copy: accepted, ${clean.events} events applied`)
    check(clean.error === undefined, 'the untouched copy is accepted')
    // Two data events with bodies: one gets a body byte flipped, the other a header byte.
    const [bodyIndex, headerIndex] = shipped.flatMap((e, i) => (e.body !== undefined && i > 0 && !e.signature ? [i] : [])) as [number, number]
    const flip = (bytes: Uint8Array): void => {
      const middle = bytes.length >> 1
      bytes[middle] = (bytes[middle] as number) ^ 0x01
    }
    const bodyCopy = copyEnvelopes(shipped)
    flip((bodyCopy[bodyIndex] as EventEnvelope).body as Uint8Array)
    const bodyResult = await ingestFresh(space, bodyCopy)
    say(`  body byte flipped in event ${shortId(shipped[bodyIndex]?.id ?? '')}: refused with ${bodyResult.error ?? 'nothing (!)'}`)
    const headerCopy = copyEnvelopes(shipped)
    flip((headerCopy[headerIndex] as EventEnvelope).header)
    const headerResult = await ingestFresh(space, headerCopy)
    say(`  header byte flipped in event ${shortId(shipped[headerIndex]?.id ?? '')}: refused with ${headerResult.error ?? 'nothing (!)'}`)
    say(`  events applied from the tampered copies: ${bodyResult.events} and ${headerResult.events} (ingest is all-or-nothing)`)
    check(bodyResult.error !== undefined && headerResult.error !== undefined && bodyResult.events + headerResult.events === 0, 'tampering is refused')

    step('an unauthorized writer: mallory was never granted, signs an event and ships it to alice')
    const mallory = Identity.generate()
    const heads = alice.log.heads()
    const headClocks = await Promise.all(heads.map(async (id) => (await alice.log.get(id))?.header.clock ?? { wall: 0, logical: 0 }))
    const forged = buildEvent({
      space, author: mallory.author, seq: 1, deps: heads, clock: nextHlc(Date.now(), headClocks),
      kind: 'data', op: 'memory.note', data: { text: 'trust me' },
    }, alice.store.crypto)
    const forgedEnvelope: EventEnvelope = {
      id: forged.id, header: new TextEncoder().encode(forged.headerText), body: forged.bodyBytes as Uint8Array, signature: mallory.sign(eventSignable(forged.id)),
    }
    let refusal = 'nothing (!)'
    try {
      await alice.log.ingest([forgedEnvelope])
    } catch (error) {
      if (!isCairnError(error)) throw error
      refusal = error.message
    }
    say(`  refused with ${refusal}`)
    check(refusal.startsWith('NOT_AUTHORIZED'), 'the unauthorized event is refused')

    step('erasure: drop one body; the header, id and signature still verify')
    const target = shipped[bodyIndex] as EventEnvelope
    await alice.log.erase([target.id])
    const erased = await alice.log.get(target.id)
    const after = await alice.log.verify()
    say(`  event ${shortId(target.id)} body is now ${erased?.bodyState}; verify: ${after.ok ? 'ok' : 'FAILED'} (${after.erasedBodies} erased body)`)
    check(erased?.bodyState === 'erased' && after.ok, 'erasure keeps the log verifiable')
  } finally {
    for (const home of homes) await home.store.close()
  }
}

const started = Date.now()
const root = await mkdtemp(path.join(os.tmpdir(), 'cairn-demo-'))
say(`Cairn demo: the signed event log, the memory on two replicas, sync through a relay, and portable bundles, on the embedded store in ${root}`)
try {
  await run(root)
  await memoryTour(root, { say, step, check })
  await syncTour(root, { say, step, check })
  await bundleTour(root, { say, step, check })
  say(`\ndone in ${((Date.now() - started) / 1000).toFixed(1)} s`)
} catch (error) {
  console.error(`demo failed: ${error instanceof Error ? error.message : String(error)}`)
  process.exitCode = 1
} finally {
  await rm(root, { recursive: true, force: true })
  say(`removed ${root}`)
}

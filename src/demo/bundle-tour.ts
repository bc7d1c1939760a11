/**
 * The bundle part of `npm start`: memory leaves a replica as a signed Portable Memory `.mem`
 * bundle, is checked offline, refused when one byte is changed or the wrong key is trusted,
 * restored into a fresh replica and exported again byte for byte; a bundle made before a
 * deletion brings nothing back; a PAM artifact and a mem0 export come in too.
 *
 * Invariant (as in start.ts): every value printed is read back at that moment, and every
 * narrated outcome is checked, so a step that misbehaves fails the demo.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { isCairnError, Memory, shortId, validateMemBundle } from '../index.js'
import type { Narrator } from './memory-tour.js'

const count = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`

const DATA_FILES = ['items/episode.jsonl', 'items/preference.jsonl', 'items/fact.jsonl']

function sameFiles(a: string, b: string): boolean {
  return DATA_FILES.every((file) => readFileSync(path.join(a, file)).equals(readFileSync(path.join(b, file))))
}

/** A mem0 `get_all` export as another system would hand it over. */
const MEM0_EXPORT = {
  results: [
    { id: '6f1c2a7e-1b1e-4c55-9d2f-0a9b5e3c1d01', memory: 'Is allergic to peanuts', user_id: 'sam', created_at: '2026-03-02T09:15:00-08:00', metadata: { source: 'chat' } },
    { id: '6f1c2a7e-1b1e-4c55-9d2f-0a9b5e3c1d02', memory: 'Runs on Tuesday mornings', user_id: 'sam', created_at: '2026-03-04T07:00:00-08:00', categories: ['health'] },
  ],
}

export async function bundleTour(root: string, { say, step, check }: Narrator): Promise<void> {
  step('portable bundles: a signed .mem export of the laptop, checked offline')
  const laptop = await Memory.open({ path: path.join(root, 'bundle-laptop'), name: 'sam' })
  const opened: Memory[] = [laptop]
  try {
    const trip = await laptop.remember({ kind: 'episode', summary: 'Booked the Lisbon trip for May' })
    await laptop.remember({ kind: 'preference', key: 'seat', value: 'aisle' })
    await laptop.remember({ kind: 'fact', episodeID: trip, subject: 'sam', predicate: 'travels_to', object: 'Lisbon' })
    const bundle = path.join(root, 'laptop.mem')
    const exported = await laptop.export(bundle, { sign: true })
    check(exported.format === 'mem', 'a .mem export')
    const valid = await validateMemBundle(bundle, { trustedKeys: [laptop.author] })
    say(`  ${exported.format === 'mem' ? exported.records : 0} records → ${path.basename(bundle)}, signed by ${shortId(laptop.author)}; valid with that key: ${valid.valid}`)
    check(valid.valid, 'the signed bundle validates with the exporter key')

    step('tampering and trust: one changed byte, or the wrong key, and nothing is imported')
    const tampered = path.join(root, 'tampered.mem')
    await laptop.export(tampered, { sign: true })
    const episodes = path.join(tampered, 'items/episode.jsonl')
    writeFileSync(episodes, readFileSync(episodes, 'utf8').replace('Lisbon', 'Lisbun'))
    const report = await validateMemBundle(tampered)
    const first = report.problems[0]
    say(`  changed one byte: ${first?.code} in ${first?.file}`)
    check(!report.valid && first?.file === 'items/episode.jsonl', 'validation names the tampered file')
    const stranger = await Memory.open({})
    opened.push(stranger)
    let refusal = ''
    try {
      await stranger.import(bundle, { trustedKeys: [stranger.author] })
    } catch (error) {
      if (!isCairnError(error)) throw error
      refusal = error.code
    }
    const strangerRecords = (await stranger.query({})).records.length
    say(`  trusting another key: refused (${refusal}); records written: ${strangerRecords}`)
    check(refusal !== '' && strangerRecords === 0, 'an untrusted signature imports nothing')

    step('restore into a fresh replica and export again: the data files are byte-identical')
    const restored = await Memory.open({})
    opened.push(restored)
    const imported = await restored.import(bundle, { trustedKeys: [laptop.author] })
    const again = path.join(root, 'restored.mem')
    await restored.export(again)
    const identical = sameFiles(bundle, again)
    say(`  imported ${JSON.stringify(imported.format === 'mem' ? imported.imported : {})}; re-exported data files identical: ${identical}`)
    check(identical, 'export → import → export reproduces the data files')
    const repeat = await restored.import(bundle, { trustedKeys: [laptop.author] })
    const rewritten = repeat.format === 'mem' ? Object.values(repeat.imported).reduce((sum, n) => sum + (n ?? 0), 0) : -1
    say(`  importing the same bundle again writes ${rewritten} records`)
    check(rewritten === 0, 're-import is a no-op')

    step('no resurrection: the laptop forgets the trip; the old bundle cannot bring it back')
    await laptop.forget(trip, { reason: 'trip cancelled' })
    const stale = await laptop.import(bundle)
    const blocked = stale.format === 'mem' ? stale.blocked : 0
    const status = await laptop.status(trip)
    say(`  stale bundle imported: ${blocked} records blocked; the trip is ${status}`)
    check(status === 'deleted' && blocked >= 1, 'a stale bundle resurrects nothing')

    step('other formats: a PAM artifact out and in, and a mem0 export in through its adapter')
    const artifact = path.join(root, 'laptop.pam')
    const pam = await laptop.export(artifact, { format: 'pam' })
    const phone = await Memory.open({}) // another agent's memory, in a space of its own
    opened.push(phone)
    const fromPam = await phone.import(artifact, { trustedKeys: [laptop.author] })
    say(`  ${path.basename(artifact)}: ${count(pam.format === 'pam' ? pam.records : 0, 'record')}, verified (ids, provenance, signature) and imported: ${JSON.stringify(fromPam.format === 'pam' ? fromPam.imported : {})}`)
    check(fromPam.format === 'pam' && (await phone.query({ kind: 'preference' })).records.length === 1, 'the PAM artifact carries the preference')
    const mem0File = path.join(root, 'mem0-export.json')
    writeFileSync(mem0File, JSON.stringify(MEM0_EXPORT))
    const fromMem0 = await phone.import(mem0File, { from: 'mem0' })
    const peanuts = (await phone.search('peanuts'))[0]?.record
    say(`  mem0 export: ${JSON.stringify(fromMem0.format === 'source' ? fromMem0.imported : {})}; search "peanuts" → ${JSON.stringify(peanuts?.summary ?? peanuts?.details)}`)
    check(peanuts !== undefined, 'the mem0 memory is searchable')
  } finally {
    for (const memory of opened) await memory.close()
  }
}

/**
 * PAM write times (`cairn.writtenAtMs`, helper-92 review): a time in whole milliseconds may end in
 * 999, so the merge's "written after it" bound (the time + 1, merge-records.ts newerFromOf)
 * falls in the next second. rememberMany took the merge's kept times only when that bound was in
 * the source's own second, and otherwise read them again from the start of that second: a value
 * written here in that second before the signed time, which the merge wrote over, was then
 * recorded as kept at its own (older) time, and so was the artifact's value that replaced it.
 */
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/log/clock.js'
import { Memory } from '../../src/memory/index.js'
import { tempDir } from './helpers/mem-fixtures.js'

const ID = 'ep_pam_999'
const SECOND = Date.parse('2026-03-01T09:00:00Z')

async function exported(memory: Memory, name: string): Promise<string> {
  const file = path.join(tempDir(), name)
  await memory.export(file, { format: 'pam' })
  return file
}

describe('a PAM time ending in 999 ms', () => {
  it('dates the artifact value it writes by the signed time, so an artifact written earlier does not write over it', async () => {
    const clockA = new ManualClock(SECOND + 999)
    const clockB = new ManualClock(SECOND + 500)
    const clockC = new ManualClock(SECOND + 700)
    const [a, b, c] = [await Memory.open({ clock: clockA }), await Memory.open({ clock: clockB }), await Memory.open({ clock: clockC })]
    try {
      // b's value at .500, c's at .700, a's at .999: a's is the latest.
      await b.remember({ kind: 'episode', id: ID, summary: 'b at .500' })
      await c.remember({ kind: 'episode', id: ID, summary: 'c at .700' })
      await a.remember({ kind: 'episode', id: ID, summary: 'a at .999' })
      const fromA = await exported(a, 'a.pam')
      const fromC = await exported(c, 'c.pam')
      clockB.set(SECOND + 5000)

      await b.import(fromA, { trustedKeys: [a.author] })
      expect((await b.get(ID))?.summary).toBe('a at .999')
      const [found] = await b.lookup([ID], { writeTimes: true })
      expect(found?.writeTimes?.fields.summary).toBe(SECOND + 999)

      // c's value was written before a's: it does not write over it.
      await b.import(fromC, { trustedKeys: [c.author] })
      expect((await b.get(ID))?.summary).toBe('a at .999')
    } finally {
      for (const memory of [a, b, c]) await memory.close()
    }
  })
})

/**
 * A redaction takes nothing with it. Its body may carry a `derived` list (the field exists for
 * deletions); a crafted one is ignored on every replica, so holding `redact` on one record never
 * deletes another.
 */
import { expect, it } from 'vitest'
import { Memory } from '../../src/memory/index.js'

it('ignores a derived list on a redaction, here and on the replica it reaches', async () => {
  const author = await Memory.open({ name: 'redaction-derived' })
  const replica = await Memory.open({ space: author.space })
  try {
    const episode = await author.remember({ kind: 'episode', summary: 'a note to redact' })
    const other = await author.remember({ kind: 'preference', key: 'drink', value: 'tea' })
    const log = author.log as unknown as { append: (identity: unknown, entry: { op: string; data: Record<string, unknown> }) => Promise<unknown> }
    const append = log.append.bind(log)
    log.append = (identity, entry) => append(identity, entry.op === 'memory.redact' ? { ...entry, data: { ...entry.data, derived: [{ kind: 'preference', id: other }] } } : entry)
    await author.redact(episode)
    const events = await author.events()
    expect(events.some((event) => event.body !== undefined && Buffer.from(event.body).includes(`"derived":[{"id":"${other}"`))).toBe(true)
    await replica.ingest(events)
    for (const memory of [author, replica]) {
      expect(await memory.status(episode)).toBe('redacted')
      expect(await memory.status(other)).toBe('visible')
    }
    expect(await replica.digest()).toBe(await author.digest())
  } finally {
    await author.close()
    await replica.close()
  }
})

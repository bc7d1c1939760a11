/**
 * mergeRecords (src/bundle/merge-records.ts), the write path of every import: companion records
 * (what only describes the import itself) are written only beside something substantive, and an
 * import stopped part way, run again, ends with everything written.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { MERGE_BATCH, mergeRecords } from '../../src/bundle/merge-records.js'
import { Memory } from '../../src/memory/index.js'

const opened: Memory[] = []
afterEach(async () => {
  for (const memory of opened.splice(0)) await memory.close()
})

const COMPANIONS = new Set(['ep_import', 'ent_agent', 'ctx_agent'])

/**
 * An artifact's records: `count` substantive preferences, and three companions of three kinds,
 * one before the preferences in the kind order (context) and two after (entity, episode).
 */
function artifact(count: number) {
  return {
    context: [{ id: 'ctx_agent', label: 'the agent' }],
    preference: Array.from({ length: count }, (_, i) => ({ key: `key ${i}`, value: `value ${i}` })),
    entity: [{ id: 'ent_agent', type: 'agent', canonicalName: 'the agent' }],
    episode: [{ id: 'ep_import', summary: 'import' }],
  }
}

class Stop extends Error {}

describe('mergeRecords', () => {
  it('writes companions only beside a substantive record', async () => {
    const memory = await Memory.open()
    opened.push(memory)
    const first = await mergeRecords(memory, artifact(2), { companions: COMPANIONS })
    expect(first).toMatchObject({ imported: { preference: 2, episode: 1, entity: 1, context: 1 }, unchanged: 0 })
    expect(await mergeRecords(memory, artifact(2), { companions: COMPANIONS })).toEqual({ imported: {}, unchanged: 5, blocked: 0, keptNewer: 0 })
    // With nothing substantive to write, companions are not written either.
    const onlyCompanions = await Memory.open()
    opened.push(onlyCompanions)
    expect(await mergeRecords(onlyCompanions, artifact(0), { companions: COMPANIONS })).toEqual({ imported: {}, unchanged: 3, blocked: 0, keptNewer: 0 })
    expect(await onlyCompanions.get('ep_import')).toBeUndefined()
  })

  // Stopped after each batch in turn. In kind order, the context and the preferences fill the
  // first batch exactly, and the entity and episode companions would make the second alone.
  for (const stopAfter of [1, 2]) {
    it(`an import stopped after batch ${stopAfter} and run again writes every record, companions included`, async () => {
      const memory = await Memory.open()
      opened.push(memory)
      const records = artifact(MERGE_BATCH - 1)
      let batches = -1
      const stopped = await mergeRecords(memory, records, {
        companions: COMPANIONS,
        onProgress: () => {
          batches++
          if (batches === stopAfter) throw new Stop()
        },
      }).catch((error: unknown) => error)
      const total = MERGE_BATCH + 2
      if (stopAfter * MERGE_BATCH < total) expect(stopped).toBeInstanceOf(Stop)
      await mergeRecords(memory, records, { companions: COMPANIONS })
      for (const id of COMPANIONS) expect(await memory.status(id), id).toBe('visible')
      expect(await memory.recordCount()).toBe(total)
    })
  }
})

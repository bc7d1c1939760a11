/**
 * What a relay said of this replica's withheld writes, as the store keeps it
 * (memory/withheld-writes.ts): only this replica's own events, held with their body, are kept;
 * the first word of a relay stands; each relay is kept apart; it survives a reopen and a
 * forget of the record; a damaged entry is refused by name. The sync path that feeds it is
 * covered end to end in test/property/withheld.property.test.ts and test/cli/sync-commands.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { LogStore, Memory, StorageError } from '../../src/index.js'
import { tempDirs } from '../helpers/temp-dirs.js'

const { tempDir, removeTempDirs } = tempDirs('cairn-withheld-')
afterEach(removeTempDirs)

const RELAY = 'ws://127.0.0.1:4040'
const OTHER_RELAY = 'wss://relay.example/cairn'
const denied = (event: string, message = 'record is outside the token\'s scope or does not exist here') => ({ event, code: 'PERMISSION_DENIED', message })

/** The id of the last event `memory` appended. */
function lastEvent(memory: Memory): string {
  return memory.log.heads().find((id) => id !== undefined) as string
}

describe('withheld writes', () => {
  it('keeps what a relay said of this replica\'s own events, with the record each wrote, in the order written', async () => {
    const memory = await Memory.open()
    const episode = await memory.remember({ kind: 'episode', summary: 'a private diary entry' })
    const create = lastEvent(memory)
    await memory.update(episode, { set: { summary: 'a longer private diary entry' } })
    const patch = lastEvent(memory)
    // Reported out of order, one twice: noted once each, listed in the order written.
    const kept = await memory.noteWithheld(RELAY, [denied(patch), denied(create), denied(patch)])
    expect(kept.map((note) => note.event)).toEqual([patch, create])
    const listed = await memory.withheld()
    expect(listed.map((note) => [note.event, note.op, note.record])).toEqual([
      [create, 'memory.create', { kind: 'episode', id: episode }],
      [patch, 'memory.patch', { kind: 'episode', id: episode }],
    ])
    expect(listed.every((note) => note.relay === RELAY && note.code === 'PERMISSION_DENIED' && Number.isSafeInteger(note.at))).toBe(true)
    expect(listed[0]!.local).toBeLessThan(listed[1]!.local)
    await memory.close()
  })

  it('ignores events it does not hold, and other authors\' events it holds', async () => {
    const owner = await Memory.open()
    await owner.remember({ kind: 'episode', summary: 'the owner wrote this' })
    const ownersEvent = lastEvent(owner)
    const writer = await Memory.open({ space: owner.space })
    await writer.ingest(await owner.events())
    expect(await writer.log.get(ownersEvent)).toBeDefined()
    expect(await writer.noteWithheld(RELAY, [denied(ownersEvent), denied('ab'.repeat(32))])).toEqual([])
    expect(await writer.withheld()).toEqual([])
    await owner.close()
    await writer.close()
  })

  it('keeps a relay\'s first word, and each relay\'s apart', async () => {
    const memory = await Memory.open()
    await memory.remember({ kind: 'episode', summary: 'kept here' })
    const event = lastEvent(memory)
    const [first] = await memory.noteWithheld(RELAY, [denied(event, 'first')])
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(await memory.noteWithheld(RELAY, [denied(event, 'second')])).toEqual([])
    expect(await memory.withheld()).toEqual([first])
    // Within one report as well: the first word on an event stands.
    const other = await memory.remember({ kind: 'episode', summary: 'kept here too' })
    const otherEvent = lastEvent(memory)
    await memory.noteWithheld(RELAY, [denied(otherEvent, 'said first'), denied(otherEvent, 'said again')])
    expect((await memory.withheld()).find((note) => note.record?.id === other)?.message).toBe('said first')
    await memory.noteWithheld(OTHER_RELAY, [denied(event, 'from the other relay')])
    const listed = (await memory.withheld()).filter((note) => note.event === event)
    expect(listed.map((note) => [note.relay, note.message]).sort()).toEqual([[RELAY, 'first'], [OTHER_RELAY, 'from the other relay']])
    // A relay named by text that is no URL is kept as given, made encodable.
    for (const [name, kept] of [['foo:bar', 'foo:bar'], ['relay \uD800', 'relay \uFFFD']]) {
      expect((await memory.noteWithheld(name as string, [denied(event)])).map((note) => note.relay)).toEqual([kept])
    }
    await memory.close()
  })

  it('survives a reopen, and a forget that erases the event\'s body', async () => {
    const dir = await tempDir()
    const memory = await Memory.open({ path: dir })
    const episode = await memory.remember({ kind: 'episode', summary: 'the lighthouse keeper\'s note' })
    const event = lastEvent(memory)
    await memory.noteWithheld(RELAY, [denied(event)])
    await memory.forget(episode)
    expect((await memory.log.get(event))?.bodyState).toBe('erased')
    await memory.close()
    const reopened = await Memory.open({ path: dir })
    expect(await reopened.withheld()).toMatchObject([{ event, op: 'memory.create', record: { kind: 'episode', id: episode }, relay: RELAY }])
    // Nothing of the content was kept with it.
    expect(JSON.stringify(await reopened.withheld())).not.toContain('lighthouse')
    // An event whose body is gone is not noted now: what it wrote can no longer be told.
    await reopened.close()
    const again = await Memory.open({ path: dir })
    expect(await again.noteWithheld(OTHER_RELAY, [denied(event)])).toEqual([])
    await again.close()
  })

  it('refuses a damaged entry by name instead of listing a guess', async () => {
    const dir = await tempDir()
    const memory = await Memory.open({ path: dir })
    await memory.remember({ kind: 'episode', summary: 'kept here' })
    await memory.noteWithheld(RELAY, [denied(lastEvent(memory))])
    const space = memory.space
    await memory.close()
    const store = await LogStore.open({ path: `${dir}/store` })
    const key = `${space}:w:${'0'.repeat(64)}:broken`
    await store.storage.write([{ type: 'put', key, value: new TextEncoder().encode('{"event":') }])
    await store.close()
    const reopened = await Memory.open({ path: dir })
    const error = await reopened.withheld().catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(StorageError)
    expect(error).toMatchObject({ code: 'CORRUPT_STORE' })
    expect((error as StorageError).message).toContain(key)
    await reopened.close()
  })
})

/**
 * A token writer's writes its token does not allow, as a law over random histories: a granted
 * writer with a random scope (kinds, all, or tags none:[secret]) and permissions remembers,
 * updates, tags secret and forgets episodes and preferences, syncing through a relay at random
 * moments. Whatever it writes, no sync fails
 * (protocol version 2 withholds, where version 1 ended the session for good); the relay
 * withholds exactly the events a model of its rules predicts; the owner shows exactly the
 * records and values the allowed events make, holds every event of the writer (the withheld
 * ones as headers only), and holds none of the withheld content. The owner also writes offline
 * now and then, and the writer gets the owner's log before the owner syncs: what the writer's
 * token does not allow of it the relay leaves to the owner (the writer's sync waits for the
 * owner's), and nothing of the owner's is lost.
 *
 * The model: an event is judged on the relay's copy of its record, built from the events the
 * relay took. A create needs write, or derive for a record the relay does not hold; a change
 * needs the record held and write (and may not tag it secret under the tag scope); a deletion needs write and redact, and the record held unless
 * its id has its kind's own random form (an episode's: deleted in advance); the kind must be in
 * scope. A content event on a record the writer deleted before that event was synced
 * travels without its body (the writer erased it), so it is not judged at all.
 */
import fc from 'fast-check'
import { afterEach, describe, expect, it } from 'vitest'
import type { CairnError } from '../../src/errors.js'
import type { Memory } from '../../src/memory/index.js'
import { recordIdFor } from '../../src/projection/index.js'
import type { WithheldEvent } from '../../src/sync/messages.js'
import { download, openOwner, openReplica, startRelay, startSync, storeText, Teardown, tokenFor } from '../helpers/sync-fixtures.js'

const teardown = new Teardown()
afterEach(() => teardown.run())

const KEYS = ['tone', 'diet', 'light']
const SCOPES = [{ kinds: ['preference'] }, { all: true }, { tags: { none: ['secret'] } }] as const
const PERMISSIONS = [['read', 'write', 'redact'], ['read', 'write'], ['read', 'derive'], ['read']] as const

/** `owner`: instead, the owner remembers an episode offline and the writer gets the owner's log out of band. */
type Action = { readonly kind: 'episode' | 'preference'; readonly op: 'remember' | 'update' | 'forget'; readonly pick: number; readonly sync: boolean; readonly owner: boolean }
const actions = fc.array(fc.record({
  kind: fc.constantFrom('episode' as const, 'preference' as const),
  op: fc.constantFrom('remember' as const, 'update' as const, 'forget' as const),
  pick: fc.nat(),
  sync: fc.boolean(),
  owner: fc.nat(3).map((n) => n === 0),
}), { minLength: 1, maxLength: 12 })

/** One event the writer wrote, as the model sees it. */
interface Written {
  readonly seq: number
  readonly id: string
  readonly kind: 'episode' | 'preference'
  readonly op: 'create' | 'patch' | 'delete'
  /** The word only this event's content holds (none for a deletion or a change of tags). */
  readonly word?: string
  /** The event tags the record `secret` (an episode's create or change). */
  readonly secret?: boolean
}

/** The relay's copy of the writer's records, and what it withheld, as the rules predict. */
class RelayModel {
  readonly records = new Map<string, { deleted: boolean; value?: string }>()
  readonly withheld = new Set<number>()
  /** Content that never left the writer: withheld, or erased before it was synced. */
  readonly unsent = new Set<string>()
  private synced = 0

  constructor(private readonly scope: (typeof SCOPES)[number], private readonly permissions: readonly string[]) {}

  /** A sync sends every event after the last one synced. */
  sync(written: readonly Written[], deletedLocally: ReadonlySet<string>): void {
    for (const event of written.filter((item) => item.seq > this.synced)) this.judge(event, deletedLocally)
    this.synced = written.length
  }

  private judge(event: Written, deletedLocally: ReadonlySet<string>): void {
    if (event.op !== 'delete' && deletedLocally.has(event.id)) {
      if (event.word) this.unsent.add(event.word)
      return
    }
    const held = this.records.get(event.id)
    const can = (permission: string): boolean => this.permissions.includes(permission)
    const inScope = 'all' in this.scope || event.kind === 'preference' || ('tags' in this.scope && !event.secret)
    const allowed = inScope && (event.op === 'create'
      ? (held ? can('write') : can('write') || can('derive'))
      : event.op === 'patch' ? held !== undefined && can('write')
        // A deletion of a record the relay never took, in advance: only for ids of their kind's own
        // random form (episodes), never for ids derived from a key (preferences).
        : (held !== undefined || event.kind === 'episode') && can('write') && can('redact'))
    if (!allowed) {
      this.withheld.add(event.seq)
      if (event.word) this.unsent.add(event.word)
      return
    }
    if (event.op === 'delete') this.records.set(event.id, { deleted: true })
    else if (event.word !== undefined) this.records.set(event.id, { deleted: false, value: event.word })
  }
}

describe('writes a token does not allow', () => {
  it('are withheld exactly as the rules say, never end a sync, and leave no content anywhere else', async () => {
    await fc.assert(fc.asyncProperty(fc.constantFrom(...SCOPES), fc.constantFrom(...PERMISSIONS), actions, async (scope, permissions, plan) => {
      const relay = await startRelay(teardown)
      const owner = await openOwner(teardown)
      const writer = await openReplica(teardown, owner, { grant: true })
      const token = tokenFor(owner, writer, scope, permissions)
      const syncOnce = async (memory: Memory, withToken: boolean): Promise<void> => {
        const client = await startSync(teardown, memory, relay.url, { live: false, ...(withToken ? { token } : {}) })
        await client.synced()
        await client.close()
      }
      await syncOnce(owner, false)
      await syncOnce(writer, true)
      const base = writer.versionVector()[writer.author] ?? 0
      // The writer holds an event of the owner's that its token does not allow and the relay
      // lacks: the relay leaves it to the owner, and the writer's sync waits until the owner's.
      let ownerAwaited = false
      const granted: readonly string[] = permissions
      const ownerEpisodeAllowed = ('all' in scope || 'tags' in scope) && (granted.includes('write') || granted.includes('derive'))
      const syncWriter = async (into: WithheldEvent[]): Promise<void> => {
        const attempt = async (): Promise<void> => {
          const client = await startSync(teardown, writer, relay.url, { live: false, token })
          client.on('withheld', ({ events }) => into.push(...events))
          try {
            await client.synced()
          } finally {
            await client.close()
          }
        }
        if (ownerAwaited) {
          // A one-time sync stops, saying why; once the owner has synced, the next one goes through.
          expect(await attempt().then(() => 'synced', (error: CairnError) => error.code)).toBe('AWAITING_AUTHOR')
          await syncOnce(owner, false)
          ownerAwaited = false
        }
        await attempt()
      }

      const model = new RelayModel(scope, permissions)
      const written: Written[] = []
      const reported: WithheldEvent[] = []
      const local = new Map<string, { kind: 'episode' | 'preference'; deleted: boolean }>()
      const deletedLocally = new Set<string>()
      let words = 0
      /** The owner's episodes, which the writer may relay before the owner syncs: id → summary. */
      const ownerEpisodes = new Map<string, string>()
      for (const action of plan) {
        const word = `word${words++}x`
        if (action.owner) {
          ownerEpisodes.set(await owner.remember({ kind: 'episode', summary: `owner ${word}` }), `owner ${word}`)
          await writer.ingest(await owner.log.envelopesSince(writer.versionVector(), { signatures: 'stored' }))
          if (!ownerEpisodeAllowed) ownerAwaited = true
          continue
        }
        const live = [...local].filter(([, record]) => record.kind === action.kind && !record.deleted).map(([id]) => id)
        const target = live[action.pick % Math.max(1, live.length)]
        const key = KEYS[action.pick % KEYS.length] as string
        if (action.op === 'remember' || target === undefined) {
          // A deleted preference's id (derived from its key) never returns.
          if (action.kind === 'preference' && deletedLocally.has(recordIdFor('preference', { key }))) continue
          const secret = action.kind === 'episode' && action.pick % 4 === 0
          const id = action.kind === 'episode'
            ? await writer.remember({ kind: 'episode', summary: word, ...(secret ? { tags: ['secret'] } : {}) })
            : await writer.remember({ kind: 'preference', key, value: word })
          local.set(id, { kind: action.kind, deleted: false })
          written.push({ seq: written.length + 1, id, kind: action.kind, op: 'create', word, secret })
        } else if (action.op === 'update' && action.kind === 'episode' && action.pick % 3 === 0) {
          await writer.update(target, { add: { tags: ['secret'] } })
          written.push({ seq: written.length + 1, id: target, kind: action.kind, op: 'patch', secret: true })
        } else if (action.op === 'update') {
          await writer.update(target, { set: action.kind === 'episode' ? { summary: word } : { value: word } })
          written.push({ seq: written.length + 1, id: target, kind: action.kind, op: 'patch', word })
        } else {
          await writer.forget(target)
          local.set(target, { kind: action.kind, deleted: true })
          deletedLocally.add(target)
          written.push({ seq: written.length + 1, id: target, kind: action.kind, op: 'delete' })
        }
        expect(writer.versionVector()[writer.author]).toBe(base + written.length)
        if (action.sync) {
          await syncWriter(reported)
          model.sync(written, deletedLocally)
        }
      }
      await syncWriter(reported)
      model.sync(written, deletedLocally)
      await syncOnce(owner, false)

      // Withheld exactly as the rules say, each at most once (it never travels again).
      const seqs: number[] = []
      for (const { event, code } of reported) {
        expect(code).toBe('PERMISSION_DENIED')
        const stored = await owner.log.get(event)
        expect(stored?.bodyState).toBe('absent')
        seqs.push((stored?.header.seq ?? 0) - base)
      }
      expect(seqs).toEqual([...model.withheld].sort((a, b) => a - b))
      // The writer kept the relay's word: it lists exactly those events, in the order written,
      // each with the record it wrote, even where a later forget erased the body.
      const notes = await writer.withheld()
      expect(notes.map((note) => note.event)).toEqual(reported.map((report) => report.event))
      notes.forEach((note, i) => {
        const event = written[(seqs[i] as number) - 1] as Written
        expect(note).toMatchObject({ relay: relay.url, code: 'PERMISSION_DENIED', op: `memory.${event.op}`, record: { kind: event.kind, id: event.id } })
      })
      // The owner holds every event of the writer, and exactly the records the allowed ones make.
      expect(owner.versionVector()[writer.author] ?? 0).toBe(base + written.length)
      for (const id of new Set(written.map((event) => event.id))) {
        const expected = model.records.get(id)
        const status = await owner.status(id)
        if (!expected) expect(status, id).toBe('absent')
        else if (expected.deleted) expect(status, id).toBe('deleted')
        else {
          const view = await owner.get(id)
          expect(view?.kind === 'episode' ? view.summary : view?.value, id).toBe(expected.value)
        }
      }
      const text = await storeText(owner)
      for (const word of model.unsent) expect(text, word).not.toContain(word)
      // Nothing of the owner's was lost on the way through the writer: the relay holds it whole.
      const copy = await download(teardown, relay.url, owner)
      expect(copy.versionVector()).toEqual(owner.versionVector())
      for (const [id, summary] of ownerEpisodes) expect((await copy.get(id))?.summary, id).toBe(summary)
      expect(await copy.digest()).toBe(await owner.digest())
      await teardown.run()
    }), { numRuns: Number(process.env.RUNS ?? 25) })
  }, 120_000)
})

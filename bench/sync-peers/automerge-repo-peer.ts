/**
 * The peer side of automerge-repo for the sync benchmark: building the source's history (one
 * Automerge change per mutation), opening a `Repo` on a `NodeFSStorageAdapter` directory, and
 * connecting it to a relay with `WebSocketClientAdapter`.
 *
 * The memory is one document `{ records: { [id]: { [field]: value } } }` with strings as
 * `ImmutableString` (LWW scalars), as in `bench/peers/automerge-merge.ts`.
 *
 * Invariant: the built history is exactly what `handle.change` would make for the same
 * mutations, one change each (same ops, fixed actor, time 0), only without the JS view that
 * makes the interactive path cost ~8 ms a change at 10k records (bench/peers/README.md).
 */
import * as Automerge from '@automerge/automerge'
import { Repo, type DocHandle, type PeerId } from '@automerge/automerge-repo'
import { WebSocketClientAdapter } from '@automerge/automerge-repo-network-websocket'
import { NodeFSStorageAdapter } from '@automerge/automerge-repo-storage-nodefs'
import type { FieldValue, RecordsSnapshot, SourceMutations } from './sync-workload.js'

export type Value = FieldValue | Automerge.ImmutableString
export type MemoryDoc = { records: Record<string, Record<string, Value>> }

/** A fixed actor for the source, so its history is the same bytes on every run. */
const SOURCE_ACTOR = 'aa'.repeat(16)

/**
 * The source's whole history as a saved document: one change for the `records` map, then one
 * change per creation and per write, committed through the low-level handle.
 */
export function buildSourceDocument(mutations: SourceMutations): Uint8Array {
  const doc = Automerge.init<MemoryDoc>({ actor: SOURCE_ACTOR })
  const backend = Automerge.getBackend(doc)
  const recordsId = backend.putObject('_root', 'records', {})
  backend.commit(null, 0)
  const objectIds = new Map<string, string>()
  for (const { recordId, fields } of mutations.creations) {
    const objectId = backend.putObject(recordsId, recordId, {})
    for (const [field, value] of Object.entries(fields)) backend.put(objectId, field, value)
    objectIds.set(recordId, objectId)
    backend.commit(null, 0)
  }
  for (const write of mutations.writes) {
    backend.put(objectIds.get(write.recordId) as string, write.field, write.value)
    backend.commit(null, 0)
  }
  const bytes = backend.save()
  Automerge.free(doc)
  return bytes
}

/** A record's fields as the document stores them (strings as `ImmutableString`). */
export function toDocumentFields(fields: Record<string, FieldValue>): Record<string, Value> {
  const result: Record<string, Value> = {}
  for (const [field, value] of Object.entries(fields)) {
    result[field] = typeof value === 'string' ? new Automerge.ImmutableString(value) : value
  }
  return result
}

/** The records as plain data; `ImmutableString`s become strings through their `toJSON`. */
export function snapshotRecords(doc: Automerge.Doc<MemoryDoc>): RecordsSnapshot {
  return JSON.parse(JSON.stringify(doc.records ?? {})) as RecordsSnapshot
}

export function headsOf(handle: DocHandle<MemoryDoc>): string[] {
  return Automerge.getHeads(handle.doc())
}

/** A repo on `storageDir` (or in memory when undefined), not connected to anything yet. */
export function openRepo(storageDir: string | undefined, peerId?: string): Repo {
  return new Repo({
    network: [],
    ...(storageDir === undefined ? {} : { storage: new NodeFSStorageAdapter(storageDir) }),
    ...(peerId === undefined ? {} : { peerId: peerId as PeerId }),
  })
}

/**
 * Connects `repo` to the relay at `url`. The adapter retries every 5 s by default; the cold and
 * live phases never rely on a retry, so a long interval keeps a stopped relay from being
 * hammered. Fan-out peers pass the default: the relay's keep-alive (5 s ping) drops peers whose
 * process is too busy to answer, and they must come back as a real client would.
 */
export function connectRepo(repo: Repo, url: string, retryIntervalMs = 60_000): WebSocketClientAdapter {
  const adapter = new WebSocketClientAdapter(url, retryIntervalMs)
  repo.networkSubsystem.addNetworkAdapter(adapter)
  adaptersOf.set(repo, [...(adaptersOf.get(repo) ?? []), adapter])
  return adapter
}

const adaptersOf = new WeakMap<Repo, WebSocketClientAdapter[]>()

/**
 * Makes a repo's adapters safe to shut down. `disconnect` removes the adapter's own error
 * listener and then closes the socket; closing one that is still connecting (a retry in
 * progress) makes `ws` emit an error with no listener, which would end the process, so a no-op
 * listener is added. And a reconnect the adapter scheduled when its socket was dropped (see
 * `onClose`) is not cancelled by `disconnect`: it would open a new socket after shutdown and
 * retry forever, keeping the process alive, so `connect` becomes a no-op once shut down.
 */
function silenceSocketErrors(repo: Repo): void {
  for (const adapter of adaptersOf.get(repo) ?? []) {
    const socket = adapter.socket as unknown as { on?: (event: 'error', listener: () => void) => void } | undefined
    socket?.on?.('error', () => {})
  }
}

function stopReconnecting(repo: Repo): void {
  for (const adapter of adaptersOf.get(repo) ?? []) {
    ;(adapter as unknown as { connect: () => void }).connect = () => {}
  }
}

export function disconnectRepo(repo: Repo, adapter: WebSocketClientAdapter): void {
  silenceSocketErrors(repo)
  repo.networkSubsystem.removeNetworkAdapter(adapter)
}

const shutDown = new WeakSet<Repo>()

/**
 * Flushes and disconnects `repo` once; later calls do nothing (a second `shutdown` trips an
 * assertion in the WebSocket adapter, whose socket is gone).
 */
export async function shutdownRepo(repo: Repo): Promise<void> {
  if (shutDown.has(repo)) return
  shutDown.add(repo)
  silenceSocketErrors(repo)
  await repo.shutdown()
  stopReconnecting(repo)
}

/** Subscribes `notify` to a handle's head changes, for `waitFor`. */
export function onHeadsChanged(handle: DocHandle<MemoryDoc>): (notify: () => void) => () => void {
  return (notify) => {
    handle.on('heads-changed', notify)
    return () => handle.off('heads-changed', notify)
  }
}

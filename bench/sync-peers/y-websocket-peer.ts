/**
 * The peer side of Yjs for the sync benchmark: building the source's history (one transaction
 * per mutation), a `Y.Doc` persisted with `y-leveldb` the way its README shows (load the stored
 * doc, then store every update), and a `y-websocket` `WebsocketProvider` connection.
 *
 * The memory is one `Y.Doc` with `Y.Map('records')` of one `Y.Map` per record, as in
 * `bench/peers/yjs-merge.ts`.
 *
 * Invariant: a provider never talks to another peer except through the relay: cross-tab
 * BroadcastChannel is off (Node 20 has a global BroadcastChannel, so peers in one process would
 * otherwise sync directly), and awareness (presence) is off, as automerge-repo sends none.
 */
import { WebsocketProvider } from 'y-websocket'
import { LeveldbPersistence } from 'y-leveldb'
import WebSocket from 'ws'
import * as Y from 'yjs'
import { drainWrites } from './y-leveldb-drain.js'
import type { FieldValue, RecordsSnapshot, SourceMutations } from './sync-workload.js'

/** A fixed client id for the source's history, so it is the same bytes on every run. */
const SOURCE_CLIENT_ID = 1

export function recordsOf(doc: Y.Doc): Y.Map<Y.Map<FieldValue>> {
  return doc.getMap<Y.Map<FieldValue>>('records')
}

/** The source's whole history: one transaction per creation and per write. */
export function buildSourceDocument(mutations: SourceMutations): Y.Doc {
  const doc = new Y.Doc()
  doc.clientID = SOURCE_CLIENT_ID
  const records = recordsOf(doc)
  for (const { recordId, fields } of mutations.creations) {
    doc.transact(() => records.set(recordId, new Y.Map<FieldValue>(Object.entries(fields))))
  }
  for (const write of mutations.writes) {
    doc.transact(() => (records.get(write.recordId) as Y.Map<FieldValue>).set(write.field, write.value))
  }
  return doc
}

export function addRecord(doc: Y.Doc, recordId: string, fields: Record<string, FieldValue>): void {
  doc.transact(() => recordsOf(doc).set(recordId, new Y.Map<FieldValue>(Object.entries(fields))))
}

export function snapshotRecords(doc: Y.Doc): RecordsSnapshot {
  return recordsOf(doc).toJSON() as RecordsSnapshot
}

/** A document with its on-disk store (or none, for in-memory peers). */
export interface YPeer {
  doc: Y.Doc
  /** Resolves once every update so far is written to the peer's LevelDB store. */
  flush(): Promise<void>
  close(): Promise<void>
}

/**
 * Opens `docName` from `storageDir` (or an empty in-memory doc when undefined): the stored
 * state goes into a fresh `Y.Doc`, then every later update is stored as it happens.
 */
export async function openPeer(storageDir: string | undefined, docName: string): Promise<YPeer> {
  const doc = new Y.Doc()
  if (storageDir === undefined) {
    return { doc, flush: async () => {}, close: async () => doc.destroy() }
  }
  const store = new LeveldbPersistence(storageDir)
  const persisted = await store.getYDoc(docName)
  Y.applyUpdate(doc, Y.encodeStateAsUpdate(persisted))
  persisted.destroy()
  doc.on('update', (update: Uint8Array) => {
    void store.storeUpdate(docName, update)
  })
  return {
    doc,
    flush: () => drainWrites(store),
    close: async () => {
      await drainWrites(store)
      await store.destroy()
      doc.destroy()
    },
  }
}

/** Writes a whole document to a new store as one update (a compacted store), then closes it. */
export async function persistDocument(storageDir: string, docName: string, doc: Y.Doc): Promise<void> {
  const store = new LeveldbPersistence(storageDir)
  await store.storeUpdate(docName, Y.encodeStateAsUpdate(doc))
  await store.destroy()
}

/** Connects `doc` to the relay's room `docName` (no BroadcastChannel, no awareness). */
export function connectPeer(url: string, docName: string, doc: Y.Doc): WebsocketProvider {
  const provider = new WebsocketProvider(url, docName, doc, {
    connect: false,
    disableBc: true,
    WebSocketPolyfill: WebSocket as never,
  })
  provider.awareness.setLocalState(null)
  provider.connect()
  return provider
}

/** Resolves when the provider has completed its first sync with the relay. */
export function whenSynced(provider: WebsocketProvider): Promise<void> {
  if (provider.synced) return Promise.resolve()
  return new Promise((resolve) => {
    const onSync = (isSynced: boolean) => {
      if (!isSynced) return
      provider.off('sync', onSync)
      resolve()
    }
    provider.on('sync', onSync)
  })
}

/** Subscribes `notify` to every update the document applies, for `waitFor`. */
export function onUpdate(doc: Y.Doc): (notify: () => void) => () => void {
  return (notify) => {
    doc.on('update', notify)
    return () => doc.off('update', notify)
  }
}

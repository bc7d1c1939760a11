/**
 * A space's owner on an in-memory store, with its identity at hand, so a test can sign raw
 * bodies (`memory.log.append(identity, …)`) as any granted writer could.
 */
import { Identity, LogStore } from '../../src/log/index.js'
import { Memory } from '../../src/memory/index.js'

/** Opens the store and the owner's Memory; the caller closes both (memory first). */
export async function openOwnerStore(): Promise<{ store: LogStore; memory: Memory; identity: Identity }> {
  const store = await LogStore.open()
  const identity = Identity.generate()
  const log = await store.createSpace(identity)
  const memory = await Memory.attach(store, log.space, identity)
  return { store, memory, identity }
}

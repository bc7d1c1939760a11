/**
 * Waiting for a `y-leveldb` store's writes, shared by the Yjs relay and peers.
 *
 * Invariant: `drainWrites` returns only when no write is queued or running on the store.
 */
import type { LeveldbPersistence } from 'y-leveldb'

/**
 * Waits until y-leveldb's write chain is idle. A write queued while an earlier one is awaited
 * (the relay's binding stores the loaded state right after `getYDoc`) replaces `tr`, so wait
 * until it stays the same across a turn of the event loop.
 */
export async function drainWrites(store: LeveldbPersistence): Promise<void> {
  for (;;) {
    const tail = store.tr
    await tail
    await new Promise((resolve) => setImmediate(resolve))
    if (store.tr === tail) return
  }
}

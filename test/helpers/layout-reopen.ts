/**
 * Reopening a store as one an older version wrote: its projection meta says an earlier layout,
 * and a marker key that a rebuild would drop shows whether the reopen rebuilt it.
 */
import { expect } from 'vitest'
import type { Identity, LogStore, StorageWrite } from '../../src/log/index.js'
import { Memory } from '../../src/memory/index.js'
import { decodeMeta, encodeMeta, PROJECTION_LAYOUT } from '../../src/projection/projection-codec.js'

/**
 * Marks the closed store's projection of `space` as layout `layout` (with `held`: entries that
 * layout stored), reopens it, and checks it moved to the current layout. `marker` is still in
 * the store unless the reopen rebuilt the projection.
 */
export async function reopenAtLayout(store: LogStore, space: string, identity: Identity, layout: number, held: readonly StorageWrite[] = []): Promise<{ memory: Memory; marker: string }> {
  const root = `${space}:q:`
  const metaKey = `${root}m`
  const meta = decodeMeta(await store.storage.get(metaKey))
  const marker = `${root}~marker`
  await store.storage.write([{ type: 'put', key: metaKey, value: encodeMeta({ ...meta, layout }) }, { type: 'put', key: marker, value: new Uint8Array([1]) }, ...held])
  const memory = await Memory.attach(store, space, identity)
  expect(decodeMeta(await store.storage.get(metaKey)).layout).toBe(PROJECTION_LAYOUT)
  return { memory, marker }
}

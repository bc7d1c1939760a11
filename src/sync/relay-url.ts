/**
 * What a relay address may be: a ws:// or wss:// URL without a fragment (the `ws` client throws
 * on one). Shared by `Memory.sync` and `cairn sync`, which report the reason each in its own way.
 * No imports: the memory layer loads the rest of sync lazily and may load this one directly.
 */

/** Why `value` is no relay address, or undefined when it is one. */
export function relayUrlProblem(value: string): string | undefined {
  let protocol: string
  try {
    protocol = new URL(value).protocol
  } catch {
    return `expected a relay address like ws://127.0.0.1:7357, got ${JSON.stringify(value.slice(0, 200))}`
  }
  if (protocol !== 'ws:' && protocol !== 'wss:') return `a relay address starts with ws:// or wss://, not ${protocol}`
  if (value.includes('#')) return 'a relay address has no fragment (#…)'
  return undefined
}

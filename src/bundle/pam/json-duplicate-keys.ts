/**
 * Finds a duplicate key in JSON text. JSON.parse keeps the last of two equal keys silently, and
 * other parsers keep the first, so one file could verify as one artifact and import as another.
 * PAM spec §4.1 rule 6 asks implementations to reject such input; this scan lets them.
 *
 * Invariant: only called on text that parses as JSON (so the scan can trust the token shapes);
 * keys compare after unescaping, so "a" and "\u0061" are the same key.
 */

interface Frame {
  readonly isObject: boolean
  readonly keys: Set<string>
  expectsKey: boolean
}

/** The first duplicated key and its offset, or undefined when every object's keys are unique. */
export function findDuplicateKey(text: string): { key: string; offset: number } | undefined {
  const stack: Frame[] = []
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === 0x22) {
      const start = i
      for (i++; i < text.length; i++) {
        const c = text.charCodeAt(i)
        if (c === 0x5c) i++
        else if (c === 0x22) break
      }
      const frame = stack[stack.length - 1]
      if (frame?.isObject && frame.expectsKey) {
        const raw = text.slice(start, i + 1)
        const key = raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1)
        if (frame.keys.has(key)) return { key, offset: start }
        frame.keys.add(key)
        frame.expectsKey = false
      }
    } else if (code === 0x7b) stack.push({ isObject: true, keys: new Set(), expectsKey: true })
    else if (code === 0x5b) stack.push({ isObject: false, keys: new Set(), expectsKey: false })
    else if (code === 0x7d || code === 0x5d) stack.pop()
    else if (code === 0x2c) {
      const frame = stack[stack.length - 1]
      if (frame?.isObject) frame.expectsKey = true
    }
  }
  return undefined
}

/**
 * The line and scalar rules of the YAML subset reader (yaml-subset.ts): comments, indentation,
 * mapping keys, quoted scalars and core-schema typing of plain scalars.
 *
 * Invariant: each rule matches the PM reference reader's (`portable_memory/_yaml.py`), so a
 * value reads the same in Python, Swift and here.
 */
import type { JsonValue } from '../../log/index.js'

const INT_MIN = -(2n ** 63n)
const UINT_MAX = 2n ** 64n - 1n
const INT = /^[+-]?[0-9]+$/
const FLOAT = /^[+-]?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/

function opensQuote(line: string, index: number): boolean {
  return index === 0 || ' \t:[{,'.includes(line[index - 1] as string)
}

/** The line without its comment: `#` at the start or after a blank, outside quotes. */
export function stripComment(line: string): string {
  let inSingle = false
  let inDouble = false
  for (let i = 0; i < line.length; i++) {
    const character = line[i]
    if (inDouble) {
      if (character === '\\') i++
      else if (character === '"') inDouble = false
    } else if (inSingle) {
      if (character === "'") {
        if (line[i + 1] === "'") i++
        else inSingle = false
      }
    } else if (character === '"' && opensQuote(line, i)) inDouble = true
    else if (character === "'" && opensQuote(line, i)) inSingle = true
    else if (character === '#' && (i === 0 || line[i - 1] === ' ' || line[i - 1] === '\t')) return line.slice(0, i)
  }
  return line
}

/** Trims spaces and tabs only (YAML's blanks), not every Unicode space. */
export const trimSpaces = (text: string): string => text.replace(/^[ \t]+|[ \t]+$/g, '')
/** A line's content: comment stripped, blanks trimmed. */
export const contentOf = (line: string): string => trimSpaces(stripComment(line))
export const isSequenceItem = (content: string): boolean => content === '-' || content.startsWith('- ')
export const isBlockIndicator = (rest: string): boolean => /^[|>][-+0-9]*$/.test(rest)

/** The number of leading spaces. */
export function indentOf(line: string): number {
  let count = 0
  while (line[count] === ' ') count++
  return count
}

/** A quoted scalar from `text[start]`: [value, index after the closing quote, whether it closed]. */
export function readQuoted(text: string, start: number): [string, number, boolean] {
  const quote = text[start]
  let out = ''
  let i = start + 1
  if (quote === "'") {
    for (; i < text.length; i++) {
      if (text[i] !== "'") out += text[i]
      else if (text[i + 1] === "'") {
        out += "'"
        i++
      } else return [out, i + 1, true]
    }
    return [out, i, false]
  }
  const escapes: Record<string, string> = { n: '\n', t: '\t', r: '\r', b: '\b', f: '\f', '0': '\0' }
  while (i < text.length) {
    const character = text[i] as string
    if (character === '\\' && i + 1 < text.length) {
      const escape = text[i + 1] as string
      i += 2
      const hex = text.slice(i, i + 4)
      if (escape === 'u' && /^[0-9a-fA-F]{4}$/.test(hex)) {
        const code = parseInt(hex, 16)
        // As the reference: a lone surrogate has no UTF-8 form, so it becomes U+FFFD.
        out += code >= 0xd800 && code <= 0xdfff ? '\uFFFD' : String.fromCharCode(code)
        i += 4
      } else out += escapes[escape] ?? escape
      continue
    }
    if (character === '"') return [out, i + 1, true]
    out += character
    i++
  }
  return [out, i, false]
}

/** A plain or quoted scalar with its core-schema type. */
export function scalar(raw: string): JsonValue {
  const text = trimSpaces(raw)
  if (text === '') return null
  if (text[0] === '"' || text[0] === "'") return readQuoted(text, 0)[0]
  if (['null', 'Null', 'NULL', '~'].includes(text)) return null
  if (['true', 'True', 'TRUE'].includes(text)) return true
  if (['false', 'False', 'FALSE'].includes(text)) return false
  if (INT.test(text)) {
    const value = BigInt(text)
    if (value < INT_MIN || value > UINT_MAX) return text
    const asNumber = Number(value)
    return Number.isSafeInteger(asNumber) ? asNumber : value
  }
  // A float too large for a double has no JSON form; the text is kept instead.
  if (FLOAT.test(text)) {
    const value = Number(text)
    return Number.isFinite(value) ? (value === 0 ? 0 : value) : text
  }
  return text
}

/** Sets an own key (a key named `__proto__` stays data), refusing a repeat. */
export function setKey(target: Record<string, JsonValue>, key: string, value: JsonValue, fail: (message: string) => never): void {
  if (Object.hasOwn(target, key)) fail(`duplicate key ${JSON.stringify(key)}`)
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

/** `key: rest` → [key, rest] when `content` is a mapping entry. */
export function splitKey(content: string): [string, string] | undefined {
  if (content === '' || content[0] === '[' || content[0] === '{') return undefined
  if (content[0] === '"' || content[0] === "'") {
    const [key, end] = readQuoted(content, 0)
    let i = end
    while (content[i] === ' ' || content[i] === '\t') i++
    if (content[i] === ':' && (i + 1 === content.length || content[i + 1] === ' ' || content[i + 1] === '\t')) return [key, trimSpaces(content.slice(i + 1))]
    return undefined
  }
  for (let i = 0; i < content.length; i++) {
    if (content[i] === ':' && (i + 1 === content.length || content[i + 1] === ' ' || content[i + 1] === '\t')) {
      const key = trimSpaces(content.slice(0, i))
      return key === '' ? undefined : [key, trimSpaces(content.slice(i + 1))]
    }
  }
  return undefined
}

/** True when the brackets outside quotes close (or over-close) and no quote is left open. */
export function flowBalanced(text: string): boolean {
  let depth = 0
  let inSingle = false
  let inDouble = false
  for (let i = 0; i < text.length; i++) {
    const character = text[i]
    if (inDouble) {
      if (character === '\\') i++
      else if (character === '"') inDouble = false
    } else if (inSingle) {
      if (character === "'") {
        if (text[i + 1] === "'") i++
        else inSingle = false
      }
    } else if (character === '"') inDouble = true
    else if (character === "'") inSingle = true
    else if (character === '[' || character === '{') depth++
    else if (character === ']' || character === '}') depth--
  }
  return depth <= 0 && !inSingle && !inDouble
}

/**
 * JSON and JSON Lines sources, parsed strictly (integers beyond 2^53 stay exact) with errors
 * that name the file and the line.
 *
 * Invariant: a syntax error always reports a line. V8's messages sometimes carry no position
 * (and quote the whole text), so the position comes from `locateJsonError`, a small scanner
 * that finds the first offending character itself; the message never repeats the input.
 */
import { CairnError, InputError, LimitError } from '../../errors.js'
import { parseJson, type JsonValue } from '../../log/index.js'

/** The log's canonical JSON nesting limit (MAX_JSON_DEPTH, which log/index does not export). */
const MAX_JSON_DEPTH = 256
import { lineAndColumn, splitLines } from './source-text.js'

const STRING_TOKEN = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y
const NUMBER_TOKEN = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y
const WHITESPACE = /[ \t\n\r]*/y

interface JsonErrorPosition {
  readonly offset: number
  readonly reason: string
}

/** Where the first syntax error of `text` is, or undefined when the text is valid JSON. */
export function locateJsonError(text: string): JsonErrorPosition | undefined {
  const stack: string[] = []
  let index = 0
  // 'value': a value must come; 'first-value': a value or ']'; 'key': a key; 'first-key': a key or '}'; 'after': ',' or a closer.
  let state: 'value' | 'first-value' | 'key' | 'first-key' | 'after' = 'value'
  const skip = (): void => {
    WHITESPACE.lastIndex = index
    WHITESPACE.exec(text)
    index = WHITESPACE.lastIndex
  }
  const token = (pattern: RegExp): boolean => {
    pattern.lastIndex = index
    if (pattern.exec(text) === null) return false
    index = pattern.lastIndex
    return true
  }
  const fail = (reason: string): JsonErrorPosition => ({ offset: index, reason: index >= text.length ? 'unexpected end of input' : reason })
  for (;;) {
    skip()
    const char = text[index]
    if (state === 'after') {
      const top = stack[stack.length - 1]
      if (top === undefined) return index === text.length ? undefined : fail('unexpected text after the value')
      if (char === ',') {
        index++
        state = top === '{' ? 'key' : 'value'
      } else if ((char === ']' && top === '[') || (char === '}' && top === '{')) {
        index++
        stack.pop()
      } else return fail(`expected "," or "${top === '{' ? '}' : ']'}"`)
      continue
    }
    if (state === 'key' || state === 'first-key') {
      if (state === 'first-key' && char === '}') {
        index++
        stack.pop()
        state = 'after'
        continue
      }
      if (char !== '"' || !token(STRING_TOKEN)) return fail('expected a string key')
      skip()
      if (text[index] !== ':') return fail('expected ":"')
      index++
      state = 'value'
      continue
    }
    if (state === 'first-value' && char === ']') {
      index++
      stack.pop()
      state = 'after'
      continue
    }
    if (char === '{' || char === '[') {
      stack.push(char)
      index++
      state = char === '{' ? 'first-key' : 'first-value'
      continue
    }
    if (char === '"') {
      if (!token(STRING_TOKEN)) return fail('malformed string (unterminated, a raw control character or a bad escape)')
    } else if (text.startsWith('true', index)) index += 4
    else if (text.startsWith('false', index)) index += 5
    else if (text.startsWith('null', index)) index += 4
    else if (!token(NUMBER_TOKEN)) return fail('expected a JSON value')
    state = 'after'
  }
}

/**
 * Parses one JSON document; `firstLine` is the line number of the text's first line in its file.
 * @throws InputError BAD_JSON naming the file and line; LimitError TOO_DEEP
 */
export function parseJsonSource(text: string, file: string, firstLine = 1): JsonValue {
  try {
    return parseJson(text)
  } catch (error) {
    if (error instanceof LimitError) throw new LimitError(error.code, `JSON nests deeper than ${MAX_JSON_DEPTH}`, { file, line: firstLine })
    if (!(error instanceof CairnError) || error.code !== 'BAD_JSON') throw error
    const found = locateJsonError(text) ?? { offset: text.length, reason: 'not valid JSON' }
    const { line, column } = lineAndColumn(text, found.offset)
    throw new InputError('BAD_JSON', `${found.reason} at column ${column}`, { file, line: firstLine + line - 1 })
  }
}

/** One parsed line of a JSON Lines file. */
export interface JsonLine {
  readonly value: JsonValue
  readonly line: number
}

/**
 * Parses JSON Lines: one value per non-blank line.
 * @throws InputError BAD_JSON; LimitError LINE_TOO_LONG, TOO_DEEP (each naming the file and line)
 */
export function parseJsonLines(text: string, file: string): JsonLine[] {
  const out: JsonLine[] = []
  for (const { text: line, line: number } of splitLines(text, file)) {
    if (line.trim() === '') continue
    out.push({ value: parseJsonSource(line, file, number), line: number })
  }
  return out
}

/**
 * Record streams of the JSON Lines sources (the MCP memory server, OAMS): one object per line,
 * or a JSON array of them, or one object; each object comes with its file, line and path.
 *
 * Invariant: every returned item is a plain object; anything else is an InputError naming the
 * file and line (or the path in a JSON array), raised before the adapter builds any record.
 */
import { describeType } from '../../assert.js'
import { InputError } from '../../errors.js'
import type { JsonValue } from '../../log/index.js'
import { FieldReader, isObject } from './json-fields.js'
import { parseJsonLines, parseJsonSource } from './json-source.js'
import { decodeSource } from './source-text.js'
import type { AdapterInput } from './types.js'

function readers(value: JsonValue, file: string, line?: number): FieldReader[] {
  const list = Array.isArray(value) ? value : [value]
  return Array.from(list, (item, index) => {
    const path = Array.isArray(value) ? `$[${index}]` : '$'
    if (!isObject(item)) {
      throw new InputError('WRONG_TYPE', `expected an object, got ${describeType(item)}`, line === undefined ? { file, path } : { file, line })
    }
    return new FieldReader(item, file, path, line)
  })
}

/** The objects of a JSON Lines source (a JSON array or object is read whole when the text is one). */
export function recordLines(input: AdapterInput, fallbackName: string): FieldReader[] {
  if (!('files' in input)) return readers(input.json as JsonValue, input.path ?? fallbackName)
  const out: FieldReader[] = []
  for (const file of input.files) {
    const text = decodeSource(file)
    if (text.trimStart().startsWith('[')) {
      out.push(...readers(parseJsonSource(text, file.path), file.path))
      continue
    }
    for (const { value, line } of parseJsonLines(text, file.path)) out.push(...readers(value, file.path, line))
  }
  return out
}

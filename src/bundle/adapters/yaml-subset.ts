/**
 * A YAML reader for the subset memory tools write (the Engram specification and PLUR's files):
 * block mappings and sequences (also a sequence at its key's indent, and `- key: value` items),
 * block scalars `| |- |+ > >- >+` (with an explicit indent digit), flow collections over one or
 * more lines, quoted scalars (over several lines too), plain scalars over several lines,
 * comments, and `---` / `...` documents. Plain scalars take the YAML 1.2 core schema types
 * (null/~, true/false, integers, floats); dates stay strings.
 *
 * Invariant: on what the PM reference reader (`portable_memory/_yaml.py`, mirrored by the Swift
 * SDK) reads, this returns the same values, so the Engram fixture reproduces byte for byte.
 * Where the reference degrades silently (a stray deeper line skipped, trailing text ignored, an
 * unterminated quote or flow collection, a duplicate key, too deep a nesting), this refuses with
 * the file and line instead, so nothing is lost without a word.
 */
import { InputError, LimitError } from '../../errors.js'
import type { JsonValue } from '../../log/index.js'
import { splitLines, type SourceLine } from './source-text.js'
import { FlowReader, MAX_YAML_DEPTH } from './yaml-flow.js'
import {
  contentOf, flowBalanced, indentOf, isBlockIndicator, isSequenceItem, readQuoted, scalar, setKey, splitKey, trimSpaces,
} from './yaml-scalars.js'

export { MAX_YAML_DEPTH }

class DocumentReader {
  private readonly lines: SourceLine[]

  constructor(lines: readonly SourceLine[], private readonly file: string) {
    this.lines = [...lines]
  }

  private fail(index: number, message: string): never {
    const line = this.lines[Math.min(index, this.lines.length - 1)]
    throw new InputError('BAD_YAML', message, line === undefined ? { file: this.file } : { file: this.file, line: line.line })
  }

  private tooDeep(index: number): never {
    throw new LimitError('TOO_DEEP', `nesting deeper than ${MAX_YAML_DEPTH}`, { file: this.file, line: (this.lines[index] as SourceLine).line })
  }

  private raw(index: number): string {
    return (this.lines[index] as SourceLine).text
  }

  private content(index: number): string {
    return contentOf(this.raw(index))
  }

  private indent(index: number): number {
    const raw = this.raw(index)
    const count = indentOf(raw)
    if (raw[count] === '\t' && this.content(index) !== '') this.fail(index, 'a tab in indentation (YAML indents with spaces)')
    return count
  }

  private skipBlank(index: number): number {
    while (index < this.lines.length && this.content(index) === '') index++
    return index
  }

  read(): JsonValue {
    const start = this.skipBlank(0)
    if (start >= this.lines.length) return null
    const [value, next] = this.block(start, this.indent(start), 0)
    const rest = this.skipBlank(next)
    if (rest < this.lines.length) this.fail(rest, 'unexpected line (check its indentation)')
    return value
  }

  private block(index: number, indent: number, depth: number): [JsonValue, number] {
    if (depth > MAX_YAML_DEPTH) this.tooDeep(index)
    const content = this.content(index)
    if (isSequenceItem(content)) return this.sequence(index, indent, depth)
    if (splitKey(content) !== undefined) return this.mapping(index, indent, depth)
    return this.inline(index, indent - 1, content)
  }

  private sequence(index: number, indent: number, depth: number): [JsonValue[], number] {
    const items: JsonValue[] = []
    for (;;) {
      index = this.skipBlank(index)
      if (index >= this.lines.length) break
      const at = this.indent(index)
      const content = this.content(index)
      if (at < indent) break
      if (at > indent) this.fail(index, 'unexpected indentation')
      if (!isSequenceItem(content)) break
      let value: JsonValue
      if (content === '-') {
        const next = this.skipBlank(index + 1)
        ;[value, index] = next < this.lines.length && this.indent(next) > indent ? this.block(next, this.indent(next), depth + 1) : [null, next]
      } else {
        const rest = content.slice(2).replace(/^[ \t]+/, '')
        const column = indent + content.length - rest.length
        if (splitKey(rest) !== undefined) {
          // Re-read the item as a mapping that starts at `column`.
          this.lines[index] = { text: ' '.repeat(column) + rest, line: (this.lines[index] as SourceLine).line }
          ;[value, index] = this.mapping(index, column, depth + 1)
        } else [value, index] = this.inline(index, indent, rest)
      }
      items.push(value)
    }
    return [items, index]
  }

  private mapping(index: number, indent: number, depth: number): [Record<string, JsonValue>, number] {
    const result: Record<string, JsonValue> = {}
    for (;;) {
      index = this.skipBlank(index)
      if (index >= this.lines.length) break
      const at = this.indent(index)
      if (at > indent) this.fail(index, 'unexpected indentation')
      const content = this.content(index)
      const pair = at < indent || isSequenceItem(content) ? undefined : splitKey(content)
      if (pair === undefined) break
      const [key, rest] = pair
      const keyIndex = index
      let value: JsonValue
      if (rest === '') {
        const next = this.skipBlank(index + 1)
        if (next < this.lines.length && this.indent(next) > indent) [value, index] = this.block(next, this.indent(next), depth + 1)
        else if (next < this.lines.length && this.indent(next) === indent && isSequenceItem(this.content(next))) {
          ;[value, index] = this.sequence(next, indent, depth + 1)
        } else [value, index] = [null, next]
      } else [value, index] = this.inline(index, indent, rest)
      setKey(result, key, value, (message) => this.fail(keyIndex, message))
    }
    return [result, index]
  }

  private inline(index: number, indent: number, rest: string): [JsonValue, number] {
    if (isBlockIndicator(rest)) return this.blockScalar(index, indent, rest)
    if (rest[0] === '[' || rest[0] === '{') {
      let text = rest
      let next = index + 1
      while (!flowBalanced(text) && next < this.lines.length) text += ` ${this.content(next++)}`
      if (!flowBalanced(text)) this.fail(index, `unclosed flow collection "${rest[0]}"`)
      const [value, end] = new FlowReader(text, (message) => this.fail(index, message), () => this.tooDeep(index)).value(0, '')
      if (trimSpaces(text.slice(end)) !== '') this.fail(index, 'unexpected text after a flow collection')
      return [value, next]
    }
    if (rest[0] === '"' || rest[0] === "'") return this.quoted(index, rest)
    let text = rest
    let next = index + 1
    while (next < this.lines.length) {
      const content = this.content(next)
      if (content === '' || indentOf(this.raw(next)) <= indent || isSequenceItem(content) || splitKey(content) !== undefined) break
      text += ` ${content}` // a plain scalar continued on a deeper line
      next++
    }
    return [scalar(text), next]
  }

  /** A quoted scalar, continued over the following lines (folded: a line break is a space, an empty line a newline) until it closes. */
  private quoted(index: number, rest: string): [JsonValue, number] {
    let text = rest
    let next = index + 1
    let breaks = 0
    for (;;) {
      const [value, end, closed] = readQuoted(text, 0)
      if (closed) {
        if (trimSpaces(text.slice(end)) !== '') this.fail(next - 1, 'unexpected text after a quoted scalar')
        return [value, next]
      }
      if (next >= this.lines.length) this.fail(index, 'unterminated quoted scalar')
      const line = trimSpaces(this.raw(next++))
      if (line === '') breaks++
      else {
        text += (breaks > 0 ? '\n'.repeat(breaks) : ' ') + line
        breaks = 0
      }
    }
  }

  private blockScalar(index: number, indent: number, indicator: string): [string, number] {
    const isLiteral = indicator[0] === '|'
    const chomp = indicator.includes('-') ? 'strip' : indicator.includes('+') ? 'keep' : 'clip'
    const explicit = indicator.slice(1).replace(/[^0-9]/g, '')
    let blockIndent = explicit === '' ? undefined : indent + Number(explicit)
    const collected: string[] = []
    let next = index + 1
    for (; next < this.lines.length; next++) {
      const raw = this.raw(next)
      if (trimSpaces(raw) === '') {
        collected.push('')
        continue
      }
      const at = indentOf(raw)
      if (blockIndent === undefined) {
        if (at <= indent) break
        blockIndent = at
      }
      if (at < blockIndent) break
      collected.push(raw.slice(blockIndent))
    }
    let trailing = 0
    while (collected.length > 0 && collected[collected.length - 1] === '') {
      collected.pop()
      trailing++
    }
    let body: string
    if (isLiteral) body = collected.join('\n')
    else {
      const parts: string[] = []
      for (const line of collected) {
        if (line === '') parts.push('\n')
        else {
          if (parts.length > 0 && parts[parts.length - 1] !== '\n') parts.push(' ')
          parts.push(line)
        }
      }
      body = parts.join('')
    }
    if (chomp === 'strip') return [body, next]
    if (chomp === 'keep') return [body + '\n'.repeat(1 + trailing), next]
    return [body === '' ? '' : `${body}\n`, next]
  }
}

/**
 * Reads a YAML stream: one document gives its value, several give the list of their values.
 * @throws InputError BAD_YAML; LimitError TOO_DEEP, LINE_TOO_LONG (each naming the file and line)
 */
export function readYaml(text: string, file: string): JsonValue {
  const documents: JsonValue[] = []
  let current: SourceLine[] = []
  let started = false
  for (const line of splitLines(text, file)) {
    const content = contentOf(line.text)
    if (!started && content.startsWith('%')) continue // a directive before the first document
    if (content === '---' || content.startsWith('--- ')) {
      if (started || current.length > 0) documents.push(new DocumentReader(current, file).read())
      current = []
      started = true
      const rest = trimSpaces(content.slice(3))
      if (rest !== '') current.push({ text: rest, line: line.line })
      continue
    }
    if (content === '...') {
      documents.push(new DocumentReader(current, file).read())
      current = []
      started = false
      continue
    }
    if (content !== '') started = true
    current.push(line)
  }
  if (current.length > 0 || documents.length === 0) documents.push(new DocumentReader(current, file).read())
  while (documents.length > 1 && documents[documents.length - 1] === null) documents.pop()
  while (documents.length > 1 && documents[0] === null) documents.shift()
  return documents.length === 1 ? (documents[0] as JsonValue) : documents
}

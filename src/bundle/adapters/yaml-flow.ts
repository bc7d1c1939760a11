/**
 * Flow collections of the YAML subset (`[a, b]`, `{k: v}`, nested, over several lines once
 * joined), read with the reference's rules.
 *
 * Invariant: after each entry comes "," or the closer, a repeated key is refused, and nesting
 * deeper than MAX_YAML_DEPTH calls `tooDeep`; the reference would read on silently instead.
 */
import type { JsonValue } from '../../log/index.js'
import { readQuoted, scalar, setKey, trimSpaces } from './yaml-scalars.js'

/** Nesting deeper than this is refused (the reference gives up at the same depth). */
export const MAX_YAML_DEPTH = 64

/** Flow collections `[a, b]` and `{k: v}`, nested. */
export class FlowReader {
  constructor(private readonly text: string, private readonly fail: (message: string) => never, private readonly tooDeep: () => never) {}

  private space(index: number): number {
    while (index < this.text.length && ' \t\n'.includes(this.text[index] as string)) index++
    return index
  }

  /** A value at `index`; `closer` ends a plain scalar (besides ","). */
  value(index: number, closer: string, depth = 0): [JsonValue, number] {
    if (depth > MAX_YAML_DEPTH) this.tooDeep()
    index = this.space(index)
    const character = this.text[index]
    if (character === '[') return this.sequence(index + 1, depth)
    if (character === '{') return this.mapping(index + 1, depth)
    if (character === '"' || character === "'") {
      const [value, end] = readQuoted(this.text, index)
      return [value, end]
    }
    let end = index
    while (end < this.text.length && this.text[end] !== ',' && !(closer !== '' && this.text[end] === closer)) end++
    return [scalar(this.text.slice(index, end)), end]
  }

  /** After an entry: the next must be "," or the closer. */
  private after(index: number, closer: string): number {
    index = this.space(index)
    const character = this.text[index]
    if (character !== ',' && character !== closer) this.fail(`expected "," or "${closer}" in a flow collection`)
    return index
  }

  private sequence(index: number, depth: number): [JsonValue[], number] {
    const items: JsonValue[] = []
    for (;;) {
      index = this.space(index)
      if (index >= this.text.length) this.fail('unclosed flow sequence')
      if (this.text[index] === ']') return [items, index + 1]
      if (this.text[index] === ',') {
        index++
        continue
      }
      const [value, end] = this.value(index, ']', depth + 1)
      items.push(value)
      index = this.after(end, ']')
    }
  }

  private mapping(index: number, depth: number): [Record<string, JsonValue>, number] {
    const result: Record<string, JsonValue> = {}
    for (;;) {
      index = this.space(index)
      if (index >= this.text.length) this.fail('unclosed flow mapping')
      if (this.text[index] === '}') return [result, index + 1]
      if (this.text[index] === ',') {
        index++
        continue
      }
      let key: string
      if (this.text[index] === '"' || this.text[index] === "'") [key, index] = readQuoted(this.text, index)
      else {
        const start = index
        while (index < this.text.length && !':,}'.includes(this.text[index] as string)) index++
        key = trimSpaces(this.text.slice(start, index))
      }
      index = this.space(index)
      if (this.text[index] === ':') index = this.space(index + 1)
      let value: JsonValue = null
      if (index < this.text.length && this.text[index] !== ',' && this.text[index] !== '}') [value, index] = this.value(index, '}', depth + 1)
      setKey(result, key, value, this.fail)
      index = this.after(index, '}')
    }
  }
}

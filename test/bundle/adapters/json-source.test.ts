/**
 * JSON sources: the syntax-error locator agrees with JSON.parse on what is valid (a property over
 * random near-JSON text), and errors name the line of the first bad character.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { locateJsonError, parseJsonLines, parseJsonSource } from '../../../src/bundle/adapters/json-source.js'
import { refusal } from './helpers.js'

function isValidJson(text: string): boolean {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

describe('locateJsonError', () => {
  it('finds an error exactly when JSON.parse refuses the text', () => {
    const piece = fc.constantFrom('{', '}', '[', ']', ',', ':', '"a"', '"b\\n"', '1', '-2.5e3', 'true', 'null', ' ', '\n', '"', '01', 'x', '"\\q"')
    fc.assert(fc.property(fc.array(piece, { maxLength: 12 }).map((parts) => parts.join('')), (text) => {
      expect(locateJsonError(text) === undefined).toBe(isValidJson(text))
    }), { numRuns: 3000 })
    fc.assert(fc.property(fc.json(), (text) => {
      expect(locateJsonError(text)).toBeUndefined()
    }))
  })

  it('points at the first bad character', () => {
    expect(locateJsonError('{"a": 1,\n "b": }')).toEqual({ offset: 15, reason: 'expected a JSON value' })
    expect(locateJsonError('[1, 2')).toEqual({ offset: 5, reason: 'unexpected end of input' })
    expect(locateJsonError('{"a": 1} x')).toEqual({ offset: 9, reason: 'unexpected text after the value' })
  })
})

describe('parseJsonSource and parseJsonLines', () => {
  it('name the file and line, and keep big integers exact', () => {
    expect(refusal(() => parseJsonSource('{\n  "a": [1,\n  2,,3]\n}', 'x.json'))).toMatchObject({ code: 'BAD_JSON', where: { file: 'x.json', line: 3 } })
    expect(parseJsonSource('{"n": 18446744073709551615}', 'x.json')).toEqual({ n: 18446744073709551615n })
    expect(refusal(() => parseJsonLines('{"a":1}\n\n{"a":tru}\n', 'x.jsonl'))).toMatchObject({ code: 'BAD_JSON', where: { file: 'x.jsonl', line: 3 } })
    expect(refusal(() => parseJsonSource(`${'['.repeat(300)}${']'.repeat(300)}`, 'deep.json'))).toMatchObject({ code: 'TOO_DEEP', where: { file: 'deep.json', line: 1 } })
  })
})

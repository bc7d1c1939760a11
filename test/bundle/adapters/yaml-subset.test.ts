/**
 * The YAML subset reader: what it reads (as the PM reference reader does) and what it refuses
 * with the file and line (where the reference would degrade silently).
 */
import { describe, expect, it } from 'vitest'
import { readYaml } from '../../../src/bundle/adapters/yaml-subset.js'
import { refusal } from './helpers.js'

const read = (text: string): unknown => readYaml(text, 'test.yaml')

describe('YAML subset: reading', () => {
  it('types plain scalars by the core schema and keeps dates as strings', () => {
    expect(read('a: 12\nb: -0\nc: 1.0\nd: 2.5e3\ne: true\nf: FALSE\ng: ~\nh: null\ni: 2026-01-30\nj: 0x1F\nk: .5\nl: 1.\nm: 18446744073709551615\nn: 18446744073709551616\n')).toEqual({
      a: 12, b: 0, c: 1, d: 2500, e: true, f: false, g: null, h: null, i: '2026-01-30', j: '0x1F', k: '.5', l: '1.', m: 18446744073709551615n, n: '18446744073709551616',
    })
  })

  it('reads block scalars with every chomping indicator and an explicit indent', () => {
    expect(read('a: |\n  x\n  y\n\nb: |-\n  x\n\nc: |+\n  x\n\n\nd: >\n  folded\n  line\n\n  para\ne: >-\n  one\n  two\nf: |2\n    kept\n')).toEqual({
      a: 'x\ny\n', b: 'x', c: 'x\n\n\n', d: 'folded line\npara\n', e: 'one two', f: '  kept\n',
    })
  })

  it('reads flow collections over several lines, quoted scalars and comments', () => {
    expect(read('a: [1, "two, too", \'it\'\'s\']\nb: {x: 1,\n  y: [a, b]}   # trailing comment\nc: "tab\\there \\u00e9"\nd: \'#not a comment\'\n')).toEqual({
      a: [1, 'two, too', "it's"], b: { x: 1, y: ['a', 'b'] }, c: 'tab\there é', d: '#not a comment',
    })
  })

  it('reads a sequence at its key\'s indent, items that are mappings, and nested lists', () => {
    expect(read('tags:\n- a\n- b\nitems:\n  - name: x\n    type: y\n  -\n    - 1\n    - 2\n')).toEqual({ tags: ['a', 'b'], items: [{ name: 'x', type: 'y' }, [1, 2]] })
  })

  it('reads plain and quoted scalars continued over lines', () => {
    expect(read('a: one\n  two\nb: "first\n  second\n\n  third"\n')).toEqual({ a: 'one two', b: 'first second\nthird' })
  })

  it('reads several documents as a list, and an empty stream as null', () => {
    expect(read('---\n- a\n---\n- b\n...\n')).toEqual([['a'], ['b']])
    expect(read('# nothing\n')).toBeNull()
  })
})

describe('YAML subset: refusals name the line', () => {
  it.each([
    ['a stray deeper line', 'a: 1\nb: 2\n    c: 3\n', 3],
    ['trailing content at the root', 'a: 1\n- b\n', 2],
    ['a duplicate key', 'a: 1\nb: 2\na: 3\n', 3],
    ['a duplicate flow key', 'a: {x: 1, x: 2}\n', 1],
    ['an unclosed flow collection', 'a: [1, 2\nb: 3\n', 1],
    ['text after a flow collection', 'a: [1] x\n', 1],
    ['an unterminated quote', 'a: "open\nb: 1\n', 1],
    ['text after a quoted scalar', 'a: "x" y\n', 1],
    ['a tab in indentation', 'a:\n\tb: 1\n', 2],
    ['a missing comma in a flow list', 'a: ["x" "y"]\n', 1],
  ])('refuses %s', (_name, text, line) => {
    const error = refusal(() => read(text))
    expect(error.code).toBe('BAD_YAML')
    expect(error.where).toEqual({ file: 'test.yaml', line })
  })

  it('refuses nesting deeper than 64 levels', () => {
    const deep = Array.from({ length: 70 }, (_, depth) => `${'  '.repeat(depth)}k${depth}:`).join('\n') + ' 1\n'
    expect(refusal(() => read(deep))).toMatchObject({ code: 'TOO_DEEP', where: { file: 'test.yaml' } })
    expect(refusal(() => read(`a: ${'['.repeat(70)}${']'.repeat(70)}\n`))).toMatchObject({ code: 'TOO_DEEP', where: { file: 'test.yaml', line: 1 } })
  })
})

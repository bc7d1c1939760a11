/**
 * The error shape every part relies on: `CODE: reason (location)`, the reason kept apart so an
 * error can be restated at another location (a file and line, a field) without parsing its text.
 */
import { describe, expect, it } from 'vitest'
import { InputError, LimitError, relocate, VerifyError } from '../../src/errors.js'

describe('errors', () => {
  it('keep the reason apart from the code and the location, even a reason ending in parentheses', () => {
    const error = new InputError('WRONG_TYPE', 'expected a string (or a list)', { file: 'a.jsonl', line: 3, field: 'tags' })
    expect(error.message).toBe('WRONG_TYPE: expected a string (or a list) (a.jsonl:3, field tags)')
    expect(error.reason).toBe('expected a string (or a list)')
    expect(new LimitError('TOO_DEEP', 'nesting deeper than 256 (max)').reason).toBe('nesting deeper than 256 (max)')
  })

  it('relocate keeps family, code and reason, names the new location, and keeps the original as cause', () => {
    const original = new VerifyError('BAD_HASH', 'body hash differs (stored)', { field: 'body' })
    const moved = relocate(original, { file: 'log/events.jsonl', line: 9 })
    expect(moved).toBeInstanceOf(VerifyError)
    expect(moved.code).toBe('BAD_HASH')
    expect(moved.message).toBe('BAD_HASH: body hash differs (stored) (log/events.jsonl:9)')
    expect(moved.where).toEqual({ file: 'log/events.jsonl', line: 9 })
    expect(moved.cause).toBe(original)
    expect(relocate(original, {}, 'another reason').message).toBe('BAD_HASH: another reason')
  })
})

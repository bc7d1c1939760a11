/**
 * The test helpers can fail: the leaf check finds a dropped value, and the export sorts by code
 * point (not UTF-16 unit) and ends every line with "\n".
 */
import { describe, expect, it } from 'vitest'
import type { ImportedRecord } from '../../../src/bundle/adapters/index.js'
import { exportLines, unmatchedLeaves } from './helpers.js'

const record = (id: string, fields: Record<string, unknown>): ImportedRecord => ({ kind: 'episode', id, fields: { id, ...fields } as ImportedRecord['fields'] })

describe('test helpers', () => {
  it('unmatchedLeaves reports a value no record holds, and accepts escaped and numeric forms', () => {
    const records = [record('a', { details: 'kept', metadata: { x_json: '{"q":"say \\"hi\\"\\n","n":42}' } })]
    expect(unmatchedLeaves({ a: 'kept', b: 'lost', c: 'say "hi"\n', d: 42, e: 4, f: [true, null] }, records)).toEqual(['$.b', '$.e'])
  })

  it('exportLines sorts by code point and ends each line with a newline', () => {
    const lines = exportLines([record('\uff01', {}), record('😀', {}), record('a', {})])
    expect(lines).toBe('{"id":"a"}\n{"id":"！"}\n{"id":"😀"}\n')
  })
})

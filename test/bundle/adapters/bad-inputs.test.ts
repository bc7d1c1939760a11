/**
 * Every adapter, fed test/helpers/bad-inputs.ts (STYLE.md): as the input itself, as a parsed
 * value, and as file content. Each either returns a whole result whose records are complete or
 * refuses with a CairnError; none throws anything else (a TypeError, a stack overflow).
 */
import { describe, expect, it } from 'vitest'
import { ADAPTERS, SOURCE_NAMES, type AdapterResult } from '../../../src/bundle/adapters/index.js'
import { CairnError } from '../../../src/errors.js'
import { validateCreate } from '../../../src/projection/index.js'
import { badValues } from '../../helpers/bad-inputs.js'
import { fixedOptions } from './helpers.js'

function outcome(run: () => AdapterResult): 'refused' | 'parsed' {
  try {
    const result = run()
    for (const record of result.records) {
      // A returned record is complete: validating it again gives it back unchanged.
      expect(validateCreate(record.kind, record.fields, { nowMs: 0, randomHex: () => '0'.repeat(16) }).fields).toEqual(record.fields)
    }
    return 'parsed'
  } catch (error) {
    if (error instanceof CairnError) return 'refused'
    throw error
  }
}

describe.each(SOURCE_NAMES)('%s adapter with bad inputs', (name) => {
  const adapter = ADAPTERS[name]
  const bad = badValues()

  it('refuses a bad input shape with a CairnError', () => {
    for (const { name: label, value } of bad) {
      if (typeof value === 'object' && value !== null && ('json' in value || 'files' in value)) continue
      expect(outcome(() => adapter.parse(value as never, fixedOptions())), label).toBe('refused')
    }
  })

  it('never throws anything but a CairnError for a bad parsed value', () => {
    for (const { name: label, value } of bad) expect(['refused', 'parsed'], label).toContain(outcome(() => adapter.parse({ json: value, path: 'bad.json' }, fixedOptions())))
  })

  it('never throws anything but a CairnError for bad file content', () => {
    for (const { name: label, value } of bad) {
      expect(['refused', 'parsed'], label).toContain(outcome(() => adapter.parse({ files: [{ path: 'bad', content: value as never }] }, fixedOptions())))
    }
  })

  it('refuses bad options', () => {
    expect(outcome(() => adapter.parse({ json: [] }, { nowMs: Number.NaN }))).toBe('refused')
    expect(outcome(() => adapter.parse({ json: [] }, { randomHex: 'abc' as never }))).toBe('refused')
  })
})

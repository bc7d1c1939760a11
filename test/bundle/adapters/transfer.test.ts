/**
 * Transfer text adapter beyond the fixture: the date forms, headers, bullets and numbering,
 * paragraphs, continuation lines, ids, rendering back, and refusals.
 */
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { MAX_LINE_BYTES, parseTransfer, parseTransferDate, renderTransferText } from '../../../src/bundle/adapters/index.js'
import { NOW, fixedOptions, refusal } from './helpers.js'

const parse = (text: string, source?: string) => parseTransfer({ files: [{ path: 'paste.txt', content: text }] }, fixedOptions(source === undefined ? {} : { source }))
const txId = (date: string, content: string): string => `tx_${createHash('sha256').update(`${date}\n${content}`).digest('hex').slice(0, 24)}`
const utc = (text: string): number => Date.parse(text)

describe('transfer dates', () => {
  it.each([
    ['2026-01-15', '2026-01-15T00:00:00Z'], ['2026-01-15T08:30:00Z', '2026-01-15T08:30:00Z'], ['2026-01-15 extra', '2026-01-15T00:00:00Z'],
    ['2026-02', '2026-02-01T00:00:00Z'], ['2026', '2026-01-01T00:00:00Z'], ['Jan 2026', '2026-01-01T00:00:00Z'], ['september 2025', '2025-09-01T00:00:00Z'],
    ['March 3, 2026', '2026-03-03T00:00:00Z'], ['Sept 21st 2025', '2025-09-21T00:00:00Z'], ['3 Mar 2026', '2026-03-03T00:00:00Z'],
  ])('reads %s', (raw, expected) => {
    expect(parseTransferDate(raw)).toBe(utc(expected))
  })

  it.each(['date unknown', 'n/a', '2026-02-30', '0000-01-01', '2026-13', 'Smarch 2026', '32 Jan 2026', ''])('leaves %j undated', (raw) => {
    expect(parseTransferDate(raw)).toBeUndefined()
  })
})

describe('transfer entries', () => {
  it('reads markers, headers, bullets, numbering and continuations outside a fence', () => {
    const result = parse([
      '**Work**', '- [2026-01-15] : Leads the data team.', '  Reports to the CTO.', '',
      'Personal:', '(2) Has a cat named Ω-Pixel 🐈', '• [Jun 2025] — Moved to Lisbon', '',
      'TOOLS AND STACK', '3) Uses Neovim',
    ].join('\n'), 'claude')
    expect(result.records.map((record) => [record.fields.details, record.fields.categories, record.fields.eventTime])).toEqual([
      ['Leads the data team.\nReports to the CTO.', ['Work'], '2026-01-15T00:00:00Z'],
      ['Has a cat named Ω-Pixel 🐈', ['Personal'], NOW],
      ['Moved to Lisbon', ['Personal'], '2025-06-01T00:00:00Z'],
      ['Uses Neovim', ['TOOLS AND STACK'], NOW],
    ])
    expect(result.records[0]?.id).toBe(txId('2026-01-15', 'Leads the data team.\nReports to the CTO.'))
    expect(result.records[0]?.fields.summary).toBe('Leads the data team.')
    expect(result.records[2]?.fields.metadata).toEqual({ transfer_line: '7', transfer_source: 'claude', transfer_date_raw: 'Jun 2025', transfer_section: 'Personal' })
  })

  it('reads text without markers as paragraphs', () => {
    const result = parse('Dana likes hiking.\nShe lives in Reykjavík.\n\n\nShe has two kids.\n')
    expect(result.records.map((record) => [record.fields.details, (record.fields.metadata as Record<string, string>).transfer_line])).toEqual([
      ['Dana likes hiking.\nShe lives in Reykjavík.', '1'], ['She has two kids.', '5'],
    ])
  })

  it('reads only fenced lines when there is a fence, and warns when nothing is an entry', () => {
    expect(parse('intro [2026-01-01] - not this\n```\n- inside\n```\noutro').records.map((record) => record.fields.details)).toEqual(['inside'])
    expect(parse('```\n## Only a header\n```').warnings.map((warning) => warning.code)).toEqual(['NO_ENTRIES'])
  })

  it('gives the same ids to the same entries whatever the time of import', () => {
    const a = parseTransfer({ files: [{ path: 'a.txt', content: '- [2026-01-01] - x' }] }, { nowMs: 0 })
    const b = parseTransfer({ files: [{ path: 'b.txt', content: '- [2026-01-01] - x' }] }, { nowMs: 1e12 })
    expect(a.records[0]?.id).toBe(b.records[0]?.id)
  })
})

describe('transfer rendering', () => {
  it('renders [date] - text with two-space continuations, and reads back to the same entries', () => {
    const result = parse('- [2026-01-15] Leads the data team.\n  Reports to the CTO.\n- [2025-06] Moved to Lisbon')
    const text = renderTransferText(result.records)
    expect(text).toBe('[2026-01-15] - Leads the data team.\n  Reports to the CTO.\n[2025-06-01] - Moved to Lisbon\n')
    expect(parse(text).records.map((record) => record.fields.details)).toEqual(result.records.map((record) => record.fields.details))
  })

  it('groups by section on request', () => {
    const result = parse('## A\n- [2026-01-01] one\n## B\n- [2026-01-02] two\n## A\n- [2026-01-03] three')
    expect(renderTransferText(result.records, { groupBySection: true })).toBe('## A\n[2026-01-01] - one\n[2026-01-03] - three\n\n## B\n[2026-01-02] - two\n')
  })
})

describe('transfer refusals', () => {
  it('refuses a line over MAX_LINE_BYTES, naming it', () => {
    const error = refusal(() => parse(`- ok\n- ${'x'.repeat(MAX_LINE_BYTES)}\n`))
    expect(error).toMatchObject({ code: 'LINE_TOO_LONG', where: { file: 'paste.txt', line: 2 } })
  })

  it('refuses bytes that are not UTF-8, naming the line', () => {
    expect(refusal(() => parseTransfer({ files: [{ path: 'paste.txt', content: new Uint8Array([0x2d, 0x20, 0x61, 0x0a, 0xc3, 0x28]) }] }, fixedOptions())).where).toEqual({ file: 'paste.txt', line: 2 })
  })

  it('refuses a parsed value that is not text', () => {
    expect(refusal(() => parseTransfer({ json: ['x'] }, fixedOptions())).code).toBe('WRONG_TYPE')
  })
})

/**
 * Transfer text adapter (spec §10): pasted "[date] - memory" text from an assistant's memory
 * export prompt → note episodes, and episodes → the same paste-ready text.
 *
 * Invariant: ids are deterministic, `tx_` + sha256(YYYY-MM-DD or "" + "\n" + content)[:24], so
 * pasting the same export twice merges, and the fixture `fixtures/transfer` reproduces byte for
 * byte. What the text says and has no field keeps its place in metadata: the line
 * (`transfer_line`), the raw date (`transfer_date_raw`), the section (`transfer_section`) and
 * the assistant (`transfer_source`, from the `source` option).
 */
import { formatTimestamp } from '../../projection/index.js'
import { assertInput, ImportContext, sha256Hex } from './import-context.js'
import { MetadataBuilder } from './metadata.js'
import { decodeSource, splitLines } from './source-text.js'
import { firstCodePoints, pySplitWords, pyStrip, utcDate } from './text-values.js'
import { bodyLines, isIsoDate, transferEntries, type TransferEntry } from './transfer-entries.js'
import type { AdapterInput, AdapterOptions, AdapterResult, ImportedRecord, SourceFile } from './types.js'
import { InputError } from '../../errors.js'

const MONTHS: Readonly<Record<string, number>> = {
  jan: 1, january: 1, feb: 2, february: 2, mar: 3, march: 3, apr: 4, april: 4, may: 5, jun: 6, june: 6, jul: 7, july: 7,
  aug: 8, august: 8, sep: 9, sept: 9, september: 9, oct: 10, october: 10, nov: 11, november: 11, dec: 12, december: 12,
}
const DIGITS = /^[0-9]+$/

function monthOf(token: string | undefined): number | undefined {
  return token === undefined ? undefined : MONTHS[token.toLowerCase()]
}

function year4(token: string | undefined): number | undefined {
  return token !== undefined && token.length === 4 && DIGITS.test(token) ? Number(token) : undefined
}

function dayOf(token: string | undefined): number | undefined {
  if (token === undefined) return undefined
  let text = token.toLowerCase()
  for (const suffix of ['st', 'nd', 'rd', 'th']) {
    if (text.endsWith(suffix)) {
      text = text.slice(0, -2)
      break
    }
  }
  return text.length >= 1 && text.length <= 2 && DIGITS.test(text) ? Number(text) : undefined
}

/** The instant a transfer date names: ISO date (optionally `THH:MM:SSZ`), `YYYY-MM`, `YYYY`, `Month YYYY`, `Month D, YYYY`, `D Month YYYY`. */
export function parseTransferDate(raw: string): number | undefined {
  const text = pyStrip(raw)
  if (text === '') return undefined
  if (text.length >= 10 && isIsoDate(text.slice(0, 10))) {
    const [y, m, d] = [text.slice(0, 4), text.slice(5, 7), text.slice(8, 10)].map(Number) as [number, number, number]
    const time = /^T(\d{2}):(\d{2}):(\d{2})Z$/.exec(text.slice(10))
    if (text.length === 20 && time !== null) {
      const [hh, mm, ss] = time.slice(1).map(Number) as [number, number, number]
      if (hh <= 23 && mm <= 59 && ss <= 59) return utcDate(y, m, d, hh, mm, ss)
    }
    return utcDate(y, m, d)
  }
  if (text.length === 7 && /^\d{4}-\d{2}$/.test(text)) return utcDate(Number(text.slice(0, 4)), Number(text.slice(5, 7)), 1)
  if (text.length === 4 && DIGITS.test(text)) return utcDate(Number(text), 1, 1)
  const tokens = pySplitWords(text.replaceAll(',', ' '))
  if (tokens.length === 2) {
    const [month, year] = [monthOf(tokens[0]), year4(tokens[1])]
    if (month !== undefined && year !== undefined) return utcDate(year, month, 1)
  }
  if (tokens.length === 3) {
    const [month, day, year] = [monthOf(tokens[0]), dayOf(tokens[1]), year4(tokens[2])]
    if (month !== undefined && day !== undefined && year !== undefined) return utcDate(year, month, day)
    const [day2, month2, year2] = [dayOf(tokens[0]), monthOf(tokens[1]), year4(tokens[2])]
    if (month2 !== undefined && day2 !== undefined && year2 !== undefined) return utcDate(year2, month2, day2)
  }
  return undefined
}

function transferFiles(input: AdapterInput): SourceFile[] {
  if ('files' in input) return [...input.files]
  if (typeof input.json === 'string') return [{ path: input.path ?? '<text>', content: input.json }]
  throw new InputError('WRONG_TYPE', 'transfer text is read from files (or a string)', { path: input.path ?? '$' })
}

function addEntry(context: ImportContext, entry: TransferEntry, file: string, fileLine: number): void {
  const parsed = entry.dateRaw === undefined ? undefined : parseTransferDate(entry.dateRaw)
  const when = parsed === undefined ? context.now : formatTimestamp(parsed)
  const dateKey = parsed === undefined ? '' : when.slice(0, 10)
  const id = `tx_${sha256Hex(`${dateKey}\n${entry.content}`).slice(0, 24)}`
  const where = { file, line: fileLine }
  if (context.get(id) !== undefined) {
    context.warn('DUPLICATE_ENTRY', `repeats an earlier entry (${id}); the first is kept`, where)
    return
  }
  const metadata = new MetadataBuilder()
  metadata.set('transfer_line', String(entry.line))
  metadata.put('transfer_source', context.label)
  metadata.put('transfer_date_raw', entry.dateRaw)
  metadata.put('transfer_section', entry.section)
  if (entry.dateRaw !== undefined && parsed === undefined) {
    context.warn('UNDATED', `${JSON.stringify(entry.dateRaw)} is not a date; the entry is undated (the text is kept in transfer_date_raw)`, where)
  }
  context.add('episode', {
    id, eventTime: when, mentionTime: when, ingestionTime: context.now, sourceType: 'note',
    summary: firstCodePoints(entry.content.split('\n', 1)[0] as string), details: entry.content,
    categories: entry.section === undefined ? [] : [entry.section], metadata: metadata.toObject(),
  }, where)
}

/**
 * Maps transfer text to note episodes.
 * @throws InputError BAD_UTF8, BAD_STRING, WRONG_TYPE; LimitError FILE_TOO_LARGE, LINE_TOO_LONG
 */
export function parseTransfer(input: AdapterInput, options?: AdapterOptions): AdapterResult {
  assertInput(input)
  const context = new ImportContext('transfer', 'transfer_', options)
  for (const file of transferFiles(input)) {
    const body = bodyLines(splitLines(decodeSource(file), file.path))
    const entries = transferEntries(body.map((line) => line.text))
    if (entries.length === 0 && body.some((line) => pyStrip(line.text) !== '')) {
      context.warn('NO_ENTRIES', 'the text holds no memory entries', { file: file.path })
    }
    // entry.line counts within the body (transfer_line, as the reference writes it); warnings name the file's line.
    for (const entry of entries) addEntry(context, entry, file.path, (body[entry.line - 1] as { line: number }).line)
  }
  return context.result()
}

/**
 * Renders episodes as paste-ready `[YYYY-MM-DD] - content` lines (continuation lines indented
 * two spaces, which the parser reads back as continuations). With `groupBySection`, the first
 * category of each episode becomes a `## Section` header.
 */
export function renderTransferText(records: readonly ImportedRecord[], options: { readonly groupBySection?: boolean } = {}): string {
  const episodes = records.filter((record) => record.kind === 'episode')
  const render = (group: readonly ImportedRecord[]): string[] =>
    group.flatMap((episode) => {
      const text = (episode.fields.details as string) || (episode.fields.summary as string)
      if (pyStrip(text) === '') return []
      const [first, ...rest] = text.split('\n')
      return [`[${(episode.fields.eventTime as string).slice(0, 10)}] - ${first as string}`, ...rest.map((part) => `  ${part}`)]
    })
  const out: string[] = []
  if (options.groupBySection === true) {
    const groups = new Map<string, ImportedRecord[]>()
    for (const episode of episodes) {
      const key = ((episode.fields.categories as string[])[0]) ?? ''
      groups.set(key, [...(groups.get(key) ?? []), episode])
    }
    let first = true
    for (const [key, group] of groups) {
      if (!first) out.push('')
      first = false
      if (key !== '') out.push(`## ${key}`)
      out.push(...render(group))
    }
  } else out.push(...render(episodes))
  return out.length === 0 ? '' : `${out.join('\n')}\n`
}

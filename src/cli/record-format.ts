/**
 * Text forms of memory records and their histories for people: a one-line summary per record,
 * aligned `field  value` lines for one record, and tables whose columns fit their rows.
 *
 * Invariants: full record ids are always printed (they are what `get`, `forget` and `history`
 * take); only summaries are shortened, and only for display. What a record holds may come from
 * a peer, so every line goes out through printable (a terminal escape in a field prints as
 * \u001b; a multi-line field keeps its lines and tabs). The `--json` forms never go through here.
 */
import { canonicalJson, kindSpec, shortId, type HistoryItem, type JsonValue, type RecordView } from '../index.js'
import { printable, printableLine } from './printable.js'

export const SUMMARY_CHARS = 60

/** One line: whitespace runs collapsed, cut at `width` code points with an ellipsis. */
export function oneLine(text: string, width = SUMMARY_CHARS): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  const points = [...flat]
  return points.length > width ? `${points.slice(0, width - 1).join('')}…` : flat
}

function text(value: JsonValue | undefined): string {
  if (typeof value === 'string') return value
  if (Array.isArray(value)) return value.filter((item): item is string => typeof item === 'string').join(', ')
  return ''
}

/**
 * What a record is about, in a few words: relations as `a -type-> b`, a preference as
 * `key = value`, otherwise its kind's first non-empty text field (the fields search indexes,
 * in weight order, so a secretRef shows its label and never its preview).
 */
export function recordSummary(view: RecordView, width = SUMMARY_CHARS): string {
  let summary: string
  if (view.kind === 'edge') summary = `${text(view.srcEntityID)} -${text(view.edgeType)}-> ${text(view.dstEntityID)}`
  else if (view.kind === 'factLink') summary = `${text(view.srcFactID)} -${text(view.linkType)}-> ${text(view.dstFactID)}`
  else if (view.kind === 'episodeLink') summary = `${text(view.srcEpisodeID)} -${text(view.linkType)}-> ${text(view.dstEpisodeID)}`
  else if (view.kind === 'preference') summary = `${text(view.key)} = ${text(view.value)}`
  else summary = kindSpec(view.kind).textFields.map((field) => text(view[field])).find((value) => value.trim() !== '') ?? ''
  return summary.trim() === '' ? '(no text)' : oneLine(summary, width)
}

function valueText(value: JsonValue): string {
  return typeof value === 'string' ? value : canonicalJson(value)
}

/**
 * A record as aligned lines: `kind` and `id` first, then its kind's fields in table order,
 * then any others (episode extensions) by name. Multi-line strings continue under the value.
 * Names and lines are printable (see the header).
 */
export function recordLines(view: RecordView): string {
  const spec = kindSpec(view.kind)
  const known = Object.keys(spec.fields).filter((field) => field !== 'id' && Object.hasOwn(view, field))
  const extra = Object.keys(view).filter((field) => field !== 'kind' && field !== 'id' && !Object.hasOwn(spec.fields, field)).sort()
  const names = ['kind', 'id', ...known, ...extra]
  const width = Math.max(...names.map((name) => printable(name).length))
  const lines: string[] = []
  for (const name of names) {
    const value = view[name] as JsonValue
    const [first = '', ...rest] = (typeof value === 'string' && value === '' ? '""' : valueText(value)).split('\n').map(printableLine)
    lines.push(`${printable(name).padEnd(width)}  ${first}`.trimEnd())
    for (const line of rest) lines.push(`${''.padEnd(width)}  ${line}`.trimEnd())
  }
  return `${lines.join('\n')}\n`
}

/**
 * Rows of cells as lines with columns padded to their widest cell (the last column is not
 * padded). Each cell is printable (see the header).
 */
export function formatTable(heading: readonly string[], cells: readonly (readonly string[])[]): string {
  const rows = cells.map((row) => row.map(printable))
  const widths = heading.map((cell, column) => Math.max(cell.length, ...rows.map((row) => (row[column] ?? '').length)))
  const line = (row: readonly string[]) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0))).join('  ').trimEnd()
  return `${[heading, ...rows].map(line).join('\n')}\n`
}

/** Milliseconds matter here: `--as-of` takes them, and events of one second are told apart by them. */
export function formatTimeMs(ms: number): string {
  return new Date(ms).toISOString()
}

/** One history row: local position, op, short author, recorded time, body state, short event id. */
export function historyRow(item: HistoryItem, self: string): string[] {
  const author = `${shortId(item.author)}${item.author === self ? ' (me)' : ''}`
  // An erased body took its op with it; the index still knows content from tombstone.
  const op = item.op ?? `(${item.type})`
  return [String(item.local), op, author, formatTimeMs(item.recordedAt), item.bodyState, shortId(item.event)]
}

export const HISTORY_HEADING = ['#', 'op', 'author', 'recorded', 'body', 'event'] as const

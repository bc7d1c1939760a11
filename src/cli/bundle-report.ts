/**
 * What `cairn export` and `cairn import` print: for people, a summary line (and one line per
 * warning or skipped record); for programs (`--json`), one canonical JSON object.
 *
 * Invariants: both forms come from the same library result and say the same thing; paths are
 * shown as the user gave them; nothing here reads a store or a file.
 */
import { canonicalJson, shortId, type ExportResult, type ImportReport, type JsonValue } from '../index.js'
import type { BundlePath } from './bundle-flags.js'
import { fromAdapterWarning, fromMemProblem, problemJson, problemLine } from './bundle-problems.js'
import { plural } from './sync-report.js'

/** The export's one-line summary, the lines after it, and its JSON form. */
export function describeExport(result: ExportResult, out: BundlePath, exporter: { signer: string; isCbor: boolean }): { text: string; json: JsonValue } {
  const { signer } = exporter
  if (result.format === 'log') {
    const { manifest } = result
    return {
      text: `exported ${plural(manifest.events, 'event')} to ${out.given}: log snapshot of space ${shortId(manifest.space)}\n`,
      json: { format: 'log', path: out.given, events: manifest.events, space: manifest.space, vector: { ...manifest.vector } },
    }
  }
  if (result.format === 'pam') {
    const encoding = exporter.isCbor ? 'CBOR' : 'JSON'
    const skipped = result.skipped.map((item) => `  skipped ${item.kind} ${item.id}: ${item.reason}\n`)
    return {
      text: `exported ${plural(result.records, 'record')} to ${out.given}: PAM artifact (${encoding}, ${result.bytes} bytes), signed by ${shortId(signer)}${skipped.length > 0 ? `; ${plural(skipped.length, 'record')} skipped` : ''}\n${skipped.join('')}`,
      json: {
        format: 'pam', path: out.given, records: result.records, bytes: result.bytes, encoding: encoding.toLowerCase(), signer, rootHash: result.artifact.root_hash,
        skipped: result.skipped.map((item) => ({ kind: item.kind, id: item.id, reason: item.reason })),
      },
    }
  }
  const { manifest } = result
  const signed = manifest.capabilities.includes('signed')
  const mode = manifest.exportMode === 'incremental' ? `incremental export since ${manifest.since ?? '?'}` : 'full export'
  const warnings = result.warnings.map((warning) => fromMemProblem(warning, out))
  // A record no `.mem` line can hold (a peer's raw event) is left out and named, with the field refused.
  const skipped = result.skipped.map((item) => `  skipped ${item.kind} ${item.id}: ${item.code}: ${item.reason}${item.field !== undefined ? ` (${item.field})` : ''}\n`)
  return {
    text: `exported ${plural(result.records, 'record')} to ${out.given}: .mem bundle ${manifest.format}, ${mode}, ${manifest.conformanceLevel}, ${signed ? `signed by ${shortId(signer)}` : 'unsigned'}${skipped.length > 0 ? `; ${plural(skipped.length, 'record')} skipped` : ''}\n${skipped.join('')}${warnings.map((warning) => `  warning: ${problemLine(warning)}\n`).join('')}`,
    json: {
      format: 'mem', path: out.given, records: result.records, version: manifest.format, exportMode: manifest.exportMode,
      ...(manifest.since !== undefined ? { since: manifest.since } : {}),
      conformanceLevel: manifest.conformanceLevel, signer: signed ? signer : null, bundleDigest: manifest.bundleDigest ?? null,
      files: result.files.map((file) => ({ path: file.path, bytes: file.bytes, sha256: file.sha256 })),
      warnings: warnings.map(problemJson),
      skipped: result.skipped.map((item) => ({ kind: item.kind, id: item.id, code: item.code, ...(item.field !== undefined ? { field: item.field } : {}), reason: item.reason })),
    },
  }
}

function kindCounts(imported: Readonly<Record<string, number | undefined>>): string {
  const entries = Object.entries(imported).filter((entry): entry is [string, number] => (entry[1] ?? 0) > 0).sort(([a], [b]) => a.localeCompare(b))
  if (entries.length === 0) return 'nothing new'
  const total = entries.reduce((sum, [, count]) => sum + count, 0)
  return `${entries.map(([kind, count]) => `${kind} ${count}`).join(', ')} (${plural(total, 'record')})`
}

function whatOf(report: ImportReport): string {
  if (report.format === 'mem') return `.mem bundle, ${report.manifest.exportMode} export by ${report.manifest.generator}`
  // Its entries map to records (an agent's context, entities, …): counted as records, like the rest of the report.
  if (report.format === 'pam') return `PAM artifact signed by ${shortId(report.signer)}, read as ${plural(report.entries, 'record')}`
  if (report.format === 'source') return `${report.source} export`
  return 'log snapshot'
}

/** What an import wrote, kept and refused, for people and as JSON. */
export function describeImport(report: ImportReport, source: BundlePath): { text: string; json: JsonValue } {
  if (report.format === 'log') {
    return {
      text: `imported ${source.given} (log snapshot): ${report.events} events, ${report.applied} applied, ${report.duplicates} already here\n`,
      json: { format: 'log', path: source.given, events: report.events, applied: report.applied, duplicates: report.duplicates },
    }
  }
  const warnings = report.format === 'mem'
    ? report.warnings.map((warning) => fromMemProblem(warning, source))
    : report.warnings.map((warning) => fromAdapterWarning(warning, source))
  const rows: [string, string][] = [
    ['written', kindCounts(report.imported)],
    ['unchanged', `${report.unchanged} (already held with the same values)`],
    ['blocked', `${report.blocked} (deleted or redacted here, or a parent is)`],
  ]
  if (report.keptNewer > 0) rows.push(['kept newer', `${plural(report.keptNewer, 'record')} with values written here after the source last changed them`])
  if (report.format === 'mem') rows.push(['tombstones', `${report.tombstones} applied`], ['passthrough', `${report.passthrough} lines of unknown kinds kept`])
  if (report.format === 'pam') rows.push(['supersessions', String(report.supersessions)])
  if (report.format === 'source' && report.emptiedChunks > 0) rows.push(['emptied', `${plural(report.emptiedChunks, 'chunk')} of documents that shrank`])
  rows.push(['warnings', warnings.length === 0 ? 'none' : String(warnings.length)])
  const width = Math.max(...rows.map(([label]) => label.length))
  const extra: { [key: string]: JsonValue } = report.format === 'mem'
    ? { tombstones: report.tombstones, passthrough: report.passthrough, generator: report.manifest.generator, exportMode: report.manifest.exportMode }
    : report.format === 'pam' ? { signer: report.signer, entries: report.entries, supersessions: report.supersessions } : { source: report.source, emptiedChunks: report.emptiedChunks }
  return {
    text: [
      `imported ${source.given} (${whatOf(report)})`,
      ...rows.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`),
      ...warnings.map((warning) => `    ${problemLine(warning)}`),
      '',
    ].join('\n'),
    json: {
      format: report.format, path: source.given, imported: { ...report.imported } as { [key: string]: JsonValue },
      unchanged: report.unchanged, blocked: report.blocked, keptNewer: report.keptNewer, warnings: warnings.map(problemJson), ...extra,
    },
  }
}

export function jsonLine(value: JsonValue): string {
  return `${canonicalJson(value)}\n`
}

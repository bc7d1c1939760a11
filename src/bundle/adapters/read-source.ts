/**
 * Reads a source from disk (a file; a directory such as a folder of Claude memory files or an
 * unpacked export; or a zip archive of one, as the export arrived) and dispatches it to its
 * adapter. The adapters themselves never touch disk.
 *
 * Invariants:
 * - nothing is written, and nothing outside `path` is read: symlinks inside a directory are not
 *   followed, archives are read in memory (zip-archive.ts), and each file's size is checked
 *   before it is read;
 * - files of a directory or archive are read in code-point order of their relative paths, which
 *   are what the records name (never the absolute path, which differs from machine to machine);
 * - files a directory or archive holds but the source does not read are reported as warnings;
 * - a source of which the adapter skipped every entry it met (no record, some skipped) is refused
 *   as NOTHING_RECOGNIZED: it is most likely not that system's export. An export with no entries
 *   at all (`[]`) is not refused: it imports nothing, as before.
 */
import { open as openFile, readdir, readFile, stat } from 'node:fs/promises'
import { join, sep } from 'node:path'
import { InputError, LimitError } from '../../errors.js'
import { compareCodePoints } from '../../log/index.js'
import { statSourcePath } from '../source-path.js'
import { ADAPTERS, DETECT_BYTES, detectSource } from './registry.js'
import { MAX_SOURCE_BYTES, baseName } from './source-text.js'
import { SOURCE_NAMES, type AdapterOptions, type AdapterResult, type AdapterWarning, type SourceFile, type SourceName } from './types.js'
import { isZipStart, openZip } from './zip-archive.js'

/** A directory walk stops at this many files (a wrong path, such as a home directory, should fail fast). */
export const MAX_SOURCE_FILES = 100_000
/**
 * All the files an import reads from a directory or an archive, together: they are held in
 * memory while the adapter maps them, and a small archive can inflate to far more than its size.
 */
export const MAX_SOURCE_TOTAL_BYTES = 512 * 1024 * 1024

export interface SourceRead {
  readonly source: SourceName
  readonly files: readonly SourceFile[]
  readonly warnings: readonly AdapterWarning[]
}

export interface ReadSourceOptions {
  /** The source; detected from the files when absent. */
  readonly from?: SourceName
  /** What the files read may add up to (default MAX_SOURCE_TOTAL_BYTES). */
  readonly maxTotalBytes?: number
}

/** The files a source reads in a directory, by relative path. */
const DIRECTORY_FILES: Readonly<Record<SourceName, (path: string) => boolean>> = {
  mem0: (path) => path.endsWith('.json'),
  openmemory: (path) => /(^|\/)memories\.json$/.test(path),
  // Newer exports split the conversations into conversations-000.json, conversations-001.json, …
  chatgpt: (path) => /(^|\/)conversations(-\d+)?\.json$/.test(path),
  'claude-export': (path) => /(^|\/)(conversations|memories|projects)\.json$/.test(path),
  'claude-memory': (path) => path.endsWith('.md'),
  transfer: (path) => path.endsWith('.txt'),
  engram: (path) => path.endsWith('.yaml') || path.endsWith('.yml'),
  letta: (path) => path.endsWith('.af'),
  'mcp-memory': (path) => /(^|\/)memory\.jsonl?$/.test(path) || path.endsWith('.jsonl'),
  oams: (path) => path.endsWith('.jsonl'),
}

function toPosix(path: string): string {
  return sep === '/' ? path : path.split(sep).join('/')
}

async function readBounded(path: string, label: string, limit = MAX_SOURCE_BYTES): Promise<Uint8Array> {
  const info = await stat(path)
  if (info.size > limit) throw new LimitError('FILE_TOO_LARGE', `${info.size} bytes is more than the ${limit} an import reads`, { file: label })
  return new Uint8Array(await readFile(path))
}

/** Regular files under `root`, relative, sorted; symlinks are reported and skipped. */
async function walk(root: string, warnings: AdapterWarning[]): Promise<string[]> {
  const out: string[] = []
  const pending = ['']
  while (pending.length > 0) {
    const directory = pending.pop() as string
    for (const entry of await readdir(join(root, directory), { withFileTypes: true })) {
      const path = toPosix(join(directory, entry.name))
      if (entry.isSymbolicLink()) warnings.push({ code: 'SYMLINK_SKIPPED', message: 'symlinks are not followed', where: { file: path } })
      else if (entry.isDirectory()) {
        if (entry.name !== '.git' && entry.name !== 'node_modules') pending.push(path)
      } else if (entry.isFile()) {
        out.push(path)
        if (out.length > MAX_SOURCE_FILES) throw new LimitError('TOO_MANY_FILES', `more than ${MAX_SOURCE_FILES} files`, { file: root })
      }
    }
  }
  return out.sort(compareCodePoints)
}

function textStart(content: Uint8Array): string {
  return new TextDecoder('utf-8').decode(content.subarray(0, DETECT_BYTES))
}

/** Files to choose from, by relative path: a directory's or an archive's. */
interface FileTree {
  readonly paths: readonly string[]
  /** A file's bytes; refused past `limit` bytes (LimitError FILE_TOO_LARGE). */
  read(path: string, limit: number): Promise<Uint8Array>
  /** At most the first `bytes` bytes of a file. */
  peek(path: string, bytes: number): Promise<Uint8Array>
}

async function detectTree(tree: FileTree): Promise<SourceName | undefined> {
  const peek = async (path: string): Promise<SourceName | undefined> => detectSource(path, textStart(await tree.peek(path, DETECT_BYTES)))
  for (const marker of ['conversations.json', 'conversations-000.json', 'memories.json', 'projects.json', 'memory.jsonl', 'memory.json']) {
    const path = tree.paths.find((candidate) => baseName(candidate) === marker)
    const found = path === undefined ? undefined : await peek(path)
    if (found !== undefined) return found
  }
  for (const [suffix, source] of [['.af', 'letta'], ['.yaml', 'engram'], ['.yml', 'engram'], ['.md', 'claude-memory']] as const) {
    if (tree.paths.some((path) => path.endsWith(suffix))) return source
  }
  for (const path of tree.paths) {
    const found = await peek(path)
    if (found !== undefined) return found
  }
  return undefined
}

/** The files of `tree` the source reads (`from`, or detected), and warnings for the rest. */
async function readTree(tree: FileTree, label: string, what: string, options: ReadSourceOptions, warnings: AdapterWarning[]): Promise<SourceRead> {
  const source = options.from ?? (await detectTree(tree))
  if (source === undefined) throw new InputError('UNKNOWN_SOURCE', `cannot tell which source this ${what} is; name it with --from (${SOURCE_NAMES.join(', ')})`, { file: label })
  let wanted = tree.paths.filter(DIRECTORY_FILES[source])
  // OpenMemory's zip holds memories.json and memories.jsonl.gz, the same memories twice: the first is read, the second only alone.
  if (source === 'openmemory' && wanted.length === 0) wanted = tree.paths.filter((file) => /(^|\/)memories\.jsonl(\.gz)?$/.test(file))
  if (wanted.length === 0) throw new InputError('NO_FILES', `the ${what} holds no files ${source} reads`, { file: label })
  const files: SourceFile[] = []
  const budget = options.maxTotalBytes ?? MAX_SOURCE_TOTAL_BYTES
  let total = 0
  for (const file of wanted) {
    const remaining = budget - total
    let content: Uint8Array
    try {
      content = await tree.read(file, Math.min(MAX_SOURCE_BYTES, remaining))
    } catch (error) {
      if (error instanceof LimitError && error.code === 'FILE_TOO_LARGE' && remaining < MAX_SOURCE_BYTES) {
        throw new LimitError('SOURCE_TOO_LARGE', `the files to import add up to more than the ${budget} bytes an import reads`, { file: label })
      }
      throw error
    }
    total += content.length
    files.push({ path: file, content })
  }
  for (const file of tree.paths) if (!wanted.includes(file)) warnings.push({ code: 'FILE_NOT_READ', message: `not a ${source} file; not imported`, where: { file } })
  return { source, files, warnings }
}

/** At most the first `bytes` bytes of a file. */
async function fileStart(path: string, bytes: number): Promise<Uint8Array> {
  const handle = await openFile(path, 'r')
  try {
    const buffer = new Uint8Array(bytes)
    const { bytesRead } = await handle.read(buffer, 0, bytes, 0)
    return buffer.subarray(0, bytesRead)
  } finally {
    await handle.close()
  }
}

/**
 * Reads the files of a source at `path` (a file, a directory, or a zip archive).
 * @throws InputError NOT_FOUND, SYMLINK_LOOP, UNREADABLE, NOT_A_FILE (statSourcePath), UNKNOWN_SOURCE, NO_FILES, BAD_ARCHIVE, ENCRYPTED_ENTRY; LimitError FILE_TOO_LARGE,
 *   SOURCE_TOO_LARGE, TOO_MANY_FILES
 */
export async function readSource(path: string, options: ReadSourceOptions = {}): Promise<SourceRead> {
  if (options.from !== undefined && !(SOURCE_NAMES as readonly string[]).includes(options.from)) {
    throw new InputError('UNKNOWN_SOURCE', `${JSON.stringify(String(options.from))} is not a source; expected one of ${SOURCE_NAMES.join(', ')}`, { flag: '--from' })
  }
  // The path given is followed when it is a symlink (to a file, an archive or a directory).
  const info = await statSourcePath(path)
  const warnings: AdapterWarning[] = []
  if (info.isFile()) {
    const label = baseName(path)
    if (isZipStart(await fileStart(path, 4))) {
      const zip = await openZip(path, label, MAX_SOURCE_FILES)
      try {
        return await readTree(zip, label, 'archive', options, warnings)
      } finally {
        await zip.close()
      }
    }
    const content = await readBounded(path, label)
    const source = options.from ?? detectSource(label, textStart(content))
    if (source === undefined) throw new InputError('UNKNOWN_SOURCE', `cannot tell which source this is; name it with --from (${SOURCE_NAMES.join(', ')})`, { file: path })
    return { source, files: [{ path: label, content }], warnings }
  }
  const paths = await walk(path, warnings)
  const tree: FileTree = { paths, read: (file, limit) => readBounded(join(path, file), file, limit), peek: (file, bytes) => fileStart(join(path, file), bytes) }
  return readTree(tree, path, 'directory', options, warnings)
}

/**
 * Reads the source at `path` and maps it to records with its adapter (`from`, or detected).
 * @throws what readSource and the adapter throw; InputError NOTHING_RECOGNIZED when the adapter
 *   skipped every entry (see the header); nothing is returned on error
 */
export async function importSource(path: string, options: AdapterOptions & ReadSourceOptions = {}): Promise<AdapterResult> {
  const read = await readSource(path, options)
  const { from: _from, maxTotalBytes: _maxTotalBytes, ...adapterOptions } = options
  const result = ADAPTERS[read.source].parse({ files: read.files }, adapterOptions)
  const skipped = result.skipped ?? 0
  if (result.records.length === 0 && skipped > 0) {
    const first = result.warnings[0] as AdapterWarning
    const hint = options.from !== undefined ? 'is --from right?' : `it was read as ${read.source}; name the source with --from if that is wrong`
    const entries = skipped === 1 ? 'its one entry was' : `all ${skipped} entries were`
    throw new InputError('NOTHING_RECOGNIZED', `no ${read.source} memory in this export: ${entries} skipped (the first warning: ${first.code}: ${first.message}); ${hint}`, { file: path })
  }
  return { ...result, warnings: [...read.warnings, ...result.warnings] }
}


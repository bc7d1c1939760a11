/**
 * Locates the Portable Memory conformance data where it lives (never copied into this repo):
 * ../shared/conformance/portable-memory from the repository root, or CAIRN_CONFORMANCE_DIR.
 */
import { existsSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

export function conformanceDir(): string {
  const dir = process.env.CAIRN_CONFORMANCE_DIR ?? path.resolve(repoRoot, '../shared/conformance/portable-memory')
  if (!existsSync(dir)) throw new Error(`conformance data not found at ${dir} (set CAIRN_CONFORMANCE_DIR)`)
  return dir
}

export function conformancePath(...parts: string[]): string {
  return path.join(conformanceDir(), ...parts)
}

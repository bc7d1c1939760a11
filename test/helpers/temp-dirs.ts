/**
 * Temporary directories for one test file: `tempDir()` makes one, and every one made is removed
 * after each test (register with `afterEach(removeTempDirs)`).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

export function tempDirs(prefix: string): { tempDir: () => Promise<string>; removeTempDirs: () => Promise<void> } {
  const made: string[] = []
  return {
    async tempDir() {
      const dir = await mkdtemp(path.join(os.tmpdir(), prefix))
      made.push(dir)
      return dir
    },
    async removeTempDirs() {
      for (const dir of made.splice(0)) await rm(dir, { recursive: true, force: true })
    },
  }
}

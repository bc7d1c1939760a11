/**
 * The README's library examples are run as written (with the package import pointed at the
 * source and the home directory at a temp dir), so it cannot drift from the API.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { expect, it } from 'vitest'
import { repoRoot } from './helpers/conformance.js'

it('runs the README library examples: two replicas with the same digest, then sync, tokens and bundles', async () => {
  const readme = await readFile(path.join(repoRoot, 'README.md'), 'utf8')
  const examples = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1] as string)
  expect(examples.length).toBeGreaterThanOrEqual(2)
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cairn-readme-'))
  const script = path.join(repoRoot, 'test', `.readme-example-${process.pid}.ts`)
  try {
    for (const [index, example] of examples.entries()) {
      // Relative paths land in the temp dir; the first example leaves its replicas open.
      const source = example
        .replace("from 'cairn'", "from '../src/index.js'")
        .replace(/'\.\/([^']*)'/g, (_, file: string) => JSON.stringify(path.join(dir, `${index}`, file)))
      await writeFile(script, index === 0 ? `${source}\nawait memory.close()\nawait phone.close()\n` : source)
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script], { cwd: repoRoot })
      expect(stdout.trim().split('\n').at(-1), `example ${index + 1}`).toBe('true')
    }
  } finally {
    await rm(script, { force: true })
    await rm(dir, { recursive: true, force: true })
  }
})

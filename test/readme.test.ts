/**
 * The README's library example is run as written (with the package import pointed at the
 * source and the home directory at a temp dir), so it cannot drift from the API.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { expect, it } from 'vitest'
import { repoRoot } from './helpers/conformance.js'

it('runs the README library example and sees two replicas with the same digest', async () => {
  const readme = await readFile(path.join(repoRoot, 'README.md'), 'utf8')
  const example = /```ts\n([\s\S]*?)```/.exec(readme)?.[1]
  expect(example).toBeDefined()
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cairn-readme-'))
  const script = path.join(repoRoot, 'test', `.readme-example-${process.pid}.ts`)
  try {
    const source = (example as string)
      .replace("from 'cairn'", "from '../src/index.js'")
      .replace("'./.cairn'", JSON.stringify(path.join(dir, 'home')))
    await writeFile(script, `${source}\nawait memory.close()\nawait phone.close()\n`)
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script], { cwd: repoRoot })
    expect(stdout.trim().split('\n').at(-1)).toBe('true')
  } finally {
    await rm(script, { force: true })
    await rm(dir, { recursive: true, force: true })
  }
})

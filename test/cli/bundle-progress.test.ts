/**
 * When `cairn import`/`export`/`validate` print progress (src/cli/bundle-progress.ts): never in
 * the first interval, at most once per interval after it, and a phase that printed always
 * prints its completion, once. Time is a ManualClock, so no test depends on a machine's speed.
 */
import { describe, expect, it } from 'vitest'
import { BundleProgress } from '../../src/cli/bundle-progress.js'
import { ManualClock } from '../../src/index.js'

function progressWith(clock: ManualClock): { progress: BundleProgress; lines: string[] } {
  const lines: string[] = []
  const progress = new BundleProgress('import', { write: async (text) => { lines.push(text) } }, clock, 1000)
  return { progress, lines }
}

const writing = { label: 'writing', unit: 'records' } as const
const checking = { label: 'checking', unit: 'bytes' } as const

describe('BundleProgress', () => {
  it('prints nothing for a run that ends within the first interval', () => {
    const clock = new ManualClock(5000)
    const { progress, lines } = progressWith(clock)
    progress.update(writing, 0, 10)
    clock.advance(999)
    progress.update(writing, 5, 10)
    progress.update(writing, 10, 10)
    expect(lines).toEqual([])
  })

  it('prints at most once per interval, then the completion of a phase it reported', () => {
    const clock = new ManualClock()
    const { progress, lines } = progressWith(clock)
    clock.advance(1000)
    progress.update(writing, 2000, 6000)
    progress.update(writing, 4000, 6000)
    clock.advance(1000)
    progress.update(writing, 5000, 6000)
    progress.update(writing, 6000, 6000)
    progress.update(writing, 6000, 6000)
    expect(lines).toEqual([
      'import: writing 2000/6000 records (33%)\n',
      'import: writing 5000/6000 records (83%)\n',
      'import: writing 6000/6000 records (100%)\n',
    ])
  })

  it('closes only the phases it reported, and shows bytes in MiB once they reach one', () => {
    const clock = new ManualClock()
    const { progress, lines } = progressWith(clock)
    clock.advance(1500)
    progress.update(checking, 1024 * 1024, 4 * 1024 * 1024)
    progress.update(checking, 4 * 1024 * 1024, 4 * 1024 * 1024)
    progress.update(writing, 10, 10)
    expect(lines).toEqual(['import: checking 1.0/4.0 MiB (25%)\n', 'import: checking 4.0/4.0 MiB (100%)\n'])
  })
})

/**
 * One `.mem` import in a process of its own (bundle.bench.ts runs it with a capped heap): imports
 * the bundle at argv[2] into a new on-disk replica at argv[3] and prints one JSON line with the
 * time, the peak heap sampled during the import, and what was written. The parent reads whether
 * it finished: a process over its heap cap dies instead.
 */
import { Memory } from '../src/index.js'

const [source, replica] = process.argv.slice(2)
if (source === undefined || replica === undefined) throw new Error('usage: bundle-import-child.ts <bundle.mem> <replica dir>')
const memory = await Memory.open({ path: replica })
let peakHeap = 0
const sample = (): void => {
  peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed)
}
const sampler = setInterval(sample, 5)
const start = performance.now()
const report = await memory.import(source, { onProgress: sample })
const ms = performance.now() - start
clearInterval(sampler)
await memory.close()
const imported = report.format === 'mem' ? Object.values(report.imported).reduce((sum, n) => sum + (n ?? 0), 0) : 0
console.log(JSON.stringify({ ms, imported, peakHeapBytes: peakHeap }))

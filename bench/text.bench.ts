/**
 * Collaborative text benchmark: `memory.appendText` of a short note to a core block that already
 * holds 1k, 10k and 100k characters, on a store on disk, against the primitive underneath it
 * (one Automerge splice on a document already in memory, plus `save`) and against Yjs (one
 * `Y.Text` insert plus the update it encodes), on the same block sizes in the same run.
 *
 * An append is what an agent does to its working memory all day, so its cost should not grow
 * with the block. Results go to stdout and `bench/results/text.json`.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import * as Automerge from '@automerge/automerge'
import * as Y from 'yjs'
import { Memory } from '../src/index.js'

const SIZES = [1_000, 10_000, 100_000]
const APPENDS = 60
const WARM_UP = 5
const NOTE = ' - prefers green tea in the afternoon; asked to be reminded on Fridays.'

function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] as number
}

async function timed(count: number, step: (i: number) => unknown | Promise<unknown>): Promise<number> {
  for (let i = 0; i < WARM_UP; i++) await step(-1 - i)
  const samples: number[] = []
  for (let i = 0; i < count; i++) {
    const start = performance.now()
    await step(i)
    samples.push(performance.now() - start)
  }
  return median(samples)
}

async function cairnAppend(root: string, size: number): Promise<number> {
  const memory = await Memory.open({ path: path.join(root, `cairn-${size}`) })
  try {
    await memory.remember({ kind: 'core', id: 'human', content: 'x'.repeat(size) })
    return await timed(APPENDS, () => memory.appendText('human', NOTE))
  } finally {
    await memory.close()
  }
}

function automergeAppend(size: number): Promise<number> {
  let doc = Automerge.change(Automerge.init<{ text: string }>(), (d) => { d.text = 'x'.repeat(size) })
  return timed(APPENDS, () => {
    doc = Automerge.change(doc, (d) => { Automerge.splice(d, ['text'], d.text.length, 0, NOTE) })
    return Automerge.save(doc)
  })
}

function yjsAppend(size: number): Promise<number> {
  const doc = new Y.Doc()
  const text = doc.getText('text')
  text.insert(0, 'x'.repeat(size))
  return timed(APPENDS, () => {
    let update: Uint8Array | undefined
    const listen = (bytes: Uint8Array) => { update = bytes }
    doc.on('update', listen)
    text.insert(text.length, NOTE)
    doc.off('update', listen)
    return update
  })
}

export async function run(): Promise<void> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'cairn-bench-text-'))
  try {
    console.log(`node ${process.version}, ${os.cpus()[0]?.model}, ${os.cpus().length} cores, load ${os.loadavg()[0]?.toFixed(1)}`)
    const rows = []
    for (const size of SIZES) {
      const cairn = await cairnAppend(root, size)
      const automerge = await automergeAppend(size)
      const yjs = await yjsAppend(size)
      rows.push({ blockChars: size, cairnMs: cairn, automergeMs: automerge, yjsMs: yjs })
      console.log(`block of ${String(size).padStart(7)} chars: appendText p50 ${cairn.toFixed(2)} ms | automerge splice+save ${automerge.toFixed(2)} ms (${(cairn / automerge).toFixed(1)}x) | yjs insert+update ${yjs.toFixed(3)} ms (${(cairn / yjs).toFixed(0)}x)`)
    }
    await mkdir(new URL('./results/', import.meta.url), { recursive: true })
    await writeFile(new URL('./results/text.json', import.meta.url), `${JSON.stringify({
      date: new Date().toISOString(), node: process.version, cpu: os.cpus()[0]?.model, cores: os.cpus().length, loadAverage: os.loadavg(), appends: APPENDS, rows,
    }, null, 2)}\n`)
    console.log('wrote bench/results/text.json')
  } finally {
    await rm(root, { recursive: true, force: true })
  }
}

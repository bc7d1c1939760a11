/**
 * The log benchmark (issue 2, "Performance"). In one process on one machine, it
 * measures the raw node:crypto Ed25519 sign and verify rates and the three log paths whose
 * targets are ratios of them:
 *
 *   interactive append (one event, one signature, persisted)  >= 0.6 x raw sign
 *   bulk append (batches of 1000, one signature per batch)     >= 5   x raw sign
 *   bulk ingest (verify + persist 100k shipped events)         >= 5   x raw verify
 *
 * Every store is a LevelDB store on disk in a fresh temp directory. Nothing measured skips
 * verification or persistence. Results go to stdout and `bench/results/log.json`.
 */
import crypto from 'node:crypto'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  EVENT_SIGNATURE_DOMAIN, Identity, LogStore, canonicalJson, encodeBody, encodeHeader,
  type AppendEntry, type EventEnvelope, type LogEvent, type SpaceLog,
} from '../src/index.js'

const INTERACTIVE_APPENDS = 5_000
const BULK_EVENTS = 100_000
const BULK_BATCH = 1_000
const INGEST_CHUNK = 5_000
const RAW_SECONDS = 1.5

const TARGETS = { interactiveVsSign: 0.6, bulkAppendVsSign: 5, bulkIngestVsVerify: 5 }

const resultsFile = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'log.json')
const utf8 = new TextEncoder()

/** A memory-record-like payload, ~255 bytes of canonical JSON, different for every index. */
function memoryData(i: number): AppendEntry['data'] {
  return {
    kind: 'fact',
    id: `mem-${i.toString(36).padStart(8, '0')}`,
    text: `User prefers dark roast coffee, brewed at ${85 + (i % 10)} degrees, no sugar (note ${i}).`,
    tags: ['preference', 'coffee', i % 2 === 0 ? 'morning' : 'afternoon'],
    confidence: 0.5 + (i % 50) / 100,
    source: { agent: 'assistant', session: `s-${Math.floor(i / 100)}` },
    tValidFrom: 1_700_000_000_000 + i * 1000,
  }
}

/** Mean canonical size of the `data` above, for the report. */
const DATA_BYTES = Math.round(
  Array.from({ length: 1000 }, (_, i) => canonicalJson(memoryData(i)).length).reduce((a, b) => a + b, 0) / 1000,
)

function entry(i: number): AppendEntry {
  return { op: 'memory.upsert', data: memoryData(i) }
}

/** Runs `operation` in rounds of `round` calls until `seconds` pass; returns operations per second. */
function rate(seconds: number, round: number, operation: (i: number) => void): number {
  let count = 0
  const start = performance.now()
  const stop = start + seconds * 1000
  let now = start
  while (now < stop) {
    for (let i = 0; i < round; i++) operation(count + i)
    count += round
    now = performance.now()
  }
  return count / ((now - start) / 1000)
}

/** Raw Ed25519 over what Cairn signs: the domain tag (15 bytes) and an event id (32 bytes). */
function rawCrypto(): { signPerSecond: number; verifyPerSecond: number; messageBytes: number } {
  const { privateKey, publicKey: generated } = crypto.generateKeyPairSync('ed25519')
  const jwk = generated.export({ format: 'jwk' })
  const publicKey = crypto.createPublicKey({ key: jwk, format: 'jwk' }) // pre-imported, as the store caches it
  const tag = utf8.encode(`${EVENT_SIGNATURE_DOMAIN}\u0000`)
  const messages = Array.from({ length: 1024 }, () => Buffer.concat([tag, crypto.randomBytes(32)]))
  const signatures = messages.map((message) => crypto.sign(null, message, privateKey))
  const sign = (i: number) => void crypto.sign(null, messages[i & 1023] as Buffer, privateKey)
  const verify = (i: number) => {
    if (!crypto.verify(null, messages[i & 1023] as Buffer, publicKey, signatures[i & 1023] as Buffer)) throw new Error('raw verify failed')
  }
  rate(0.3, 64, sign)
  const signPerSecond = rate(RAW_SECONDS, 64, sign)
  rate(0.3, 64, verify)
  const verifyPerSecond = rate(RAW_SECONDS, 64, verify)
  return { signPerSecond, verifyPerSecond, messageBytes: (messages[0] as Buffer).length }
}

/** The shipped form of a stored event, keeping the signature it was stored with. */
function toShipped(event: LogEvent): EventEnvelope {
  return {
    id: event.id,
    header: utf8.encode(encodeHeader(event.header)),
    ...(event.body ? { body: utf8.encode(encodeBody(event.body)) } : {}),
    ...(event.signature ? { signature: event.signature } : {}),
  }
}

/** Splits one author's chain into chunks of about `size` events, each ending at a signed event. */
function signedChunks(events: readonly EventEnvelope[], size: number): EventEnvelope[][] {
  const chunks: EventEnvelope[][] = []
  let current: EventEnvelope[] = []
  for (const envelope of events) {
    current.push(envelope)
    if (envelope.signature && current.length >= size) {
      chunks.push(current)
      current = []
    }
  }
  if (current.length > 0) {
    if (!current[current.length - 1]?.signature) throw new Error('the chain does not end at a signed event')
    chunks.push(current)
  }
  return chunks
}

async function withTempDir<T>(label: string, task: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `cairn-bench-${label}-`))
  try {
    return await task(dir)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

async function interactiveAppend(identity: Identity): Promise<number> {
  return withTempDir('interactive', async (dir) => {
    const store = await LogStore.open({ path: dir })
    const log = await store.createSpace(identity)
    for (let i = 0; i < 500; i++) await log.append(identity, entry(i)) // warm-up
    const start = performance.now()
    for (let i = 0; i < INTERACTIVE_APPENDS; i++) await log.append(identity, entry(i))
    const seconds = (performance.now() - start) / 1000
    await store.close()
    return INTERACTIVE_APPENDS / seconds
  })
}

async function appendBulk(log: SpaceLog, identity: Identity, events: number): Promise<void> {
  for (let from = 0; from < events; from += BULK_BATCH) {
    const batch: AppendEntry[] = []
    for (let i = from; i < from + BULK_BATCH; i++) batch.push(entry(i))
    await log.appendBatch(identity, batch)
  }
}

async function ingestAll(log: SpaceLog, chunks: readonly EventEnvelope[][]): Promise<void> {
  for (const chunk of chunks) {
    const result = await log.ingest(chunk)
    if (result.held.length > 0 || result.applied.length !== chunk.length) throw new Error('ingest did not apply the whole chunk')
  }
}

/** Bulk append of 100k events, then bulk ingest of the same events into a fresh replica. */
async function bulk(identity: Identity): Promise<{ appendPerSecond: number; ingestPerSecond: number; chunks: number; bodyBytes: number }> {
  return withTempDir('bulk', async (dir) => {
    // Warm-up: the same code paths on throwaway stores.
    const warmSource = await LogStore.open({ path: path.join(dir, 'warm-source') })
    const warmLog = await warmSource.createSpace(identity)
    await appendBulk(warmLog, identity, 10 * BULK_BATCH)
    const warmShipped: EventEnvelope[] = []
    for await (const event of warmLog.range(identity.author)) warmShipped.push(toShipped(event))
    const warmReplica = await LogStore.open({ path: path.join(dir, 'warm-replica') })
    await ingestAll(await warmReplica.openSpace(warmLog.space), signedChunks(warmShipped, INGEST_CHUNK))
    await warmSource.close()
    await warmReplica.close()

    const source = await LogStore.open({ path: path.join(dir, 'source') })
    const log = await source.createSpace(identity)
    let start = performance.now()
    await appendBulk(log, identity, BULK_EVENTS)
    const appendPerSecond = BULK_EVENTS / ((performance.now() - start) / 1000)

    const shipped: EventEnvelope[] = []
    for await (const event of log.range(identity.author)) shipped.push(toShipped(event))
    const chunks = signedChunks(shipped, INGEST_CHUNK)
    const bodyBytes = shipped.reduce((sum, envelope) => sum + (envelope.body?.length ?? 0), 0) / shipped.length

    const replicaStore = await LogStore.open({ path: path.join(dir, 'replica') })
    const replica = await replicaStore.openSpace(log.space)
    start = performance.now()
    await ingestAll(replica, chunks)
    const ingestPerSecond = shipped.length / ((performance.now() - start) / 1000)

    const report = await replica.verify()
    if (!report.ok) throw new Error(`replica does not verify: ${JSON.stringify(report.problems.slice(0, 3))}`)
    if (JSON.stringify(replica.versionVector()) !== JSON.stringify(log.versionVector())) throw new Error('replica version vector differs')
    if (report.events !== shipped.length) throw new Error(`replica holds ${report.events} events, not ${shipped.length}`)
    await source.close()
    await replicaStore.close()
    return { appendPerSecond, ingestPerSecond, chunks: chunks.length, bodyBytes }
  })
}

const round = (value: number, digits = 2): number => Number(value.toFixed(digits))

export async function run(): Promise<void> {
  const began = performance.now()
  const loadAverage = [os.loadavg()[0] as number]
  const identity = Identity.generate()
  const rawBefore = rawCrypto()
  const interactivePerSecond = await interactiveAppend(identity)
  const bulkResult = await bulk(identity)
  // Raw rates again after the log runs; the higher of each is used, so a busy moment during
  // one raw measurement cannot flatter the ratios.
  const rawAfter = rawCrypto()
  loadAverage.push(os.loadavg()[0] as number)
  const raw = {
    signPerSecond: Math.max(rawBefore.signPerSecond, rawAfter.signPerSecond),
    verifyPerSecond: Math.max(rawBefore.verifyPerSecond, rawAfter.verifyPerSecond),
    messageBytes: rawBefore.messageBytes,
  }

  const ratios = {
    interactiveVsSign: interactivePerSecond / raw.signPerSecond,
    bulkAppendVsSign: bulkResult.appendPerSecond / raw.signPerSecond,
    bulkIngestVsVerify: bulkResult.ingestPerSecond / raw.verifyPerSecond,
  }
  const pass = {
    interactiveVsSign: ratios.interactiveVsSign >= TARGETS.interactiveVsSign,
    bulkAppendVsSign: ratios.bulkAppendVsSign >= TARGETS.bulkAppendVsSign,
    bulkIngestVsVerify: ratios.bulkIngestVsVerify >= TARGETS.bulkIngestVsVerify,
  }

  const rows: [string, number, string, boolean | undefined][] = [
    ['raw Ed25519 sign', raw.signPerSecond, '', undefined],
    ['raw Ed25519 verify', raw.verifyPerSecond, '', undefined],
    [`interactive append (${INTERACTIVE_APPENDS})`, interactivePerSecond,
      `${ratios.interactiveVsSign.toFixed(2)}x sign (>= ${TARGETS.interactiveVsSign})`, pass.interactiveVsSign],
    [`bulk append (${BULK_EVENTS / 1000}k, batch ${BULK_BATCH})`, bulkResult.appendPerSecond,
      `${ratios.bulkAppendVsSign.toFixed(2)}x sign (>= ${TARGETS.bulkAppendVsSign})`, pass.bulkAppendVsSign],
    [`bulk ingest (${BULK_EVENTS / 1000}k, chunk ~${INGEST_CHUNK})`, bulkResult.ingestPerSecond,
      `${ratios.bulkIngestVsVerify.toFixed(2)}x verify (>= ${TARGETS.bulkIngestVsVerify})`, pass.bulkIngestVsVerify],
  ]
  console.log(`node ${process.version}, ${os.cpus()[0]?.model ?? 'unknown cpu'}, ${os.cpus().length} cores, load ${loadAverage.map((x) => x.toFixed(1)).join(' -> ')}; ` +
    `data ~${DATA_BYTES} B, body ~${Math.round(bulkResult.bodyBytes)} B`)
  console.log(`${'measurement'.padEnd(38)}${'events/s'.padStart(12)}${'µs/event'.padStart(10)}  ratio vs target`)
  for (const [name, perSecond, ratio, ok] of rows) {
    const verdict = ok === undefined ? '' : ok ? '  PASS' : '  FAIL'
    console.log(`${name.padEnd(38)}${Math.round(perSecond).toLocaleString('en-US').padStart(12)}${(1e6 / perSecond).toFixed(1).padStart(10)}  ${ratio}${verdict}`)
  }

  const results = {
    date: new Date().toISOString(),
    command: 'npm run bench -- log',
    machine: {
      node: process.version, cpu: os.cpus()[0]?.model ?? 'unknown', cores: os.cpus().length, platform: `${os.platform()} ${os.arch()}`,
      loadAverage1m: { start: round(loadAverage[0] as number), end: round(loadAverage[1] as number) },
    },
    workload: {
      signedMessageBytes: raw.messageBytes, meanDataBytes: DATA_BYTES, meanBodyBytes: round(bulkResult.bodyBytes, 0), interactiveAppends: INTERACTIVE_APPENDS,
      bulkEvents: BULK_EVENTS, bulkBatch: BULK_BATCH, ingestChunkEvents: INGEST_CHUNK, ingestChunks: bulkResult.chunks, store: 'classic-level on disk, sync: false',
    },
    eventsPerSecond: {
      rawSign: round(raw.signPerSecond, 0), rawVerify: round(raw.verifyPerSecond, 0),
      rawSignRuns: [round(rawBefore.signPerSecond, 0), round(rawAfter.signPerSecond, 0)],
      rawVerifyRuns: [round(rawBefore.verifyPerSecond, 0), round(rawAfter.verifyPerSecond, 0)],
      interactiveAppend: round(interactivePerSecond, 0),
      bulkAppend: round(bulkResult.appendPerSecond, 0), bulkIngest: round(bulkResult.ingestPerSecond, 0),
    },
    ratios: { interactiveVsSign: round(ratios.interactiveVsSign), bulkAppendVsSign: round(ratios.bulkAppendVsSign), bulkIngestVsVerify: round(ratios.bulkIngestVsVerify) },
    targets: TARGETS,
    pass,
    durationSeconds: round((performance.now() - began) / 1000, 1),
  }
  await mkdir(path.dirname(resultsFile), { recursive: true })
  await writeFile(resultsFile, `${JSON.stringify(results, null, 2)}\n`)
  console.log(`wrote ${path.relative(process.cwd(), resultsFile)} (${results.durationSeconds} s)`)
}

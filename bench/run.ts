/**
 * Runs benchmark suites: `npm run bench` runs every known suite, `npm run bench -- log` only the
 * named ones. Each suite is one file, `bench/<name>.bench.ts`, exporting `run(): Promise<void>`;
 * add a suite by adding its name below. Benchmarks never run under `npm test`.
 */
const SUITES: Record<string, () => Promise<{ run(): Promise<void> }>> = {
  log: () => import('./log.bench.js'),
  'text-index': () => import('./text-index.bench.js'),
  memory: () => import('./memory.bench.js'),
  sync: () => import('./sync.bench.js'),
  bundle: () => import('./bundle.bench.js'),
  deletion: () => import('./deletion.bench.js'),
  text: () => import('./text.bench.js'),
  'level-batch': () => import('./level-batch.bench.js'),
}

const requested = process.argv.slice(2).filter((arg) => arg !== '--')
const unknown = requested.filter((name) => !(name in SUITES))
if (unknown.length > 0) {
  console.error(`unknown suite ${unknown.join(', ')}; known: ${Object.keys(SUITES).join(', ')}`)
  process.exit(2)
}
for (const name of requested.length > 0 ? requested : Object.keys(SUITES)) {
  console.log(`\n== bench: ${name} ==`)
  const suite = await (SUITES[name] as () => Promise<{ run(): Promise<void> }>)()
  await suite.run()
}

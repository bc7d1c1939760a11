import os from 'node:os'
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Vitest's default is one worker fewer than the CPUs: on a 2-core CI runner, one worker ran
    // every file in turn while much of the time went to waiting (child processes, sockets,
    // timers). Two files at a time there; the default on larger machines.
    maxWorkers: Math.max(2, os.availableParallelism() - 1),
  },
})

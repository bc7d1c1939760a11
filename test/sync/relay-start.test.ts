/**
 * Relay.start on disk: a start that fails to open (another start on the same new path holds
 * it, or is writing its key) removes nothing, so the start that runs keeps its key and store;
 * one that cannot listen removes only what it created (test/cli/sync-commands.test.ts).
 */
import { existsSync } from 'node:fs'
import path from 'node:path'
import { expect, it } from 'vitest'
import { Relay } from '../../src/sync/relay.js'
import { tempDir } from '../helpers/cli-home.js'

// Which one fails, and how (its key file half-written by the other, or the store locked),
// varies with timing: the race is run several times.
it('two starts on one new directory: the one refused removes nothing of the other\'s', async () => {
  for (let round = 0; round < 6; round++) {
    const dir = path.join(await tempDir(), 'relay')
    const results = await Promise.allSettled([Relay.start({ path: dir, port: 0 }), Relay.start({ path: dir, port: 0 })])
    try {
      expect(results.map((result) => result.status).sort()).toEqual(['fulfilled', 'rejected'])
      expect(existsSync(path.join(dir, 'relay-identity.json')), `round ${round}`).toBe(true)
      expect(existsSync(path.join(dir, 'store')), `round ${round}`).toBe(true)
    } finally {
      for (const result of results) if (result.status === 'fulfilled') await result.value.stop()
    }
  }
})

import { describe, expect, it } from 'vitest'
import { ReadAhead } from '../../src/projection/read-ahead.js'

describe('ReadAhead', () => {
  it('starts reads a window ahead of the one taken, each once, and gives each its own result', async () => {
    const started: string[] = []
    const ahead = new ReadAhead(['a', 'b', 'c', 'd', 'e'], async (id) => {
      started.push(id)
      return id.toUpperCase()
    }, 2)
    expect(started).toEqual(['a', 'b'])
    expect(await ahead.take('a')).toBe('A')
    expect(started).toEqual(['a', 'b', 'c'])
    // Out of order: what it skips over is started too, never twice.
    expect(await ahead.take('d')).toBe('D')
    expect(started).toEqual(['a', 'b', 'c', 'd', 'e'])
    expect(await ahead.take('b')).toBe('B')
    expect(ahead.take('b')).toBeUndefined()
    expect(ahead.take('z')).toBeUndefined()
    expect(started).toHaveLength(5)
  })

  it('leaves no unhandled rejection behind for a read started and never taken, and hands a failure to its taker', async () => {
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown): void => {
      unhandled.push(reason)
    }
    process.on('unhandledRejection', onUnhandled)
    try {
      const ahead = new ReadAhead(['ok', 'bad', 'never'], async (id) => {
        if (id !== 'ok') throw new Error(`no ${id}`)
        return 1
      }, 3)
      expect(await ahead.take('ok')).toBe(1)
      await expect(ahead.take('bad')).rejects.toThrow('no bad')
      await new Promise((resolve) => setTimeout(resolve, 20))
      expect(unhandled).toEqual([])
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
  })
})

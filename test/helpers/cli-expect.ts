/** Assertions shared by the CLI tests. */
import { expect } from 'vitest'
import type { ProcessResult } from './run-cli.js'

/** Exactly one stderr line, `cairn: CODE: …`, and no stack trace; returns that line. */
export function expectOneLineError(result: ProcessResult, exitCode: number, code: string): string {
  expect(result.code).toBe(exitCode)
  const lines = result.stderr.split('\n').filter((line) => line.length > 0)
  expect(lines).toHaveLength(1)
  expect(lines[0]).toMatch(new RegExp(`^cairn: ${code}: `))
  expect(result.stderr).not.toMatch(/\n\s+at /)
  return lines[0] as string
}

#!/usr/bin/env node
/**
 * The `cairn` executable: wires the process (argv, cwd, env, stdout, stderr) to `runCli` and
 * sets the exit code it returns. All behavior lives in run.ts so tests can drive it without
 * spawning; this file only adapts the process.
 */
import { streamSink } from './stream-sink.js'
import { runCli } from './run.js'

// A reader that stops early (`cairn log | head`) closes the pipe; that is not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0)
  throw error
})

process.exitCode = await runCli(process.argv.slice(2), {
  cwd: process.cwd(),
  env: process.env,
  stdout: streamSink(process.stdout),
  stderr: streamSink(process.stderr),
})

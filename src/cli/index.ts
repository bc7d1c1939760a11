/**
 * The CLI's public surface: `runCli` for embedding or testing the command line in-process,
 * the command registry, and the event formatters the demo reuses.
 */
export { runCli, describeError } from './run.js'
export { COMMANDS, findCommand, overviewHelp } from './registry.js'
export { defineCommand, EXIT_OK, EXIT_FAILURE, EXIT_USAGE, type CliCommand, type CliContext, type TextSink } from './command.js'
export { parseFlags, isUsageError, USAGE_ERROR_CODES, type FlagSpec, type FlagDefinition, type FlagValues } from './args.js'
export { eventToJson, eventJsonLine, eventTable, previewData, formatTime } from './format.js'
export { streamSink } from './stream-sink.js'

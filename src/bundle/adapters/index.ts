/**
 * Import adapters: other memory systems' exports → Portable Memory records (`cairn import
 * --from <source>`). Each adapter is pure (source data in, validated records and warnings out);
 * read-source.ts reads files and directories and dispatches.
 */
export { SOURCE_NAMES, type SourceName, type SourceFile, type AdapterInput, type AdapterOptions, type AdapterResult, type AdapterWarning, type ImportedRecord, type WholeDocument, type Adapter } from './types.js'
export { ADAPTERS, detectSource, DETECT_BYTES } from './registry.js'
export { readSource, importSource, MAX_SOURCE_FILES, type SourceRead, type ReadSourceOptions } from './read-source.js'
export { MAX_SOURCE_BYTES, MAX_LINE_BYTES } from './source-text.js'
export { MAX_YAML_DEPTH } from './yaml-subset.js'
export { parseMem0 } from './mem0.js'
export { parseOpenMemory } from './openmemory.js'
export { parseChatGpt } from './chatgpt.js'
export { parseClaudeExport } from './claude-export.js'
export { parseClaudeMemory } from './claude-memory.js'
export { parseTransfer, renderTransferText, parseTransferDate } from './transfer.js'
export { parseEngram } from './engram.js'
export { renderEngramYaml, type EngramRenderOptions } from './engram-render.js'
export { parseLetta } from './letta.js'
export { parseMcpMemory } from './mcp-memory.js'
export { parseOams } from './oams.js'

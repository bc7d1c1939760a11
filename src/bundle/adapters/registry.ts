/**
 * The adapter registry: one entry per source name (`cairn import --from <source>`), each with a
 * description, a detector and its parse function, and `detectSource` to guess a file's source.
 *
 * Invariant: detection only looks at a file's name and the start of its text, never parses it
 * whole, and tries the most specific formats first (an agent file or a ChatGPT export would also
 * pass for generic JSON); a file no detector claims gets no guess, never a wrong default.
 */
import { parseChatGpt } from './chatgpt.js'
import { parseClaudeExport } from './claude-export.js'
import { parseClaudeMemory } from './claude-memory.js'
import { parseEngram } from './engram.js'
import { parseLetta } from './letta.js'
import { parseMcpMemory } from './mcp-memory.js'
import { parseMem0 } from './mem0.js'
import { parseOams } from './oams.js'
import { parseOpenMemory } from './openmemory.js'
import { parseTransfer } from './transfer.js'
import type { Adapter, SourceName } from './types.js'

/** Bytes of a file's start that detectors see. */
export const DETECT_BYTES = 64 * 1024

const has = (text: string, ...patterns: RegExp[]): boolean => patterns.some((pattern) => pattern.test(text))
const key = (name: string): RegExp => new RegExp(`"${name}"\\s*:`)
const extension = (path: string, ...names: string[]): boolean => names.some((name) => path.toLowerCase().endsWith(name))
const isJsonText = (text: string): boolean => /^\s*[[{]/.test(text)

export const ADAPTERS: Readonly<Record<SourceName, Adapter>> = {
  letta: {
    name: 'letta',
    description: 'Letta agent file (.af): memory blocks, messages, passages',
    detect: (path, text) => extension(path, '.af') || (isJsonText(text) && has(text, key('core_memory'), key('block_ids'), key('in_context_message_ids'))),
    parse: parseLetta,
  },
  chatgpt: {
    name: 'chatgpt',
    description: "ChatGPT data export conversations.json, or its parts conversations-000.json… (the current branch of each conversation), or saved memories",
    detect: (_path, text) => isJsonText(text) && has(text, key('mapping')) && has(text, key('current_node'), key('author')),
    parse: parseChatGpt,
  },
  'claude-export': {
    name: 'claude-export',
    description: 'Claude data export: conversations.json, projects.json and memories.json',
    detect: (_path, text) => isJsonText(text) && (has(text, key('chat_messages'), key('conversations_memory'), key('project_memories')) || (has(text, key('docs')) && has(text, key('prompt_template')))),
    parse: parseClaudeExport,
  },
  openmemory: {
    name: 'openmemory',
    description: "OpenMemory (mem0's app) export: memories.json or memories.jsonl(.gz)",
    detect: (path, text) => (isJsonText(text) && has(text, key('export_meta'))) || (extension(path, 'memories.jsonl', 'memories.jsonl.gz') && has(text, key('state'))),
    parse: parseOpenMemory,
  },
  'mcp-memory': {
    name: 'mcp-memory',
    description: "MCP memory server knowledge graph (memory.jsonl: entities and relations)",
    detect: (_path, text) => has(text, /^\s*\{\s*"type"\s*:\s*"(entity|relation)"/m),
    parse: parseMcpMemory,
  },
  oams: {
    name: 'oams',
    description: 'OAMS memory JSONL (OAMSMemory objects; envelopes and pipelines among them)',
    detect: (_path, text) => isJsonText(text) && has(text, key('namespace')) && has(text, key('content'), key('payload')),
    parse: parseOams,
  },
  mem0: {
    name: 'mem0',
    description: 'mem0 export: a list of memories or {results|memories|data: [...]}',
    detect: (_path, text) => isJsonText(text) && has(text, key('memory')) && has(text, key('user_id'), key('hash'), key('agent_id'), key('run_id'), key('results')),
    parse: parseMem0,
  },
  engram: {
    name: 'engram',
    description: 'Engram (PLUR) YAML: engrams.yaml, pack files and episodes.yaml',
    detect: (path, text) => extension(path, '.yaml', '.yml') && has(text, /^\s*-?\s*(statement|summary)\s*:/m, /^engrams\s*:/m),
    parse: parseEngram,
  },
  'claude-memory': {
    name: 'claude-memory',
    description: 'Claude memory files: MEMORY.md, CLAUDE.md and topic files with frontmatter',
    detect: (path) => extension(path, '.md'),
    parse: parseClaudeMemory,
  },
  transfer: {
    name: 'transfer',
    description: 'Memory transfer text: "[date] - memory" lines an assistant printed',
    detect: (path, text) => extension(path, '.txt') || has(text, /^\s*(?:[-*•]\s*)?\[[^\]\n]{1,40}\]\s*[-–—:]/m),
    parse: parseTransfer,
  },
}

/** Detection order: most specific first. */
const DETECTION_ORDER: readonly SourceName[] = ['letta', 'chatgpt', 'claude-export', 'openmemory', 'mcp-memory', 'oams', 'mem0', 'engram', 'claude-memory', 'transfer']

/** The source a file looks like, from its path and the start of its text; undefined when none claims it. */
export function detectSource(path: string, text: string): SourceName | undefined {
  const head = text.length > DETECT_BYTES ? text.slice(0, DETECT_BYTES) : text
  return DETECTION_ORDER.find((name) => ADAPTERS[name].detect?.(path, head) === true)
}

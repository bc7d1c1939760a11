/**
 * `cairn expire`: forgets every record whose `expirationDate` has passed (Memory.expire,
 * memory-model §1.7). Queries hide expired records already; this erases them, with what was
 * derived only from them, under tombstones every replica names alike.
 */
import { canonicalJson } from '../../index.js'
import { EXIT_OK } from '../command.js'
import { DIR_FLAG, resolveHomeDir, withMemory } from '../home.js'
import { JSON_FLAG } from '../memory-flags.js'
import { defineOperandCommand } from '../operand-command.js'

export const expireCommand = defineOperandCommand({
  name: 'expire',
  summary: 'forget every record whose expirationDate has passed',
  synopsis: 'expire [--dir D] [--json]',
  description: `
Forgets every record this home shows whose expirationDate is at or before now, each with the
records derived only from it, reason "expired" and a tombstone id every replica computes alike
(tomb_ + H("expire", id)). Queries and searches hide expired records before this runs; this
erases them. Prints how many were forgotten and their ids; with --json, {"expired": [ids]}.
Cairn runs no timer: run this (or Memory.expire) when you like, e.g. from cron.`,
  operands: [],
  flags: {
    dir: DIR_FLAG,
    json: JSON_FLAG,
  },
  async run(flags, _operands, context) {
    const dir = resolveHomeDir(context.cwd, flags.dir)
    const expired = await withMemory(dir, { create: false }, (memory) => memory.expire())
    if (flags.json) {
      await context.stdout.write(`${canonicalJson({ expired })}\n`)
      return EXIT_OK
    }
    const count = `${expired.length} record${expired.length === 1 ? '' : 's'}`
    await context.stdout.write([`expired ${count}`, ...expired.map((id) => `  ${id}`), ''].join('\n'))
    return EXIT_OK
  },
})

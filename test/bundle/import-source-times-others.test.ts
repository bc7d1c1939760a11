/**
 * helper-87 review of d8a0cae: a record an adapter dates by another entry's time.
 * A Claude project document without a `created_at` of its own gets its project's creation time
 * as `created`/`modified` (claude-projects.ts), and sourceTimeOf read that as the document's own
 * source time: an edit here to the document's resource then won over every later export of the
 * document (the project's creation never moves), though design-decisions says an entry the
 * source gives no time is written over, as before.
 */
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { hashId } from '../../src/bundle/adapters/import-context.js'
import { ManualClock } from '../../src/log/clock.js'
import { Memory } from '../../src/memory/index.js'
import { tempDir } from './helpers/mem-fixtures.js'

async function projectsExport(name: string, filename: string, content: string): Promise<string> {
  const file = path.join(tempDir(), name)
  await writeFile(file, JSON.stringify([{
    uuid: 'proj-1', name: 'Course', description: 'a course', created_at: '2025-01-01T00:00:00Z', updated_at: '2025-01-01T00:00:00Z',
    prompt_template: '', docs: [{ uuid: 'doc-1', filename, content }],
  }]))
  return file
}

describe('an adapter record the source gives no time of its own', () => {
  it('a Claude project document without created_at is written over by a later export, not dated by its project', async () => {
    const clock = new ManualClock(Date.parse('2026-03-01T00:00:00Z'))
    const memory = await Memory.open({ clock })
    const resource = hashId('res_', 'claude', 'project-doc', 'proj-1', 'uuid', 'doc-1')
    await memory.import(await projectsExport('projects.json', 'notes.md', 'first draft'), { from: 'claude-export' })
    expect((await memory.get(resource))?.title).toBe('notes.md')
    clock.advance(60_000)
    await memory.update(resource, { set: { title: 'my notes' } })
    clock.advance(60_000)
    // The document renamed and rewritten in Claude since; the project's times did not move.
    await memory.import(await projectsExport('projects-2.json', 'syllabus.md', 'second draft'), { from: 'claude-export' })
    const held = await memory.get(resource)
    // Before the fix: 'my notes' (dated 2025-01-01 by the project, the edit looked newer).
    expect(held?.title).toBe('syllabus.md')
    expect(held?.summary).toBe('second draft')
    await memory.close()
  })
})

/**
 * Types for `y-leveldb` 0.2, whose own declarations (`dist/src/y-leveldb.d.ts`) are not reachable
 * under NodeNext resolution: its package.json `exports` names no `types`. Only what the sync
 * benchmark uses is declared, copied from those declarations.
 */
declare module 'y-leveldb' {
  import type * as Y from 'yjs'

  export class LeveldbPersistence {
    constructor(location: string, options?: { levelOptions?: object })
    /** The tail of the store's write chain: every operation runs after the previous one. */
    tr: Promise<unknown>
    getYDoc(docName: string): Promise<Y.Doc>
    storeUpdate(docName: string, update: Uint8Array): Promise<number>
    flushDocument(docName: string): Promise<void>
    destroy(): Promise<void>
  }
}

/**
 * A `TextSink` over a Node writable stream. Waiting for 'drain' when the stream's buffer is
 * full keeps memory flat while `cairn log` streams a large log into a slow pipe.
 */
import { once } from 'node:events'
import type { Writable } from 'node:stream'
import type { TextSink } from './command.js'

export function streamSink(stream: Writable): TextSink {
  return {
    async write(text) {
      if (!stream.write(text)) await once(stream, 'drain')
    },
  }
}

/**
 * Builds a new local event: body with fresh salt, header extending the author's chain, id.
 * The caller decides the chain position (seq, prev), dependencies and clock; this only encodes.
 */
import { LimitError } from '../errors.js'
import { bytesToHex } from './bytes.js'
import { canonicalJson, type JsonValue } from './canonical-json.js'
import { utf8Encode } from './bytes.js'
import type { CryptoProvider } from './crypto/index.js'
import type { DecodedEvent } from './decode-envelope.js'
import { LOG_FORMAT_VERSION, MAX_BODY_BYTES, SALT_BYTES, encodeHeader, lazyBody, type EventHeader, type EventKind } from './event.js'
import type { Hlc } from './hlc.js'
import type { AuthorKey, EventId, SpaceId } from './ids.js'

export interface EventDraft {
  readonly space?: SpaceId
  readonly author: AuthorKey
  readonly seq: number
  readonly prev?: EventId
  readonly deps: readonly EventId[]
  readonly clock: Hlc
  readonly kind: EventKind
  readonly op: string
  readonly data: JsonValue
}

/**
 * @throws InputError from canonical JSON when `data` is not JSON; LimitError BODY_TOO_LARGE
 */
export function buildEvent(draft: EventDraft, crypto: CryptoProvider, salt?: Uint8Array): DecodedEvent {
  const saltHex = bytesToHex(salt ?? crypto.randomBytes(SALT_BYTES))
  // canonicalJson({ data, op, salt }) written out: the keys are already in code-point order.
  const dataText = canonicalJson(draft.data)
  const bodyText = `{"data":${dataText},"op":${canonicalJson(draft.op)},"salt":"${saltHex}"}`
  const bodyBytes = utf8Encode(bodyText)
  // The event carries the data as read back from its canonical text (when first read), exactly
  // what every other replica decodes: key order is canonical and the caller's object is not aliased.
  const body = lazyBody(draft.op, saltHex, dataText)
  if (bodyBytes.length > MAX_BODY_BYTES) {
    throw new LimitError('BODY_TOO_LARGE', `body is ${bodyBytes.length} bytes, over ${MAX_BODY_BYTES}`, { field: 'data' })
  }
  const header: { -readonly [K in keyof EventHeader]: EventHeader[K] } = {
    v: LOG_FORMAT_VERSION,
    author: draft.author,
    seq: draft.seq,
    deps: [...draft.deps].sort(),
    clock: draft.clock,
    kind: draft.kind,
    bodyHash: crypto.sha256Hex(bodyBytes),
    bodySize: bodyBytes.length,
  }
  if (draft.space !== undefined) header.space = draft.space
  if (draft.prev !== undefined) header.prev = draft.prev
  const headerText = encodeHeader(header)
  const id = crypto.sha256Hex(headerText) as EventId
  return { id, header, headerText, body, bodyBytes }
}

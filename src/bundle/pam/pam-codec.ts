/**
 * The two file forms of a PAM artifact (seed 000 §4.4, issue 5):
 *
 *   .pam       canonical JSON of the envelope, UTF-8, no BOM (the form that is hashed, so a
 *              written file is byte-identical to the bytes any verifier canonicalizes)
 *   .pam.cbor  "PAM" 0x01, then the deterministic CBOR of the same envelope (cbor-encode.ts)
 *
 * Invariant: `decode(encode(a))` equals `a`, and `encode(decode(bytes))` is `bytes` for CBOR
 * (the CBOR reader refuses anything but the deterministic form). JSON input may be formatted
 * in any way (pretty-printed files are common) but not hold duplicate keys. Decoders check
 * sizes first and structure last (`readPamArtifact`); they never verify hashes or signatures.
 * The PAM spec names the CBOR file `.pam` and JSON `.pam.json`; `decodePam` reads either by
 * content, so the name does not matter on input.
 */
import { InputError, LimitError } from '../../errors.js'
import { canonicalJsonBytes, parseJson } from '../../log/index.js'
import { decodeCbor } from './cbor-decode.js'
import { encodeCbor } from './cbor-encode.js'
import { findDuplicateKey } from './json-duplicate-keys.js'
import { readPamArtifact } from './pam-schema.js'
import { MAX_PAM_BYTES, PAM_MAGIC, type PamArtifact } from './pam-types.js'

const textDecoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false })

function checkSize(size: number): void {
  if (size > MAX_PAM_BYTES) throw new LimitError('TOO_LARGE', `${size} bytes, more than ${MAX_PAM_BYTES}`, { path: '$' })
}

function assertBytesInput(value: unknown, label: string): asserts value is Uint8Array {
  if (!(value instanceof Uint8Array)) throw new InputError('WRONG_TYPE', `${label} takes bytes`, { field: label })
}

/**
 * The `.pam` bytes: canonical JSON, UTF-8.
 * @throws InputError (readPamArtifact's codes, NOT_JSON) for a value that is not an artifact
 */
export function encodePamJson(artifact: PamArtifact): Uint8Array {
  // An API edge: the structure check is cheap; values that are not JSON fail in the encoder.
  readPamArtifact(artifact, true)
  return canonicalJsonBytes(artifact)
}

/**
 * The `.pam.cbor` bytes: the magic, then deterministic CBOR.
 * @throws InputError (readPamArtifact's codes, NOT_JSON) for a value that is not an artifact
 */
export function encodePamCbor(artifact: PamArtifact): Uint8Array {
  readPamArtifact(artifact, true)
  const body = encodeCbor(artifact)
  const out = new Uint8Array(PAM_MAGIC.length + body.length)
  out.set(PAM_MAGIC)
  out.set(body, PAM_MAGIC.length)
  return out
}

/**
 * Reads a `.pam` JSON artifact (bytes or text) and checks its structure.
 * @throws InputError WRONG_TYPE, BAD_UTF8, BAD_JSON (line and column), DUPLICATE_KEY, and every
 *   code of readPamArtifact; LimitError TOO_LARGE, TOO_DEEP, PAM_ARTIFACT_OVERSIZED
 */
export function decodePamJson(input: Uint8Array | string): PamArtifact {
  let text: string
  if (typeof input === 'string') {
    checkSize(input.length)
    text = input
  } else {
    assertBytesInput(input, 'decodePamJson')
    checkSize(input.length)
    try {
      text = textDecoder.decode(input)
    } catch {
      throw new InputError('BAD_UTF8', 'the artifact is not valid UTF-8', { path: '$' })
    }
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
  const value = parseJson(text)
  const duplicate = findDuplicateKey(text)
  if (duplicate !== undefined) {
    throw new InputError('DUPLICATE_KEY', `key ${JSON.stringify(duplicate.key.slice(0, 64))} appears twice in one object (at character ${duplicate.offset})`, { path: '$' })
  }
  return readPamArtifact(value, true)
}

/**
 * Reads a `.pam.cbor` artifact and checks its structure.
 * @throws InputError WRONG_TYPE, TRUNCATED, BAD_MAGIC, UNSUPPORTED_VERSION, BAD_CBOR,
 *   TRAILING_BYTES, NOT_CANONICAL, and every code of readPamArtifact; LimitError TOO_LARGE,
 *   TOO_DEEP, PAM_ARTIFACT_OVERSIZED
 */
export function decodePamCbor(bytes: Uint8Array): PamArtifact {
  assertBytesInput(bytes, 'decodePamCbor')
  checkSize(bytes.length)
  if (bytes.length < PAM_MAGIC.length) throw new InputError('TRUNCATED', `${bytes.length} bytes cannot hold the 4-byte magic`, { path: '$' })
  for (let i = 0; i < 3; i++) {
    if (bytes[i] !== PAM_MAGIC[i]) throw new InputError('BAD_MAGIC', 'a .pam.cbor file starts with "PAM" and a version byte', { path: '$' })
  }
  if (bytes[3] !== PAM_MAGIC[3]) throw new InputError('UNSUPPORTED_VERSION', `format version byte ${String(bytes[3])}, only 1 is known`, { path: '$' })
  return readPamArtifact(decodeCbor(bytes.subarray(PAM_MAGIC.length)), true)
}

/**
 * Reads an artifact in either form, chosen by content: the CBOR magic, or JSON text.
 * @throws InputError BAD_MAGIC when the bytes are neither; otherwise as decodePamCbor or
 *   decodePamJson
 */
export function decodePam(bytes: Uint8Array): PamArtifact {
  assertBytesInput(bytes, 'decodePam')
  if (bytes[0] === PAM_MAGIC[0] && bytes[1] === PAM_MAGIC[1]) return decodePamCbor(bytes)
  let i = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0
  while (bytes[i] === 0x20 || bytes[i] === 0x0a || bytes[i] === 0x0d || bytes[i] === 0x09) i++
  if (bytes[i] === 0x7b) return decodePamJson(bytes)
  throw new InputError('BAD_MAGIC', 'neither a .pam.cbor file (magic "PAM" 0x01) nor a .pam JSON object', { path: '$' })
}

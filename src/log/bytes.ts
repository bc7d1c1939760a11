/**
 * Byte and hex conversions. Hex is always lowercase; decoding trusts input that an asserter
 * (`assertHex`) has already checked.
 */
const textEncoder = new TextEncoder()
const textDecoder = new TextDecoder('utf-8', { fatal: true })

export function bytesToHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')
}

export function hexToBytes(hex: string): Uint8Array {
  return new Uint8Array(Buffer.from(hex, 'hex'))
}

export function utf8Encode(text: string): Uint8Array {
  return textEncoder.encode(text)
}

/** Decodes UTF-8, throwing a TypeError on malformed bytes rather than inserting U+FFFD. */
export function utf8Decode(bytes: Uint8Array): string {
  return textDecoder.decode(bytes)
}

export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  let length = 0
  for (const part of parts) length += part.length
  const out = new Uint8Array(length)
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.length
  }
  return out
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  let difference = 0
  for (let i = 0; i < a.length; i++) difference |= (a[i] as number) ^ (b[i] as number)
  return difference === 0
}

const BASE64URL = /^[A-Za-z0-9_-]*$/

/**
 * The bytes of `text` when it is unpadded base64url exactly as encoding them spells it, else
 * undefined. Node's decoder reads any text, skipping what it does not know (padding, spaces,
 * stray characters), so text copied wrong would otherwise decode to other bytes, or to the same
 * bytes under another spelling.
 */
export function decodeBase64urlExactly(text: string): Buffer | undefined {
  if (!BASE64URL.test(text)) return undefined
  const bytes = Buffer.from(text, 'base64url')
  return bytes.toString('base64url') === text ? bytes : undefined
}

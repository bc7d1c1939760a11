/**
 * A scanner that proves JSON text canonical (canonical-json.ts) without building or
 * re-serializing a value: one pass over the characters, no allocation.
 *
 * Why: ingest must refuse a body that is not in canonical form, and the obvious check — parse,
 * serialize again, compare — cost more than hashing the body and half of decoding it
 * (bench/README.md, "log"). Scanning is several times cheaper and lets the parse itself wait
 * until somebody reads the data.
 *
 * It is deliberately incomplete: it answers "canonical" only for the common forms (plain keys,
 * integers below 1e15, decimal fractions, the escapes JSON.stringify writes, nesting up to
 * SCAN_MAX_DEPTH) and -1 for everything else, including texts that are canonical but unusual.
 * Callers fall back to the full check on -1, so a verdict never differs from parse + serialize
 * (a property test holds the two side by side).
 */
import { canonicalNumber, compareCodePoints } from './canonical-json.js'
import { BACKSLASH, CLOSE_BRACE, CLOSE_BRACKET, COLON, COMMA, OPEN_BRACE, OPEN_BRACKET, QUOTE } from './json-codes.js'

/** Deeper nesting is left to the full check (which enforces MAX_JSON_DEPTH). */
export const SCAN_MAX_DEPTH = 64

const MINUS = 0x2d
const DOT = 0x2e
const ZERO = 0x30
const NINE = 0x39

function isDigit(code: number): boolean {
  return code >= ZERO && code <= NINE
}

function isLowerHex(code: number): boolean {
  return (code >= ZERO && code <= NINE) || (code >= 0x61 && code <= 0x66)
}

/**
 * The index just past the canonical string token starting at `start` (a quote), or -1.
 * Accepts exactly what JSON.stringify writes for a well-formed string.
 */
export function scanCanonicalString(text: string, start: number): number {
  if (text.charCodeAt(start) !== QUOTE) return -1
  for (let i = start + 1; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === QUOTE) return i + 1
    if (code < 0x20) return -1
    if (code === BACKSLASH) {
      const next = text.charCodeAt(i + 1)
      // \" \\ \b \f \n \r \t, or \u00XX (lowercase) for a control character without a short form.
      if (next === QUOTE || next === BACKSLASH || next === 0x62 || next === 0x66 || next === 0x6e || next === 0x72 || next === 0x74) {
        i++
        continue
      }
      if (next !== 0x75 || text.charCodeAt(i + 2) !== ZERO || text.charCodeAt(i + 3) !== ZERO) return -1
      const high = text.charCodeAt(i + 4)
      const low = text.charCodeAt(i + 5)
      if ((high !== ZERO && high !== 0x31) || !isLowerHex(low)) return -1
      const value = (high - ZERO) * 16 + (low <= NINE ? low - ZERO : low - 0x61 + 10)
      if (value === 8 || value === 9 || value === 10 || value === 12 || value === 13) return -1
      i += 5
      continue
    }
    if (code >= 0xd800 && code <= 0xdfff) {
      // Only a high surrogate followed by a low one is well formed.
      const next = text.charCodeAt(i + 1)
      if (code > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) return -1
      i++
    }
  }
  return -1
}

/** The index just past a canonical number token at `start`, or -1. */
function scanNumber(text: string, start: number): number {
  let i = start
  if (text.charCodeAt(i) === MINUS) i++
  const intStart = i
  if (text.charCodeAt(i) === ZERO) i++
  else {
    if (!isDigit(text.charCodeAt(i))) return -1
    while (isDigit(text.charCodeAt(i))) i++
  }
  const intDigits = i - intStart
  const code = text.charCodeAt(i)
  if (code === 0x65 || code === 0x45) return -1 // exponent forms: left to the full check
  if (code !== DOT) {
    // An integer: canonical unless "-0"; long ones may be bigints, left to the full check.
    if (intDigits > 15) return -1
    if (intDigits === 1 && text.charCodeAt(intStart) === ZERO && intStart !== start) return -1
    return i
  }
  i++
  const fractionStart = i
  while (isDigit(text.charCodeAt(i))) i++
  if (i === fractionStart) return -1
  const after = text.charCodeAt(i)
  if (after === 0x65 || after === 0x45) return -1
  const token = text.slice(start, i)
  return canonicalNumber(Number(token)) === token ? i : -1
}

/** Code-point order of two plain (escape-free) key tokens given by their inner ranges. */
function compareKeys(text: string, aStart: number, aEnd: number, bStart: number, bEnd: number): number {
  const length = Math.min(aEnd - aStart, bEnd - bStart)
  for (let k = 0; k < length; k++) {
    const x = text.charCodeAt(aStart + k)
    const y = text.charCodeAt(bStart + k)
    if (x !== y) return compareCodePoints(String.fromCharCode(x), String.fromCharCode(y))
  }
  return (aEnd - aStart) - (bEnd - bStart)
}

function hasBackslash(text: string, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (text.charCodeAt(i) === BACKSLASH) return true
  return false
}

/**
 * The index just past the canonical JSON value starting at `start`, or -1 when the text there
 * is not (provably) canonical. `-1` is not a refusal: run the full check.
 */
export function scanCanonicalValue(text: string, start: number, depth = 0): number {
  const code = text.charCodeAt(start)
  switch (code) {
    case QUOTE:
      return scanCanonicalString(text, start)
    case OPEN_BRACE: {
      if (depth >= SCAN_MAX_DEPTH) return -1
      let i = start + 1
      if (text.charCodeAt(i) === CLOSE_BRACE) return i + 1
      let previousStart = -1
      let previousEnd = -1
      for (;;) {
        const keyEnd = scanCanonicalString(text, i)
        if (keyEnd < 0) return -1
        // Inner range of the key; keys with escapes are left to the full check.
        const innerStart = i + 1
        const innerEnd = keyEnd - 1
        if (hasBackslash(text, innerStart, innerEnd)) return -1
        if (previousStart >= 0 && compareKeys(text, previousStart, previousEnd, innerStart, innerEnd) >= 0) return -1
        previousStart = innerStart
        previousEnd = innerEnd
        if (text.charCodeAt(keyEnd) !== COLON) return -1
        i = scanCanonicalValue(text, keyEnd + 1, depth + 1)
        if (i < 0) return -1
        const next = text.charCodeAt(i)
        if (next === CLOSE_BRACE) return i + 1
        if (next !== COMMA) return -1
        i++
      }
    }
    case OPEN_BRACKET: {
      if (depth >= SCAN_MAX_DEPTH) return -1
      let i = start + 1
      if (text.charCodeAt(i) === CLOSE_BRACKET) return i + 1
      for (;;) {
        i = scanCanonicalValue(text, i, depth + 1)
        if (i < 0) return -1
        const next = text.charCodeAt(i)
        if (next === CLOSE_BRACKET) return i + 1
        if (next !== COMMA) return -1
        i++
      }
    }
    case 0x74: // t
      return text.startsWith('true', start) ? start + 4 : -1
    case 0x66: // f
      return text.startsWith('false', start) ? start + 5 : -1
    case 0x6e: // n
      return text.startsWith('null', start) ? start + 4 : -1
    default:
      return code === MINUS || isDigit(code) ? scanNumber(text, start) : -1
  }
}

/** True when `text` is, as a whole, provably canonical JSON. */
export function isProvablyCanonical(text: string): boolean {
  return text.length > 0 && scanCanonicalValue(text, 0) === text.length
}

/**
 * IEEE 754 half precision (binary16) for deterministic CBOR (RFC 8949 §4.2.1, preferred
 * serialization): a float is written in the shortest of binary16, binary32 and binary64 that
 * holds it exactly. JavaScript has no binary16, so the two conversions live here.
 *
 * Invariant: `halfBitsOf(x)` returns bits only when `halfToNumber(bits) === x` exactly.
 */

const scratch = new DataView(new ArrayBuffer(4))

/** The value of a binary16 bit pattern (RFC 8949 Appendix D). */
export function halfToNumber(bits: number): number {
  const exponent = (bits >> 10) & 0x1f
  const mantissa = bits & 0x3ff
  let value: number
  if (exponent === 0) value = mantissa * 2 ** -24
  else if (exponent !== 31) value = (mantissa + 1024) * 2 ** (exponent - 25)
  else value = mantissa === 0 ? Number.POSITIVE_INFINITY : Number.NaN
  return bits & 0x8000 ? -value : value
}

/**
 * The binary16 bits of a finite non-zero number when binary16 holds it exactly, else undefined.
 * Works from the binary32 form: binary16 values are a subset of binary32 values.
 */
export function halfBitsOf(value: number): number | undefined {
  if (Math.fround(value) !== value) return undefined
  scratch.setFloat32(0, value)
  const bits = scratch.getUint32(0)
  const sign = (bits >>> 16) & 0x8000
  const exponent = ((bits >>> 23) & 0xff) - 127
  const mantissa = bits & 0x7fffff
  let half: number
  if (exponent >= -14 && exponent <= 15) {
    // Normal binary16: 10 mantissa bits, so the low 13 of binary32's 23 must be zero.
    if ((mantissa & 0x1fff) !== 0) return undefined
    half = sign | ((exponent + 15) << 10) | (mantissa >>> 13)
  } else if (exponent >= -24 && exponent < -14) {
    // Subnormal binary16: value = m × 2^-24, so m = (1.mantissa) × 2^(exponent + 1).
    const full = mantissa | 0x800000
    const shift = -(exponent + 1)
    if ((full & ((1 << shift) - 1)) !== 0) return undefined
    half = sign | (full >>> shift)
  } else {
    return undefined
  }
  return halfToNumber(half) === value ? half : undefined
}

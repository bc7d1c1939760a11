/**
 * The physical floor of one verified sync hop, from the primitives on this machine: what a
 * receiver cannot avoid doing to every event it accepts. For Cairn that is two SHA-256 per
 * event (the id over the header, the body hash over the body) and one Ed25519 verify per
 * signature on the wire (one per author per frame: src/sync/frames.ts). Decoding, chain and
 * authorization checks, storage and the network come on top and are not in the floor.
 *
 * Also reported: the floor if every event carried its own signature (one verify per event), the
 * cost a per-change-signing design would pay.
 *
 * Invariant: the hashes are taken over the exact header and body bytes the hop moves; the raw
 * verify rate is over what Cairn signs (domain tag + 32-byte id) with a pre-imported key.
 */
import crypto from 'node:crypto'
import { EVENT_SIGNATURE_DOMAIN, type EventEnvelope } from '../../src/index.js'

/** What one hop moves and verifies, and how long hashing it takes here. */
export interface HopFloorInputs {
  events: number
  frames: number
  /** Signatures left on the wire (verified by the receiver). */
  signatures: number
  meanHeaderBytes: number
  meanBodyBytes: number
  /** node:crypto one-shot SHA-256 of every header and every body once (best of three passes). */
  hashMs: number
}

export interface HopFloor {
  /** hash + `signatures` verifies. */
  floorMs: number
  /** hash + one verify per event. */
  perEventSignatureFloorMs: number
}

const HASH_PASSES = 3

/** node:crypto's one-shot digest (Node >= 20.12), the fastest SHA-256 Node offers. */
function sha256(bytes: Uint8Array): Buffer {
  return crypto.hash('sha256', bytes, 'buffer')
}

/** Times hashing every header and body the way a receiver must (best of three passes). */
export function measureHashing(envelopes: readonly EventEnvelope[]): Pick<HopFloorInputs, 'hashMs' | 'meanHeaderBytes' | 'meanBodyBytes'> {
  let best = Number.POSITIVE_INFINITY
  for (let pass = 0; pass < HASH_PASSES; pass++) {
    const start = performance.now()
    for (const envelope of envelopes) {
      sha256(envelope.header)
      if (envelope.body) sha256(envelope.body)
    }
    best = Math.min(best, performance.now() - start)
  }
  const count = Math.max(1, envelopes.length)
  return {
    hashMs: best,
    meanHeaderBytes: envelopes.reduce((sum, envelope) => sum + envelope.header.length, 0) / count,
    meanBodyBytes: envelopes.reduce((sum, envelope) => sum + (envelope.body?.length ?? 0), 0) / count,
  }
}

/** Raw Ed25519 verifies per second over what Cairn signs, for `seconds` after a short warm-up. */
export function rawVerifyPerSecond(seconds = 1.5): number {
  const { privateKey, publicKey: generated } = crypto.generateKeyPairSync('ed25519')
  const publicKey = crypto.createPublicKey({ key: generated.export({ format: 'jwk' }), format: 'jwk' })
  const tag = Buffer.from(`${EVENT_SIGNATURE_DOMAIN}\u0000`, 'utf8')
  const messages = Array.from({ length: 256 }, () => Buffer.concat([tag, crypto.randomBytes(32)]))
  const signatures = messages.map((message) => crypto.sign(null, message, privateKey))
  const run = (ms: number): number => {
    let count = 0
    const start = performance.now()
    let now = start
    while (now - start < ms) {
      for (let i = 0; i < 64; i++) {
        const index = (count + i) & 255
        if (!crypto.verify(null, messages[index] as Buffer, publicKey, signatures[index] as Buffer)) throw new Error('raw verify failed')
      }
      count += 64
      now = performance.now()
    }
    return count / ((now - start) / 1000)
  }
  run(300)
  return run(seconds * 1000)
}

export function hopFloor(inputs: HopFloorInputs, verifyPerSecond: number): HopFloor {
  return {
    floorMs: inputs.hashMs + (inputs.signatures / verifyPerSecond) * 1000,
    perEventSignatureFloorMs: inputs.hashMs + (inputs.events / verifyPerSecond) * 1000,
  }
}

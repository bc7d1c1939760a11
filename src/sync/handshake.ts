/**
 * Key-possession proofs for the sync handshake. Each side sends a fresh random nonce; the other
 * signs it (with the space and both keys, see handshakeSignable) to prove it holds its key, so
 * a relay serves a space to a peer only after the peer proved the key its token names.
 */
import { isUsablePublicKey } from '../log/ids.js'
import { handshakeSignable, type CryptoProvider, type Identity } from '../log/index.js'
import { NONCE_BYTES } from './messages.js'

export function newNonce(crypto: CryptoProvider): Uint8Array {
  return crypto.randomBytes(NONCE_BYTES)
}

export function proveKey(identity: Identity, role: 'client' | 'relay', peerNonce: Uint8Array, space: string, peer: string): Uint8Array {
  return identity.sign(handshakeSignable(role, peerNonce, space, identity.author, peer))
}

export function checkProof(
  crypto: CryptoProvider,
  proof: Uint8Array,
  role: 'client' | 'relay',
  ownNonce: Uint8Array,
  space: string,
  prover: string,
  verifier: string,
): boolean {
  // A key of small order (or no point at all) proves nothing: a forged proof verifies under it,
  // so a token issued to such a key could be presented by anyone.
  if (!isUsablePublicKey(prover)) return false
  return crypto.verify(proof, handshakeSignable(role, ownNonce, space, prover, verifier), prover)
}

/**
 * An identity is one device's or agent's Ed25519 key. Never share one between devices: two
 * writers with one key fork its hash chain, which every replica refuses as equivocation.
 */
import { assertBytes, describeType } from '../assert.js'
import { InputError } from '../errors.js'
import { bytesToHex } from './bytes.js'
import { defaultCrypto, type CryptoProvider, type Signer } from './crypto/index.js'
import type { AuthorKey } from './ids.js'

export class Identity {
  /** The public key, hex: this identity's name as an author. */
  readonly author: AuthorKey
  private readonly signer: Signer

  private constructor(private readonly seed: Uint8Array, readonly crypto: CryptoProvider) {
    this.signer = crypto.signerFromSeed(seed)
    this.author = bytesToHex(this.signer.publicKey) as AuthorKey
  }

  static generate(crypto: CryptoProvider = defaultCrypto()): Identity {
    return new Identity(crypto.randomBytes(32), crypto)
  }

  /**
   * @param seed the 32-byte RFC 8032 private key seed
   * @throws InputError WRONG_TYPE, WRONG_LENGTH
   */
  static fromSeed(seed: Uint8Array, crypto: CryptoProvider = defaultCrypto()): Identity {
    assertBytes(seed, 'seed', 32)
    return new Identity(Uint8Array.from(seed), crypto)
  }

  sign(message: Uint8Array): Uint8Array {
    return this.signer.sign(message)
  }

  /** The private seed, for writing a key file. Handle with care. */
  exportSeed(): Uint8Array {
    return Uint8Array.from(this.seed)
  }
}

/** @throws InputError WRONG_TYPE when `value` is not an Identity */
export function assertIdentity(value: unknown, label = 'identity'): Identity {
  if (!(value instanceof Identity)) throw new InputError('WRONG_TYPE', `expected an Identity, got ${describeType(value)}`, { field: label })
  return value
}

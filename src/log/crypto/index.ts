/** Crypto providers and the default choice: native when the runtime has it, else noble. */
import { NativeCrypto, hasNativeCrypto } from './native-crypto.js'
import { NobleCrypto } from './noble-crypto.js'
import type { CryptoProvider } from './provider.js'

export type { CryptoProvider, Signer } from './provider.js'
export { NativeCrypto, NobleCrypto, hasNativeCrypto }

let chosen: CryptoProvider | undefined

/** The provider used when none is passed explicitly. */
export function defaultCrypto(): CryptoProvider {
  chosen ??= hasNativeCrypto() ? new NativeCrypto() : new NobleCrypto()
  return chosen
}

/**
 * Key files: a small JSON document holding an identity's seed, written with mode 0600 through a
 * temporary file and a rename, so a crash never leaves a half-written key. Reading refuses a
 * file that others can read, as ssh does, because anyone who reads it can write as this author.
 *
 *   { "type": "cairn-identity", "version": 1, "publicKey": "<hex>", "seed": "<hex>" }
 */
import { promises as fs } from 'node:fs'
import path from 'node:path'
import { assertHex, assertObject } from '../assert.js'
import { CairnError, InputError, AuthError } from '../errors.js'
import { bytesToHex, hexToBytes } from './bytes.js'
import type { CryptoProvider } from './crypto/index.js'
import { Identity } from './identity.js'

const FILE_TYPE = 'cairn-identity'
const FILE_VERSION = 1

export async function writeIdentityFile(file: string, identity: Identity): Promise<void> {
  const document = {
    type: FILE_TYPE,
    version: FILE_VERSION,
    publicKey: identity.author,
    seed: bytesToHex(identity.exportSeed()),
  }
  await fs.mkdir(path.dirname(file), { recursive: true })
  const temporary = `${file}.${process.pid}.tmp`
  const handle = await fs.open(temporary, 'wx', 0o600)
  try {
    await handle.writeFile(`${JSON.stringify(document, null, 2)}\n`)
    await handle.sync()
  } finally {
    await handle.close()
  }
  await fs.rename(temporary, file)
}

/**
 * @throws InputError KEY_FILE_MISSING, BAD_KEY_FILE; AuthError KEY_FILE_PERMISSIONS, KEY_MISMATCH
 */
export async function readIdentityFile(file: string, crypto?: CryptoProvider): Promise<Identity> {
  let text: string
  try {
    if (process.platform !== 'win32') {
      const stat = await fs.stat(file)
      if ((stat.mode & 0o077) !== 0) {
        throw new AuthError(
          'KEY_FILE_PERMISSIONS',
          `key file is readable by others (mode ${(stat.mode & 0o777).toString(8)}); run chmod 600`,
          { file },
        )
      }
    }
    text = await fs.readFile(file, 'utf8')
  } catch (error) {
    if (error instanceof CairnError) throw error
    if ((error as { code?: string }).code === 'ENOENT') throw new InputError('KEY_FILE_MISSING', 'no key file', { file })
    throw new InputError('BAD_KEY_FILE', `key file cannot be read: ${(error as Error).message}`, { file })
  }
  let identity: Identity
  let publicKey: string
  try {
    const raw = assertObject(JSON.parse(text), 'key file')
    if (raw.type !== FILE_TYPE || raw.version !== FILE_VERSION) {
      throw new InputError('BAD_KEY_FILE', `expected type "${FILE_TYPE}" version ${FILE_VERSION}`, { file })
    }
    publicKey = assertHex(raw.publicKey, 'publicKey', 32)
    identity = Identity.fromSeed(hexToBytes(assertHex(raw.seed, 'seed', 32)), crypto)
  } catch (error) {
    // The wrong type or version is said as it is, with the file named once.
    if (error instanceof CairnError && error.code === 'BAD_KEY_FILE') throw error
    const detail = error instanceof Error ? error.message : String(error)
    throw new InputError('BAD_KEY_FILE', `key file does not decode: ${detail}`, { file }, { cause: error })
  }
  if (identity.author !== publicKey) {
    throw new AuthError('KEY_MISMATCH', 'the seed does not produce the public key the file names', { file })
  }
  return identity
}

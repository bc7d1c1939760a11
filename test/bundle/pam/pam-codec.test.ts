import * as ed from '@noble/ed25519'
import { blake3 } from '@noble/hashes/blake3.js'
import { sha512 } from '@noble/hashes/sha2.js'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  PAM_MAGIC, computeEntryId, createPamEntry, decodePam, decodePamCbor, decodePamJson, encodePamCbor, encodePamJson,
  readPamArtifact, signPam, verifyPam, type PamArtifact,
} from '../../../src/bundle/pam/index.js'
import { CairnError } from '../../../src/errors.js'
import { Identity } from '../../../src/log/index.js'
import { NOW_MS, OPERATOR, SOURCE_AGENT, pamArtifact } from './pam-arbitraries.js'
import { codeOf } from '../../helpers/error-code.js'

const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text)
const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex')

function sample(): PamArtifact {
  const entry = createPamEntry({ parent_ids: [], created_at: '2025-01-15T08:30:00Z', version: '1.0', timestamp: '2025-01-15T08:30:00Z', actor: 'user:alice', observation: 'Hello', salience: 0.85, tags: ['greeting'] })
  return signPam({ components: { episodic: [entry] }, sourceAgent: SOURCE_AGENT, identity: OPERATOR, nowMs: NOW_MS })
}

describe('entry ids', () => {
  it('hash the canonical JSON the PAM spec §4.1 shows, without the id', () => {
    // The canonical text is copied from PAM spec §4.1; BLAKE3 is called directly, not through the code under test.
    const canonical = '{"actor":"user:alice","created_at":"2025-01-15T08:30:00Z","observation":"Hello","parent_ids":[],"salience":0.85,"tags":["greeting"],"timestamp":"2025-01-15T08:30:00Z","version":"1.0"}'
    const expected = `blake3:${hex(blake3(utf8(canonical)))}`
    const entry = { version: '1.0', tags: ['greeting'], timestamp: '2025-01-15T08:30:00Z', salience: 0.85, parent_ids: [], observation: 'Hello', created_at: '2025-01-15T08:30:00Z', actor: 'user:alice' }
    expect(computeEntryId(entry)).toBe(expected)
    expect(computeEntryId({ ...entry, id: 'blake3:whatever' })).toBe(expected)
    expect(createPamEntry(entry).id).toBe(expected)
  })

  it('use BLAKE3-256 (the empty-input vector of the BLAKE3 specification)', () => {
    expect(hex(blake3(new Uint8Array(0)))).toBe('af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262')
  })
})

describe('root hash and signature', () => {
  // Built by hand: the canonical texts are written out, BLAKE3 and Ed25519 are the noble
  // libraries called directly (noble's ed25519, not Cairn's native provider).
  ed.hashes.sha512 = sha512
  const seed = new Uint8Array(32).fill(1)
  const entryText = '{"actor":"user:alice","created_at":"2025-01-15T08:30:00Z","observation":"Hello","parent_ids":[],"salience":0.85,"tags":["greeting"],"timestamp":"2025-01-15T08:30:00Z","version":"1.0"}'
  const entryId = `blake3:${hex(blake3(utf8(entryText)))}`
  const withId = entryText.replace('"observation"', `"id":"${entryId}","observation"`)
  const componentsText = `{"episodic":[${withId}],"identity":[],"procedural":[],"semantic":[],"working":[]}`
  const rootHash = `blake3:${hex(blake3(utf8(componentsText)))}`
  const signature = `ed25519:${hex(ed.sign(utf8(rootHash), seed))}`
  const publicKey = hex(ed.getPublicKey(seed))

  it('signPam gives the root hash and signature computed by hand', () => {
    const entry = createPamEntry(JSON.parse(entryText) as Record<string, never>)
    const artifact = signPam({ components: { episodic: [entry] }, sourceAgent: SOURCE_AGENT, identity: Identity.fromSeed(seed), nowMs: NOW_MS })
    expect(entry.id).toBe(entryId)
    expect(artifact.root_hash).toBe(rootHash)
    expect(artifact.signature).toBe(signature)
  })

  it('verifyPam accepts an artifact written entirely by hand', () => {
    const text = `{"capability_tokens":[],"components":${componentsText},"created_at":"2025-01-15T10:00:00Z","pam_version":"1.0","root_hash":"${rootHash}","schema_version":"1.0","signature":"${signature}","source_agent":{"model_family":"test","name":"minimal-agent","runtime":"pam-reference-v1.0"}}`
    const artifact = decodePamJson(text)
    expect(verifyPam(artifact, { trustedKeys: [publicKey] })).toEqual({ ok: true, rootHash, signer: publicKey, entryCount: 1 })
    expect(new TextDecoder().decode(encodePamJson(artifact))).toBe(text)
  })
})

describe('.pam and .pam.cbor', () => {
  it('round trip random artifacts through JSON and CBOR, and re-encode to identical bytes', () => {
    fc.assert(fc.property(pamArtifact, ({ artifact }) => {
      const json = encodePamJson(artifact)
      const cbor = encodePamCbor(artifact)
      const fromJson = decodePamJson(json)
      const fromCbor = decodePamCbor(cbor)
      expect(fromJson).toEqual(artifact)
      expect(fromCbor).toEqual(artifact)
      expect(hex(encodePamJson(fromJson))).toBe(hex(json))
      expect(hex(encodePamCbor(fromCbor))).toBe(hex(cbor))
      expect(hex(encodePamCbor(fromJson))).toBe(hex(cbor))
      expect(decodePam(cbor)).toEqual(artifact)
      expect(decodePam(json)).toEqual(artifact)
    }), { numRuns: 60 })
  })

  it('starts CBOR files with "PAM" 0x01 and JSON files with the canonical text', () => {
    const artifact = sample()
    expect([...encodePamCbor(artifact).subarray(0, 4)]).toEqual([...PAM_MAGIC])
    expect(new TextDecoder().decode(encodePamJson(artifact))).toMatch(/^\{"capability_tokens":\[\],"components":\{"episodic":\[\{"actor":"user:alice",/)
  })

  it('reads pretty-printed JSON and JSON with a byte order mark', () => {
    const artifact = sample()
    const pretty = JSON.stringify(artifact, null, 2)
    expect(decodePamJson(pretty)).toEqual(artifact)
    expect(decodePam(utf8(`\ufeff\n${pretty}`))).toEqual(artifact)
  })

  it('refuses a wrong magic, an unknown version byte and truncated CBOR', () => {
    const cbor = encodePamCbor(sample())
    expect(codeOf(() => decodePamCbor(Uint8Array.of(0x50, 0x41, 0x58, 0x01, ...cbor.subarray(4))))).toBe('BAD_MAGIC')
    expect(codeOf(() => decodePamCbor(Uint8Array.of(0x50, 0x41, 0x4d, 0x02, ...cbor.subarray(4))))).toBe('UNSUPPORTED_VERSION')
    expect(codeOf(() => decodePamCbor(cbor.subarray(0, 3)))).toBe('TRUNCATED')
    for (const cut of [4, 5, 100, cbor.length - 1]) expect(codeOf(() => decodePamCbor(cbor.subarray(0, cut)))).toBe('TRUNCATED')
    expect(codeOf(() => decodePam(utf8('not an artifact')))).toBe('BAD_MAGIC')
    expect(codeOf(() => decodePam(new Uint8Array(0)))).toBe('BAD_MAGIC')
  })

  it('refuses truncated JSON and duplicate keys', () => {
    const json = encodePamJson(sample())
    expect(codeOf(() => decodePamJson(json.subarray(0, json.length - 1)))).toBe('BAD_JSON')
    const text = new TextDecoder().decode(json)
    expect(codeOf(() => decodePamJson(text.replace('{"capability_tokens":[],', '{"capability_tokens":[],"capability_tokens":[],')))).toBe('DUPLICATE_KEY')
    expect(codeOf(() => decodePamJson(text.replace('"observation":"Hello"', '"observation":"Hello","\\u006fbservation":"Bye"')))).toBe('DUPLICATE_KEY')
    expect(codeOf(() => decodePamJson(Uint8Array.of(0x7b, 0xff, 0x7d)))).toBe('BAD_UTF8')
  })

  it('refuses wrong types, naming the JSON path', () => {
    const base = JSON.parse(new TextDecoder().decode(encodePamJson(sample()))) as Record<string, any>
    const cases: [string, (value: Record<string, any>) => void, string, string][] = [
      ['salience as a string', (v) => { v.components.episodic[0].salience = '0.5' }, 'WRONG_TYPE', '$.components.episodic[0].salience'],
      ['salience above 1', (v) => { v.components.episodic[0].salience = 1.5 }, 'OUT_OF_RANGE', '$.components.episodic[0].salience'],
      ['a missing observation', (v) => { delete v.components.episodic[0].observation }, 'MISSING_FIELD', '$.components.episodic[0].observation'],
      ['an uppercase entry id', (v) => { v.components.episodic[0].id = v.components.episodic[0].id.toUpperCase() }, 'BAD_ID', '$.components.episodic[0].id'],
      ['a parent id without prefix', (v) => { v.components.episodic[0].parent_ids = ['ab'.repeat(32)] }, 'BAD_ID', '$.components.episodic[0].parent_ids[0]'],
      ['a bad timestamp', (v) => { v.components.episodic[0].timestamp = '2025-02-30T00:00:00Z' }, 'BAD_TIMESTAMP', '$.components.episodic[0].timestamp'],
      ['components as an array', (v) => { v.components = [] }, 'WRONG_TYPE', '$.components'],
      ['a missing component', (v) => { delete v.components.identity }, 'MISSING_FIELD', '$.components.identity'],
      ['a short signature', (v) => { v.signature = 'ed25519:00' }, 'BAD_SIGNATURE', '$.signature'],
      ['pam_version 2.0', (v) => { v.pam_version = '2.0' }, 'UNSUPPORTED_VERSION', '$.pam_version'],
      ['source_agent without runtime', (v) => { delete v.source_agent.runtime }, 'MISSING_FIELD', '$.source_agent.runtime'],
      ['the SDK envelope', (v) => { Object.assign(v, v.components); delete v.components }, 'SDK_FORM', '$'],
    ]
    for (const [name, mutate, code, path] of cases) {
      const value = structuredClone(base)
      mutate(value)
      const text = JSON.stringify(value)
      let error: unknown
      try {
        decodePamJson(text)
      } catch (caught) {
        error = caught
      }
      expect(error, name).toBeInstanceOf(CairnError)
      expect((error as CairnError).code, name).toBe(code)
      expect((error as CairnError).where.path, name).toBe(path)
    }
  })

  it('keeps fields the spec does not define and components it does not know', () => {
    const artifact = sample()
    const value = { ...artifact, metadata: { exporter: 'x' }, components: { ...artifact.components, sensory: [{ raw: 1 }] } }
    const read = readPamArtifact(value)
    expect(decodePamCbor(encodePamCbor(read))).toEqual(value)
  })

  it('refuses components over the spec limits', () => {
    const artifact = structuredClone(sample()) as unknown as { components: { identity: unknown[] } }
    artifact.components.identity = Array.from({ length: 101 }, () => ({}))
    expect(codeOf(() => readPamArtifact(artifact))).toBe('PAM_ARTIFACT_OVERSIZED')
  })
})

/**
 * Structure of a PAM artifact (PAM spec §2, §4.3): the check every decoder runs before anything
 * else looks at an artifact, and that `verifyPam` relies on.
 *
 * Invariant: `readPamArtifact` returns only envelopes whose required fields are present with
 * the spec's types, whose ids, hashes and signatures have their Appendix A form, whose
 * timestamps are RFC 3339 and scores in [0, 1], and whose components fit the §2.8 limits.
 * Refusals are InputError (LimitError PAM_ARTIFACT_OVERSIZED for sizes) naming the JSON path.
 *
 * What is checked is what Cairn relies on: types, ids, times, ranges. Naming conventions it
 * does not rely on (procedure names, snake_case preference keys, actor syntax) are left to
 * writers. Where the reference SDK spells a field differently (docs/memory-model.md §2), either
 * spelling is accepted: `version`/`schema_version`, `params`/`parameters`, `persona` and
 * `scratch` as object or string, `subgoals` as strings or objects. The SDK's envelope (the
 * five arrays at top level, without `components`) is refused with SDK_FORM.
 */
import { describeType, describeValue, isPlainObject } from '../../assert.js'
import { InputError, LimitError } from '../../errors.js'
import { canonicalJson } from '../../log/index.js'
import { parseTimestamp } from '../../projection/index.js'
import {
  MAX_COMPONENT_ENTRIES, MAX_PARENT_IDS, PAM_COMPONENTS, PAM_HASH_PATTERN, PAM_SIGNATURE_PATTERN,
  entryPath, type JsonObject, type PamArtifact, type PamComponentName,
} from './pam-types.js'

const VERSION_PATTERN = /^(\d+)\.(\d+)$/
const SUPPORTED_MAJOR = '1'

function fail(code: string, message: string, path: string): never {
  throw new InputError(code, message, { path })
}

function object(value: unknown, path: string): JsonObject {
  if (!isPlainObject(value)) fail('WRONG_TYPE', `expected an object, got ${describeType(value)}`, path)
  return value as JsonObject
}

function field(record: JsonObject, name: string, path: string): unknown {
  if (!Object.hasOwn(record, name)) fail('MISSING_FIELD', `${name} is required`, `${path}.${name}`)
  return record[name]
}

function string(value: unknown, path: string): string {
  if (typeof value !== 'string') fail('WRONG_TYPE', `expected a string, got ${describeType(value)}`, path)
  return value
}

function array(value: unknown, path: string): unknown[] {
  if (!Array.isArray(value)) fail('WRONG_TYPE', `expected an array, got ${describeType(value)}`, path)
  return value
}

function strings(value: unknown, path: string): void {
  array(value, path).forEach((item, i) => string(item, `${path}[${i}]`))
}

function timestamp(value: unknown, path: string): void {
  string(value, path)
  try {
    parseTimestamp(value, path)
  } catch {
    fail('BAD_TIMESTAMP', `expected an RFC 3339 timestamp such as 2025-01-15T08:30:00Z, got ${describeValue(value)}`, path)
  }
}

function score(value: unknown, path: string): void {
  if (typeof value !== 'number' || !Number.isFinite(value)) fail('WRONG_TYPE', `expected a number, got ${describeType(value)}`, path)
  if (value < 0 || value > 1) fail('OUT_OF_RANGE', `${value} is outside [0, 1]`, path)
}

function hash(value: unknown, path: string): void {
  if (!PAM_HASH_PATTERN.test(string(value, path))) fail('BAD_ID', `expected blake3:<64 lowercase hex>, got ${describeValue(value)}`, path)
}

function version(value: unknown, path: string): void {
  const match = VERSION_PATTERN.exec(string(value, path))
  if (match === null) fail('BAD_VALUE', `expected MAJOR.MINOR, got ${describeValue(value)}`, path)
  if (match[1] !== SUPPORTED_MAJOR) fail('UNSUPPORTED_VERSION', `version ${String(value)} is not ${SUPPORTED_MAJOR}.x`, path)
}

/** A field that must be present with one of the accepted spellings. */
function either(entry: JsonObject, names: readonly string[], path: string): [string, unknown] {
  for (const name of names) if (Object.hasOwn(entry, name)) return [name, entry[name]]
  return fail('MISSING_FIELD', `${names.join(' or ')} is required`, `${path}.${names[0] ?? ''}`)
}

function objectOrString(value: unknown, path: string): void {
  if (typeof value !== 'string' && !isPlainObject(value)) fail('WRONG_TYPE', `expected an object or a string, got ${describeType(value)}`, path)
}

function objects(value: unknown, path: string): void {
  array(value, path).forEach((item, i) => object(item, `${path}[${i}]`))
}

const COMPONENT_FIELDS: Readonly<Record<PamComponentName, (entry: JsonObject, path: string) => void>> = {
  episodic(entry, path) {
    timestamp(field(entry, 'timestamp', path), `${path}.timestamp`)
    string(field(entry, 'actor', path), `${path}.actor`)
    string(field(entry, 'observation', path), `${path}.observation`)
    score(field(entry, 'salience', path), `${path}.salience`)
    strings(field(entry, 'tags', path), `${path}.tags`)
    if (Object.hasOwn(entry, 'context')) object(entry.context, `${path}.context`)
  },
  semantic(entry, path) {
    for (const name of ['subject', 'predicate', 'object']) string(field(entry, name, path), `${path}.${name}`)
    score(field(entry, 'confidence', path), `${path}.confidence`)
    array(field(entry, 'source_event_ids', path), `${path}.source_event_ids`).forEach((id, i) => hash(id, `${path}.source_event_ids[${i}]`))
  },
  procedural(entry, path) {
    string(field(entry, 'name', path), `${path}.name`)
    const [name, params] = either(entry, ['params', 'parameters'], path)
    objects(params, `${path}.${name}`)
    string(field(entry, 'body', path), `${path}.body`)
    strings(field(entry, 'preconditions', path), `${path}.preconditions`)
    const usage = field(entry, 'usage_count', path)
    if (typeof usage !== 'number' || !Number.isSafeInteger(usage) || usage < 0) {
      fail('WRONG_TYPE', `expected a non-negative integer, got ${describeValue(usage)}`, `${path}.usage_count`)
    }
    const lastUsed = field(entry, 'last_used', path)
    if (lastUsed !== null) timestamp(lastUsed, `${path}.last_used`)
  },
  working(entry, path) {
    strings(field(entry, 'goals', path), `${path}.goals`)
    array(field(entry, 'subgoals', path), `${path}.subgoals`).forEach((item, i) => objectOrString(item, `${path}.subgoals[${i}]`))
    objectOrString(field(entry, 'scratch', path), `${path}.scratch`)
    objects(field(entry, 'pending_actions', path), `${path}.pending_actions`)
  },
  identity(entry, path) {
    object(field(entry, 'preferences', path), `${path}.preferences`)
    objectOrString(field(entry, 'persona', path), `${path}.persona`)
    string(field(entry, 'language', path), `${path}.language`)
    strings(field(entry, 'policies', path), `${path}.policies`)
  },
}

function readEntry(component: PamComponentName, value: unknown, path: string): void {
  const entry = object(value, path)
  hash(field(entry, 'id', path), `${path}.id`)
  const parents = array(field(entry, 'parent_ids', path), `${path}.parent_ids`)
  if (parents.length > MAX_PARENT_IDS) throw new LimitError('TOO_MANY_PARENTS', `${parents.length} parents, more than ${MAX_PARENT_IDS}`, { path: `${path}.parent_ids` })
  parents.forEach((id, i) => hash(id, `${path}.parent_ids[${i}]`))
  timestamp(field(entry, 'created_at', path), `${path}.created_at`)
  const [name, entryVersion] = either(entry, ['version', 'schema_version'], path)
  string(entryVersion, `${path}.${name}`)
  if (Object.hasOwn(entry, 'tags')) strings(entry.tags, `${path}.tags`)
  COMPONENT_FIELDS[component](entry, path)
}

function readComponents(value: unknown): void {
  const components = object(value, '$.components')
  for (const component of PAM_COMPONENTS) {
    const entries = array(field(components, component, '$.components'), `$.components.${component}`)
    const limit = MAX_COMPONENT_ENTRIES[component]
    if (entries.length > limit) {
      throw new LimitError('PAM_ARTIFACT_OVERSIZED', `${entries.length} ${component} entries, more than ${limit} (PAM spec §2.8)`, { path: `$.components.${component}` })
    }
    entries.forEach((entry, index) => readEntry(component, entry, entryPath(component, index)))
  }
}

/**
 * Checks the structure of an artifact envelope and returns it typed. It does not copy: the
 * caller must not change the value afterwards.
 * @param isJson the value came from a JSON or CBOR decoder, so it holds only JSON values; API
 *   callers leave it false and the value is checked deeply first
 * @throws InputError WRONG_TYPE, MISSING_FIELD, BAD_ID, BAD_SIGNATURE, BAD_TIMESTAMP,
 *   OUT_OF_RANGE, BAD_VALUE, UNSUPPORTED_VERSION, SDK_FORM, NOT_JSON (with the JSON path);
 *   LimitError PAM_ARTIFACT_OVERSIZED, TOO_MANY_PARENTS, TOO_DEEP
 */
export function readPamArtifact(value: unknown, isJson = false): PamArtifact {
  if (!isJson) canonicalJson(value)
  const envelope = object(value, '$')
  if (!Object.hasOwn(envelope, 'components') && PAM_COMPONENTS.some((name) => Object.hasOwn(envelope, name))) {
    fail('SDK_FORM', 'the components sit at the top level (the reference SDK form); PAM spec §4.3 nests them in "components"', '$')
  }
  version(field(envelope, 'pam_version', '$'), '$.pam_version')
  version(field(envelope, 'schema_version', '$'), '$.schema_version')
  timestamp(field(envelope, 'created_at', '$'), '$.created_at')
  const agent = object(field(envelope, 'source_agent', '$'), '$.source_agent')
  for (const name of ['name', 'model_family', 'runtime']) string(field(agent, name, '$.source_agent'), `$.source_agent.${name}`)
  hash(field(envelope, 'root_hash', '$'), '$.root_hash')
  const signature = string(field(envelope, 'signature', '$'), '$.signature')
  if (!PAM_SIGNATURE_PATTERN.test(signature)) fail('BAD_SIGNATURE', `expected ed25519:<128 lowercase hex>, got ${describeValue(signature)}`, '$.signature')
  objects(field(envelope, 'capability_tokens', '$'), '$.capability_tokens')
  readComponents(field(envelope, 'components', '$'))
  return envelope as PamArtifact
}

/** True when an entry would pass `readPamArtifact` in the given component. */
export function isWellFormedEntry(component: PamComponentName, entry: unknown): boolean {
  try {
    readEntry(component, entry, '$')
    return true
  } catch {
    return false
  }
}

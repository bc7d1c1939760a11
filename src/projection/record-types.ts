/**
 * The public, per-kind types of records, read off the kind table's literal types
 * (kind-table.ts), so a field added there is typed here with no second list to keep in step.
 *
 * - `MemoryRecord<K>` is what reads return: `kind` narrows it, and a narrowed record types
 *   every field of its kind (fields the table requires or defaults are always present). It
 *   keeps an index signature of `JsonValue`, as `RecordView` has (a name it lacks reads as
 *   `JsonValue | undefined`): an episode carries unknown (extension) keys at the top level,
 *   and the two stay assignable both ways, so code written against the untyped view compiles.
 * - `RecordInput<K>` is what `remember` takes: the fields without a default are required, all
 *   others optional; an unknown key is a type error, except on episodes, whose unknown keys
 *   are kept as extensions (spec §8). An episode needs `summary` or `details`.
 */
import type { JsonValue } from '../log/index.js'
import type { ExtensionFields, FieldType, KindDrafts, RecordKind } from './kind-table.js'

/** The TypeScript type of a field's value, as reads return it and writes take it. */
export type FieldValue<T extends FieldType> =
  T extends 'string' | 'timestamp' ? string
    : T extends 'integer' | 'number' ? number
      : T extends 'boolean' ? boolean
        : T extends 'string[]' ? string[]
          : { [key: string]: string }

type FieldsOf<K extends RecordKind> = KindDrafts[K]['fields'][number] | ExtensionFields

type AlwaysPresent<F> = F extends { readonly required: true } ? F : never
type NeedsValue<F> = F extends { readonly required: true; readonly default: unknown } ? never : F extends { readonly required: true } ? F : never

/** Shows an intersection as one object type in editors and errors. */
type Flat<T> = { [P in keyof T]: T[P] }

type RecordOfKind<K extends RecordKind> = Flat<
  { readonly kind: K; readonly id: string }
  & { readonly [F in AlwaysPresent<FieldsOf<K>> as F['name']]: FieldValue<F['type']> }
  & { readonly [F in Exclude<FieldsOf<K>, AlwaysPresent<FieldsOf<K>>> as F['name']]?: FieldValue<F['type']> }
> & { readonly [field: string]: JsonValue }

/**
 * A record as reads return it (`get`, `query`, `search`, `records`, `lookup`). Test `kind` to
 * narrow it: `if (record.kind === 'episode') record.summary` is a `string`.
 */
export type MemoryRecord<K extends RecordKind = RecordKind> = K extends RecordKind ? RecordOfKind<K> : never

/** What a write takes for a field: as read, but lists and maps may be readonly (`as const`). */
type InputValue<T extends FieldType> = T extends 'string[]' ? readonly string[] : T extends 'string-map' ? { readonly [key: string]: string } : FieldValue<T>

type InputOfKind<K extends RecordKind> = Flat<
  { readonly kind: K }
  & { readonly [F in NeedsValue<FieldsOf<K>> as F['name']]: InputValue<F['type']> }
  & { readonly [F in Exclude<FieldsOf<K>, NeedsValue<FieldsOf<K>>> as F['name']]?: InputValue<F['type']> }
>

// Extensions are any JSON (checked when written); `unknown` lets readonly values through.
type EpisodeInput = InputOfKind<'episode'>
  & ({ readonly summary: string } | { readonly details: string })
  & { readonly [extension: string]: unknown }

/** The input of `remember` for one kind (see the file comment). */
export type RecordInput<K extends RecordKind = RecordKind> = K extends 'episode' ? EpisodeInput : K extends RecordKind ? InputOfKind<K> : never

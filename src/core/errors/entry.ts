/**
 * @module core/errors/entry
 * A catalogue entry: code, failure reason and message template, plus a sentence saying when it
 * happens. Calling an entry is the only way to build a `TritonError`, so every text a client can
 * see is written once, in a template that docs/errors.md lists verbatim.
 *
 * Templates name their holes `{like_this}`; the entry's `fill` function maps the caller's
 * arguments to the holes, and its return type is checked against the template's holes, so a
 * template and its factory cannot drift apart.
 */
import { ErrorCode, TritonError, type FailureReason } from './triton-error.js';

/**
 * The names of the `{holes}` in a template, as a union of string literal types. A literal `{`
 * before a hole (as in "expected '{' to open {type}") is skipped: the hole is what follows the
 * last `{` before the `}`.
 */
type Hole<H extends string> = H extends `${string}{${infer Inner}` ? Hole<Inner> : H;
export type Holes<S extends string> = S extends `${string}{${infer H}}${infer Rest}` ? Hole<H> | Holes<Rest> : never;

export interface EntrySpec<T extends string = string> {
  /** The Triton error code, or 'varies' when the code comes from the model or an earlier error. */
  code: ErrorCode | 'varies';
  /** `nv_inference_request_failure` reason; OTHER when the error is not an inference failure. */
  reason?: FailureReason;
  text: T;
  /** When it happens (one sentence for docs/errors.md). */
  when: string;
}

/** An entry: a factory with its spec attached. */
export interface Entry<A extends unknown[] = never[]> {
  (...args: A): TritonError;
  readonly spec: Required<EntrySpec>;
  /** How many arguments the entry takes. */
  readonly arity: number;
}

/**
 * Extra, non-template fields a `fill` may return: the code of a 'varies' entry, and for an
 * error carried from another thread the name of the entry that raised it there.
 */
interface Overrides {
  $code?: ErrorCode;
  $reason?: FailureReason;
  $entry?: string;
}

type Fill<T extends string, A extends unknown[]> = (...args: A) => { [K in Holes<T>]: string | number } & Overrides;

export function render(text: string, values: Record<string, unknown>): string {
  return text.replace(/\{(\w+)\}/g, (_, hole: string) => String(values[hole]));
}

/** The entry's name is set when its area is registered (see ./registry.ts). */
export function entry<const T extends string, A extends unknown[]>(spec: EntrySpec<T>, fill: Fill<T, A>): Entry<A> {
  const full = { reason: 'OTHER' as FailureReason, ...spec };
  const make = (...args: A): TritonError => {
    const values = fill(...args);
    const code = values.$code ?? (full.code === 'varies' ? ErrorCode.INTERNAL : full.code);
    return new TritonError(code, render(full.text, values), values.$reason ?? full.reason, values.$entry ?? entryName(make));
  };
  return Object.assign(make, { spec: full, arity: fill.length });
}

/** An entry whose text has no holes. */
export function fixed<const T extends string>(spec: EntrySpec<T>): Entry<[]> {
  return entry(spec, () => ({}) as never);
}

const names = new WeakMap<object, string>();

export function nameEntry(e: object, name: string): void {
  names.set(e, name);
}

export function entryName(e: object): string {
  return names.get(e) ?? '(unnamed)';
}

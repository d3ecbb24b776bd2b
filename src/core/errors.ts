/**
 * @module core/errors
 * The error catalogue. Every error tritium answers with is built by one of the entries below
 * (`Errors.unknownModel(name)`, `Errors.ruleMaxBatchSize(site, n)`): each has a Triton error code, a
 * failure reason and a message template, and docs/errors.md lists them all
 * (test/errors/catalogue.test.ts keeps it so, and fails on a `TritonError` built anywhere else).
 * The entries live in ./errors/, one module per area.
 */
import { config } from './errors/config.js';
import { configRules } from './errors/config-rules.js';
import { configSyntax } from './errors/config-syntax.js';
import { ensemble } from './errors/ensemble.js';
import { nameEntry, type EntrySpec } from './errors/entry.js';
import { extensions } from './errors/extensions.js';
import { grpc } from './errors/grpc.js';
import { http } from './errors/http.js';
import { internal } from './errors/internal.js';
import { models } from './errors/models.js';
import { onnx } from './errors/onnx.js';
import { openai } from './errors/openai.js';
import { python } from './errors/python.js';
import { request } from './errors/request.js';
import { TritonError } from './errors/triton-error.js';

export { ErrorCode, TritonError, httpStatusOf, grpcStatusOf, type FailureReason } from './errors/triton-error.js';
export { ConfigError, type ConfigLocation } from './errors/config-error.js';

/** The areas, in the order docs/errors.md lists them. */
export const ERROR_AREAS = { models, request, http, grpc, extensions, python, onnx, openai, config, configSyntax, configRules, ensemble, internal } as const;

type Merge<T> = { [A in keyof T]: (x: T[A]) => void }[keyof T] extends (x: infer I) => void ? I : never;

function merge(): Merge<typeof ERROR_AREAS> {
  const all: Record<string, object> = {};
  for (const area of Object.values(ERROR_AREAS)) {
    for (const [name, e] of Object.entries(area)) {
      if (name in all) throw new Error(`error catalogue: entry '${name}' is defined twice`);
      nameEntry(e, name);
      all[name] = e;
    }
  }
  return all as Merge<typeof ERROR_AREAS>;
}

/** Every catalogue entry, by name. */
export const Errors = merge();

/** Name, area and spec of every entry, for docs/errors.md and its test. */
export function catalogueEntries(): { name: string; area: string; spec: Required<EntrySpec> }[] {
  return Object.entries(ERROR_AREAS).flatMap(([area, entries]) =>
    Object.entries(entries).map(([name, e]) => ({ name, area, spec: (e as { spec: Required<EntrySpec> }).spec })),
  );
}

/** Wraps anything thrown into a TritonError (the `internal` entry unless it already is one). */
export function asTritonError(err: unknown): TritonError {
  if (err instanceof TritonError) return err;
  return Errors.internal(err);
}

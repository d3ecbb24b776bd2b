/**
 * @module frontends/http/json-parse-worker
 * Large JSON infer requests are parsed off the event loop. `JSON.parse` of a 57 MiB body and the
 * walk over its element arrays held the loop for seconds, so health checks and every other
 * connection waited. A body of LARGE_JSON_BYTES or more without binary data goes to one worker
 * thread (json-parse-thread.ts) that parses it and encodes its tensors; what comes back is the
 * parsed request with tensor data as raw bytes, a small copy next to the text. Smaller bodies
 * keep the synchronous path: the hand-off would cost more than the parse.
 */
import { Worker } from 'node:worker_threads';
import type { ErrorCode, FailureReason } from '../../core/errors.js';
import { Errors } from '../../core/errors.js';
import type { ParsedInferRequest } from './infer-plan.js';

export const LARGE_JSON_BYTES = 1 << 20;

interface Reply {
  id: number;
  parsed?: ParsedInferRequest;
  error?: { code: ErrorCode; message: string; reason: FailureReason };
}

type Waiter = { resolve: (p: ParsedInferRequest) => void; reject: (e: Error) => void };

let worker: Worker | undefined;
const waiting = new Map<number, Waiter>();
let nextId = 1;

function start(): Worker {
  const w = new Worker(new URL('./json-parse-thread.js', import.meta.url));
  const fail = (err: Error): void => {
    if (worker === w) worker = undefined;
    for (const wt of waiting.values()) wt.reject(Errors.internal(err));
    waiting.clear();
  };
  w.on('message', (reply: Reply) => {
    const wt = waiting.get(reply.id);
    if (wt === undefined) return;
    waiting.delete(reply.id);
    if (waiting.size === 0) w.unref(); // an idle worker does not keep the process alive
    if (reply.error !== undefined) wt.reject(Errors.parsedInWorker(reply.error));
    else wt.resolve(revive(reply.parsed!));
  });
  w.on('error', fail);
  w.on('exit', (code) => fail(new Error(`JSON parser thread exited with code ${code}`)));
  return w;
}

/** Tensor data crosses threads as Uint8Array; the HTTP path works with Buffers. */
function revive(parsed: ParsedInferRequest): ParsedInferRequest {
  for (const t of parsed.request.inputs) {
    const d = t.data as Uint8Array;
    if (!Buffer.isBuffer(d)) t.data = Buffer.from(d.buffer, d.byteOffset, d.byteLength);
  }
  return parsed;
}

/** Parses a whole-JSON infer body (no binary data) on the worker thread; rejects with the same errors as parseInferRequest. */
export function parseInferRequestOffLoop(body: Buffer, modelName: string, modelVersion: string): Promise<ParsedInferRequest> {
  worker ??= start();
  const w = worker;
  // One copy the worker owns (transferred, not cloned again): the body may be a view of a
  // larger buffer, which a clone would copy whole.
  const copy = new Uint8Array(body.length);
  copy.set(body);
  const id = nextId++;
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    w.ref();
    w.postMessage({ id, body: copy, modelName, modelVersion }, [copy.buffer]);
  });
}

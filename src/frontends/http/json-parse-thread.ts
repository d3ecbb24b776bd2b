/**
 * @module frontends/http/json-parse-thread
 * The body of the worker thread that parses large JSON infer requests (json-parse-worker.ts):
 * the same `parseInferRequest` as on the event loop, so the answers and errors are the same;
 * tensor data comes back already encoded (raw little-endian bytes), never as JS arrays.
 */
import { parentPort } from 'node:worker_threads';
import { asTritonError } from '../../core/errors.js';
import type { ModelHandle } from '../../core/model-handle.js';
import { parseInferRequest } from './infer-request.js';

export interface ParseJob {
  id: number;
  body: Uint8Array;
  modelName: string;
  modelVersion: string;
}

/** Only the raw-binary layout (header length 0) reads the model, and that never comes here. */
const NO_MODEL = {} as ModelHandle;

parentPort?.on('message', (job: ParseJob) => {
  try {
    const body = Buffer.from(job.body.buffer, job.body.byteOffset, job.body.byteLength);
    const parsed = parseInferRequest(body, body.length, NO_MODEL, job.modelName, job.modelVersion);
    parentPort!.postMessage({ id: job.id, parsed });
  } catch (err) {
    const e = asTritonError(err);
    parentPort!.postMessage({ id: job.id, error: { code: e.code, message: e.message, reason: e.reason } });
  }
});

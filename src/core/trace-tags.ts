/**
 * @module core/trace-tags
 * Debug trace tags: `TRITIUM_TRACE=http,grpc,batcher,...` (or `all`) makes the server log what
 * happens to each request and instance, per component, the way grpc-js's `GRPC_TRACE` does.
 * It is for finding out where a request went missing. It has nothing to do with Triton's
 * request-tracing extension in core/trace/ (`--trace-config`, `/v2/trace/setting`), which
 * writes sampled timestamps of requests to a trace file for clients.
 *
 * The tags and what each prints (every line carries the request as `#N id=<client id>`, `#N`
 * being a number given to the request when it is first traced):
 *
 * | tag | what |
 * |---|---|
 * | `http` | connections opened and closed (connection id, peer); each request (method, path); an infer request received (model, version, request, connection); its answer (status); a client gone before its answer (the request is cancelled) |
 * | `grpc` | connections opened and closed; each call (RPC, connection, stream); an infer request received (model, version, request); its answer or error; a client cancel (RST_STREAM, connection closed) and an expired deadline |
 * | `request` | the core's side of a request: accepted (batch size, priority, timeout) or refused by validation; completed (status, duration, responses) |
 * | `batcher` | the schedulers (dynamic batcher and default FIFO): request queued (priority level, queue length); batch formed (requests, rows, instance, why it closed: full, preferred size, delay, no delay, a request that does not fit); requests dropped from the queue (cancelled, queue timeout, queue full) |
 * | `ipc` | a Python stub's requests: batch sent (instance, batch, stub rid of each request); batch answered (`exec_done`); each response (rid, final flag, error); cancel flag set for the stub; request released (blocks freed); open requests failed when the stub died |
 * | `instance` | instance lifecycle: stub spawned (pid), its handshake and `initialize` answered (ready or failed), stub exit (cause); death, restart scheduled, restart attempt and result, give-up, stop; ONNX sessions opened |
 * | `model` | model control: load start (source, overrides), each version loaded or failed, load end (result, duration); unload start and end |
 * | `onnx` | an ONNX instance's executions: the batch (requests, runs) and each run's result and duration |
 *
 * `all` turns every tag on; `-tag` turns one off again (`all,-http`). An unknown tag is warned
 * about once, at start-up, with the known ones.
 *
 * Lines go through the server log like any other (same format and destination: stderr or
 * `--log-file`), as verbose (`I`) lines whose message starts with `[tag]`, printed whatever
 * `--log-verbose` is: setting the variable is the request for them.
 *
 * Cost when off: none on the request path. The flags are read once at start-up; every call site
 * tests its flag (`if (traceTags.http) traceLine('http', ...)`) before it builds a message.
 */
import type { InferRequest } from './inference.js';
import type { Logger } from './logger.js';

export const TRACE_TAGS = ['http', 'grpc', 'request', 'batcher', 'ipc', 'instance', 'model', 'onnx'] as const;
export type TraceTag = (typeof TRACE_TAGS)[number];

/** The environment variable read at start-up. */
export const TRACE_ENV = 'TRITIUM_TRACE';

/** Which tags are on. Tested before building any trace message. */
export const traceTags: Record<TraceTag, boolean> = {
  http: false,
  grpc: false,
  request: false,
  batcher: false,
  ipc: false,
  instance: false,
  model: false,
  onnx: false,
};

let logger: Logger | undefined;
let nextNo = 1;
/** Numbers shared by every thread of the server (frontends/threads/), so `#N` is unique among them. */
let sharedNo: Int32Array | undefined;
/** Which thread a line comes from ('' on the main thread). */
let threadLabel = '';

/** Where this thread's trace lines come from and how they number requests (frontend threads). */
export interface TraceThread {
  /** e.g. `HTTP thread 2`, written after the tag ('' on the main thread). */
  label: string;
  /** One int32 in shared memory that every thread numbers requests from. */
  numbers: Int32Array;
}

/**
 * Sets the tags from `spec` (the value of TRITIUM_TRACE) and the logger trace lines go to.
 * Called once at start-up; an unknown tag is warned about here, with the known ones.
 * Returns the tags turned on.
 */
export function configureTraceTags(spec: string | undefined, log: Pick<Logger, 'info' | 'warn' | 'verbose'>, thread?: TraceThread): TraceTag[] {
  for (const t of TRACE_TAGS) traceTags[t] = false;
  logger = log as Logger;
  sharedNo = thread?.numbers;
  threadLabel = thread?.label ? `${thread.label}: ` : '';
  const unknown: string[] = [];
  for (const raw of (spec ?? '').split(/[\s,]+/)) {
    const word = raw.trim().toLowerCase();
    if (word === '') continue;
    const off = word.startsWith('-');
    const name = off ? word.slice(1) : word;
    if (name === 'all' || name === '*') {
      for (const t of TRACE_TAGS) traceTags[t] = !off;
    } else if ((TRACE_TAGS as readonly string[]).includes(name)) {
      traceTags[name as TraceTag] = !off;
    } else {
      unknown.push(raw.trim());
    }
  }
  if (unknown.length > 0) {
    log.warn(
      `${TRACE_ENV}: unknown trace tag${unknown.length > 1 ? 's' : ''} ${unknown.map((u) => `'${u}'`).join(', ')} ignored; known tags: ${TRACE_TAGS.join(', ')}, all`,
    );
  }
  const on = TRACE_TAGS.filter((t) => traceTags[t]);
  if (on.length > 0) log.info(`${TRACE_ENV}: tracing ${on.join(', ')}`);
  return on;
}

/** Writes one trace line (call only once `traceTags[tag]` said the tag is on). */
export function traceLine(tag: TraceTag, message: string): void {
  // Level 0: printed whatever --log-verbose is (module comment).
  logger?.verbose(0, `[${tag}] ${threadLabel}${message}`);
}

/** The request as trace lines name it: `#N id=<client id>`; N is given at its first trace line. */
export function traced(request: InferRequest): string {
  const no = (request.traceNo ??= sharedNo === undefined ? nextNo++ : Atomics.add(sharedNo, 0, 1) + 1);
  return `#${no} id=${request.id === '' ? '<id_unknown>' : request.id}`;
}

/** The requests of a batch, as trace lines name them. */
export function tracedAll(requests: readonly { readonly request: InferRequest }[]): string {
  return requests.map((r) => traced(r.request)).join(', ');
}

/** An error as one short clause of a trace line. */
export function tracedError(err: { message: string } | undefined): string {
  return err === undefined ? 'ok' : `error: ${err.message}`;
}

/** Milliseconds from `startNs` to `endNs` (process.hrtime.bigint(); now by default), to the microsecond. */
export function tracedSince(startNs: bigint, endNs: bigint = process.hrtime.bigint()): string {
  return `${(Number(endNs - startNs) / 1e6).toFixed(3)} ms`;
}

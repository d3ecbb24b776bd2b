/**
 * @module backends/python/ipc/messages
 * The messages of docs/ipc.md ("Messages"), as types. GENERATED from messages.json by
 * scripts/gen-ipc-messages.mjs: edit that file and run `npm run gen:ipc`. The stub gets its
 * view of the same declaration (stub/tritium_stub/messages.py).
 *
 * Field names are the wire's (msgpack map keys), hence the snake_case of some.
 */

/** `[name, datatype, shape, segment, offset, nbytes]`; BYTES data is length-prefixed. */
export type TensorDescriptor = [string, string, number[], string, number, number];

/** `[name, datatype, shape, data]`: a response's output of at most INLINE_OUTPUT_BYTES (native/src/layout.h), carried in the message. */
export type InlineOutput = [string, string, number[], Uint8Array];

/** An output of a response from the stub: in a block of its arena, or inline. */
export type OutputDescriptor = TensorDescriptor | InlineOutput;

/** `[segment, offset]` of a block in the region. */
export type BlockRef = [string, number];

/** One request of an `exec` batch. */
export interface ExecRequestWire {
  rid: number;
  id: string;
  corr?: number | bigint | string;
  flags?: number;
  timeout: number;
  params?: string;
  /** null: every output of the config. */
  outs: string[] | null;
  inputs: TensorDescriptor[];
  cflag: BlockRef | null;
  /** 1 when the request is traced: its `trace()` can make BLS calls child traces. */
  tr?: 1;
}

/** A response as the stub sends it (returned from execute or through the sender). */
export interface RespWire {
  outs?: OutputDescriptor[];
  err?: [number, string];
  params?: string;
}

// --- Node → stub (ring A) ---

export interface InitMsg {
  t: 'init';
  args: Record<string, string>;
  /** Decoupled `async def execute` coroutines the stub runs at once (max-async-executes). */
  async_limit?: number;
  /** Non-decoupled `async def execute` coroutines the stub runs at once (concurrent-async-executes, CONCURRENT_ASYNC_EXECUTES); absent: one after another. */
  concurrent_executes?: number;
}

export interface AutocompleteMsg {
  t: 'autocomplete';
  config: string;
}

export interface ExecMsg {
  t: 'exec';
  id: number;
  reqs: ExecRequestWire[];
  rel?: BlockRef[];
}

export interface ReleaseMsg {
  t: 'release';
  blocks: BlockRef[];
}

export interface LoglevelMsg {
  t: 'loglevel';
  verbose: number;
}

export interface BlsRMsg {
  t: 'bls_r';
  bid: number;
  resp: RespWire | null;
  final: boolean;
}

export interface ModelCtlRMsg {
  t: 'model_ctl_r';
  cid: number;
  ready?: boolean;
  err?: string;
}

export interface MetricRMsg {
  t: 'metric_r';
  cid: number;
  value?: number;
  err?: string;
}

export interface FinMsg {
  t: 'fin';
}

export type NodeToStub = InitMsg | AutocompleteMsg | ExecMsg | ReleaseMsg | LoglevelMsg | BlsRMsg | ModelCtlRMsg | MetricRMsg | FinMsg;

// --- stub → Node (ring B) ---

export interface HelloMsg {
  t: 'hello';
  pid: number;
}

export interface InitOkMsg {
  t: 'init_ok';
  /** The model defines is_ready() (docs/ipc.md, "Readiness requests"). */
  ready_fn?: boolean;
}

export interface InitErrMsg {
  t: 'init_err';
  msg: string;
}

export interface AutocompleteOkMsg {
  t: 'autocomplete_ok';
  config: string;
}

export interface AutocompleteErrMsg {
  t: 'autocomplete_err';
  msg: string;
}

export interface ExecDoneMsg {
  t: 'exec_done';
  id: number;
  /** The whole batch failed, in Triton's words; `resps` is then empty. */
  err?: string;
  /** Indexes of requests the model marked for rescheduling. */
  resched?: number[];
  resps?: Array<RespWire | null>;
  /** The stub's own time for the batch in ns, from taking the exec to sending this: without its wake-up or the rings (the pipeline's depth is judged on it). */
  ns?: number;
}

export interface SendMsg {
  t: 'send';
  rid: number;
  flags: number;
  resp: RespWire | null;
}

export interface LogMsg {
  t: 'log';
  level: 'INFO' | 'WARNING' | 'ERROR' | 'VERBOSE';
  msg: string;
  file?: string;
  line?: number;
}

export interface SegMsg {
  t: 'seg';
  name: string;
  size: number;
}

export interface FinDoneMsg {
  t: 'fin_done';
}

export interface ReadyDoneMsg {
  t: 'ready_done';
  seq: number;
  ready: boolean;
  err?: string;
}

/** A BLS request from model.py (`InferenceRequest.exec`); inputs are in the stub's arena. */
export interface BlsMsg {
  t: 'bls';
  bid: number;
  model: string;
  /** -1: the latest ready version. */
  ver: number;
  id: string;
  corr: number | bigint | string;
  flags: number;
  /** Microseconds, 0 for none. */
  timeout: number;
  params: string;
  /** Empty: every output of the target. */
  outs: string[];
  inputs: TensorDescriptor[];
  /** exec(decoupled=True): the target may be decoupled. */
  dec: boolean;
  /** The batch the call was made from (cancelled with it). */
  rids: number[];
  /** `trace=` a traced request's `trace()`: that request's rid (the call is traced as its child). */
  tr?: number;
}

/** Blocks of Node's arena (BLS outputs) the model no longer references. */
export interface BlsFreeMsg {
  t: 'bls_free';
  blocks: BlockRef[];
}

export interface BlsCancelMsg {
  t: 'bls_cancel';
  bid: number;
}

/** pb_utils.is_model_ready / load_model / unload_model. */
export interface ModelCtlMsg {
  t: 'model_ctl';
  cid: number;
  op: 'ready' | 'load' | 'unload';
  model: string;
  ver?: string;
  config?: string;
  /** `file:<version>/<name>` → base64 content. */
  files?: Record<string, string>;
  dependents?: boolean;
}

/** pb_utils.MetricFamily / Metric (docs/ipc.md, "Custom metrics"): `family_new` and `value` carry a `cid` and are answered by `metric_r`; the others are not answered. */
export type MetricMsg =
  | { t: 'metric'; op: 'family_new'; cid: number; name: string; description: string; kind: 'counter' | 'gauge' | 'histogram' }
  | { t: 'metric'; op: 'family_del'; name: string }
  | { t: 'metric'; op: 'new'; name: string; labels: Record<string, string>; buckets?: number[] }
  | { t: 'metric'; op: 'inc' | 'set' | 'observe'; name: string; labels: Record<string, string>; v: number }
  | { t: 'metric'; op: 'value'; cid: number; name: string; labels: Record<string, string> };

export type StubToNode =
  | HelloMsg
  | InitOkMsg
  | InitErrMsg
  | AutocompleteOkMsg
  | AutocompleteErrMsg
  | ExecDoneMsg
  | SendMsg
  | LogMsg
  | SegMsg
  | FinDoneMsg
  | ReadyDoneMsg
  | BlsMsg
  | BlsFreeMsg
  | BlsCancelMsg
  | ModelCtlMsg
  | MetricMsg;

export type StubMessageType = StubToNode['t'];

/**
 * @module frontends/openai/model-mapping
 * How an OpenAI request becomes an inference request of the models people serve language
 * models with, and how their responses are read back.
 *
 * Two tensor formats, as Triton's OpenAI frontend knows them:
 * - `vllm`, the vLLM backend's: `text_input`, `stream`, `exclude_input_in_output` and the
 *   sampling settings as one JSON string in `sampling_parameters`, plus its `return_*` flags.
 * - `trtllm`, TensorRT-LLM's (its ensembles and BLS models are built this way): one tensor per
 *   setting (`max_tokens`, `temperature`, `top_p`, `seed`, `stop_words`, ...).
 * The format is the model's `openai_format` parameter when it has one, else `vllm` for a model
 * with a `sampling_parameters` input, else `trtllm`. Either way a tensor is sent only when the
 * model declares that input, in the datatype the model declares; what the model cannot take is
 * refused (logprobs) or done here (stop strings, echo), never dropped in silence.
 */
import type { Datatype } from '../../core/datatype.js';
import { Errors } from '../../core/errors.js';
import type { InferRequest, InferResponse } from '../../core/inference.js';
import type { ModelHandle, TensorSpec } from '../../core/model-handle.js';
import { splitBytesElements, type Tensor } from '../../core/tensor.js';
import { fitShape } from '../http/generate-codec.js';
import { encodeJsonData } from '../http/tensor-json.js';
import type { GenerationRequest } from './request-fields.js';

export type OpenAiFormat = 'vllm' | 'trtllm';

export interface TextModel {
  readonly format: OpenAiFormat;
  readonly decoupled: boolean;
  /** The model stops at stop strings itself (sampling_parameters or stop_words). */
  readonly takesStop: boolean;
  /** The model can return logprobs (vllm: a `logprobs` output; trtllm: `log_probs`). */
  readonly givesLogprobs: boolean;
  /** Input specs by name, with the metadata shape (batch dim included). */
  readonly inputs: ReadonlyMap<string, { datatype: Datatype; shape: number[] }>;
  readonly outputs: ReadonlySet<string>;
}

/** Sampling fields the vLLM format carries in sampling_parameters, by OpenAI name. */
const ECHO_INPUTS = ['exclude_input_in_output', 'sampling_param_exclude_input_from_output'];

const cache = new WeakMap<ModelHandle, TextModel>();

/** The model's mapping; @throws openaiNoMapping when it has no text input or output to use. */
export function textModelOf(handle: ModelHandle, modelName: string): TextModel {
  const known = cache.get(handle);
  if (known !== undefined) return known;
  const inputs = new Map<string, { datatype: Datatype; shape: number[] }>();
  for (const i of handle.inputs) inputs.set(i.name, { datatype: i.datatype, shape: metaShape(handle, i) });
  const outputs = new Set(handle.outputs.map((o) => o.name));
  const text = inputs.get('text_input');
  if (text === undefined || text.datatype !== 'BYTES') throw Errors.openaiNoMapping(modelName, "it has no 'text_input' input of type string");
  const out = handle.outputs.find((o) => o.name === 'text_output');
  if (out === undefined || out.datatype !== 'BYTES') throw Errors.openaiNoMapping(modelName, "it has no 'text_output' output of type string");
  const format = formatOf(handle, modelName, inputs);
  const tm: TextModel = {
    format,
    decoupled: handle.decoupled,
    takesStop: format === 'vllm' ? inputs.has('sampling_parameters') : inputs.has('stop_words'),
    givesLogprobs: outputs.has(format === 'vllm' ? 'logprobs' : 'log_probs'),
    inputs,
    outputs,
  };
  cache.set(handle, tm);
  return tm;
}

function metaShape(handle: ModelHandle, spec: TensorSpec): number[] {
  return handle.maxBatchSize > 0 ? [-1, ...spec.dims] : [...spec.dims];
}

function formatOf(handle: ModelHandle, modelName: string, inputs: ReadonlyMap<string, unknown>): OpenAiFormat {
  const params = handle.configJson().parameters as Record<string, { string_value?: string }> | undefined;
  const set = params?.openai_format?.string_value;
  if (set !== undefined && set !== '') {
    if (set === 'vllm' || set === 'trtllm') return set;
    throw Errors.openaiNoMapping(modelName, `its openai_format parameter is '${set}'; it must be 'vllm' or 'trtllm'`);
  }
  return inputs.has('sampling_parameters') ? 'vllm' : 'trtllm';
}

/** One inference request for one prompt of `req` (choice `choice` of n). */
export function buildRequest(tm: TextModel, modelName: string, prompt: string, req: GenerationRequest, choice: number, maxTokens: number): InferRequest {
  const inputs: Tensor[] = [];
  const put = (name: string, value: unknown, count = 1): void => {
    const spec = tm.inputs.get(name);
    if (spec === undefined) return;
    const data = Array.isArray(value) ? value : [value];
    inputs.push({ name, datatype: spec.datatype, shape: fitShape(name, spec.shape, count), data: encodeJsonData(name, spec.datatype, data, count) });
  };
  put('text_input', prompt);
  // A decoupled model streams when asked; one that is not answers once whatever it is asked.
  put('stream', tm.decoupled && req.stream);
  // The prompt is echoed here (echo), the same way for every model.
  for (const e of ECHO_INPUTS) put(e, true);
  const seed = req.seed === undefined ? undefined : req.seed + choice;
  if (tm.format === 'vllm') {
    const sampling: Record<string, unknown> = { ...req.extra, max_tokens: maxTokens };
    if (req.temperature !== undefined) sampling.temperature = req.temperature;
    if (req.topP !== undefined) sampling.top_p = req.topP;
    if (req.frequencyPenalty !== undefined) sampling.frequency_penalty = req.frequencyPenalty;
    if (req.presencePenalty !== undefined) sampling.presence_penalty = req.presencePenalty;
    if (seed !== undefined) sampling.seed = seed;
    if (req.stop.length > 0) sampling.stop = req.stop;
    if (req.logprobs !== undefined) sampling.logprobs = req.logprobs;
    put('sampling_parameters', JSON.stringify(sampling));
    put('return_logprobs', req.logprobs !== undefined);
  } else {
    put('max_tokens', maxTokens);
    if (req.temperature !== undefined) put('temperature', req.temperature);
    if (req.topP !== undefined) put('top_p', req.topP);
    if (req.frequencyPenalty !== undefined) put('frequency_penalty', req.frequencyPenalty);
    if (req.presencePenalty !== undefined) put('presence_penalty', req.presencePenalty);
    if (seed !== undefined) put('seed', seed);
    if (req.stop.length > 0) put('stop_words', req.stop, req.stop.length);
    if (req.logprobs !== undefined) put('return_log_probs', true);
  }
  put('return_num_input_tokens', true);
  put('return_num_output_tokens', true);
  put('return_finish_reason', true);
  return { modelName, modelVersion: '', id: '', parameters: {}, inputs };
}

export interface ResponseText {
  text: string;
  inputTokens?: number;
  outputTokens?: number;
  finishReason?: string;
  logprobs?: unknown;
}

/** What one model response carries; @throws openaiNoTextOutput for a response without text. */
export function readResponse(modelName: string, response: InferResponse): ResponseText {
  const out: ResponseText = { text: '' };
  let sawText = false;
  for (const t of response.outputs) {
    switch (t.name) {
      case 'text_output': {
        if (t.datatype !== 'BYTES') throw Errors.openaiNoTextOutput(modelName, `it is ${t.datatype}`);
        const elems = splitBytesElements(t.data);
        out.text = elems.length > 0 ? elems[0]!.toString('utf8') : '';
        sawText = true;
        break;
      }
      case 'num_input_tokens':
        out.inputTokens = firstInteger(t);
        break;
      case 'num_output_tokens':
        out.outputTokens = firstInteger(t);
        break;
      case 'finish_reason':
        if (t.datatype === 'BYTES') out.finishReason = splitBytesElements(t.data)[0]?.toString('utf8');
        break;
      case 'logprobs':
      case 'log_probs':
        out.logprobs = logprobsOf(t);
        break;
    }
  }
  if (!sawText) throw Errors.openaiNoTextOutput(modelName, 'the response has no text_output');
  return out;
}

function firstInteger(t: Tensor): number | undefined {
  const b = t.data;
  switch (t.datatype) {
    case 'INT32':
      return b.length >= 4 ? b.readInt32LE(0) : undefined;
    case 'UINT32':
      return b.length >= 4 ? b.readUInt32LE(0) : undefined;
    case 'INT64':
      return b.length >= 8 ? Number(b.readBigInt64LE(0)) : undefined;
    case 'UINT64':
      return b.length >= 8 ? Number(b.readBigUInt64LE(0)) : undefined;
    default:
      return undefined;
  }
}

/** A `logprobs` output: JSON text (the vLLM backend's form) passed through as parsed, else the numbers. */
function logprobsOf(t: Tensor): unknown {
  if (t.datatype === 'BYTES') {
    const s = splitBytesElements(t.data)[0]?.toString('utf8') ?? 'null';
    try {
      return JSON.parse(s);
    } catch {
      return s;
    }
  }
  if (t.datatype === 'FP32') return Array.from(new Float32Array(t.data.buffer.slice(t.data.byteOffset, t.data.byteOffset + t.data.byteLength)));
  return null;
}

/**
 * @module frontends/http/generate-codec
 * The `generate` / `generate_stream` body formats (Triton's provisional "generate extension").
 *
 * Request: one JSON object. Each top-level key that names a model input becomes that input: a
 * scalar or a 1-D array, shaped to the input's metadata shape by Triton's two-pass rule (fixed
 * dims take their share first, then the innermost `-1` takes what is left and other `-1`s are
 * 1). Every other key becomes a request parameter (string, integer, bool or double). The key
 * `parameters` is a nested object whose keys follow the same rule. `id`, when present, is the
 * request id (and, as in Triton, also a string parameter of that name).
 *
 * Response: one flat JSON object per model response, keys in byte order (Triton builds it from
 * a `std::map`): `id` (when set), `model_name`, `model_version`, the response parameters and one
 * key per output; an output with one element is written as a scalar, any other as a flat array.
 */
import type { Datatype } from '../../core/datatype.js';
import { TritonError, Errors } from '../../core/errors.js';
import type { InferRequest, InferResponse, Parameters } from '../../core/inference.js';
import type { ModelHandle } from '../../core/model-handle.js';
import type { Tensor } from '../../core/tensor.js';
import { elementCount } from '../../core/tensor.js';
import { compareUtf8 } from '../../core/utf8-order.js';
import { parseJsonBuffer } from './json-parse.js';
import { dataToJsonText, encodeJsonData } from './tensor-json.js';

interface InputMeta {
  datatype: Datatype;
  /** Metadata shape: with the leading -1 batch dim when the model batches. */
  shape: number[];
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Builds the inference request of a generate body.
 * @throws TritonError with Triton's texts: malformed JSON, a non-string `id`, a parameter of
 *   another type than string/number/bool, an input value that does not fit the input's shape.
 */
export function parseGenerateRequest(body: Buffer, model: ModelHandle, modelName: string, modelVersion: string): InferRequest {
  const doc = parseJsonBuffer(body);
  if (!isObject(doc)) throw Errors.generateNotObject();

  let id = '';
  if (doc.id !== undefined) {
    if (typeof doc.id !== 'string') throw Errors.generateId();
    id = doc.id;
  }

  const meta = new Map<string, InputMeta>();
  for (const i of model.metadata().inputs) meta.set(i.name, { datatype: i.datatype, shape: i.shape });

  const parameters: Parameters = {};
  const inputs: Tensor[] = [];
  convert(doc, true, meta, parameters, inputs);
  return { modelName, modelVersion, id, parameters, inputs };
}

function convert(obj: Record<string, unknown>, topLevel: boolean, meta: Map<string, InputMeta>, params: Parameters, inputs: Tensor[]): void {
  for (const key of Object.keys(obj)) {
    const value = obj[key];
    if (topLevel && key === 'parameters') {
      if (meta.has(key)) throw Errors.generateParametersClash();
      if (!isObject(value)) {
        throw Errors.generateParametersObject();
      }
      try {
        convert(value, false, meta, params, inputs);
      } catch (err) {
        if (err instanceof TritonError) throw Errors.generateParameters(err);
        throw err;
      }
      continue;
    }
    const input = meta.get(key);
    if (input === undefined) params[key] = parameterValue(key, value);
    else inputs.push(toTensor(key, input, value));
  }
}

function parameterValue(key: string, v: unknown): string | number | boolean | bigint {
  if (typeof v === 'string' || typeof v === 'boolean' || typeof v === 'bigint') return v;
  if (typeof v === 'number' && !Number.isNaN(v)) return v;
  throw Errors.generateParameterType(key);
}

/** Triton's shape fitting for a scalar or 1-D value; @throws INVALID_ARG when it cannot fit. */
export function fitShape(name: string, metaShape: readonly number[], count: number): number[] {
  const cannot = () => Errors.generateShape(name);
  const shape = [...metaShape];
  let left = count;
  for (let i = shape.length - 1; i >= 0; i--) {
    const d = shape[i]!;
    if (d !== -1) {
      // (Triton divides by a 0 dim; nothing fits one here.)
      if (d === 0 || left % d !== 0) throw cannot();
      left /= d;
    }
  }
  for (let i = shape.length - 1; i >= 0; i--) {
    if (shape[i] === -1) {
      shape[i] = left;
      left = 1;
    }
  }
  if (left !== 1) throw cannot();
  return shape;
}

function toTensor(name: string, input: InputMeta, value: unknown): Tensor {
  const data = Array.isArray(value) ? value : [value];
  const shape = fitShape(name, input.shape, data.length);
  return { name, datatype: input.datatype, shape, data: encodeJsonData(name, input.datatype, data, data.length) };
}

/**
 * One response as generate JSON text. @throws TritonError when an output has no JSON form
 * (FP16/BF16) or its bytes do not match its shape.
 */
export function renderGenerateResponse(response: InferResponse, maxJsonOutputSize: number): string {
  // First writer of a key wins, as with std::map::emplace in Triton.
  const fields = new Map<string, string>();
  const put = (k: string, text: string) => {
    if (!fields.has(k)) fields.set(k, text);
  };
  if (response.id !== '') put('id', JSON.stringify(response.id));
  put('model_name', JSON.stringify(response.modelName));
  put('model_version', JSON.stringify(response.modelVersion));
  for (const [k, v] of Object.entries(response.parameters ?? {})) put(k, paramText(v));
  for (const o of response.outputs) {
    if (fields.has(o.name)) continue;
    const count = elementCount(o.shape);
    // generate answers are JSON only: the same bound as /infer's JSON outputs (infer-response.ts).
    if (o.data.length > maxJsonOutputSize) throw Errors.jsonOutputTooLarge(o.name, o.data.length, maxJsonOutputSize);
    const arr = dataToJsonText(o.name, o.datatype, o.data, count);
    // One element: the array is stripped to its value.
    put(o.name, count === 1 ? arr.slice(1, -1) : arr);
  }
  const keys = [...fields.keys()];
  // UTF-16 order is UTF-8 byte order for ASCII names (nearly always), and much cheaper than
  // comparing encoded copies; a stream renders this once per token.
  keys.sort(keys.every(isAscii) ? undefined : compareUtf8);
  return '{' + keys.map((k) => JSON.stringify(k) + ':' + fields.get(k)!).join(',') + '}';
}

function paramText(v: string | number | boolean | bigint): string {
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number' && !Number.isFinite(v)) return 'null';
  return JSON.stringify(v);
}

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

/**
 * @module core/model/warmup
 * `model_warmup`: before a model reports ready, every instance executes each sample `count`
 * times, as one execution of `batch_size` batch-1 requests, with zero, random or file data
 * (files from the model's `warmup/` directory). Responses are discarded; any error fails the
 * load naming the sample. Warmup bypasses the scheduler, as in Triton.
 *
 * Beyond Triton (which refuses `model_warmup` on an ensemble): an ensemble, which has no
 * instances, is warmed through its own scheduler with the same samples, so every step runs on
 * the real intermediate tensors the steps before it produce (`warmupThroughScheduler`; the
 * ensemble's statistics do not count these requests, its steps' do, as any request of theirs).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { ModelConfig, ModelWarmup } from '../../generated/model_config_pb.js';
import type { ExecutionInstance, PendingRequest } from '../scheduling/types.js';
import { Errors } from '../errors.js';
import type { InferResponse } from '../inference.js';
import { PendingRequestImpl } from '../request/pending.js';
import { resolveInside } from '../repository/safe-path.js';
import type { ModelSource } from '../repository/scan.js';
import { countBytesElements, elementCount } from '../tensor.js';
import type { Tensor } from '../tensor.js';
import { elementSize } from '../datatype.js';
import { datatypeOf } from './config-view.js';

export async function warmupInstance(source: ModelSource, config: ModelConfig, instance: ExecutionInstance): Promise<void> {
  await warmup(source, config, async (requests) => {
    await instance.execute(requests);
  });
}

/** Warms a model through `run` (its scheduler's `runUncounted`): each sample's requests at once. */
export async function warmupThroughScheduler(source: ModelSource, config: ModelConfig, run: (request: PendingRequest) => void): Promise<void> {
  await warmup(source, config, async (requests) => {
    for (const r of requests) run(r);
  });
}

async function warmup(source: ModelSource, config: ModelConfig, execute: (requests: PendingRequestImpl[]) => Promise<void>): Promise<void> {
  for (const sample of config.modelWarmup) {
    if (sample.batchSize === 0) continue;
    let inputs: Tensor[];
    try {
      inputs = sampleInputs(source, config, sample);
    } catch (err) {
      // Name the sample, as for errors of its execution (Triton's own text follows).
      const msg = err instanceof Error ? err.message : String(err);
      throw Errors.warmupFailed(sample.name, msg);
    }
    const repeats = Math.max(1, sample.count);
    for (let r = 0; r < repeats; r++) {
      const errors: string[] = [];
      const requests = Array.from({ length: sample.batchSize }, (_, k) => {
        const sink = (resp: InferResponse) => {
          resp.release?.();
          if (resp.error) errors.push(resp.error.message);
        };
        return new PendingRequestImpl(
          { modelName: config.name, modelVersion: '', id: `warmup_${sample.name}_${k}`, parameters: {}, inputs },
          1,
          '',
          0,
          0,
          '',
          sink,
          () => {},
        );
      });
      await execute(requests);
      // Decoupled models answer after execute returns; give them until every request closed.
      const deadline = Date.now() + 60_000;
      while (requests.some((q) => !q.done) && Date.now() < deadline) await new Promise((res) => setTimeout(res, 5));
      if (requests.some((q) => !q.done)) errors.push('no final response within 60 s');
      if (errors.length) {
        throw Errors.warmupFailedResponses(sample.name, errors);
      }
    }
  }
}

function sampleInputs(source: ModelSource, config: ModelConfig, sample: ModelWarmup): Tensor[] {
  const tensors: Tensor[] = [];
  for (const [name, input] of Object.entries(sample.inputs)) {
    const datatype = datatypeOf(input.dataType);
    const dims = input.dims.map(Number);
    if (dims.some((d) => d < 0)) {
      throw Errors.warmupVariableDims(name);
    }
    const shape = config.maxBatchSize > 0 ? [1, ...dims] : dims;
    const n = elementCount(shape);
    let data: Buffer;
    const source_ = input.inputDataType;
    if (source_.case === 'inputDataFile') {
      const file = resolveInside(path.join(source.dir, 'warmup'), source_.value, 'input_data_file');
      let content: Buffer;
      try {
        content = fs.readFileSync(file);
      } catch (err) {
        throw Errors.warmupFileUnreadable(source_.value, (err as Error).message);
      }
      if (datatype === 'BYTES') {
        // The whole file is the serialised tensor: a 4-byte little-endian length, then the
        // bytes, per element. Check it holds the sample's elements rather than let the model
        // get a malformed tensor.
        const found = countBytesElements(content);
        if (found !== n) {
          throw found < 0 ? Errors.warmupFileNotBytes(source_.value) : Errors.warmupFileElementCount(n, source_.value, found);
        }
        data = content;
      } else {
        const want = n * elementSize(datatype);
        if (content.length < want) {
          throw Errors.warmupFileTooShort(want, source_.value, content.length);
        }
        data = content.subarray(0, want);
      }
    } else if (source_.case === 'randomData' && datatype !== 'BYTES') {
      data = crypto.randomBytes(n * elementSize(datatype));
      if (datatype === 'BOOL') for (let i = 0; i < data.length; i++) data[i] = data[i]! & 1;
    } else if (datatype === 'BYTES') {
      // Zero data for strings: every element the empty string (a zero length prefix).
      data = Buffer.alloc(4 * n);
    } else {
      data = Buffer.alloc(n * elementSize(datatype));
    }
    tensors.push({ name, datatype, shape, data });
  }
  return tensors;
}

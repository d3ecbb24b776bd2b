/**
 * @module core/model/sequence-state
 * The implicit state of a sequence model (`sequence_batching.state`), read when a version
 * loads: which input carries a sequence's state into an execution, which output carries it
 * out, and the value a sequence starts from (`initial_state`: zeros, or a file of the model's
 * `initial_state/` directory, in row-major order). The sequence batcher keeps each sequence's
 * value between its requests (core/scheduling/sequence-batcher.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ModelConfig } from '../../generated/model_config_pb.js';
import { elementSize } from '../datatype.js';
import { Errors } from '../errors.js';
import { resolveInside } from '../repository/safe-path.js';
import type { StateSpec } from '../scheduling/sequence-controls.js';
import { countBytesElements, elementCount } from '../tensor.js';
import { datatypeOf } from './config-view.js';

export function readSequenceStates(modelDir: string, config: ModelConfig): StateSpec[] {
  if (config.schedulingChoice.case !== 'sequenceBatching') return [];
  const m = config.name;
  return config.schedulingChoice.value.state.map((s) => {
    const datatype = datatypeOf(s.dataType);
    const init = s.initialState[0];
    if (init !== undefined && init.dataType !== s.dataType) throw Errors.sequenceStateType(s.inputName, m, datatypeOf(init.dataType), datatype);
    const dims = (init !== undefined && init.dims.length > 0 ? init.dims : s.dims).map(Number);
    if (dims.some((d) => d < 0)) throw Errors.sequenceStateDims(s.inputName, m, `[${dims.join(',')}]`);
    const count = elementCount(dims);
    let initial: Buffer;
    if (init?.stateData.case === 'dataFile') {
      initial = readStateFile(modelDir, init.stateData.value, s.inputName, m);
      const size = elementSize(datatype);
      const fits = size === 0 ? countBytesElements(initial) === count : initial.length === size * count;
      if (!fits) throw Errors.sequenceStateFile(init.stateData.value, s.inputName, m, `${initial.length} bytes do not hold ${count} ${datatype} element(s)`);
    } else {
      // Zeros; a BYTES state starts as empty strings.
      initial = Buffer.alloc((elementSize(datatype) || 4) * count);
    }
    return { input: s.inputName, output: s.outputName, datatype, dims, initial };
  });
}

/** `<model dir>/initial_state/<file>`, refusing any path that leaves that directory (links too). */
function readStateFile(modelDir: string, file: string, state: string, model: string): Buffer {
  let full: string;
  try {
    full = resolveInside(path.join(modelDir, 'initial_state'), file, 'initial_state data_file');
  } catch {
    throw Errors.sequenceStateFile(file, state, model, 'not inside the initial_state directory');
  }
  try {
    return fs.readFileSync(full);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw Errors.sequenceStateFile(file, state, model, e.code === 'ENOENT' ? 'no such file' : e.message);
  }
}

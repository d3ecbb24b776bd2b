/**
 * @module core/model/dependencies
 * The one place that says which other models a model needs loaded first: load order and the
 * unloading of dependents ask here. Python and ONNX models need none; an ensemble needs the
 * models its steps call.
 */
import type { ModelConfig } from '../../generated/model_config_pb.js';
import { stepModels } from '../ensemble/plan.js';

export function dependenciesOf(config: ModelConfig): string[] {
  return config.platform === 'ensemble' ? stepModels(config) : [];
}

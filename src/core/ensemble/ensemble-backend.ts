/**
 * @module core/ensemble/ensemble-backend
 * Ensembles (`platform: "ensemble"`) served through the same Backend interface as Python and
 * ONNX models, so loading, unloading, draining, statistics and the frontends treat them like any
 * model. An ensemble has no instances: its version gets an EnsembleScheduler that runs each
 * request through the steps, and it is ready while every composing model is.
 */
import type { Backend, LoadedModel, ModelVersionContext } from '../backend.js';
import type { ExecutionObserver } from '../scheduling/types.js';
import { bindEnsemble } from './binding.js';
import { planEnsemble } from './plan.js';
import { EnsembleScheduler } from './scheduler.js';

export const ensembleBackend: Backend = {
  name: 'ensemble',
  async load(ctx: ModelVersionContext): Promise<LoadedModel> {
    // Checked when the load began (model-control.ts); checked again against what serves now.
    const plan = planEnsemble(ctx.config);
    const binding = bindEnsemble(ctx.config, plan, ctx.client);
    return {
      instances: [],
      // Requests in flight are waited for by the drain (version-drain.ts); nothing else to stop.
      unload: async () => {},
      createScheduler: (onExecution: ExecutionObserver) => new EnsembleScheduler(plan, binding, ctx.client, onExecution),
      isReady: () => plan.steps.every((s) => ctx.client.isModelReady(s.modelName, s.modelVersion)),
      notReadyReason: () =>
        [...new Set(plan.steps.filter((s) => !ctx.client.isModelReady(s.modelName, s.modelVersion)).map((s) => s.modelName))]
          .map((m) => `composing model '${m}' is not ready`)
          .join('; '),
    };
  },
};

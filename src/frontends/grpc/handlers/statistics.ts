/**
 * @module frontends/grpc/handlers/statistics
 * ModelStatistics: the core's statistics (bigints throughout) as `ModelStatisticsResponse`.
 * An empty name means every ready model; an unknown or unready model is the core's
 * INVALID_ARG `requested model '<m>' is not available`.
 */
import { create } from '@bufbuild/protobuf';
import type { ModelStatistics, ResponseStats, StatDuration } from '../../../core/stats/types.js';
import type { ModelStatisticsRequest } from '../../../generated/grpc_service_pb.js';
import { ModelStatisticsResponseSchema } from '../../../generated/grpc_service_pb.js';
import type { GrpcContext } from '../context.js';

export function modelStatistics(ctx: GrpcContext, req: ModelStatisticsRequest) {
  const stats = ctx.core.statistics(req.name === '' ? undefined : req.name, req.version === '' ? undefined : req.version);
  return create(ModelStatisticsResponseSchema, { modelStats: stats.map(toProto) });
}

const dur = (d: StatDuration) => ({ count: d.count, ns: d.ns });

function responseStats(r: ResponseStats) {
  return {
    computeInfer: dur(r.compute_infer),
    computeOutput: dur(r.compute_output),
    success: dur(r.success),
    fail: dur(r.fail),
    emptyResponse: dur(r.empty_response),
    cancel: dur(r.cancel),
  };
}

function toProto(s: ModelStatistics) {
  const i = s.inference_stats;
  const responses: Record<string, ReturnType<typeof responseStats>> = {};
  for (const key of Object.keys(s.response_stats)) responses[key] = responseStats(s.response_stats[key]!);
  return {
    name: s.name,
    version: s.version,
    lastInference: s.last_inference,
    inferenceCount: s.inference_count,
    executionCount: s.execution_count,
    inferenceStats: {
      success: dur(i.success),
      fail: dur(i.fail),
      queue: dur(i.queue),
      computeInput: dur(i.compute_input),
      computeInfer: dur(i.compute_infer),
      computeOutput: dur(i.compute_output),
      cacheHit: dur(i.cache_hit),
      cacheMiss: dur(i.cache_miss),
    },
    batchStats: s.batch_stats.map((b) => ({
      batchSize: b.batch_size,
      computeInput: dur(b.compute_input),
      computeInfer: dur(b.compute_infer),
      computeOutput: dur(b.compute_output),
    })),
    memoryUsage: s.memory_usage.map((m) => ({ type: m.type, id: m.id, byteSize: m.byte_size })),
    responseStats: responses,
  };
}

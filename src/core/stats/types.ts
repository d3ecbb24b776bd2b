/**
 * @module core/stats/types
 * Statistics in the JSON shape of Triton's statistics extension (docs/protocol-notes.md, "Statistics"). Counts
 * and nanoseconds are bigints: cumulative nanoseconds pass 2^53 on long-running servers and
 * perf_analyzer parses them as unsigned 64-bit integers.
 */

export interface StatDuration {
  count: bigint;
  ns: bigint;
}

export interface InferStats {
  success: StatDuration;
  fail: StatDuration;
  queue: StatDuration;
  compute_input: StatDuration;
  compute_infer: StatDuration;
  compute_output: StatDuration;
  cache_hit: StatDuration;
  cache_miss: StatDuration;
}

export interface BatchStats {
  batch_size: bigint;
  compute_input: StatDuration;
  compute_infer: StatDuration;
  compute_output: StatDuration;
}

export interface ResponseStats {
  compute_infer: StatDuration;
  compute_output: StatDuration;
  success: StatDuration;
  fail: StatDuration;
  empty_response: StatDuration;
  cancel: StatDuration;
}

export interface ModelStatistics {
  name: string;
  version: string;
  /** Milliseconds since the epoch of the last inference (0 if none). */
  last_inference: bigint;
  inference_count: bigint;
  execution_count: bigint;
  inference_stats: InferStats;
  response_stats: Record<string, ResponseStats>;
  batch_stats: BatchStats[];
  memory_usage: Array<{ type: string; id: bigint; byte_size: bigint }>;
}

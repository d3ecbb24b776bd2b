/**
 * @module server-options
 * What `startServer` is told: the typed options of one server. The command line (cli/options.ts)
 * builds them from tritonserver's flags; the server owns their shape, so the dependency points
 * from the command line to the server and never back.
 */
import type { RateLimitResource } from './core/scheduling/rate-limiter.js';
import type { TraceSettings } from './core/extensions/trace-settings.js';
import type { KeepaliveOptions } from './frontends/grpc/transport/keepalive.js';
import type { SummaryQuantile } from './frontends/metrics/latency-families.js';
import type { ApiGroup, Restriction } from './frontends/restricted-api.js';
import type { OpenAiSettings } from './frontends/openai/settings.js';

export interface ServerOptions {
  modelRepositories: string[];
  httpPort: number;
  httpAddress: string;
  grpcPort: number;
  grpcAddress: string;
  metricsPort: number;
  metricsAddress: string | undefined;
  allowHttp: boolean;
  allowGrpc: boolean;
  allowMetrics: boolean;
  logVerbose: number;
  logInfo: boolean;
  logWarning: boolean;
  logError: boolean;
  logFormat: 'default' | 'ISO8601';
  /** '' = stderr. */
  logFile: string;
  strictReadiness: boolean;
  autoCompleteConfig: boolean;
  exitTimeoutSecs: number;
  exitOnError: boolean;
  httpMaxInputSize: number;
  /** tritium: memory all HTTP request bodies may hold at once; 0 = the default. */
  httpMaxBodyMemory: number;
  /** tritium: the largest output (tensor bytes) an HTTP response sends as JSON. */
  httpMaxJsonOutputSize: number;
  grpcMaxMessageSize: number;
  /** `--http-max-connections` / `--grpc-max-connections`; absent = from the descriptor limit. */
  httpMaxConnections?: number;
  grpcMaxConnections?: number;
  /** `--grpc-max-concurrent-streams`. */
  grpcMaxConcurrentStreams: number;
  /** `--grpc-thread-count`: 1 serves gRPC on the main loop; more start frontend threads (frontends/threads/). */
  grpcThreadCount: number;
  /** `--grpc-read-timeout-secs` (0 = none). */
  grpcReadTimeoutSecs: number;
  /** `--grpc-max-body-memory` in bytes (0 = the default). */
  grpcMaxBodyMemory: number;
  /** `--http-idle-timeout-secs`. */
  httpIdleTimeoutSecs: number;
  /** `--http-thread-count`: 1 serves HTTP on the main loop; more start frontend threads (frontends/threads/). */
  httpThreadCount: number;
  /** `--reuse-http-port` / `--reuse-grpc-port`: bind with SO_REUSEPORT (frontend threads always do). */
  reuseHttpPort: boolean;
  reuseGrpcPort: boolean;
  /** `--backend-config=default-max-batch-size=N`, the global setting (a backend's own key wins). */
  defaultMaxBatchSize: number;
  serverId: string;
  /** `--model-control-mode`: none (load all, no changes), poll (rescan), explicit (API-driven). */
  modelControlMode: ModelControlMode;
  /** `--load-model` names (explicit mode; `*` alone = every model). */
  startupModels: string[];
  /** `--repository-poll-secs` (poll mode; 0 = never rescan). */
  repositoryPollSecs: number;
  /** `--http-header-forward-pattern` / `--grpc-header-forward-pattern`, compiled. */
  httpHeaderForward: RegExp | undefined;
  grpcHeaderForward: RegExp | undefined;
  /** `--http-restricted-api` / `--grpc-restricted-protocol`: the header each restricted API group needs. */
  httpRestricted: Map<ApiGroup, Restriction> | undefined;
  /** The OpenAI endpoints (`--tokenizer`, `--chat-template`, `--openai-*`); `port` = `--openai-port`, absent when not given. */
  openai: OpenAiSettings & { port?: number; address?: string };
  grpcRestricted: Map<ApiGroup, Restriction> | undefined;
  /** `--grpc-infer-response-compression-level`. */
  grpcResponseCompression: 'none' | 'low' | 'medium' | 'high';
  /** `--grpc-use-ssl[-mutual]` and the certificate files; undefined = plaintext. */
  grpcTls: { certFile: string; keyFile: string; caFile?: string; mutual: boolean } | undefined;
  /** `--model-load-retry-count`: further tries of a version that failed to load. */
  modelLoadRetryCount: number;
  /** `--model-config-name` ('' = every model's config.pbtxt). */
  modelConfigName: string;
  /** `--model-load-thread-count`: models loading at once at start-up. */
  modelLoadThreadCount: number;
  /** `--grpc-keepalive-*`, `--grpc-http2-*`, `--grpc-max-connection-age*`. */
  grpcKeepalive: KeepaliveOptions;
  allowCpuMetrics: boolean;
  /** `--metrics-interval-ms`: how often the CPU metrics are read. */
  metricsIntervalMs: number;
  /** `--metrics-config=counter_latencies=<bool>`: the `_duration_us` counters. */
  metricsCounterLatencies: boolean;
  /** `--metrics-config=summary_latencies=<bool>`: the `_summary_us` families. */
  metricsSummaryLatencies: boolean;
  /** `--metrics-config=summary_quantiles=<q>:<error>,...`; undefined = Triton's defaults. */
  metricsSummaryQuantiles: SummaryQuantile[] | undefined;
  /** `--metrics-config=histogram_latencies=<bool>`: `nv_inference_first_response_histogram_ms`. */
  metricsHistogramLatencies: boolean;
  /** `--allow-gpu-metrics`: the nv_gpu_* families, read with nvidia-smi. */
  allowGpuMetrics: boolean;
  /** `--trace-config` (and the deprecated `--trace-*` flags) as the trace extension's initial settings. */
  traceSettings: TraceSettings;
  /** `--host-policy`: the CPUs of each policy name (cli/host-policy.ts). */
  hostPolicies: Map<string, number[]>;
  /** One line per flag given that has no effect here (cli/inert-flags.ts); logged at start-up. */
  warnings: string[];
  /**
   * Every `--backend-config` entry as given: backend name ('' for the global settings) → key →
   * value. Each backend reads and checks its own keys, as in Triton (python/options.ts,
   * onnx/backend.ts).
   */
  backendConfig: ReadonlyMap<string, ReadonlyMap<string, string>>;
  /** `--backend-directory`: where Python-based backends live (`<dir>/<backend>/model.py`). */
  backendDirectory: string;
  /** The response cache's size (`--cache-config local,size=N`, `--response-cache-byte-size`); undefined: no cache. */
  responseCacheBytes?: number;
  /** `--rate-limit`. */
  rateLimit: 'off' | 'execution_count';
  /** `--rate-limit-resource` entries (device -1: every device). */
  rateLimitResources: RateLimitResource[];
}

type ModelControlMode = 'none' | 'poll' | 'explicit';

/**
 * Options that cannot be served: a bad flag value, or a `--backend-config` key its backend
 * refuses. Nothing has started when it is thrown; the command line prints it as a usage error.
 */
export class OptionsError extends Error {}

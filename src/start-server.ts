/**
 * @module start-server
 * Wires one tritium server together: core (model manager + inference server), backends,
 * frontends (HTTP, gRPC, metrics), and the shutdown sequence.
 *
 * Start-up: check the repository paths and that every frontend can listen where its flags say
 * (frontends/listen-check.ts; tritonserver learns it only after loading) → clean stale shared
 * memory → load every model, or in explicit mode the --load-model
 * ones (stubs in parallel) → exit if a load failed and --exit-on-error → start the frontends →
 * ready → in poll mode, rescan the repository every --repository-poll-secs.
 * Shutdown (SIGINT/SIGTERM): not live → stop accepting → wait for in-flight requests up to
 * --exit-timeout-secs → finalize every instance (bounded by what is left of the timeout) →
 * remove shared memory → exit 0. A second signal exits at once, still removing shared memory.
 */
import { OptionsError, type ServerOptions } from './server-options.js';
import { recoveryFds } from './core/instance/fd-reserve.js';
import { DescriptorWatch } from './frontends/descriptor-watch.js';
import { registerDescriptorFamilies } from './frontends/metrics/descriptor-families.js';
import type { Backend } from './core/backend.js';
import { detectGpus } from './core/gpus.js';
import { CustomMetrics } from './core/custom-metrics.js';
import { descriptorShmFiles } from './core/extensions/shm-file.js';
import { TraceSettingsStore } from './core/extensions/trace-settings.js';
import { Tracer } from './core/trace/tracer.js';
import { ResponseCache } from './core/cache/response-cache.js';
import { RateLimiter } from './core/scheduling/rate-limiter.js';
import { ServerCoreImpl } from './core/server-core-impl.js';
import type { ServerCore } from './core/server-core.js';
import { backendTable, modelTable, optionsTable } from './core/startup-tables.js';
import type { PendingRequest } from './core/scheduling/types.js';
import { createLogger, logSettingsStore, type LogSettings, type Logger } from './core/logger.js';
import { configureTraceTags, TRACE_ENV } from './core/trace-tags.js';
import { ModelManager } from './core/model/model-manager.js';
import { OnnxBackend, onnxBackendOptions } from './backends/onnx/backend.js';
import { ortPackageDir } from './backends/onnx/ort-location.js';
import { STUB_MAIN } from './backends/python/stub-paths.js';
import { PYTHON_BASED_RUNTIME } from './core/model/backend-resolution.js';
import { PythonBackend } from './backends/python/backend.js';
import { pythonBackendOptions } from './backends/python/options.js';
import { killAllStubs } from './backends/python/live-stubs.js';
import { removeOwnFiles, removeStaleFiles } from './backends/python/ipc/shm-cleanup.js';
import { describeSegmentBacking } from './backends/python/ipc/backing.js';
import { startGrpcServer, type GrpcServerOptions } from './frontends/grpc/server.js';
import type { TlsOptions } from './frontends/grpc/transport/http2-server.js';
import { startHttpServer, type HttpServerOptions } from './frontends/http/server.js';
import { startFrontendThreads, type FrontendPoolOptions } from './frontends/threads/frontend-pool.js';
import type { ThreadServer } from './frontends/threads/thread-data.js';
import type { ConnectionLimitCounts } from './frontends/connection-limit.js';
import { FrontendStatus } from './frontends/threads/status.js';
import { listenShared, numericAddress } from './frontends/threads/listen-socket.js';
import { Metrics } from './frontends/metrics/metrics.js';
import { metricsObserver } from './frontends/metrics/observer.js';
import { startMetricsServer } from './frontends/metrics/server.js';
import { checkListeners, listenFailure, type Listener } from './frontends/listen-check.js';
import fs from 'node:fs';
import path from 'node:path';
import { createSecureContext } from 'node:tls';
import type { OpenAiSettings } from './frontends/openai/settings.js';
import type { Worker } from 'node:worker_threads';

export interface RunningServer {
  core: ServerCoreImpl;
  logger: Logger;
  httpPort?: number;
  grpcPort?: number;
  metricsPort?: number;
  /** `--openai-port`'s bound port, when given. */
  openaiPort?: number;
  python: PythonBackend;
  /** The HTTP frontend threads serving now, with --http-thread-count above 1 (diagnostics, tests). */
  httpThreads?: () => Worker[];
  /** The gRPC frontend threads serving now, with --grpc-thread-count above 1. */
  grpcThreads?: () => Worker[];
  /** Graceful shutdown; resolves with the exit code. */
  shutdown(): Promise<number>;
  /** Immediate stop: kill stubs, remove shared memory. */
  kill(): void;
}

interface Closable {
  close(): Promise<void>;
  /** Frontend threads: settles once what they read before the close is in the core. */
  quiesced?(): Promise<void>;
}

/**
 * Triton's verbose line for each batch handed to an instance (the "grep executing" recipe of
 * its optimisation guide shows batches forming with it), and the batch's request ids at level 2.
 */
function executingLogger(log: Logger) {
  return (model: string, _version: string, instance: string, requests: readonly PendingRequest[]): void => {
    if (log.settings.verbose < 1) return;
    log.verbose(1, `model ${model}, instance ${instance}, executing ${requests.length} requests`);
    if (log.settings.verbose >= 2) {
      log.verbose(2, `model ${model}, instance ${instance}, request ids: ${requests.map((r) => r.request.id || '<id_unknown>').join(', ')}`);
    }
  };
}

/** The logger's settings from the `--log-*` flags. */
export function logSettingsOf(options: ServerOptions): LogSettings {
  return {
    info: options.logInfo,
    warning: options.logWarning,
    error: options.logError,
    verbose: options.logVerbose,
    format: options.logFormat,
    file: options.logFile,
  };
}

/** The frontends the flags enable, with the flags that place them. */
function listenersOf(options: ServerOptions): Record<'http' | 'grpc' | 'metrics' | 'openai', Listener | undefined> {
  return {
    openai:
      options.openai.port !== undefined
        ? {
            service: 'OpenAI',
            address: options.openai.address ?? options.httpAddress,
            port: options.openai.port,
            portFlag: '--openai-port',
            addressFlag: '--openai-address',
            shared: false,
          }
        : undefined,
    http: options.allowHttp
      ? {
          service: 'HTTP',
          address: options.httpAddress,
          port: options.httpPort,
          portFlag: '--http-port',
          addressFlag: '--http-address',
          shared: options.reuseHttpPort || options.httpThreadCount > 1,
        }
      : undefined,
    grpc: options.allowGrpc
      ? {
          service: 'GRPC',
          address: options.grpcAddress,
          port: options.grpcPort,
          portFlag: '--grpc-port',
          addressFlag: '--grpc-address',
          shared: options.reuseGrpcPort || options.grpcThreadCount > 1,
        }
      : undefined,
    metrics: options.allowMetrics
      ? {
          service: 'Metrics',
          address: options.metricsAddress ?? options.httpAddress,
          port: options.metricsPort,
          portFlag: '--metrics-port',
          addressFlag: options.metricsAddress === undefined ? '--http-address (or set --metrics-address)' : '--metrics-address',
        }
      : undefined,
  };
}

/** What the HTTP listeners pass to the OpenAI endpoints (not where --openai-port listens). */
function openAiSettings(options: ServerOptions): OpenAiSettings {
  const { port: _port, address: _address, ...settings } = options.openai;
  return settings;
}

/** Starts a frontend; a listen error becomes the start-up error naming the flag to change. */
async function listening<T>(l: Listener, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code && ['EADDRINUSE', 'EACCES', 'EADDRNOTAVAIL', 'ENOTFOUND'].includes(code)) {
      throw new StartupError(listenFailure(l, err as NodeJS.ErrnoException));
    }
    throw err;
  }
}

/** The certificate files of `--grpc-use-ssl`, read before any model loads. */
function readGrpcTls(options: ServerOptions): TlsOptions | undefined {
  const t = options.grpcTls;
  if (t === undefined) return undefined;
  const read = (flag: string, file: string): Buffer => {
    try {
      return fs.readFileSync(file);
    } catch (err) {
      throw new StartupError(`cannot read ${flag}=${file}: ${(err as Error).message}`);
    }
  };
  const tlsOptions: TlsOptions = {
    cert: read('--grpc-server-cert', t.certFile),
    key: read('--grpc-server-key', t.keyFile),
    ...(t.caFile ? { ca: read('--grpc-root-cert', t.caFile) } : {}),
    mutual: t.mutual,
  };
  try {
    createSecureContext({ cert: tlsOptions.cert, key: tlsOptions.key, ...(tlsOptions.ca ? { ca: tlsOptions.ca } : {}) });
  } catch (err) {
    throw new StartupError(`--grpc-server-cert / --grpc-server-key / --grpc-root-cert: not a usable PEM certificate and key (${(err as Error).message})`);
  }
  return tlsOptions;
}

/** tritonserver's check of each repository path, with the flag named (docs/protocol-notes.md, "Command line"). */
function checkRepositories(repositories: readonly string[]): void {
  for (const repo of repositories) {
    let isDir = false;
    try {
      isDir = fs.statSync(repo).isDirectory();
    } catch (err) {
      const why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such directory' : (err as Error).message;
      throw new StartupError(`failed to stat file ${repo}: ${why}; --model-repository must name a model repository directory`);
    }
    if (!isDir) throw new StartupError(`model repository path ${repo} is not a directory; --model-repository must name a model repository directory`);
  }
}

/** A backend's options from its `--backend-config` keys; a key it refuses is an OptionsError. */
function backendOptions<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    throw new OptionsError((err as Error).message);
  }
}

export async function startServer(options: ServerOptions, logger?: Logger): Promise<RunningServer> {
  const log = logger ?? createLogger(logSettingsOf(options));
  // What frontend threads read without asking (frontends/threads/status.ts): a model moved,
  // tracing on, and the request numbers of debug trace lines.
  const frontendStatus = new FrontendStatus();
  // TRITIUM_TRACE: read once, before anything it traces (model loads) starts.
  configureTraceTags(process.env[TRACE_ENV], log, { label: '', numbers: frontendStatus.traceNumbers });
  // Families models define with pb_utils.MetricFamily, exported with the server's own.
  const customMetrics = new CustomMetrics();
  const gpus = detectGpus();
  // Each backend reads and checks its own --backend-config keys, as Triton's do, before anything
  // is opened or loaded: a key it refuses ends start-up as a bad flag does.
  const pythonOptions = backendOptions(() =>
    pythonBackendOptions(options.backendConfig, {
      customMetrics,
      hostPolicies: options.hostPolicies,
      backendDirectory: options.backendDirectory,
      // pb_utils.load_model / unload_model take the repository API's path (explicit mode only).
      modelControl:
        options.modelControlMode === 'explicit'
          ? {
              load: (name, o): Promise<void> => core.loadModel(name, { config: o.config || undefined, files: o.files }),
              unload: (name, o): Promise<void> => core.unloadModel(name, { unloadDependents: o.unloadDependents }),
            }
          : undefined,
    }),
  );
  const onnxOptions = backendOptions(() => onnxBackendOptions(options.backendConfig, options.defaultMaxBatchSize, gpus, log));
  // Triton never delivers settings named after a Python-based backend (its models get the
  // python backend's); said once rather than dropped without a word.
  for (const name of options.backendConfig.keys()) {
    if (name === '' || name === 'python' || name === 'onnxruntime') continue;
    log.warn(
      `--backend-config=${name},...: no backend reads settings for '${name}'; a Python-based backend's models run with the python backend's settings (--backend-config=python,...), as in Triton`,
    );
  }
  checkRepositories(options.modelRepositories);
  const grpcTls = options.allowGrpc ? readGrpcTls(options) : undefined;
  const listeners = listenersOf(options);
  // Before any model loads (they may take minutes): every frontend can listen where asked.
  const cannotListen = await checkListeners([listeners.grpc, listeners.http, listeners.metrics, listeners.openai].filter((l) => l !== undefined));
  if (cannotListen !== undefined) throw new StartupError(cannotListen);
  const removed = removeStaleFiles();
  if (removed.length) log.info(`removed ${removed.length} shared-memory file(s) left by servers that no longer run`);
  // memfd segments, or /dev/shm files where memfds are refused: decided once, here.
  log.verbose(1, describeSegmentBacking());
  // Held back before any client can connect: what restarting a stub needs (core/instance/fd-reserve.ts).
  recoveryFds();
  // Runs out of descriptors are invisible to the frontends otherwise (frontends/descriptor-watch.ts).
  const descriptors = new DescriptorWatch({ warn: (l) => log.warn(l), info: (l) => log.info(l) });
  descriptors.start();

  const python = new PythonBackend(pythonOptions);
  const backends = new Map<string, Backend>([
    ['python', python],
    ['onnxruntime', new OnnxBackend(onnxOptions)],
  ]);
  const responseCache =
    options.responseCacheBytes === undefined
      ? undefined
      : new ResponseCache(options.responseCacheBytes, (key, why) => log.warn(`Failed to insert key [${key}] into response cache: ${why}`));
  const rateLimiter = options.rateLimit === 'execution_count' ? new RateLimiter(options.rateLimitResources) : undefined;
  const metrics = new Metrics({
    cache: responseCache,
    cpuMetrics: options.allowCpuMetrics,
    cpuIntervalMs: options.metricsIntervalMs,
    counterLatencies: options.metricsCounterLatencies,
    summaryLatencies: options.metricsSummaryLatencies,
    ...(options.metricsSummaryQuantiles !== undefined ? { summaryQuantiles: options.metricsSummaryQuantiles } : {}),
    histogramLatencies: options.metricsHistogramLatencies,
  });
  metrics.setCustomSource(customMetrics);
  registerDescriptorFamilies(metrics.registry, descriptors);
  metrics.setShmBytesSource(() => [...python.instances].map((i) => ({ model: i.modelName, instance: i.name, bytes: i.shmBytes() })));
  const observer = metricsObserver(metrics);
  const models = new ModelManager({
    repositories: options.modelRepositories,
    autoCompleteConfig: options.autoCompleteConfig,
    defaultMaxBatchSize: options.defaultMaxBatchSize,
    gpus,
    backends,
    backendDirectory: options.backendDirectory,
    responseCache,
    rateLimiter,
    logger: log,
    observer: {
      ...observer,
      modelLoaded: (...a) => {
        observer.modelLoaded(...a);
        frontendStatus.modelsChanged();
      },
      modelUnloaded: (...a) => {
        observer.modelUnloaded(...a);
        frontendStatus.modelsChanged();
      },
      executing: executingLogger(log),
    },
    drainTimeoutMs: options.exitTimeoutSecs * 1000,
    loadThreadCount: options.modelLoadThreadCount,
    configName: options.modelConfigName,
    loadRetryCount: options.modelLoadRetryCount,
  });
  const core = new ServerCoreImpl(models, {
    serverId: options.serverId,
    strictReadiness: options.strictReadiness,
    shmFiles: descriptorShmFiles,
    modelControlMode: options.modelControlMode,
    tracer: new Tracer(new TraceSettingsStore(options.traceSettings)),
  });

  frontendStatus.setTracing(core.tracer.settings.enabled);
  core.tracer.settings.onUpdate = () => frontendStatus.setTracing(core.tracer.settings.enabled);

  const killAll = () => {
    for (const i of python.instances) i.kill();
  };
  // Explicit mode loads only the --load-model names; the other modes load every model.
  const failed = await models.loadStartup(options.modelControlMode === 'explicit' ? options.startupModels : ['*']);
  if (failed.length && options.exitOnError) {
    await models.unloadAll(5000);
    await python.close();
    throw new StartupError(`failed to load all models: ${failed.map((f) => `${f.name}: ${f.reason}`).join('; ')}`);
  }
  // As tritonserver: the backend table, the model table, then the options table (what tuning
  // guides read back).
  log.info('');
  log.raw(backendTable(backendRows(core, options)));
  log.info('');
  log.raw(modelTable(core.repositoryIndex(false)));
  log.info('');
  log.raw(
    optionsTable({
      serverId: options.serverId,
      version: core.serverMetadata().version,
      extensions: core.serverMetadata().extensions,
      repositories: options.modelRepositories,
      modelControlMode: options.modelControlMode,
      strictModelConfig: !options.autoCompleteConfig,
      strictReadiness: options.strictReadiness,
      exitTimeoutSecs: options.exitTimeoutSecs,
      cacheEnabled: responseCache !== undefined,
      rateLimit: options.rateLimit,
      rateLimitResources: options.rateLimitResources,
    }),
  );
  core.markReady();
  if (options.modelControlMode === 'poll') models.poller.start(options.repositoryPollSecs * 1000);

  const closables: Closable[] = [];
  const running: RunningServer = {
    core,
    logger: log,
    python,
    shutdown: async () => 0,
    kill: killAll,
  };
  const logSettings = logSettingsStore(log);
  logSettings.onChange?.((s) => python.setLogVerbose(s.log_verbose_level));
  try {
    // What frontend threads need of the main thread (frontends/threads/), either protocol.
    const pool = (threads: number): FrontendPoolOptions => ({ threads, core, logSettings, logger: log, status: frontendStatus, descriptors });
    if (options.allowGrpc) {
      const grpcOptions: GrpcServerOptions = {
        port: options.grpcPort,
        address: options.grpcAddress,
        maxMessageSize: options.grpcMaxMessageSize,
        logger: log,
        logSettings,
        shutdownGraceMs: options.exitTimeoutSecs * 1000,
        keepalive: options.grpcKeepalive,
        ...(options.grpcMaxConnections !== undefined ? { maxConnections: options.grpcMaxConnections } : {}),
        maxConcurrentStreams: options.grpcMaxConcurrentStreams,
        readTimeoutMs: options.grpcReadTimeoutSecs * 1000,
        maxBodyMemory: options.grpcMaxBodyMemory,
        ...(grpcTls ? { tls: grpcTls } : {}),
        descriptors,
        responseCompression: options.grpcResponseCompression,
        ...(options.grpcRestricted ? { restricted: options.grpcRestricted } : {}),
        ...(options.grpcHeaderForward ? { headerForward: options.grpcHeaderForward } : {}),
      };
      const grpc = await listening(listeners.grpc!, () =>
        startFrontend('grpc', grpcOptions, options.reuseGrpcPort, pool(options.grpcThreadCount), (o) => startGrpcServer(core, o)),
      );
      if (grpc.threads) running.grpcThreads = grpc.threads;
      closables.push(grpc);
      metrics.addConnectionCounts('grpc', grpc.connectionCounts);
      running.grpcPort = grpc.port;
      const threads = options.grpcThreadCount > 1 ? ` (${options.grpcThreadCount} threads)` : '';
      log.info(`Started GRPCInferenceService at ${options.grpcAddress}:${grpc.port}${threads}`);
    }
    if (options.allowHttp) {
      const httpOptions: HttpServerOptions = {
        port: options.httpPort,
        address: options.httpAddress,
        maxInputSize: options.httpMaxInputSize,
        maxBodyMemory: options.httpMaxBodyMemory,
        maxJsonOutputSize: options.httpMaxJsonOutputSize,
        logger: log,
        logSettings,
        ...(options.httpMaxConnections !== undefined ? { maxConnections: options.httpMaxConnections } : {}),
        idleTimeoutMs: options.httpIdleTimeoutSecs * 1000,
        ...(options.httpHeaderForward ? { headerForward: options.httpHeaderForward } : {}),
        ...(options.httpRestricted ? { restricted: options.httpRestricted } : {}),
        openai: openAiSettings(options),
        descriptors,
      };
      const http = await listening(listeners.http!, () =>
        startFrontend('http', httpOptions, options.reuseHttpPort, pool(options.httpThreadCount), (o) => startHttpServer(core, o)),
      );
      if (http.threads) running.httpThreads = http.threads;
      closables.push(http);
      metrics.addConnectionCounts('http', http.connectionCounts);
      running.httpPort = http.port;
      const threads = options.httpThreadCount > 1 ? ` (${options.httpThreadCount} threads)` : '';
      log.info(`Started HTTPService at ${options.httpAddress}:${http.port}${threads}`);
    }
    if (listeners.openai !== undefined) {
      // The OpenAI API on a port of its own, served by the main loop (its requests are few and long).
      const o = listeners.openai;
      const openai = await listening(o, () =>
        startHttpServer(core, {
          port: o.port,
          address: o.address,
          maxInputSize: options.httpMaxInputSize,
          maxBodyMemory: options.httpMaxBodyMemory,
          logger: log,
          logSettings,
          idleTimeoutMs: options.httpIdleTimeoutSecs * 1000,
          openai: { ...openAiSettings(options), ownPort: true },
          descriptors,
        }),
      );
      closables.push(openai);
      running.openaiPort = openai.port;
      log.info(`Started OpenAI API at ${o.address}:${openai.port}`);
    }
    if (options.allowMetrics) {
      const address = options.metricsAddress ?? options.httpAddress;
      const m = await listening(listeners.metrics!, () => startMetricsServer(metrics, { port: options.metricsPort, address, descriptors }));
      closables.push(m);
      closables.push({ close: async () => metrics.close() });
      running.metricsPort = m.port;
      log.info(`Started Metrics Service at ${address}:${m.port}`);
      if (options.allowGpuMetrics) startGpuMetrics(metrics, options.metricsIntervalMs, log);
    }
  } catch (err) {
    await Promise.all(closables.map((c) => c.close().catch(() => {})));
    await models.unloadAll(5000);
    await python.close();
    throw err;
  }

  running.shutdown = async () => {
    const deadline = Date.now() + options.exitTimeoutSecs * 1000;
    core.markExiting();
    descriptors.stop();
    void models.poller.stop();
    const closing = Promise.all(closables.map((c) => c.close().catch(() => {})));
    // A request a frontend thread read before it heard of the exit may still be on its way to
    // the core, which admits it (InferRequest.readBeforeExit): count it in flight too.
    await settlesBefore(Promise.all(closables.map((c) => c.quiesced?.())), deadline);
    // In-flight requests may finish; new ones are refused by the frontends and the core.
    while (models.inflight() > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    let code = 0;
    if (models.inflight() > 0) {
      log.warn(`Exit timeout expired. ${models.inflight()} request(s) still in flight; failing them.`);
      code = 1;
    }
    models.stopSchedulers();
    // Loads still under way may finish and be unloaded within the exit timeout, as in Triton;
    // past it they are abandoned: their stubs are killed and their regions removed, whatever
    // `initialize` is doing. Triton then fails its stop ("Exit timeout expired"): exit status 1.
    // Unloads bound themselves (a finalize past the timeout is killed), so only a load, or an
    // unload that somehow outlives its own bound by seconds, is cut short here.
    const unloading = models.unloadAll(Math.max(1000, deadline - Date.now()));
    if (!(await settlesBefore(unloading, deadline))) {
      const loading = models.loadsInProgress();
      if (loading.length > 0 || !(await settlesBefore(unloading, deadline + UNLOAD_GRACE_MS))) {
        const what = loading.length > 0 ? `model(s) still loading: ${loading.join(', ')}` : 'models still unloading';
        log.warn(`Exit timeout expired. Exiting immediately; ${what}. Their stubs are killed.`);
        killAll();
        code = 1;
      }
    }
    await python.close();
    await Promise.race([closing, new Promise((r) => setTimeout(r, 1000))]);
    // Traces not yet written (log_frequency 0 writes them all now, as Triton at exit).
    core.tracer.flush();
    return code;
  };
  return running;
}

interface FrontendHandle {
  port: number;
  readonly connectionCounts: ConnectionLimitCounts;
  close(): Promise<void>;
  /** With frontend threads: settles once what they read before the close is in the core. */
  quiesced?(): Promise<void>;
  /** With frontend threads: the threads serving now. */
  threads?: () => Worker[];
}

/**
 * Starts the HTTP or gRPC frontend: on the main loop (`onLoop`; on a SO_REUSEPORT socket with
 * --reuse-*-port), or on `pool.threads` frontend threads (frontends/threads/), which always
 * bind that way.
 */
async function startFrontend<O extends HttpServerOptions | GrpcServerOptions>(
  kind: 'http' | 'grpc',
  o: O,
  reusePort: boolean,
  pool: FrontendPoolOptions,
  onLoop: (o: O) => Promise<FrontendHandle>,
): Promise<FrontendHandle> {
  if (pool.threads > 1) {
    // The threads log, read settings and count descriptors through the main thread.
    const { logger: _l, logSettings: _s, descriptors: _d, ...threadOptions } = o;
    return startFrontendThreads({ kind, options: threadOptions } as ThreadServer, pool);
  }
  if (!reusePort) return onLoop(o);
  const { fd, port } = listenShared(await numericAddress(o.address), o.port);
  return onLoop({ ...o, fd, port });
}

/** How long past the exit timeout an unload may take to kill what did not stop in time. */
const UNLOAD_GRACE_MS = 5000;

/** Whether `work` settled before `deadline` (epoch ms); it keeps running either way. */
async function settlesBefore(work: Promise<unknown>, deadline: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((r) => {
    timer = setTimeout(() => r(false), Math.max(0, deadline - Date.now()));
  });
  const done = work.then(
    () => true as const,
    () => true as const,
  );
  try {
    return await Promise.race([done, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Reads the nv_gpu_* families in the background; says once which GPUs they cover, or why none. */
function startGpuMetrics(metrics: Metrics, intervalMs: number, log: Logger): void {
  void metrics.startGpuMetrics({ intervalMs }).then((found) => {
    if ('gpus' in found) {
      found.gpus.forEach((uuid, i) => log.info(`Collecting metrics for GPU ${i}: ${uuid} (nvidia-smi)`));
    } else if (found.missing) {
      log.verbose(1, `GPU metrics: ${found.none}; the nv_gpu_* families are absent`);
    } else {
      log.info(`GPU metrics: ${found.none}; the nv_gpu_* families are absent`);
    }
  });
}

export class StartupError extends Error {}

/**
 * The last resort on any exit Node sees (synchronous: it runs in 'exit'), whether start-up
 * finished or not: no stub and no shared-memory file of this server outlives the process.
 */
export function releaseAtExit(): void {
  killAllStubs();
  removeOwnFiles();
}

/**
 * The backend table's rows: the built-in backends, then each Python-based backend a ready model
 * uses (`<backend-directory>/X/model.py`), with the settings each receives; a Python-based one
 * gets the python backend's, as in Triton.
 */
function backendRows(core: ServerCore, options: ServerOptions): Array<{ name: string; path: string; settings: Record<string, string> }> {
  const settings = (backend: string): Record<string, string> => ({
    'auto-complete-config': String(options.autoCompleteConfig),
    'backend-directory': options.backendDirectory,
    'default-max-batch-size': String(options.defaultMaxBatchSize),
    ...Object.fromEntries(options.backendConfig.get('') ?? []),
    ...Object.fromEntries(options.backendConfig.get(backend) ?? []),
  });
  const rows = [
    { name: 'python', path: STUB_MAIN, settings: settings('python') },
    { name: 'onnxruntime', path: onnxruntimeLocation(), settings: settings('onnxruntime') },
  ];
  const seen = new Set<string>();
  for (const e of core.repositoryIndex(true)) {
    if (e.state !== 'READY') continue;
    let config: Record<string, unknown>;
    try {
      config = core.resolveModel(e.name, e.version ?? '').configJson();
    } catch {
      continue;
    }
    const backend = String(config.backend ?? '');
    if (config.runtime !== PYTHON_BASED_RUNTIME || seen.has(backend)) continue;
    seen.add(backend);
    rows.push({ name: backend, path: path.join(options.backendDirectory, backend, PYTHON_BASED_RUNTIME), settings: settings('python') });
  }
  return rows;
}

/** onnxruntime-node's directory, or why there is none (the ONNX backend then refuses its models). */
function onnxruntimeLocation(): string {
  try {
    return ortPackageDir();
  } catch {
    return '(onnxruntime-node not installed)';
  }
}

/**
 * @module frontends/metrics/metrics
 * Triton's per-model Prometheus families (docs/protocol-notes.md, "Metrics") plus tritium's own, on a private
 * prom-client `Registry`.
 *
 * Hot-path design: prom-client hashes the label set on every `inc()`, which would cost a few
 * microseconds per request across the seven per-request counters. Instead each model version
 * keeps plain number fields (`ModelSeries`) that the request path bumps, and every family has
 * a `collect` callback that publishes them when `/metrics` is rendered. That also gives the
 * Triton behaviours for free: series exist (zero-valued) from registration, and they vanish on
 * unregistration.
 *
 * Label names are declared in alphabetical order (`model, reason, version`): prom-client prints
 * labels in declaration order, and Triton prints them sorted. Values are integers (µs counters
 * are truncated per request like Triton's) or rounded so that nothing prints with an exponent,
 * which perf_analyzer's `\d+\.?\d*` parser would not accept.
 */
import type { CacheCounters, ResponseCache } from '../../core/cache/response-cache.js';
import type { ConnectionLimitCounts } from '../connection-limit.js';
import fs from 'node:fs';
import { Counter, Gauge, Registry } from 'prom-client';
import type { ModelConfig } from '../../core/config/schema.js';
import type { FailureReason } from '../../core/errors.js';
import type { CustomMetrics } from '../../core/custom-metrics.js';
import { isDecoupled } from '../../core/model/config-view.js';
import type { StatsListener } from '../../core/stats/model-stats.js';
import { renderCustomFamilies } from './custom-text.js';
import {
  DEFAULT_SUMMARY_QUANTILES,
  FirstResponseHistogram,
  firstResponseBuckets,
  LatencySummaries,
  registerFirstResponseFamily,
  registerSummaryFamilies,
  type SummaryQuantile,
} from './latency-families.js';
import { AGE_SLOTS, WINDOW_MS } from './latency-window.js';
import { plain } from './scraped-family.js';
import { GpuMetrics, registerGpuFamilies, type GpuMetricsOptions, type GpuStart } from './gpu-metrics.js';

export const FAILURE_REASONS: readonly FailureReason[] = ['REJECTED', 'CANCELED', 'BACKEND', 'OTHER'];

export interface MetricsOptions {
  /** `--metrics-config counter_latencies=false` drops the `_duration_us` counters. */
  counterLatencies?: boolean;
  /**
   * Triton's server-wide CPU families (`nv_cpu_utilization`, `nv_cpu_memory_total_bytes`,
   * `nv_cpu_memory_used_bytes`), read from /proc; default true, omitted where /proc is missing.
   */
  cpuMetrics?: boolean;
  /** `--metrics-interval-ms`: how often the CPU families are read (default 2000). */
  cpuIntervalMs?: number;
  /** `--metrics-config summary_latencies=true`: the `_summary_us` families (latency-families.ts). */
  summaryLatencies?: boolean;
  /** `--metrics-config summary_quantiles=...`; Triton's defaults when absent. */
  summaryQuantiles?: readonly SummaryQuantile[];
  /** `--metrics-config histogram_latencies=true`: `nv_inference_first_response_histogram_ms` for decoupled models. */
  histogramLatencies?: boolean;
  /** The server's response cache: its gauges, and the per-model cache series of the versions that use it. */
  cache?: ResponseCache;
}

/** One sample of `tritium_shm_bytes`. */
export interface ShmBytesSample {
  model: string;
  instance: string;
  bytes: number;
}

/** Per model version; mutated on the request path, read by the collect callbacks. */
class ModelSeries implements StatsListener {
  success = 0;
  failure: Record<FailureReason, number> = { REJECTED: 0, CANCELED: 0, BACKEND: 0, OTHER: 0 };
  inferences = 0;
  executions = 0;
  requestUs = 0;
  queueUs = 0;
  inputUs = 0;
  inferUs = 0;
  outputUs = 0;
  loadSecs = 0;
  /** Whether the version uses the response cache: only then has it `nv_cache_*_per_model` series. */
  cached = false;
  cacheHits = 0;
  cacheMisses = 0;
  cacheHitUs = 0;
  cacheMissUs = 0;
  /** Set with `summary_latencies`: observed with the same µs values the counters add. */
  summaries: LatencySummaries | undefined;
  /** Set with `histogram_latencies` for a decoupled model. */
  firstResponse: FirstResponseHistogram | undefined;
  /** Defined only while `firstResponse` is, so the core measures first responses only then. */
  onFirstResponse?: (ns: bigint) => void;

  constructor(
    readonly model: string,
    readonly version: string,
    public pending: () => number,
  ) {}

  onSuccess(inferences: number, requestNs: bigint, queueNs: bigint): void {
    this.success++;
    this.inferences += inferences;
    this.requestUs += us(requestNs);
    const queueUs = us(queueNs);
    this.queueUs += queueUs;
    this.summaries?.queue.observe(queueUs);
  }

  onCompute(inputNs: bigint, inferNs: bigint, outputNs: bigint, extraRequestNs: bigint, requestNs: bigint): void {
    const extraUs = extraRequestNs > 0n ? us(extraRequestNs) : 0;
    this.requestUs += extraUs;
    const inputUs = us(inputNs);
    const inferUs = us(inferNs);
    const outputUs = us(outputNs);
    this.inputUs += inputUs;
    this.inferUs += inferUs;
    this.outputUs += outputUs;
    const s = this.summaries;
    if (s !== undefined) {
      // The request's whole duration is known only now (see core/stats/model-stats.ts); the
      // two parts are truncated separately, as the counter adds them.
      s.request.observe(us(requestNs) + extraUs);
      s.input.observe(inputUs);
      s.infer.observe(inferUs);
      s.output.observe(outputUs);
    }
  }

  /** (Re)shapes the optional latency series for the version's config. */
  configure(summaries: boolean, histogram: boolean, config: ModelConfig | undefined, cache: boolean): void {
    this.cached = cache && config?.responseCache?.enable === true;
    if (summaries) this.summaries ??= new LatencySummaries();
    const bounds = histogram && config !== undefined && isDecoupled(config) ? firstResponseBuckets(config.modelMetrics) : undefined;
    if (bounds === undefined) {
      this.firstResponse = undefined;
      delete this.onFirstResponse;
      return;
    }
    const same = this.firstResponse !== undefined && this.firstResponse.bounds.join() === bounds.join();
    if (!same) this.firstResponse = new FirstResponseHistogram(bounds);
    this.onFirstResponse = (ns) => this.firstResponse?.observe(Math.floor(Number(ns) / 1e6));
  }

  onFailure(reason: FailureReason): void {
    this.failure[reason] = (this.failure[reason] ?? 0) + 1;
  }

  onExecution(): void {
    this.executions++;
  }

  onCache(hit: boolean, ns: bigint): void {
    if (hit) {
      this.cacheHits++;
      this.cacheHitUs += us(ns);
    } else {
      this.cacheMisses++;
      this.cacheMissUs += us(ns);
    }
  }
}

/** Whole microseconds of a nanosecond duration (Triton divides per request, too). */
function us(ns: bigint): number {
  return Math.floor(Number(ns) / 1000);
}

const key = (model: string, version: string): string => `${model}\u0000${version}`;

export class Metrics {
  /** The private registry (never prom-client's global one). */
  readonly registry = new Registry();
  private readonly models = new Map<string, ModelSeries>();
  private readonly restarts = new Map<string, { model: string; instance: string; count: number }>();
  private shmSource: (() => Iterable<ShmBytesSample>) | null = null;
  private readonly connections = new Map<string, ConnectionLimitCounts>();
  private custom: CustomMetrics | null = null;
  private readonly summaryLatencies: boolean;
  private readonly histogramLatencies: boolean;
  private readonly timers: NodeJS.Timeout[] = [];
  private gpus: GpuMetrics | undefined;

  private readonly cache: ResponseCache | undefined;

  constructor(options: MetricsOptions = {}) {
    this.cache = options.cache;
    this.summaryLatencies = options.summaryLatencies === true;
    this.histogramLatencies = options.histogramLatencies === true;
    const registers = [this.registry];
    const models = this.models;
    /** A counter per model version (only the versions `only` accepts, when given). */
    const perModel = (name: string, help: string, value: (s: ModelSeries) => number, only?: (s: ModelSeries) => boolean): void => {
      new Counter({
        name,
        help,
        labelNames: ['model', 'version'] as const,
        registers,
        collect() {
          this.reset();
          for (const s of models.values()) if (only === undefined || only(s)) this.inc({ model: s.model, version: s.version }, plain(value(s)));
        },
      });
    };

    perModel('nv_inference_request_success', 'Number of successful inference requests, all batch sizes', (s) => s.success);
    // The response cache's, for the versions that use it (Triton's names and units).
    const perCachedModel = (name: string, help: string, value: (s: ModelSeries) => number): void => perModel(name, help, value, (s) => s.cached);
    if (options.cache !== undefined) {
      perCachedModel('nv_cache_num_hits_per_model', 'Number of cache hits per model', (s) => s.cacheHits);
      perCachedModel('nv_cache_num_misses_per_model', 'Number of cache misses per model', (s) => s.cacheMisses);
      perCachedModel('nv_cache_hit_duration_per_model', 'Total cache hit duration per model, in microseconds', (s) => s.cacheHitUs);
      perCachedModel('nv_cache_miss_duration_per_model', 'Total cache miss (insert+lookup) duration per model, in microseconds', (s) => s.cacheMissUs);
      const cache = options.cache;
      const gauge = (name: string, help: string, value: (c: CacheCounters) => number): void => {
        new Gauge({
          name,
          help,
          registers,
          collect() {
            this.set(value(cache.counters()));
          },
        });
      };
      gauge('nv_cache_num_entries', 'Number of responses stored in response cache', (c) => c.entries);
      gauge('nv_cache_num_lookups', 'Number of cache lookups in response cache', (c) => c.lookups);
      gauge('nv_cache_num_hits', 'Number of cache hits in response cache', (c) => c.hits);
      gauge('nv_cache_num_misses', 'Number of cache misses in response cache', (c) => c.misses);
      gauge('nv_cache_num_evictions', 'Number of cache evictions in response cache', (c) => c.evictions);
      gauge('nv_cache_util', 'Cache utilization [0.0 - 1.0]', (c) => c.util);
      gauge('nv_cache_lookup_duration', 'Total cache lookup duration (hit and miss), in microseconds', (c) => c.lookupUs);
      gauge('nv_cache_insertion_duration', 'Total cache insertion duration, in microseconds', (c) => c.insertionUs);
    }
    new Counter({
      name: 'nv_inference_request_failure',
      help: 'Number of failed inference requests, all batch sizes',
      labelNames: ['model', 'reason', 'version'] as const,
      registers,
      collect() {
        this.reset();
        for (const s of models.values()) {
          for (const reason of FAILURE_REASONS) {
            this.inc({ model: s.model, reason, version: s.version }, plain(s.failure[reason]));
          }
        }
      },
    });
    perModel('nv_inference_count', 'Number of inferences performed (does not include cached requests)', (s) => s.inferences);
    perModel('nv_inference_exec_count', 'Number of model executions performed (does not include cached requests)', (s) => s.executions);
    new Gauge({
      name: 'nv_inference_pending_request_count',
      help: 'Instantaneous number of pending requests awaiting execution per-model.',
      labelNames: ['model', 'version'] as const,
      registers,
      collect() {
        this.reset();
        for (const s of models.values()) {
          let n = 0;
          try {
            n = s.pending();
          } catch {
            // A scheduler being torn down: report nothing pending.
          }
          this.set({ model: s.model, version: s.version }, plain(n));
        }
      },
    });
    if (options.counterLatencies !== false) {
      perModel('nv_inference_request_duration_us', 'Cumulative inference request duration in microseconds (includes cached requests)', (s) => s.requestUs);
      perModel('nv_inference_queue_duration_us', 'Cumulative inference queuing duration in microseconds (includes cached requests)', (s) => s.queueUs);
      perModel(
        'nv_inference_compute_input_duration_us',
        'Cumulative compute input duration in microseconds (does not include cached requests)',
        (s) => s.inputUs,
      );
      perModel(
        'nv_inference_compute_infer_duration_us',
        'Cumulative compute inference duration in microseconds (does not include cached requests)',
        (s) => s.inferUs,
      );
      perModel(
        'nv_inference_compute_output_duration_us',
        'Cumulative inference compute output duration in microseconds (does not include cached requests)',
        (s) => s.outputUs,
      );
    }
    if (this.summaryLatencies) {
      registerSummaryFamilies(this.registry, () => models.values(), options.summaryQuantiles ?? DEFAULT_SUMMARY_QUANTILES);
      // The quantile windows slide by one age slot at a time; unref'd, and stopped by close().
      const rotate = setInterval(() => {
        for (const s of models.values()) s.summaries?.rotate();
      }, WINDOW_MS / AGE_SLOTS);
      rotate.unref();
      this.timers.push(rotate);
    }
    if (this.histogramLatencies) registerFirstResponseFamily(this.registry, () => models.values());
    new Gauge({
      name: 'nv_model_load_duration_secs',
      help: 'Model load time in seconds',
      labelNames: ['model', 'version'] as const,
      registers,
      collect() {
        this.reset();
        for (const s of models.values()) this.set({ model: s.model, version: s.version }, plain(s.loadSecs, 6));
      },
    });

    const restarts = this.restarts;
    new Counter({
      name: 'tritium_stub_restarts_total',
      help: 'Model instances restarted after failing (a Python stub that died, an ONNX session that failed), per model instance',
      labelNames: ['instance', 'model'] as const,
      registers,
      collect() {
        this.reset();
        for (const r of restarts.values()) this.inc({ instance: r.instance, model: r.model }, plain(r.count));
      },
    });
    const self = this;
    new Gauge({
      name: 'tritium_shm_bytes',
      help: 'Bytes of shared memory held by each Python stub instance',
      labelNames: ['instance', 'model'] as const,
      registers,
      collect() {
        this.reset();
        const source = self.shmSource;
        if (source === null) return;
        let samples: Iterable<ShmBytesSample>;
        try {
          samples = source();
        } catch {
          return;
        }
        for (const s of samples) this.set({ instance: s.instance, model: s.model }, plain(s.bytes));
      },
    });
    const connections = this.connections;
    for (const [what, help] of [
      ['refused', 'Client connections closed at once because the connection limit was reached with every connection busy, per frontend'],
      ['evicted', 'Idle client connections closed to make room for a new one at the connection limit, per frontend'],
    ] as const) {
      new Counter({
        name: `tritium_connections_${what}_total`,
        help,
        labelNames: ['frontend'] as const,
        registers,
        collect() {
          this.reset();
          for (const [frontend, counts] of connections) this.inc({ frontend }, counts[what]);
        },
      });
    }
    if (options.cpuMetrics !== false) this.registerCpuFamilies(options.cpuIntervalMs ?? 2000);
  }

  /** A frontend's connection-limit counts, read at each scrape (frontends/connection-limit.ts). */
  addConnectionCounts(frontend: 'http' | 'grpc', counts: ConnectionLimitCounts): void {
    this.connections.set(frontend, counts);
  }

  /**
   * Triton's CPU families (metrics.cc): utilisation over the time since the previous reading
   * (busy / total jiffies of the aggregate `cpu` line of /proc/stat, 0.0–1.0), and RAM from
   * /proc/meminfo (used = MemTotal − MemAvailable). Labels: none.
   */
  private registerCpuFamilies(intervalMs: number): void {
    const registers = [this.registry];
    const cpu = new CpuReadings(intervalMs);
    if (!cpu.available()) return;
    new Gauge({
      name: 'nv_cpu_utilization',
      help: 'CPU utilization rate [0.0 - 1.0]',
      registers,
      collect() {
        this.set(plain(cpu.utilization, 6));
      },
    });
    new Gauge({
      name: 'nv_cpu_memory_total_bytes',
      help: 'CPU total memory (RAM), in bytes',
      registers,
      collect() {
        this.set(plain(cpu.memory.total));
      },
    });
    new Gauge({
      name: 'nv_cpu_memory_used_bytes',
      help: 'CPU used memory (RAM), in bytes',
      registers,
      collect() {
        this.set(plain(cpu.memory.total - cpu.memory.available));
      },
    });
  }

  /**
   * Creates the model version's series (zero-valued; all four failure reasons). `config` decides
   * the optional latency series (a first-response histogram only for decoupled models).
   */
  registerModel(name: string, version: string, pending: () => number, config?: ModelConfig): void {
    const k = key(name, version);
    let s = this.models.get(k);
    // A re-registration (reload in place) keeps the counters and the listeners bound to them.
    if (s !== undefined) s.pending = pending;
    else {
      s = new ModelSeries(name, version, pending);
      this.models.set(k, s);
    }
    s.configure(this.summaryLatencies, this.histogramLatencies, config, this.cache !== undefined);
  }

  /**
   * Starts reading the GPU families with nvidia-smi (gpu-metrics.ts) and registers them once the
   * first reading found GPUs. Resolves with what it found, for the start-up log; never rejects.
   */
  async startGpuMetrics(options: GpuMetricsOptions): Promise<GpuStart> {
    this.gpus?.stop();
    const gpus = new GpuMetrics(options);
    this.gpus = gpus;
    const found = await gpus.start();
    if ('gpus' in found && this.gpus === gpus) registerGpuFamilies(this.registry, gpus);
    return found;
  }

  /** Stops the timers and the nvidia-smi readings behind the families read per interval. */
  close(): void {
    for (const t of this.timers.splice(0)) clearInterval(t);
    this.gpus?.stop();
  }

  /** Removes the model version's series (and its restart counters when `name` has no version left). */
  unregisterModel(name: string, version: string): void {
    this.models.delete(key(name, version));
    for (const s of this.models.values()) if (s.model === name) return;
    for (const [k, r] of this.restarts) if (r.model === name) this.restarts.delete(k);
  }

  /**
   * The listener to give `new ModelStats(...)` so statistics and metrics move together. It
   * stays bound to the series that exists now; register the model first.
   */
  statsListener(name: string, version: string): StatsListener {
    const s = this.models.get(key(name, version));
    if (s === undefined) throw new Error(`metrics: model '${name}' version ${version} is not registered`);
    return s;
  }

  onSuccess(name: string, version: string, inferences: number, requestNs: bigint, queueNs: bigint): void {
    this.models.get(key(name, version))?.onSuccess(inferences, requestNs, queueNs);
  }

  onCompute(name: string, version: string, inputNs: bigint, inferNs: bigint, outputNs: bigint, extraRequestNs = 0n, requestNs = 0n): void {
    this.models.get(key(name, version))?.onCompute(inputNs, inferNs, outputNs, extraRequestNs, requestNs);
  }

  onFailure(name: string, version: string, reason: FailureReason): void {
    this.models.get(key(name, version))?.onFailure(reason);
  }

  onExecution(name: string, version: string): void {
    this.models.get(key(name, version))?.onExecution();
  }

  setLoadDuration(name: string, version: string, seconds: number): void {
    const s = this.models.get(key(name, version));
    if (s !== undefined) s.loadSecs = seconds;
  }

  onStubRestart(model: string, instance: string): void {
    const k = key(model, instance);
    const r = this.restarts.get(k);
    if (r !== undefined) r.count++;
    else this.restarts.set(k, { model, instance, count: 1 });
  }

  /** Where `tritium_shm_bytes` reads its samples at each scrape. */
  setShmBytesSource(fn: (() => Iterable<ShmBytesSample>) | null): void {
    this.shmSource = fn;
  }

  /** Where the families models define (pb_utils.MetricFamily) are read at each scrape. */
  setCustomSource(source: CustomMetrics | null): void {
    this.custom = source;
  }

  /** The Prometheus text exposition: Triton's and tritium's families, then the models' own. */
  async render(): Promise<string> {
    const text = await this.registry.metrics();
    const custom = this.custom === null ? '' : renderCustomFamilies(this.custom.snapshot());
    return custom === '' ? text : `${text}\n${custom}`;
  }
}

/** Busy and total jiffies of the aggregate `cpu` line of /proc/stat. */
function readCpuTimes(): { busy: number; total: number } | null {
  let text: string;
  try {
    text = fs.readFileSync('/proc/stat', 'utf8');
  } catch {
    return null;
  }
  const line = text.split('\n', 1)[0] ?? '';
  if (!line.startsWith('cpu ')) return null;
  // user nice system idle iowait irq softirq steal (guest time is already in user/nice).
  const v = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const idle = (v[3] ?? 0) + (v[4] ?? 0);
  const total = v.reduce((a, b) => a + (Number.isFinite(b) ? b : 0), 0);
  return { busy: total - idle, total };
}

/** Utilisation between successive readings; the first reading compares with construction. */
/**
 * The CPU figures, read every `intervalMs` (`--metrics-interval-ms`, Triton's default 2000) on
 * an unref'd timer, as Triton's metrics thread does: a scrape shows the latest reading, and the
 * utilisation is the share of busy jiffies between the last two readings.
 */
class CpuReadings {
  private last = readCpuTimes();
  utilization = 0;
  memory = readMeminfo();

  constructor(intervalMs: number) {
    if (this.last === null) return;
    setInterval(() => this.read(), intervalMs).unref();
  }

  available(): boolean {
    return this.last !== null;
  }

  private read(): void {
    const now = readCpuTimes();
    if (now === null || this.last === null) return;
    const dTotal = now.total - this.last.total;
    const dBusy = now.busy - this.last.busy;
    if (dTotal > 0) this.utilization = Math.min(1, Math.max(0, dBusy / dTotal));
    this.last = now;
    this.memory = readMeminfo();
  }
}

function readMeminfo(): { total: number; available: number } {
  let text = '';
  try {
    text = fs.readFileSync('/proc/meminfo', 'utf8');
  } catch {
    return { total: 0, available: 0 };
  }
  const kb = (key: string): number => {
    const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text);
    return m ? Number(m[1]) * 1024 : 0;
  };
  const total = kb('MemTotal');
  const available = kb('MemAvailable') || kb('MemFree');
  return { total, available: Math.min(total, available) };
}

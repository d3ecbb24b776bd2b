/**
 * @module frontends/metrics/gpu-metrics
 * Triton's per-GPU families (`nv_gpu_utilization`, `nv_gpu_memory_total_bytes`,
 * `nv_gpu_memory_used_bytes`, `nv_gpu_power_usage`, `nv_gpu_power_limit`, `nv_energy_consumption`),
 * read without native code: `nvidia-smi --query-gpu=... --format=csv,noheader,nounits` every
 * `--metrics-interval-ms` (Triton reads DCGM at that interval).
 *
 * The command runs asynchronously (the event loop never waits for the driver), at most one run
 * at a time (a tick that finds the previous run still going is skipped), with a timeout, on an
 * unref'd timer that `stop()` clears. A scrape prints the latest reading.
 *
 * Shape as perf_analyzer's `--collect-metrics` parses it (docs/protocol-notes.md, "Metrics"): one
 * label, `gpu_uuid`, and values without exponent. Units as Triton's: utilisation 0.0–1.0, bytes,
 * watts, joules. A field nvidia-smi reports as `[N/A]` (or `[Not Supported]`) leaves that GPU's
 * series out of that family; no nvidia-smi, no GPU or `--allow-gpu-metrics=false` leaves every
 * family out (no zero-valued series).
 */
import { execFile } from 'node:child_process';
import type { Registry } from 'prom-client';
import { plain, registerScrapedFamily, type ScrapedSample } from './scraped-family.js';

/** The fields asked for, in the CSV's column order. */
export const GPU_QUERY_FIELDS = ['uuid', 'utilization.gpu', 'memory.used', 'memory.total', 'power.draw', 'power.limit'] as const;
/** mJ since the driver loaded; older drivers and GPUs refuse the field, then it is left out of the query. */
const ENERGY_FIELD = 'total_energy_consumption';

const MIB = 1024 * 1024;

export interface GpuReading {
  uuid: string;
  /** 0.0–1.0. */
  utilization?: number;
  memoryUsedBytes?: number;
  memoryTotalBytes?: number;
  powerUsageWatts?: number;
  powerLimitWatts?: number;
  /** As nvidia-smi reports it: mJ since the driver loaded. */
  energyMillijoules?: number;
}

/** A number field of nvidia-smi's CSV; undefined for `[N/A]`, `[Not Supported]` and the like. */
function field(s: string | undefined): number | undefined {
  if (s === undefined) return undefined;
  const t = s.trim();
  if (!/^\d+(\.\d+)?$/.test(t)) return undefined;
  return Number(t);
}

/** The readings of `nvidia-smi --query-gpu=<GPU_QUERY_FIELDS>[,total_energy_consumption] --format=csv,noheader,nounits`. */
export function parseGpuCsv(text: string): GpuReading[] {
  const out: GpuReading[] = [];
  for (const line of text.split('\n')) {
    const cols = line.split(',').map((c) => c.trim());
    const uuid = cols[0] ?? '';
    // A label value perf_analyzer can parse: no quotes, spaces or commas.
    if (!/^[A-Za-z0-9_.:-]+$/.test(uuid)) continue;
    const r: GpuReading = { uuid };
    const util = field(cols[1]);
    const used = field(cols[2]);
    const total = field(cols[3]);
    const draw = field(cols[4]);
    const limit = field(cols[5]);
    const energy = field(cols[6]);
    if (util !== undefined) r.utilization = util / 100;
    if (used !== undefined) r.memoryUsedBytes = used * MIB;
    if (total !== undefined) r.memoryTotalBytes = total * MIB;
    if (draw !== undefined) r.powerUsageWatts = draw;
    if (limit !== undefined) r.powerLimitWatts = limit;
    if (energy !== undefined) r.energyMillijoules = energy;
    out.push(r);
  }
  return out;
}

/** What the first reading found: the GPUs exported, or why there are none. */
export type GpuStart = { gpus: string[] } | { none: string; missing: boolean };

export interface GpuMetricsOptions {
  intervalMs: number;
  /** The executable (default `nvidia-smi`, found on PATH). */
  command?: string;
  /** A run that takes longer is killed (default: the interval, at least 5 s). */
  timeoutMs?: number;
}

interface RunResult {
  ok: boolean;
  stdout: string;
  why: string;
  missing: boolean;
}

export class GpuMetrics {
  /** The latest successful reading, by GPU in nvidia-smi's order. */
  private readings: GpuReading[] = [];
  /** Energy at the first reading, per GPU: the families count from the server's start, as Triton's. */
  private readonly energyStart = new Map<string, number>();
  private withEnergy = true;
  private running = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private child: ReturnType<typeof execFile> | undefined;

  constructor(private readonly o: GpuMetricsOptions) {}

  /**
   * Takes the first reading and, when it found GPUs, keeps reading every interval. Resolves with
   * what it found (for the start-up log line); never rejects.
   */
  async start(): Promise<GpuStart> {
    let r = await this.run();
    if (!r.ok && !r.missing && !this.stopped) {
      // Drivers without the energy field refuse the whole query: ask again without it.
      this.withEnergy = false;
      r = await this.run();
    }
    if (!r.ok) return { none: r.why, missing: r.missing };
    this.accept(r.stdout);
    if (this.readings.length === 0) return { none: 'nvidia-smi lists no GPU', missing: false };
    if (!this.stopped) {
      this.timer = setInterval(() => void this.tick(), this.o.intervalMs);
      this.timer.unref();
    }
    return { gpus: this.readings.map((g) => g.uuid) };
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    this.child?.kill();
  }

  /** The latest readings (empty until the first one succeeded). */
  latest(): readonly GpuReading[] {
    return this.readings;
  }

  /** Joules since the first reading, per GPU (undefined where nvidia-smi gives no energy). */
  energyJoules(g: GpuReading): number | undefined {
    if (g.energyMillijoules === undefined) return undefined;
    const start = this.energyStart.get(g.uuid) ?? g.energyMillijoules;
    return Math.max(0, g.energyMillijoules - start) / 1000;
  }

  private async tick(): Promise<void> {
    if (this.running || this.stopped) return;
    const r = await this.run();
    // A failed reading keeps the previous one: a driver hiccup should not make families flap.
    if (r.ok) this.accept(r.stdout);
  }

  private accept(stdout: string): void {
    const readings = parseGpuCsv(stdout);
    for (const g of readings) {
      if (g.energyMillijoules !== undefined && !this.energyStart.has(g.uuid)) this.energyStart.set(g.uuid, g.energyMillijoules);
    }
    this.readings = readings;
  }

  private run(): Promise<RunResult> {
    const fields = this.withEnergy ? [...GPU_QUERY_FIELDS, ENERGY_FIELD] : GPU_QUERY_FIELDS;
    const command = this.o.command ?? 'nvidia-smi';
    this.running = true;
    return new Promise((resolve) => {
      this.child = execFile(
        command,
        [`--query-gpu=${fields.join(',')}`, '--format=csv,noheader,nounits'],
        { timeout: this.o.timeoutMs ?? Math.max(5000, this.o.intervalMs), maxBuffer: 1024 * 1024, encoding: 'utf8' },
        (err, stdout, stderr) => {
          this.running = false;
          this.child = undefined;
          if (err === null) {
            resolve({ ok: true, stdout, why: '', missing: false });
            return;
          }
          const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
          const said = `${stderr}\n${stdout}`.trim().split('\n')[0] ?? '';
          const why = missing ? `no ${command} on PATH` : `${command} failed: ${said || err.message}`;
          resolve({ ok: false, stdout: '', why, missing });
        },
      );
    });
  }
}

/**
 * Registers the GPU families that the latest reading has values for (call it after `start()` found
 * GPUs: a family with no GPU reporting its field is left out); each prints one series per GPU
 * whose reading has that field.
 */
export function registerGpuFamilies(registry: Registry, gpus: GpuMetrics): void {
  const families: Array<[string, string, 'gauge' | 'counter', (g: GpuReading) => number | undefined]> = [
    ['nv_gpu_utilization', 'GPU utilization rate [0.0 - 1.0)', 'gauge', (g) => g.utilization],
    ['nv_gpu_memory_total_bytes', 'GPU total memory, in bytes', 'gauge', (g) => g.memoryTotalBytes],
    ['nv_gpu_memory_used_bytes', 'GPU used memory, in bytes', 'gauge', (g) => g.memoryUsedBytes],
    ['nv_gpu_power_usage', 'GPU power usage in watts', 'gauge', (g) => g.powerUsageWatts],
    ['nv_gpu_power_limit', 'GPU power management limit in watts', 'gauge', (g) => g.powerLimitWatts],
    ['nv_energy_consumption', 'GPU energy consumption in joules since the Triton Server started', 'counter', (g) => gpus.energyJoules(g)],
  ];
  for (const [name, help, type, pick] of families) {
    if (!gpus.latest().some((g) => pick(g) !== undefined)) continue;
    registerScrapedFamily(registry, name, help, type, () => {
      const out: ScrapedSample[] = [];
      for (const g of gpus.latest()) {
        const v = pick(g);
        if (v !== undefined) out.push({ labels: { gpu_uuid: g.uuid }, value: plain(v, 6) });
      }
      return out;
    });
  }
}

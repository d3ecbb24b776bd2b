/**
 * Model Analyzer (PyPI `triton-model-analyzer`, installed into .venv by requirements-dev.txt)
 * profiling the add_sub model against tritium, with the real `model-analyzer` process and the
 * real perf_analyzer: remote mode against a tritium in explicit model control, and local mode
 * with `triton_server_path` naming a wrapper that runs tritium's CLI. The search is tiny (manual
 * brute search: max_batch_size 4 and 8 × one and two CPU instances, plus the default
 * configuration) and the measurement windows short; the checks are that each configuration MA
 * asked for was really loaded (the server's verbose `model configuration:` line, and, in remote
 * mode, the repository index and the served config polled while MA ran) and that its report
 * lists each with that configuration.
 *
 * MA on a CPU-only host: `cpu_only: true` per model (else it looks for GPUs), and its GPU
 * fields have no data (tritium, like tritonserver, prints no nv_gpu_* family without GPUs).
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runAsync } from '../helpers/run.js';
import { makeRepo, PYTHON, ROOT, startTritium, type Tritium } from '../helpers/server.js';

const MODEL_ANALYZER = path.join(ROOT, '.venv', 'bin', 'model-analyzer');
const PERF_ANALYZER = path.join(ROOT, '.venv', 'bin', 'perf_analyzer');

/** (max_batch_size, CPU instance count) of one configuration. */
type Shape = `${number}x${number}`;
const shape = (maxBatchSize: number, count: number): Shape => `${maxBatchSize}x${count}`;

/** The search both modes run: the model's own configuration and these four. */
const SEARCH: Shape[] = [shape(0, 1), shape(4, 1), shape(8, 1), shape(4, 2), shape(8, 2)];

function freePorts(n: number): Promise<number[]> {
  const servers = Array.from({ length: n }, () => net.createServer());
  return Promise.all(
    servers.map(
      (s) =>
        new Promise<number>((resolve, reject) => {
          s.once('error', reject);
          s.listen(0, '127.0.0.1', () => resolve((s.address() as net.AddressInfo).port));
        }),
    ),
  ).finally(() => servers.forEach((s) => s.close()));
}

/** MA's profile config (JSON is YAML) for add_sub with the tiny search and short windows. */
function maConfig(dir: string, repo: string, ports: { http: number; grpc: number; metrics: number }, extra: Record<string, unknown>): string {
  const file = path.join(dir, 'config.yaml');
  const config = {
    model_repository: repo,
    output_model_repository_path: path.join(dir, 'output', 'models'),
    export_path: path.join(dir, 'output'),
    checkpoint_directory: path.join(dir, 'checkpoints'),
    override_output_model_repository: true,
    triton_http_endpoint: `127.0.0.1:${ports.http}`,
    triton_grpc_endpoint: `127.0.0.1:${ports.grpc}`,
    triton_metrics_url: `http://127.0.0.1:${ports.metrics}/metrics`,
    client_protocol: 'grpc',
    perf_analyzer_path: PERF_ANALYZER,
    perf_output: false,
    run_config_search_disable: true,
    profile_models: {
      add_sub: {
        cpu_only: true,
        model_config_parameters: {
          max_batch_size: [4, 8],
          instance_group: [{ kind: 'KIND_CPU', count: [1, 2] }],
        },
        parameters: { concurrency: [1], batch_sizes: [1] },
        // Short windows; a loose stability criterion so that a shared, loaded machine settles
        // within perf_analyzer's trials (the test checks what was loaded, not the numbers).
        perf_analyzer_flags: { 'measurement-mode': 'time_windows', 'measurement-interval': 500, 'stability-percentage': 999 },
      },
    },
    ...extra,
  };
  fs.writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

/** The configurations a server log shows loaded, from tritium's verbose `model configuration:` lines. */
function loadedShapes(log: string): Shape[] {
  const out: Shape[] = [];
  for (const m of log.matchAll(/\] ("model configuration:\\n.*")$/gm)) {
    const json = JSON.parse((JSON.parse(m[1]!) as string).slice('model configuration:\n'.length)) as {
      name: string;
      max_batch_size: number;
      instance_group: Array<{ count: number; kind: string }>;
    };
    expect(json.name).toBe('add_sub');
    expect(json.instance_group.map((g) => g.kind)).toEqual(['KIND_CPU']);
    out.push(shape(json.max_batch_size, json.instance_group[0]!.count));
  }
  return out;
}

interface ReportRow {
  variant: string;
  shape: Shape;
  throughput: number;
}

/** MA's inference report (results/metrics-model-inference.csv): one row per profiled configuration. */
function report(dir: string): ReportRow[] {
  const csv = fs
    .readFileSync(path.join(dir, 'output', 'results', 'metrics-model-inference.csv'), 'utf8')
    .trim()
    .split('\n');
  const head = csv[0]!.split(',');
  const col = (name: string) => {
    const i = head.indexOf(name);
    expect(i, `column ${name} in ${head.join(',')}`).toBeGreaterThanOrEqual(0);
    return i;
  };
  const [variant, group, mbs, thr] = ['Model Config Path', 'Instance Group', 'Max Batch Size', 'Throughput (infer/sec)'].map(col) as number[];
  return csv.slice(1).map((line) => {
    const f = line.split(',');
    expect(f[0]).toBe('add_sub');
    const g = /^(\d+):CPU$/.exec(f[group!]!);
    expect(g, `instance group ${f[group!]}`).not.toBeNull();
    return { variant: f[variant!]!, shape: shape(Number(f[mbs!]), Number(g![1])), throughput: Number(f[thr!]) };
  });
}

/** The variant MA wrote for each configuration (its config.pbtxt in the output repository). */
function variantShape(dir: string, variant: string): Shape {
  const text = fs.readFileSync(path.join(dir, 'output', 'models', variant, 'config.pbtxt'), 'utf8');
  const mbs = /max_batch_size: (\d+)/.exec(text);
  const count = /count: (\d+)/.exec(text);
  return shape(mbs ? Number(mbs[1]) : 0, count ? Number(count[1]) : 1);
}

function checkReport(dir: string): void {
  const rows = report(dir);
  expect(rows.map((r) => r.shape).sort()).toEqual([...SEARCH].sort());
  for (const r of rows) {
    expect(r.variant).toMatch(/^add_sub_config_(default|\d+)$/);
    expect(variantShape(dir, r.variant)).toBe(r.shape);
    expect(r.throughput).toBeGreaterThan(0);
  }
  expect(rows.find((r) => r.variant === 'add_sub_config_default')?.shape).toBe(shape(0, 1));
  expect(fs.existsSync(path.join(dir, 'output', 'reports', 'summaries', 'add_sub'))).toBe(true);
}

async function profile(dir: string, config: string) {
  expect(fs.existsSync(MODEL_ANALYZER), `${MODEL_ANALYZER} (npm ci installs requirements-dev.txt)`).toBe(true);
  const r = await runAsync(MODEL_ANALYZER, ['profile', '-f', config], { cwd: dir, timeoutMs: 540_000 });
  const out = `${r.stdout}${r.stderr}`;
  expect(r.status, out).toBe(0);
  expect(out).toContain('Profile complete. Profiled 5 configurations');
  const paErrors = path.join(dir, 'output', 'perf_analyzer_error.log');
  expect(fs.existsSync(paErrors) ? fs.readFileSync(paErrors, 'utf8') : '').toBe('');
  return out;
}

describe('Model Analyzer', () => {
  const dirs: string[] = [];
  let t: Tritium | undefined;
  const tmp = () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-ma-'));
    dirs.push(d);
    return d;
  };

  afterAll(async () => {
    await t?.stop();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it('remote mode: profiles each configuration it asked for, loaded through the repository API', async () => {
    const repo = makeRepo(['add_sub']);
    dirs.push(repo);
    t = await startTritium({ repos: [repo], args: ['--model-control-mode=explicit', '--log-verbose=1'] });
    const dir = tmp();
    const config = maConfig(dir, repo, { http: t.httpPort, grpc: t.grpcPort!, metrics: t.metricsPort! }, { triton_launch_mode: 'remote' });

    // While MA runs: what the repository index says is READY, and the config then served.
    const served = new Set<Shape>();
    let polling = true;
    const poller = (async () => {
      while (polling) {
        try {
          const index = (await (await fetch(`${t!.http}/v2/repository/index`, { method: 'POST', body: '{"ready":true}' })).json()) as Array<{
            name: string;
          }>;
          if (index.some((e) => e.name === 'add_sub')) {
            const c = (await (await fetch(`${t!.http}/v2/models/add_sub/config`)).json()) as {
              max_batch_size?: number;
              instance_group?: Array<{ count: number }>;
            };
            if (c.instance_group) served.add(shape(c.max_batch_size ?? 0, c.instance_group[0]!.count));
          }
        } catch {
          // between an unload and a load
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    try {
      await profile(dir, config);
    } finally {
      polling = false;
      await poller;
    }

    // Loaded in MA's order: the model's own configuration first, then the search.
    const loaded = loadedShapes(t.log());
    expect(loaded[0]).toBe(shape(0, 1));
    expect(new Set(loaded)).toEqual(new Set(SEARCH));
    expect([...served].sort()).toEqual([...SEARCH].sort());
    // Each load through the repository API with MA's config override, and its instances started.
    expect(t.log().match(/"successfully loaded 'add_sub'"/g)?.length).toBeGreaterThanOrEqual(SEARCH.length);
    expect(t.log()).toContain('TRITONBACKEND_ModelInstanceInitialize: add_sub_0_1 (CPU device 0)');
    checkReport(dir);
    await t.stop();
    t = undefined;
  }, 600_000);

  it('local mode: starts tritium through triton_server_path with its tritonserver flags', async () => {
    const repo = makeRepo(['add_sub']);
    dirs.push(repo);
    const dir = tmp();
    const server = path.join(dir, 'tritonserver');
    fs.writeFileSync(
      server,
      `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(path.join(ROOT, 'bin', 'tritium.js'))} ${JSON.stringify(`--backend-config=python,python-executable=${PYTHON}`)} "$@"\n`,
      { mode: 0o755 },
    );
    const [http, grpc, metrics] = (await freePorts(3)) as [number, number, number];
    const serverLog = path.join(dir, 'server.log');
    const config = maConfig(
      dir,
      repo,
      { http, grpc, metrics },
      { triton_launch_mode: 'local', triton_server_path: server, triton_output_path: serverLog, triton_server_flags: { 'log-verbose': 1 } },
    );
    await profile(dir, config);

    const log = fs.readFileSync(serverLog, 'utf8');
    // One server per configuration, started with MA's flags (explicit model control).
    expect(log).not.toMatch(/unrecognized option/);
    expect(new Set(loadedShapes(log))).toEqual(new Set(SEARCH));
    checkReport(dir);
  }, 600_000);
});

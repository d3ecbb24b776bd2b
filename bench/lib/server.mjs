/**
 * Benchmark helper: starts the built `tritium` CLI (`node bin/tritium.js`, from dist/ made by
 * `npm run build`) as a child process on ephemeral loopback ports, waits for its start-up log
 * lines, and stops it with a signal. Ports come from the log lines, as Triton harnesses do.
 *
 * The benchmarks are plain ESM run by `node` and cannot import the TypeScript test helper
 * test/helpers/server.ts; this is its counterpart and starts the server the same way (same
 * flags, same log lines awaited, same stop). Keep the two aligned.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const PYTHON = process.env.TRITIUM_PYTHON ?? path.join(ROOT, '.venv', 'bin', 'python');

/** Throws unless dist/ has been built. */
export function ensureBuilt() {
  if (!fs.existsSync(path.join(ROOT, 'dist', 'cli', 'main.js'))) throw new Error('run `npm run build` first');
}

/** The flags `root`'s server would restart itself with, less those `nodeArgs` and NODE_OPTIONS set (none before it did). */
async function restartFlags(root, nodeArgs, nodeOptions) {
  const file = path.join(root, 'dist', 'cli', 'node-flags.js');
  if (!fs.existsSync(file)) return [];
  const { missingNodeFlags } = await import(file);
  return missingNodeFlags(nodeArgs, nodeOptions);
}

/**
 * Starts the CLI on `repos` (one path or several) with `args` appended to its command line;
 * resolves once HTTP, metrics and gRPC (unless `--allow-grpc=false` / `--allow-metrics=false`)
 * listen. With `inspect`, node runs the server with `--inspect=127.0.0.1:0` and the result's
 * `inspector` is its WebSocket URL; the server does not restart itself under a debugger, so the
 * V8 flags it would restart with (src/cli/node-flags.ts) are given here, where `root` has them.
 * `nodeArgs` go to node before the script (e.g. `--cpu-prof`); `env` is added to this
 * process's environment for the server (and the stubs it starts). `root` runs another
 * checkout's bin/tritium.js (its dist/ built), to compare two builds in one run.
 *
 * Resolves with { proc, http, httpPort, grpcPort, metricsPort, inspector, log(), stop(signal),
 * exited }; stop() sends SIGTERM (or `signal`) and resolves with { code, signal } of the exit.
 */
export async function startTritium({ repos, args = [], inspect = false, nodeArgs = [], env = {}, timeoutMs = 180_000, root = ROOT }) {
  if (!fs.existsSync(path.join(root, 'dist', 'cli', 'main.js'))) throw new Error(`run \`npm run build\` in ${root} first`);
  const argv = [
    ...nodeArgs,
    ...(inspect ? [...(await restartFlags(root, nodeArgs, env.NODE_OPTIONS ?? process.env.NODE_OPTIONS)), '--inspect=127.0.0.1:0'] : []),
    path.join(root, 'bin', 'tritium.js'),
    ...[repos].flat().map((r) => `--model-repository=${r}`),
    '--http-port=0',
    '--grpc-port=0',
    '--metrics-port=0',
    '--http-address=127.0.0.1',
    '--grpc-address=127.0.0.1',
    `--backend-config=python,python-executable=${PYTHON}`,
    ...args,
  ];
  const proc = spawn(process.execPath, argv, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let log = '';
  proc.stdout.on('data', (d) => (log += d));
  proc.stderr.on('data', (d) => (log += d));
  const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  const stop = (signal = 'SIGTERM') => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
    return exited;
  };
  const wantGrpc = !args.includes('--allow-grpc=false');
  const wantMetrics = !args.includes('--allow-metrics=false');
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const http = /Started HTTPService at [^:\s]+:(\d+)/.exec(log);
    const grpc = /Started GRPCInferenceService at [^:\s]+:(\d+)/.exec(log);
    const metrics = /Started Metrics Service at [^:\s]+:(\d+)/.exec(log);
    const ws = /Debugger listening on (ws:\/\/\S+)/.exec(log);
    if (http && (grpc || !wantGrpc) && (metrics || !wantMetrics) && (ws || !inspect)) {
      return {
        proc,
        http: `http://127.0.0.1:${http[1]}`,
        httpPort: Number(http[1]),
        grpcPort: grpc ? Number(grpc[1]) : undefined,
        metricsPort: metrics ? Number(metrics[1]) : undefined,
        inspector: ws?.[1],
        log: () => log,
        stop,
        exited,
      };
    }
    if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`tritium exited during start-up:\n${log}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  proc.kill('SIGKILL');
  throw new Error(`tritium did not start:\n${log}`);
}

/** Inference and execution counts of `model` from the statistics extension. */
export async function modelStats(server, model) {
  const res = await fetch(`http://127.0.0.1:${server.httpPort}/v2/models/${model}/stats`);
  const s = (await res.json()).model_stats[0];
  return { inferences: Number(s.inference_count), executions: Number(s.execution_count) };
}

/** Successful inference requests of `model` so far, from the statistics extension. */
export async function successCount(server, model) {
  const res = await fetch(`http://127.0.0.1:${server.httpPort}/v2/models/${model}/stats`);
  const body = await res.json();
  return Number(body.model_stats[0].inference_stats.success.count);
}

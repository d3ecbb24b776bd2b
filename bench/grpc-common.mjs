/**
 * Helpers of the issue-4 benchmarks (grpc-perf.mjs, stream-latency.mjs): argument parsing, the
 * machine line, and the built CLI started on ephemeral ports.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const PYTHON = process.env.TRITIUM_PYTHON ?? path.join(ROOT, '.venv', 'bin', 'python');

export function arg(name, def) {
  const i = process.argv.indexOf(`--${name}`);
  if (i >= 0 && i + 1 < process.argv.length) return process.argv[i + 1];
  const eq = process.argv.find((a) => a.startsWith(`--${name}=`));
  return eq ? eq.slice(name.length + 3) : def;
}

export function machine() {
  const cpus = os.cpus();
  return `${cpus[0]?.model ?? 'unknown CPU'} x${cpus.length}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.platform()} ${os.release()}, node ${process.version}`;
}

/** Starts the built CLI on ephemeral ports; resolves once HTTP, gRPC and metrics listen. */
export async function startTritium(repo, extraArgs = []) {
  if (!fs.existsSync(path.join(ROOT, 'dist', 'cli', 'main.js'))) throw new Error('run `npm run build` first');
  const args = [
    path.join(ROOT, 'bin', 'tritium.js'),
    `--model-repository=${repo}`,
    '--http-port=0',
    '--grpc-port=0',
    '--metrics-port=0',
    '--http-address=127.0.0.1',
    '--grpc-address=127.0.0.1',
    `--backend-config=python,python-executable=${PYTHON}`,
    ...extraArgs,
  ];
  const proc = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  proc.stdout.on('data', (d) => (log += d));
  proc.stderr.on('data', (d) => (log += d));
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    const http = /Started HTTPService at [^:\s]+:(\d+)/.exec(log);
    const grpc = /Started GRPCInferenceService at [^:\s]+:(\d+)/.exec(log);
    const metrics = /Started Metrics Service at [^:\s]+:(\d+)/.exec(log);
    if (http && grpc && metrics) {
      return {
        proc,
        httpPort: Number(http[1]),
        grpcPort: Number(grpc[1]),
        log: () => log,
        stop: () =>
          new Promise((resolve) => {
            if (proc.exitCode !== null) return resolve();
            proc.once('exit', () => resolve());
            proc.kill('SIGTERM');
          }),
      };
    }
    if (proc.exitCode !== null) throw new Error(`tritium exited during start-up:\n${log}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  proc.kill('SIGKILL');
  throw new Error(`tritium did not start:\n${log}`);
}

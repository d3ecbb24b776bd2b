/**
 * Helpers of the gRPC and streaming benchmarks (grpc-perf.mjs, stream-latency.mjs): argument parsing and
 * the machine line. The built CLI is started by bench/lib/server.mjs.
 */
import os from 'node:os';

export { PYTHON, ROOT } from './lib/server.mjs';

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
